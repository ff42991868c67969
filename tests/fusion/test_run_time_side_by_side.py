"""Independent launches whose grids the host computes at run time, side by side in one
launch and as phases of a cooperative launch (issue: hand-written programs, parametric
fusion): the fused kernel is passed each such grid and adds up their blocks; the guard
takes the fused path only where each grid is one its launch could run in. Verified at
sizes from the command line, including sizes where the guard fails (the original
launches run), and, for the cooperative launches, with few resident blocks and with none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")
PROGRAMS = ROOT / "tests" / "fusion" / "programs"
SIDE_BY_SIDE = PROGRAMS / "run_time_side_by_side.cu"
PHASES = PROGRAMS / "run_time_phases.cu"

pytestmark = pytest.mark.toolchain


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600, env=dict(os.environ))


def optimize(program: Path, out: Path, *options: str) -> tuple[str, dict]:
    report = out.with_suffix(".json")
    proc = sirius("optimize", str(program), "-o", str(out), "--report", str(report), *options)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(report.read_text())


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory):
    out = tmp_path_factory.mktemp("side_by_side") / "run_time_side_by_side.opt.cu"
    return (*optimize(SIDE_BY_SIDE, out), out)


def test_independent_launches_of_run_time_grids_run_side_by_side(side_by_side):
    summary, report, out = side_by_side
    assert "launches per run: 7 -> 4" in summary, summary
    assert "horizontal, 0 barriers inserted: scale (line 69) | bias (line 70) | fill (line 73) | clear (line 74)" \
        in summary, summary
    (group,) = [g for g in report["groups"] if "domain" in g]
    assert group["domain"] == ("every grid the host computes at run time, side by side: scale (line 69); bias "
                               "(line 70); fill (line 73); clear (line 74); where each grid is one its launch can "
                               "run in and all their blocks fit one grid (checked before the fused launch)")
    text = out.read_text()
    assert "const dim3 sirius_grid9, const dim3 sirius_grid10, const dim3 sirius_grid11) {" in text
    assert "sirius_fused_0<<<dim3(4u + sirius_g9.x * sirius_g9.y * sirius_g9.z + " in text


def test_near_misses_beside_run_time_grids_keep_their_reasons(side_by_side):
    summary, _, _ = side_by_side
    for expected in ("not fused: square (line 79), negate (line 80): a block is computed at run time",
                     "not fused: negate (line 80), negate (line 81): global dependence on v",
                     "not fused: clear (line 74), square (line 79): cudaGetLastError (line 75) reads the launch "
                     "status"):
        assert expected in summary, summary


@pytest.mark.parametrize("argv, path", [
    ((), "fused launches 1"),
    (("70000", "33", "1", "1100"), "fused launches 1"),  # a 1 x 69 grid of 2-D blocks
    (("1", "0", "1", "1"), "original code: guard failed 1"),  # bias's grid of 0 blocks fails as written
])
def test_side_by_side_verified_at_sizes_from_the_command_line(side_by_side, argv, path):
    _, _, out = side_by_side
    proc = sirius("verify", str(SIDE_BY_SIDE), str(out), "--", *argv)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
    assert f"region 0 (fused, run_time_side_by_side.cu:69, scale bias fill clear): {path}" in proc.stdout, \
        proc.stdout
    if argv == ("1", "0", "1", "1"):
        assert "guard failed 1x on: grid@70.x >= 1u && grid@70.x <= 2147483647u" in proc.stdout, proc.stdout


@pytest.fixture(scope="module")
def phases(tmp_path_factory):
    out = tmp_path_factory.mktemp("phases") / "run_time_phases.opt.cu"
    return (*optimize(PHASES, out, "--cooperative"), out)


def test_run_time_grids_are_cooperative_phases(phases):
    """A region of run-time grids is one cooperative launch; an elimination whose 2-D grid
    shrinks with the pivot is one cooperative launch of two phases per step (its update
    reads the column the step scaled: the grid read as (x, y), not y folded into x)."""
    summary, _, out = phases
    assert "launches per run: 98 -> 48" in summary, summary
    assert ("sirius_coop_0 (region 0): one cooperative launch, 3 phases, 2 grid barriers: scale (line 73), "
            "bias (line 75) | neighbour (line 74) | gather (line 76)") in summary, summary
    assert ("sirius_coop_1 (region 1): one cooperative launch, 2 phases, 1 grid barriers: scale_column (line 78) | "
            "update (line 79)") in summary, summary
    text = out.read_text()
    assert "for (unsigned sirius_vb = blockIdx.x; sirius_vb < sirius_grid13.x * sirius_grid13.y * sirius_grid13.z; " \
        "sirius_vb += gridDim.x) {" in text
    assert "unsigned sirius_most = 0u; if (sirius_g12.x * sirius_g12.y * sirius_g12.z > sirius_most)" in text


def test_a_shrinking_2d_grid_is_read_with_its_rows(tmp_path):
    """Without --cooperative the elimination's two launches stay apart: update reads what
    scale_column wrote (the grid's y, folded by the compiler into the packed x and y, was
    read as 0 rows: no instance, no dependence, and the two would have run side by side)."""
    summary, _ = optimize(PHASES, tmp_path / "default.opt.cu")
    assert "not fused: scale_column (line 78), update (line 79): global dependence on a" in summary, summary


def test_run_time_phases_verified(phases):
    """At other sizes than optimized for (with few resident blocks and with none: the
    persistent program below holds the same cooperative region)."""
    _, _, out = phases
    proc = sirius("verify", str(PHASES), str(out), "--", "5000", "4000")
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
    assert "region 0 (cooperative, run_time_phases.cu:73, scale neighbour bias gather): cooperative launch 1" \
        in proc.stdout, proc.stdout
    assert "region 1 (cooperative, run_time_phases.cu:78, scale_column update): cooperative launch 47" in proc.stdout


@pytest.fixture(scope="module")
def persistent(tmp_path_factory):
    out = tmp_path_factory.mktemp("persistent") / "run_time_phases.persistent.cu"
    return (*optimize(PHASES, out, "--cooperative", "--persistent"), out)


def test_a_loop_whose_grid_shrinks_with_the_step_is_one_launch(persistent):
    """With --persistent the elimination loop runs in one cooperative kernel, which computes
    each step's grid from the step (floors in the program's own rounding); the host checks
    each launch's grid against the same formula before taking that path."""
    summary, _, out = persistent
    assert "launches per run: 98 -> 2" in summary, summary
    assert ("sirius_cells_1: the loop of 47 steps in one cooperative launch, its 2 launches per step as phases, a "
            "grid barrier between two steps and 1 within each: scale_column (line 78) | update (line 79)") in summary
    text = out.read_text()
    assert ("const dim3 sirius_grid13((unsigned)((((sirius_floord(((-1LL) * (long long)(sirius_w) + (78LL)), 32LL))) "
            "- 134217728LL * sirius_floord((sirius_floord(((-1LL) * (long long)(sirius_w) + (78LL)), 32LL)), "
            "134217728LL))), (unsigned)((-1LL) * (long long)(sirius_w) + (47LL)), (unsigned)((1LL)));") in text
    assert "(long long)sirius_g13.y == ((-1LL) * (long long)(sirius_trip) + (47LL))" in text


@pytest.mark.parametrize("argv, define, path", [
    ((), None, ("waves of cells", "cooperative launch")),
    (("2", "1"), "SIRIUS_COOPERATIVE_MAX_BLOCKS=3", ("waves of cells", "cooperative launch")),
    ((), "SIRIUS_COOPERATIVE_MAX_BLOCKS=0", ("original code: no cooperative launch on this device",) * 2),
])
def test_the_shrinking_loop_in_one_launch_verified(persistent, argv, define, path):
    """The loop in one launch, and the cooperative region before it (its phases interleave
    passed grids and arguments: the order the red team found broken)."""
    _, _, out = persistent
    proc = sirius("verify", str(PHASES), str(out), *([f"-D{define}"] if define else []), "--", *argv)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
    assert f"(waves, run_time_phases.cu:78, scale_column update): {path[0]} 1" in proc.stdout, proc.stdout
    assert f"(cooperative, run_time_phases.cu:73, scale neighbour bias gather): {path[1]} 1" in proc.stdout, \
        proc.stdout


NEAR_MISSES = PROGRAMS / "step_grid_near_misses.cu"


@pytest.mark.parametrize("case, launches, reason", [
    (1, "4 -> 4", "the grid of shift (line 43) is not a function of the loop's iterator that the kernel can compute"),
    (2, "4 -> 4", "the grid of shift (line 48) is not a function of the loop's iterator that the kernel can compute"),
    (3, "4 -> 4", "at step 3 the grid of shift (line 52) is (0, 1, 1): the launch fails as written"),
    # found by the blind red team of these loops: the lane ran its second launch in the first's grid
    (4, "16 -> 8", "at step 0 bump (line 59) and bump (line 60), one lane, have the grids (1, 1, 1) and (4, 1, 1): a "
                  "lane runs in one grid"),
    # ... the kernel counted 2^32 + 32768 blocks in 32 bits, and a helper's calls ran again on the fallback
    (5, "2 -> 2", "at step 1 a phase has 4295000064 blocks, more than one grid may have"),
    (6, "4 -> 4", "the repeated launches are not one loop: the loop body holds statements other than declarations "
                  "and launches that change nothing"),
])
def test_loops_of_step_grids_one_kernel_cannot_run_keep_their_reasons(tmp_path, case, launches, reason):
    out = tmp_path / "out.cu"
    proc = sirius("optimize", str(NEAR_MISSES), f"-DCASE={case}", "--cooperative", "--persistent", "-o", str(out))
    assert proc.returncode == 0 and f"launches per run: {launches}" in proc.stdout, proc.stdout + proc.stderr
    assert f"no waves over (step, layer): {reason}" in proc.stdout, proc.stdout
    if case == 4:  # each step's pair is one launch where its grids agree (steps 6 and 7), else the two launches
        verify = sirius("verify", str(NEAR_MISSES), str(out), "-DCASE=4")
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr


def test_a_grid_a_macro_builds_is_a_pure_launch_of_the_loop(tmp_path):
    """``<<<SHIFT_GRID(k), 256>>>`` with the macro building a ``dim3``: building one calls
    nothing the check run could repeat (found by the blind red team: the purity of a
    launch's configuration first took the macro's ``dim3(`` for a call)."""
    out = tmp_path / "out.cu"
    proc = sirius("optimize", str(NEAR_MISSES), "-DCASE=7", "--cooperative", "--persistent", "-o", str(out))
    assert proc.returncode == 0 and "launches per run: 4 -> 1" in proc.stdout, proc.stdout + proc.stderr
