"""The counters an optimized program keeps of the path each fused region took: the host
code of the header counts and writes them at exit, the table in the program says what
each counter means, and the summary names the fused paths, the fallbacks and the guard
condition that failed first."""

from __future__ import annotations

import subprocess

import pytest

from sirius.commands.check import _fused_code_check
from sirius.core.config import find_clang
from sirius.fusion.region_paths import PathKind, RegionTable, fallback_only, read_counts, regions_of, render, summarize


def _table() -> tuple[RegionTable, list[str]]:
    """Two regions, as the printer writes them: a plain one with two conditions, a
    cooperative one with one; and the host code each path runs."""
    table = RegionTable()
    plain = table.open("fused", 10, ["scale", "shift"], describe=lambda c: c.replace("sirius_a1_0", "`n`@10"))
    guard = plain.guard(["sirius_a1_0 == 64", "SHIFT_OK"])
    code = [plain.took(PathKind.FUSED), plain.fell_back()]
    coop = table.open("cooperative", 20, ["a", "b", "c"])
    guard2 = coop.guard(["1 == 1"])
    code += [coop.took(PathKind.COOPERATIVE), coop.took(PathKind.NO_COOPERATIVE), coop.fell_back()]
    return table, [guard, guard2] + code


def test_the_table_numbers_each_regions_slots_after_the_previous_ones():
    table, (guard, guard2, *_) = _table()
    assert guard == "sirius_holds(0, (sirius_a1_0 == 64)) && sirius_holds(1, (SHIFT_OK))"
    assert guard2 == "sirius_holds(0, (1 == 1))"
    first, second = table.regions
    assert (first.base, first.size, second.base, second.size) == (0, 8, 8, 7)
    assert first.conditions == ("`n`@10 == 64", "SHIFT_OK")
    assert regions_of("int x;\n" + table.header() + "int main() {}\n") == table.regions


def test_the_summary_names_paths_and_the_condition_that_failed():
    table, _ = _table()
    # region 0: fused 3 times, fell back once on its second condition; region 1: never cooperative
    counts = {0: 3, 5 + 2: 1, 8 + PathKind.NO_COOPERATIVE: 2}
    runs = summarize(table.regions, counts)
    assert runs[0].paths == {"fused launches": 3, "original code: guard failed": 1}
    assert runs[0].failed == {"SHIFT_OK": 1} and runs[0].fused_runs == 3
    assert runs[1].paths == {"original code: no cooperative launch on this device": 2} and runs[1].fused_runs == 0
    lines, warnings = render(runs, "p.cu")
    assert lines[1] == "  region 0 (fused, p.cu:10, scale shift): fused launches 3, original code: guard failed 1"
    assert lines[2] == "    guard failed 1x on: SHIFT_OK"
    assert warnings == ["warning: region 1 (p.cu:20) ran 2x and never took its fused path"]
    assert [rr.region.id for rr in fallback_only(runs)] == [1]
    # nothing fused ran: one warning for the whole run, and every region is untested
    none_fused = summarize(table.regions, {5: 1, 8 + 5 + 1: 4})
    assert none_fused[0].failed == {"": 1} and none_fused[1].failed == {"1 == 1": 4}
    _, warnings = render(none_fused, "p.cu")
    assert len(warnings) == 1 and warnings[0].startswith("warning: no fused code ran")
    assert len(fallback_only(none_fused)) == 2


def test_check_fails_on_a_run_that_tested_no_fused_code_unless_allowed():
    table, _ = _table()
    untested = summarize(table.regions, {5 + 1: 1})  # region 0 fell back on its first condition
    check = _fused_code_check(untested, 2, allow_fallback=False)
    assert not check.passed and check.value == 0.0
    assert "0 of 2 fused regions took their fused path" in check.detail and "`n`@10 == 64" in check.detail
    assert _fused_code_check(untested, 2, allow_fallback=True).passed
    assert _fused_code_check(summarize(table.regions, {0: 1, 8 + 1: 1}), 2, allow_fallback=False).passed
    # no counts written (quick_exit, a build without them): not known, not "not reached"
    unknown = _fused_code_check(None, 2, allow_fallback=False)
    assert not unknown.passed and "wrote no path counts for its 2 fused regions" in unknown.detail
    assert "not reached" not in unknown.detail and _fused_code_check(None, 2, allow_fallback=True).passed


@pytest.mark.toolchain
def test_the_header_counts_in_a_host_program_and_writes_at_exit(tmp_path):
    """The header's C++ as a host program: the guard evaluations record the first failing
    condition, each path its counter, and the counts land in the file named at exit
    (appended: two runs add up; a forked child does not write its parent's counts again);
    a build's -D macros named like its variables do not reach into it;
    -DSIRIUS_NO_PATH_COUNTS counts nothing."""
    table, (guard, guard2, took_fused, fell_back, took_coop, no_coop, fell_back2) = _table()
    main = f"""
int main(int argc, char** argv) {{
  int sirius_a1_0 = argc > 1 ? 64 : 32; bool SHIFT_OK = true;
  for (int i = 0; i < 3; ++i) {{ if ({guard}) {{ {took_fused} }} else {{ {fell_back} }} }}
  sirius_a1_0 = 64; SHIFT_OK = false;
  if ({guard}) {{ {took_fused} }} else {{ {fell_back} }}
  if ({guard2}) {{ {no_coop} }} else {{ {fell_back2} }}
  fflush(stdout);
  if (fork() == 0) exit(0);
  wait(0);
  return 0;
}}
"""
    src = tmp_path / "paths.cpp"
    src.write_text(table.header() + "#include <unistd.h>\n#include <sys/wait.h>\n" + main)
    counts_file = tmp_path / "counts.txt"
    names = ["-Dfailed=1", "-Dslot=2", "-Dholds=3", "-Dcondition=4", "-Dconditions=5", "-Dcount=6", "-Dchild=7"]
    for defines in (names, ["-DSIRIUS_NO_PATH_COUNTS"]):
        binary = tmp_path / f"paths{len(defines)}"
        subprocess.run([find_clang(None), "-x", "c++", "-std=c++17", "-Wall", "-Werror", *defines, str(src),
                        "-lstdc++", "-o", str(binary)], check=True, capture_output=True, text=True)
        for _ in range(2):
            subprocess.run([str(binary)], check=True, env={"SIRIUS_PATH_COUNTS": str(counts_file)})
    runs = summarize(regions_of(src.read_text()), read_counts(counts_file))
    assert runs[0].paths == {"original code: guard failed": 8}
    assert runs[0].failed == {"`n`@10 == 64": 6, "SHIFT_OK": 2}
    assert runs[1].paths == {"original code: no cooperative launch on this device": 2}
    assert read_counts(tmp_path / "absent.txt") is None
