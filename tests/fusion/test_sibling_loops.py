"""Sibling host loops (issue: hand-written programs, loops across nests): a loop of one
kernel followed by a loop of another over the same iterations runs as one loop, and the
launches of one iteration fuse as any body's (``fusion/host_loops.py``); near misses stay
two loops, each with its reason. The rewrite keeps every line where it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sirius.analysis.evaluate import LoopInfo
from sirius.analysis.source_index import ForLoop, SourceRange
from sirius.fusion.host_loops import HostLoop, LoopChain, rewrite_loops

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")
PROGRAMS = ROOT / "tests" / "fusion" / "programs"


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600, env=dict(os.environ))


def optimize(tmp_path_factory, name: str, *options: str):
    program = PROGRAMS / name
    out = tmp_path_factory.mktemp("loops") / name.replace(".cu", ".opt.cu")
    proc = sirius("optimize", str(program), "-o", str(out), "--report", str(out.with_suffix(".json")), *options)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return program, proc.stdout, json.loads(out.with_suffix(".json").read_text()), out


@pytest.fixture(scope="module")
def fused(tmp_path_factory):
    return optimize(tmp_path_factory, "sibling_loops.cu", "--print-after", "host-loops")


@pytest.fixture(scope="module")
def hazards(tmp_path_factory):
    return optimize(tmp_path_factory, "sibling_loop_hazards.cu")


@pytest.mark.toolchain
def test_loops_over_the_same_iterations_run_as_one_and_their_launches_fuse(fused):
    program, summary, report, out = fused
    assert report["loops_fused"] == [{"lines": [45, 48]}, {"lines": [75, 78, 81]}]
    # the steps from argv: both loops compare their iterators with that one value
    assert "host loops at lines 45, 48 run as one loop" in summary
    assert "launch statements: 9 -> 6" in summary, summary
    assert "vertical, 0 barriers inserted: produce (line 46) -> consume (line 49)" in summary, summary
    assert "produce (line 76) -> consume (line 79) -> consume (line 82)" in summary, summary
    # every line where it was: the second loop's header is gone, its iterator declared on its line
    original, emitted = program.read_text().splitlines(), out.read_text().splitlines()
    assert "for (int t = 0; t < steps; ++t) {" in original[47]
    assert "for (int t" not in out.read_text() and any("int t = s;" in line for line in emitted)
    # --print-after host-loops: the plan, then the text analysed from there on, line for line the original's
    dump = summary[:summary.index("optimized ")].splitlines()
    assert dump[:2] == ["loops at lines 45, 48 run as one loop", "loops at lines 75, 78, 81 run as one loop"]
    text = dump[4:]
    assert len(text) == len(original) and text[47] == "  int t = s; " and text[48] == original[48]


@pytest.mark.toolchain
def test_the_emitted_line_directives_name_the_program_not_the_copy_analysed(tmp_path):
    """The text analysed after the merge is a copy in the cache; where the emitted program's
    #line directives name files (a fragment of a header's kernel), they name the program."""
    program = PROGRAMS / "sibling_loops_included" / "main.cu"
    out = tmp_path / "main.opt.cu"
    proc = sirius("optimize", str(program), "-o", str(out))
    assert proc.returncode == 0 and "host loops at lines 14, 17 run as one loop" in proc.stdout, proc.stdout
    text = out.read_text()
    assert f'#line 1 "{program}"' in text and "loop-fusion" not in text
    verify = sirius("verify", str(program), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.toolchain
def test_loops_whose_fusion_would_reverse_a_dependence_stay_apart(fused):
    _, summary, report, _ = fused
    assert report["loops_kept_apart"] == [
        {"lines": [54, 57], "reason": "a flow dependence on v runs from an iteration of the loop at line 54 (line 55) "
                                      "to an earlier iteration of the loop at line 57 (line 58): fused, it would run "
                                      "the other way"},
        {"lines": [63, 66], "reason": "they run different iterations (their trip counts may differ)"}]
    assert "host loops at lines 63 and 66 stay two loops: they run different iterations" in summary


@pytest.mark.toolchain
@pytest.mark.parametrize("argv, steps", [((), 6), (("2",), 2)])
def test_the_fused_loops_verify_equal_at_two_sizes(fused, argv, steps):
    program, _, _, out = fused
    proc = sirius("verify", str(program), str(out), "--", *argv)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
    assert f"(fused, sibling_loops.cu:46, produce consume): fused launches {steps}" in proc.stdout, proc.stdout


@pytest.mark.toolchain
def test_near_misses_stay_two_loops_with_their_reasons(hazards):
    program, summary, report, out = hazards
    # of three loops, the first two merge; the third would declare its iterator j again. Both
    # bodies' dim3 grid, and a later body's variable of the first body's kernel's name, are
    # the later body's own: written with new names, the loops merge
    assert report["loops_fused"] == [
        {"lines": [62, 66], "renamed": [{"line": 66, "name": "grid", "now": "grid_l66"}]},
        {"lines": [119, 122], "renamed": [{"line": 122, "name": "produce", "now": "produce_l122"}]},
        {"lines": [136, 139]}]
    reasons = {tuple(r["lines"]): r["reason"] for r in report["loops_kept_apart"]}
    assert reasons == {
        # pairing the iterations of a loop that runs backwards would reorder its own steps
        (43, 46): "their iterations may run in other orders: the steps differ (+1, -1)",
        (53, 56): "the body of the loop at line 56 names slot, which means another variable after the body of the "
                  "loop at line 53",
        (73, 77): "the body of the loop at line 73 holds other statements than launches and declarations without "
                  "effects",
        (83, 85): "the body of the loop at line 83 is not in braces",
        # the blind red team's: red and black sweeps, a wrapping iterator, a typedef, a directive
        # between, a chain of i, j, j
        (91, 94): "their iterators start from other values (= 0, = 1)",
        (100, 103): "their iterators have other types (int, unsigned char): equal counts of iterations need not give "
                    "equal values",
        (109, 113): "the body of the loop at line 109 declares more than variables (a type, an enumeration, an alias, "
                    "a using, a function): merged, it would change what the names of the bodies after it mean",
        (122, 130): "a preprocessor directive (line 127) stands between them: another build may put code between them",
        (139, 142): "the iterator j of the loop at line 142 would be declared twice in the loop at line 136",
    }, reasons
    # (per run: not known, since the wrapping unsigned char loop's iterations are not counted)
    assert "launch statements: 22 -> 19" in summary, summary
    assert "dim3 grid_l66(blocks);" in out.read_text() and "const int produce_l122 = s;" in out.read_text()
    verify = sirius("verify", str(program), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


def _loop(text: bytes, header: bytes, iterator: str, line: int) -> HostLoop:
    start = text.index(header)
    body = text.index(b"{", start)
    end = text.index(b"}", body) + 1
    def where(a: int, b: int) -> SourceRange:
        return SourceRange("t.cu", text.count(b"\n", 0, a) + 1, 1, text.count(b"\n", 0, b) + 1, a, b)
    source = ForLoop(where(start, end), "main", (), iterator, True, where(body, end), "int", "+1")
    return HostLoop(source, LoopInfo(f"h{line}", f"h{line}", None, line, "", True), ())


def test_the_rewrite_keeps_every_line_where_it_was():
    before = (b"  for (int i = 0; i < n; ++i) {\n"
              b"    a<<<g, b>>>(x, i);\n"
              b"  }\n"
              b"  // the second\n"
              b"  for (int j = 0;\n"
              b"       j < n; ++j) {\n"
              b"    b<<<g, b>>>(x, j);\n"
              b"  }\n"
              b"  for (int i = 0; i < n; ++i) {\n"
              b"    c<<<g, b>>>(x, i);\n"
              b"  }\n"
              b"  done();\n")
    chain = LoopChain((_loop(before, b"for (int i", "i", 1), _loop(before, b"for (int j", "j", 5),
                       _loop(before, b"for (int i = 0; i < n; ++i) {\n    c", "i", 9)))
    after = rewrite_loops(before, (chain,))
    assert after.count(b"\n") == before.count(b"\n")
    assert after.decode().splitlines() == [
        "  for (int i = 0; i < n; ++i) {",
        "    a<<<g, b>>>(x, i);",
        "  ",
        "  // the second",
        "  int j = i; ",
        "",
        "    b<<<g, b>>>(x, j);",
        "  ",
        "  ",
        "    c<<<g, b>>>(x, i);",
        "  }",
        "  done();",
    ]


@pytest.mark.toolchain
def test_a_later_body_s_variable_of_a_name_the_merged_body_has_is_written_with_a_new_name(tmp_path_factory):
    """Both bodies compute a ``dim3 grid`` and ``block``; a later body declares a scale that
    the earlier body's launch names outside: the later body's variables are written with new
    names, on their lines, and the loops merge and fuse. A later body whose first launch
    names the grid outside before declaring its own, or whose grid a macro takes, stays two
    loops with the reason."""
    program, summary, report, out = optimize(tmp_path_factory, "sibling_loop_names.cu")
    assert report["loops_fused"] == [
        {"lines": [45, 50], "renamed": [{"line": 50, "name": "block", "now": "block_l50"},
                                        {"line": 50, "name": "grid", "now": "grid_l50"}]},
        {"lines": [59, 62], "renamed": [{"line": 62, "name": "scale", "now": "scale_l62"}]}]
    why = ("declares grid as the merged body before it does, and it cannot be given another name: it is declared "
           "extern, or not every mention of it there is written as its name and names it (one before the "
           "declaration names another, a macro writes or takes one, a line splice divides one)")
    assert {tuple(r["lines"]): r["reason"] for r in report["loops_kept_apart"]} == {
        (70, 74): f"the body of the loop at line 74 {why}", (82, 86): f"the body of the loop at line 86 {why}"}
    assert "launches per run: 45 -> 35" in summary, summary
    emitted = out.read_text().splitlines()
    original = program.read_text().splitlines()
    at = next(i for i, line in enumerate(emitted) if "dim3 block_l50(128), grid_l50((n + 127) / 128);" in line)
    assert "int scale_l62 = 2 * s;" in emitted[at + 12]  # twelve lines on, as in the original
    assert "dim3 block(128), grid((n + 127) / 128);" in original[50]
    assert "int scale = 2 * s;" in original[62]
    verify = sirius("verify", str(program), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert "2 of them took their fused path" in verify.stdout, verify.stdout


@pytest.mark.toolchain
def test_a_merge_another_build_would_break_stays_two_loops(tmp_path_factory):
    """The blind red team of renamed loop variables: trip counts and a chunk a build sets
    (``#ifndef``), a conditional in a body, a later ``extern`` variable, a use written
    across a line splice, and a macro redefined between two launches were merged, fused or
    renamed for this build only (or into another name). Each stays apart with its reason;
    the rebuilds that broke them verify equal; a macro defined once, outside any condition,
    still merges its loops."""
    program, summary, report, out = optimize(tmp_path_factory, "sibling_loop_builds.cu")
    assert report["loops_fused"] == [{"lines": [109, 112]}]
    build = ("a macro another build may define otherwise (given with -D, defined under a condition, or redefined): "
             "the merged loop is proven for this build only")
    unnamed = ("declares {} as the merged body before it does, and it cannot be given another name: it is declared "
               "extern, or not every mention of it there is written as its name and names it (one before the "
               "declaration names another, a macro writes or takes one, a line splice divides one)")
    assert {tuple(r["lines"]): r["reason"] for r in report["loops_kept_apart"]} == {
        (46, 49): f"the loop at line 46 or a kernel it launches uses SCALE_STEPS, {build}",
        (55, 58): f"the loop at line 58 or a kernel it launches uses SRC_CHUNK, {build}",
        (64, 67): "a preprocessor directive (line 68) stands in the loop at line 67: another build may compile the "
                  "loop otherwise, or its macros mean another thing where the merged loop writes them",
        (77, 81): "the body of the loop at line 81 " + unnamed.format("gain"),
        (88, 92): "the body of the loop at line 92 " + unnamed.format("coef"),
        (118, 121): "another for statement stands on line 121: the optimizer tells host loops apart by their lines",
    }
    assert ("not fused: scale (line 101), addto (line 104): a preprocessor directive (line 102) is between them: it "
            "may change what a macro of the first launch means") in summary, summary
    for rebuild in ((), ("-DADD_STEPS=2",), ("-DSRC_CHUNK(i)=(3-(i))",), ("-DMIRROR=1",)):
        verify = sirius("verify", str(program), str(out), *rebuild)
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.toolchain
def test_a_loop_redefining_a_macro_is_not_written_twice_by_the_persistent_kernel(tmp_path_factory):
    """The emitted program writes a loop run whole as one launch twice (its values
    checked, then the loop as written): a ``#define`` in it would reach the second copy."""
    program, summary, _, out = optimize(tmp_path_factory, "persistent_loop_directive.cu", "--cooperative",
                                        "--persistent")
    assert "launches per run: 8 -> 8" in summary, summary
    assert ("no waves over (step, layer): a preprocessor directive (line 36) stands in the loop, whose text the "
            "emitted program writes twice") in summary, summary
    verify = sirius("verify", str(program), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.toolchain
def test_iterators_of_other_integer_types_run_as_one_loop_where_every_value_is_one_of_both(tmp_path_factory):
    """int and unsigned from 0 to 5 merge: the later iterator is declared with its own type,
    so ``j - 1`` at ``j = 0`` is still 4294967295 (read as int it would be -1, and the
    program would print another total). One name of two types, a trip count from argv, and
    an ``unsigned char`` that wraps past 255 where the ``int`` stops, stay two loops."""
    program, summary, report, out = optimize(tmp_path_factory, "sibling_loop_types.cu")
    assert report["loops_fused"] == [{"lines": [37, 40]}]
    assert {tuple(r["lines"]): r["reason"] for r in report["loops_kept_apart"]} == {
        (48, 51): "their iterators are both i but of other types (int, unsigned int): merged, the later body would "
                  "compute with the first one's type",
        (59, 62): "their iterators have other types (int, unsigned long): equal counts of iterations need not give "
                  "equal values",
        (73, 76): "their iterators have other types (int, unsigned char): equal counts of iterations need not give "
                  "equal values",
    }
    assert any("unsigned int j = i;" in line for line in out.read_text().splitlines())
    for argv in ((), ("3",)):
        verify = sirius("verify", str(program), str(out), "--", *argv)
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
