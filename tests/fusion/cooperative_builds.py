"""Verify a cooperative program in the three builds that matter: every block resident,
three resident blocks (each running many virtual blocks), and none (the device cannot
launch cooperatively: the original code runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SIRIUS = str(Path(sys.executable).parent / "sirius")


def assert_equal_in_three_builds(original: Path, optimized: Path, fused_path: str) -> None:
    """``optimized`` computes what ``original`` does in each build, and took ``fused_path``
    (as `sirius verify` counts it: "cooperative launch", "waves of cells") where it could."""
    for blocks in (None, 3, 0):
        flags = [] if blocks is None else [f"-DSIRIUS_COOPERATIVE_MAX_BLOCKS={blocks}"]
        verify = subprocess.run([SIRIUS, "verify", str(original), str(optimized), *flags], capture_output=True,
                                text=True, timeout=600)
        assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
        took = "no cooperative launch on this device 1" if blocks == 0 else f"{fused_path} 1"
        assert took in verify.stdout, verify.stdout
