"""Redundant barrier elimination (fusion/redundant_barriers.py): the IR before and after
the pass on a small program, what stays when the analysis cannot prove a barrier idle,
and the program verifying."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fusion.pass_ir import ir_before_and_after

pytestmark = pytest.mark.toolchain

PROGRAM = Path(__file__).parents[1] / "filecheck" / "optimize_redundant_barriers.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")
# row_max's second barrier, the one that orders nothing
IDLE_LINE = PROGRAM.read_text().split("\n").index("  if (threadIdx.x == 0) m[blockIdx.x] = result;")


def _lanes(path: Path):
    before, after, state = ir_before_and_after(path, ("redundant-barriers",), keep=lambda line: line.startswith("    "))
    return {"promises": before, "passes": after}, state


def test_ir_before_and_after_the_pass():
    printed, state = _lanes(PROGRAM)
    assert printed["promises"] == [
        "    S6 row_max grid 64x1x1 block 256x1x1 (s6_x, s6_m)",
        "    S7 reverse grid 64x1x1 block 256x1x1 (s7_x, s7_w)",
        "    barrier: block dependence S6 -> S8 on m",
        "    S8 shift grid 64x1x1 block 256x1x1 (s8_w, s8_m, s8_y)",
        "    barrier: block dependence S6 -> S9 on m",
        "    S9 scale grid 64x1x1 block 256x1x1 (s9_x, s9_m, s9_z)"]
    assert printed["passes"] == [
        "    S6 row_max grid 64x1x1 block 256x1x1 (s6_x, s6_m)",
        f"      own barriers removed at lines {IDLE_LINE}",
        "    S7 reverse grid 64x1x1 block 256x1x1 (s7_x, s7_w)",
        "    S8 shift grid 64x1x1 block 256x1x1 (s8_w, s8_m, s8_y)",
        "    S9 scale grid 64x1x1 block 256x1x1 (s9_x, s9_m, s9_z)"]
    assert state.pass_changes == {"redundant-barriers": [
        "sirius_fused_0: barriers removed: 2 placed between fragments; 1 of the fragments' own"]}


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = PROGRAM.read_text()
    assert old in text
    out = tmp_path / "variant.cu"
    out.write_text(text.replace(old, new, 1))
    return out


def test_without_the_barrier_between_a_placed_barrier_stays(tmp_path):
    """reverse's barrier is what made the placed ones redundant: without it (each thread
    copies its own element) the first placed barrier stays and covers the second."""
    path = _variant(tmp_path, "w[blockIdx.x * COLS + threadIdx.x] = row[COLS - 1 - threadIdx.x];",
                    "w[blockIdx.x * COLS + threadIdx.x] = row[threadIdx.x];")
    path.write_text(path.read_text().replace("  row[threadIdx.x] = x[blockIdx.x * COLS + threadIdx.x];\n"
                                             "  __syncthreads();\n", "  row[threadIdx.x] = x[blockIdx.x * COLS + threadIdx.x];\n"))
    printed, _ = _lanes(path)
    assert [line for line in printed["passes"] if "barrier" in line] == [
        f"      own barriers removed at lines {IDLE_LINE}",
        "    barrier: block dependence S6 -> S8 on m; block dependence S6 -> S9 on m"]  # it keeps both now


def test_a_barrier_before_a_warp_operation_stays(tmp_path):
    """A barrier also reconverges the warp: before ``__activemask()`` it is not removed even
    though it orders no memory dependence."""
    path = _variant(tmp_path, "  if (threadIdx.x == 0) m[blockIdx.x] = result;",
                    "  unsigned live = __activemask();\n  if (threadIdx.x == 0 && live) m[blockIdx.x] = result;")
    printed, _ = _lanes(path)
    assert not any("own barriers removed" in line for line in printed["passes"])


def test_an_access_the_analysis_cannot_read_orders_every_barrier(monkeypatch):
    """An access map isl cannot read (as clang's ``name (.0)`` shared arrays once were) is
    taken to touch every element in every thread: no barrier is judged idle for it."""
    import sirius.analysis.barrier_deps as barrier_deps
    from sirius.analysis.program_model import AccessMap

    real = barrier_deps.instance_maps

    def unreadable(*args, **kwargs):
        return [AccessMap(m.access, m.isl.replace("[", "[(.0)", 1), m.buffer, m.exact)
                if m.access.space == "shared" else m for m in real(*args, **kwargs)]

    monkeypatch.setattr(barrier_deps, "instance_maps", unreadable)
    printed, _ = _lanes(PROGRAM)
    assert not any("own barriers removed" in line for line in printed["passes"])


def test_the_program_verifies_and_the_pass_is_reported(tmp_path):
    out = tmp_path / "out.cu"
    proc = subprocess.run([SIRIUS, "optimize", str(PROGRAM), "-o", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "pass redundant-barriers: sirius_fused_0: barriers removed: 2 placed between fragments" in proc.stdout
    assert "vertical, 0 barriers inserted" in proc.stdout
    proc = subprocess.run([SIRIUS, "verify", str(PROGRAM), str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


def test_a_barrier_ordering_a_store_and_a_byte_read_of_it_stays(tmp_path):
    """Accesses are byte ranges: reverse's threads read, through an ``unsigned char*``, the
    last byte of the next thread's 4-byte element. The first bytes of the two accesses never
    meet, their ranges do: reverse's own barrier orders them and stays."""
    path = _variant(tmp_path, "w[blockIdx.x * COLS + threadIdx.x] = row[COLS - 1 - threadIdx.x];",
                    "w[blockIdx.x * COLS + threadIdx.x] = row[threadIdx.x] + "
                    "(float)((const unsigned char*)row)[(4 * threadIdx.x + 7) % (4 * COLS)];")
    printed, _ = _lanes(path)
    assert [line for line in printed["passes"] if "own barriers removed" in line] == [
        f"      own barriers removed at lines {IDLE_LINE}"]  # row_max's idle one only
    out = tmp_path / "out.cu"
    proc = subprocess.run([SIRIUS, "optimize", str(path), "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([SIRIUS, "verify", str(path), str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


def test_a_truncating_division_is_no_floor(tmp_path):
    """C's ``/`` truncates: ``(tx - T) / T + 1`` is 1 for every thread but the first, which
    read their neighbour's element after the barrier; the barrier stays."""
    program = Path(__file__).parent / "programs" / "truncating_division.cu"
    out = tmp_path / "out.cu"
    proc = subprocess.run([SIRIUS, "optimize", str(program), "-o", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and "launches per run: 2 -> 1" in proc.stdout, proc.stdout + proc.stderr
    assert "barrier removed" not in out.read_text()
    proc = subprocess.run([SIRIUS, "verify", str(program), str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr
