"""Idioms of real programs that once crashed the analysis or the emitted text (issue 31):
arrays of device pointers, device functions clang does not inline whose bodies branch, and
sources with CRLF line ends. Each is analysed, optimized and verified, never an internal error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

HERE = Path(__file__).resolve().parent / "idioms"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def optimized_and_verified(program: Path, tmp_path: Path) -> str:
    """The optimizer's summary of ``program``, after its output verified equal."""
    out = tmp_path / (program.stem + ".opt.cu")
    proc = sirius("optimize", str(program), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verify = sirius("verify", str(program), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def branch_launches(tmp_path_factory) -> tuple[str, dict, Path]:
    """branch_launches.cu optimized once: the summary, the report, the optimized program."""
    folder = tmp_path_factory.mktemp("branch_launches")
    out, report = folder / "branch_launches.opt.cu", folder / "report.json"
    proc = sirius("optimize", str(HERE / "branch_launches.cu"), "-o", str(out), "--report", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(report.read_text()), out


def test_launches_in_both_arms_of_an_if_else_take_the_shape_pushed_above_it(branch_launches):
    """The compiler pushes the arms' common launch configuration once, above the branch: the
    else arm's launches have that shape too (once read as unknown, and refused as launches on
    a non-default stream), and each arm's pair fuses; both arms verified, each taking its
    fused path."""
    summary, _, out = branch_launches
    assert "non-default stream" not in summary, summary
    assert "implicit_step (line 62) -> clip (line 63)" in summary and "explicit_step (line 65) -> clip (line 66)" in summary
    for args, line, kernel in (((), 65, "explicit_step"), (("implicit",), 62, "implicit_step")):
        verify = sirius("verify", str(HERE / "branch_launches.cu"), str(out), "--", *args)
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
        assert f"branch_launches.cu:{line}, {kernel} clip): fused launches 1" in verify.stdout, verify.stdout


def test_launches_are_named_at_the_lines_they_are_written_on(branch_launches):
    """A launch in a helper the compiler inlined is at its line in the helper, not at the
    helper's call in main (line 68), in the summary, the report and the analysis."""
    summary, report, _ = branch_launches
    assert "smooth (line 45) -> damp (line 46)" in summary, summary
    assert "not fused: gather (line 60), implicit_step (line 62): control flow between them" in summary, summary
    assert "not fused: clip (line 66), smooth (line 45): they are in different host loop nests" in summary, summary
    lanes = {m["kernel"]: m["line"] for g in report["groups"] for lane in g["lanes"] for m in lane
             if m["kernel"] != "clip"}
    assert lanes == {"implicit_step": 62, "explicit_step": 65, "smooth": 45, "damp": 46}, lanes
    named = {(m["kernel"], m["line"]) for r in report["refused"] for m in r["launches"]}
    # (damp, 46): the loop's iteration ending with damp and the next beginning with smooth
    assert named == {("gather", 60), ("implicit_step", 62), ("clip", 63), ("explicit_step", 65), ("clip", 66),
                     ("smooth", 45), ("damp", 46)}, named
    analysis = sirius("analyze", str(HERE / "branch_launches.cu"))
    assert analysis.returncode == 0, analysis.stderr
    assert "line 45: smooth grid [64, 1, 1]" in analysis.stdout and "line 46: damp grid" in analysis.stdout


def test_an_array_of_device_pointers_is_one_allocation_per_element(tmp_path):
    analysis = sirius("analyze", str(HERE / "pointer_array.cu"))
    assert analysis.returncode == 0, analysis.stderr
    for line in ("pair[0]: 16384 bytes (cudaMalloc, line 12)", "pair[1]: 16384 bytes (cudaMalloc, line 13)",
                 "bufs[b]: 16384 bytes (cudaMalloc, line 10)", "alloc bufs[b] for 0 <= h0 and h0 <= 2"):
        assert line in analysis.stdout, analysis.stdout
    assert analysis.stdout.count("x -> pair[0]") == 2 and "x -> pair[1]" in analysis.stdout, analysis.stdout
    assert "y -> pair[1]" in analysis.stdout and "free pair[1]" in analysis.stdout, analysis.stdout
    summary = optimized_and_verified(HERE / "pointer_array.cu", tmp_path)
    assert "launches per run: 7 -> 5" in summary and "fill (line 14) -> fill (line 15) -> axpy (line 16)" in summary


def test_ping_pong_buffers_at_constant_indices_are_their_own_allocations(tmp_path):
    """buf[0] and buf[1] (cleared, then each allocated) are two allocations wherever the
    index is a constant; swapped by a run-time index in the loop, either one: unknown."""
    analysis = sirius("analyze", str(HERE / "ping_pong.cu"))
    assert analysis.returncode == 0, analysis.stderr
    launches = analysis.stdout.split("\nlaunches")[1]
    sweep = launches.split("line 38:")[1]
    for arguments in ("in -> buf[0]\n      out -> buf[1]", "in -> buf[1]\n      out -> buf[0]"):
        assert arguments in launches.split("line 38:")[0], launches
    assert "in -> unknown (may alias any buffer)\n      out -> unknown (may alias any buffer)" in sweep, sweep
    assert "free buf[1]" in analysis.stdout, analysis.stdout
    summary = optimized_and_verified(HERE / "ping_pong.cu", tmp_path)
    assert "launches per run: 13 -> 11" in summary, summary
    assert "not fused: relax (line 38), scale (line 39): global dependence" in summary, summary


def test_an_element_stored_through_a_run_time_index_is_no_longer_known(tmp_path):
    analysis = sirius("analyze", str(HERE / "pointer_array_rebound.cu"))
    assert analysis.returncode == 0, analysis.stderr
    assert "x -> q" in analysis.stdout and "x -> unknown (may alias any buffer)" in analysis.stdout
    assert "x -> p[0]" not in analysis.stdout  # p[k] = q with k == 0: p[0] is q
    summary = optimized_and_verified(HERE / "pointer_array_rebound.cu", tmp_path)
    assert "launches per run: 2 -> 2" in summary and "bump (line 19), shift_read (line 20)" in summary


def test_device_functions_not_inlined_with_branches_are_analysed(tmp_path):
    summary = optimized_and_verified(HERE / "noinline_branches.cu", tmp_path)
    assert "not fused: a (line 12), b (line 13): global dependence on d" in summary, summary


def test_a_source_with_crlf_line_ends_is_rewritten_where_clang_says(tmp_path):
    """clang's offsets count CRLF as two bytes: the program text must too, or the rewrite
    lands one byte earlier per line (an emitted program that does not compile)."""
    lf = (HERE / "noinline_branches.cu").read_bytes().replace(b"__noinline__ ", b"")
    program = tmp_path / "crlf.cu"
    program.write_bytes(lf.replace(b"\n", b"\r\n"))
    out = tmp_path / "crlf.opt.cu"
    proc = sirius("optimize", str(program), "-o", str(out))
    assert proc.returncode == 0 and "internal error" not in proc.stdout, proc.stdout + proc.stderr
    assert "launches per run: 3 -> 2" in proc.stdout, proc.stdout
    emitted = out.read_bytes()
    assert b"printf(\"%f %f\\n\", h[3], h[90]);\r\n" in emitted  # the program's own lines keep their ends
    verify = sirius("verify", str(program), str(out))
    assert verify.returncode == 0 and "fused launches 1" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.parametrize("original, launches", [
    (HERE / "helper_launches.cu", "6 -> 3"),  # fragments after their kernels, a helper's launches, prototypes
    (HERE.parent.parent.parent / "cuda_inputs" / "softmax.cu", "4 -> 1"),  # shared arrays pooled, barriers
])
def test_what_the_optimizer_inserts_in_a_crlf_source_ends_its_lines_in_crlf(original, launches, tmp_path):
    """Fused kernels, fragments, rewritten launches, guards and #line directives take the
    file's line end: the emitted file has no LF-only line (it once had hundreds, mixed
    among the program's CRLF lines)."""
    program = tmp_path / original.name
    program.write_bytes(original.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    out = tmp_path / (original.stem + ".opt.cu")
    proc = sirius("optimize", str(program), "-o", str(out))
    assert proc.returncode == 0 and f"launches per run: {launches}" in proc.stdout, proc.stdout + proc.stderr
    emitted = out.read_bytes()
    assert emitted.count(b"\n") == emitted.count(b"\r\n") > program.read_bytes().count(b"\n"), emitted
    assert emitted.endswith(b"\r\n") and b"\r\r" not in emitted
    assert b"#line " in emitted and b"sirius_fused_0<<<" in emitted
    verify = sirius("verify", str(program), str(out), "--backend", "cpu")
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    assert "fused launches" in verify.stdout, verify.stdout


def test_line_ends_are_converted_outside_raw_strings_only():
    from sirius.fusion.fragment_text import line_end, with_line_end

    assert line_end(b"a\r\nb\r\nc\n") == "\r\n" and line_end(b"a\r\nb\nc\n") == "\n" and line_end(b"") == "\n"
    text = 'int a;\nconst char* s = R"x(one\ntwo)x";\r\nint b;\n'
    assert with_line_end(text, "\r\n") == 'int a;\r\nconst char* s = R"x(one\ntwo)x";\r\nint b;\r\n'
    assert with_line_end(text, "\n") == text


def test_a_fragment_of_an_included_file_reads_its_file_and_lines(tmp_path):
    """stamp records __LINE__ and the length of __FILE__: its fragment, printed into the
    main file, has a #line naming the included file (it once named the emitted file: a
    different result), and the text after it is the main file's again, by name."""
    program = HERE.parent.parent / "filecheck" / "optimize_included_fragment.cu"
    summary = optimized_and_verified(program, tmp_path)
    assert "launches per run: 3 -> 1" in summary, summary
    emitted = (tmp_path / (program.stem + ".opt.cu")).read_text()
    included = str(program.parent / "included" / "stamp_kernels.cu")
    assert emitted.count(f'#line 4 "{included}"\n{{') == 1 and emitted.count(f'#line 8 "{included}"\n{{') == 1
    directives = [line for line in emitted.splitlines() if line.startswith("#line")]
    assert all(line.endswith(f'"{program}"') or line.endswith(f'"{included}"') for line in directives), directives


def test_a_byte_order_mark_stays_first(tmp_path):
    """What the optimizer adds at the top goes after the mark: before it, clang reads the
    mark as a stray character and the emitted program does not compile."""
    program = tmp_path / "bom.cu"
    program.write_bytes(b"\xef\xbb\xbf" + (HERE / "noinline_branches.cu").read_bytes().replace(b"__noinline__ ", b""))
    optimized_and_verified(program, tmp_path)
    emitted = (tmp_path / "bom.opt.cu").read_bytes()
    assert emitted.startswith(b"\xef\xbb\xbf// sirius-regions: ")


def test_line_directives_leave_launches_unrewritten(tmp_path):
    """clang reports the lines a #line directive gives; the launch written at that line of
    the file is another one. Rewriting it would drop one launch and run another twice."""
    source = (HERE / "noinline_branches.cu").read_text().replace("__noinline__ ", "")
    program = tmp_path / "renumbered.cu"
    program.write_text('#line 1 "model_generated.cu"\n' + source)
    summary = optimized_and_verified(program, tmp_path)
    assert "launches per run: 3 -> 3" in summary, summary
    assert ("launch expression not found at line 12 of the file: the program's #line directives renumber its "
            "lines") in summary, summary


def test_launches_in_an_inlined_helper_are_rewritten_in_the_helper(tmp_path):
    """The compiler inlined ``forward`` into main's loop: its two launches are found where
    they are written, fused there, and the fused kernel (defined with the kernels, after
    the helper) is declared before the helper."""
    summary = optimized_and_verified(HERE / "helper_launches.cu", tmp_path)
    assert "launches per run: 6 -> 3" in summary, summary
    emitted = (tmp_path / "helper_launches.opt.cu").read_text()
    helper = emitted.index("static void forward(")
    assert emitted.index("// sirius: fused kernels, defined below") < helper < emitted.index("sirius_fused_0<<<")


def test_a_helper_inlined_twice_or_in_an_included_file_keeps_its_launches(tmp_path):
    twice = sirius("optimize", str(HERE / "helper_twice.cu"), "-o", str(tmp_path / "twice.cu"))
    assert twice.returncode == 0 and "launches per run: 4 -> 4" in twice.stdout, twice.stdout + twice.stderr
    # both calls' launches are the one written at line 8, and refused alike
    assert twice.stdout.count("not fused: scale (line 8): its launch expression cannot be rewritten: it is written once "
                              "in forward (line 8), which runs it for 2 launches in the program: rewriting it would "
                              "change them all") == 2, twice.stdout
    # a helper of an included file: rewritten in a copy of that file's text, which the
    # emitted program holds in place of its #include (the file itself is not changed)
    kernels = (HERE / "included" / "kernels.cu").read_bytes()
    included = optimized_and_verified(HERE / "included" / "main.cu", tmp_path)
    assert "scale (kernels.cu line 5) -> shift (kernels.cu line 6)" in included, included
    assert (HERE / "included" / "kernels.cu").read_bytes() == kernels


def test_two_launches_of_one_kernel_on_one_line_are_told_apart(tmp_path):
    summary = optimized_and_verified(HERE / "same_line.cu", tmp_path)
    assert "launches per run: 3 -> 1" in summary and "scale (line 11) -> shift (line 12) -> shift (line 12)" in summary


@pytest.mark.parametrize("program, reason", [
    ("helper_function_pointer.cu", "not fused: inc (line 8): its launch expression cannot be rewritten: the launches "
                                   "are in step, whose address the program takes"),
    ("helper_atexit.cu", "not fused: inc (line 14): its launch expression cannot be rewritten: the launches are in "
                         "step, which at_end also calls (the analysis follows the calls in main)"),
    ("namespace_kernels_after.cu", "sirius_fused_0 is launched as declared where it is launched, but defined in "
                                   "another scope (a namespace or class): the program would not link"),
    ("default_arguments.cu", "not fused: inc (line 12): the launch writes 1 of the kernel's 3 arguments (the others "
                             "are default arguments of its declaration)"),
    ("parameter_pack.cu", "not fused: inc (line 7): an argument is a parameter pack expansion"),
])
def test_launches_the_rewrite_cannot_follow_stay_as_written(program, reason, tmp_path):
    """A helper that also runs where the analysis does not follow (through a function
    pointer, from an atexit handler), a fused kernel that would be defined in another
    scope than it is declared in, default arguments and parameter packs: left as written,
    with the reason (a red team's programs, each once a wrong result, a program that did
    not link, or an internal error)."""
    out = tmp_path / "out.cu"
    proc = sirius("optimize", str(HERE / program), "-o", str(out))
    assert proc.returncode == 0 and "launches per run: 2 -> 2" in proc.stdout, proc.stdout + proc.stderr
    assert reason in proc.stdout, proc.stdout
