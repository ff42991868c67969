"""Launches whose grid the host computes at run time (issue: hand-written programs): a
lane of one constant block size fuses for every grid, the fused launch takes the first
launch's grid, and the guard takes the fused path only where the lane's grids are equal;
inside a host loop, what joins two launches of one iteration decides, not what joins
iterations. Verified at several sizes given on the command line, the original launches
running where the grids differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")
PROGRAM = ROOT / "cuda_inputs" / "run_time_sizes.cu"

pytestmark = pytest.mark.toolchain


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600, env=dict(os.environ))


@pytest.fixture(scope="module")
def optimized(tmp_path_factory):
    out = tmp_path_factory.mktemp("grids") / "run_time_sizes.opt.cu"
    report = out.with_suffix(".json")
    proc = sirius("optimize", str(PROGRAM), "-o", str(out), "--report", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(report.read_text()), out


def test_a_lane_fuses_for_every_grid_the_host_computes(optimized):
    summary, report, out = optimized
    assert "launch statements: 5 -> 3" in summary and "launches per run: not known when optimizing" in summary
    assert "vertical, 0 barriers inserted: scale (line 80) -> offset (line 81)" in summary, summary
    assert "vertical, 0 barriers inserted: eliminate (line 85) -> normalise (line 86)" in summary, summary
    domains = [g["domain"] for g in report["groups"] if "domain" in g]
    assert domains == [f"every grid the host computes at run time, where {pair} have one grid (checked before the "
                       "fused launch)" for pair in ("scale (line 80), offset (line 81)",
                                                    "eliminate (line 85), normalise (line 86)")]
    text = out.read_text()
    # launched in the first launch's grid, its grid compared with the second's; n and m passed
    assert "sirius_fused_0<<<sirius_g6, sirius_b6, 0>>>" in text
    assert all(f"sirius_g7.{a} == sirius_g6.{a}" in text for a in "xyz")
    assert "sirius_fused_0(float * s6_x, int s6_n, float s6_s, int s7_n, float s7_c)" in text


def test_near_misses_keep_their_reasons(optimized):
    summary, _, _ = optimized
    # a neighbour's element, written by another thread: not within a thread or a block
    assert "not fused: scale (line 80), neighbour (line 82): global dependence on x" in summary, summary
    # the next iteration reads a row this one wrote in another block: only within an iteration they fuse
    assert ("not fused: normalise (line 86), eliminate (line 85): normalise (line 86) ending an iteration of the "
            "host loop at line 83 and eliminate (line 85) beginning the next: a global dependence on a") in summary


@pytest.mark.parametrize("argv, paths", [
    ((), ("fused launches 1", "fused launches 8")),
    (("300",), ("fused launches 1", "fused launches 8")),
    (("4096", "2000"), ("original code: guard failed 1", "fused launches 8")),
    (("100000", "100000", "3"), ("fused launches 1", "fused launches 3")),
])
def test_verified_at_sizes_from_the_command_line(optimized, argv, paths):
    _, _, out = optimized
    proc = sirius("verify", str(PROGRAM), str(out), "--", *argv)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
    assert f"region 0 (fused, run_time_sizes.cu:80, scale offset neighbour): {paths[0]}" in proc.stdout, proc.stdout
    assert f"region 1 (fused, run_time_sizes.cu:85, eliminate normalise): {paths[1]}" in proc.stdout, proc.stdout
    if argv == ("4096", "2000"):
        assert "guard failed 1x on: grid@81.x == grid@80.x" in proc.stdout, proc.stdout


HAZARDS = ROOT / "tests" / "fusion" / "programs" / "launch_hazards.cu"


def test_what_the_red_team_found_stays_as_written(tmp_path):
    """A macro standing for several launch values (both the fused and the original path
    passed its last value for each), a launch its kernel's ``__launch_bounds__`` refuses
    (fused, its code ran), a status query after a launch whose grid may be empty (fused, the
    failure moved to another query): each launch as written, with its reason; the same query
    after launches of constant shapes is crossed. Verified with an empty grid too."""
    out = tmp_path / "launch_hazards.opt.cu"
    proc = sirius("optimize", str(HAZARDS), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    several = "is written once for several of the launch's values (a macro that expands to a list)"
    for expected in (f"not fused: twice (line 46): LAUNCH_1D(n) {several}",
                     f"not fused: shift_cols (line 50): SHAPE2(s) {several}",
                     "not fused: bounded (line 52): launched with 256 threads per block, over its "
                     "__launch_bounds__(128): the launch fails",
                     "not fused: twice (line 55), inc (line 57): cudaGetLastError (line 56) reads the launch status, "
                     "and the launch of twice (line 55) may fail to launch (its grid is computed at run time)",
                     "vertical, 0 barriers inserted: twice (line 60) -> inc (line 62)"):
        assert expected in proc.stdout, proc.stdout
    for argv in ((), ("0", "10", "10")):
        verify = sirius("verify", str(HAZARDS), str(out), "--", *argv)
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


FRAGMENT_HAZARDS = ROOT / "tests" / "fusion" / "programs" / "fragment_hazards.cu"


def test_what_the_second_red_team_found_stays_as_written(tmp_path):
    """Kernels a fragment copy would change (a second static, ``::blockIdx`` through a macro,
    a default argument naming the caller, cluster dimensions), index reads outside the
    kernel's text (a constructor's initializer, a member initializer, a default argument)
    in a launch that would be re-indexed, and a template kernel over its
    ``__launch_bounds__`` (the attribute group after ``comdat`` was not read): all as
    written, each with its reason; verified."""
    out = tmp_path / "fragment_hazards.opt.cu"
    proc = sirius("optimize", str(FRAGMENT_HAZARDS), "-o", str(out))
    assert proc.returncode == 0 and "launches per run: 16 -> 16" in proc.stdout, proc.stdout + proc.stderr
    reads = "which reads the built-in block and thread indices"
    for expected in ("counted (line 39): the kernel cannot be written as a fragment: its body declares a static",
                     "global_id (line 42): the kernel cannot be written as a fragment: it reads ::blockIdx",
                     "logs (line 54): the kernel cannot be written as a fragment: it calls note, whose default "
                     "argument names the function it is called from",
                     "clustered (line 57): the kernel cannot be written as a fragment: it is declared with "
                     "__cluster_dims__",
                     "void bounded<32> (line 60): launched with 64 threads per block, over its __launch_bounds__(32)",
                     f"ctor_id calls ThreadCtx, {reads}", f"member_id calls Lane, {reads}",
                     f"default_id calls flat, {reads}"):
        assert expected in proc.stdout, proc.stdout
    verify = sirius("verify", str(FRAGMENT_HAZARDS), str(out))
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
