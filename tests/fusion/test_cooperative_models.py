"""The cooperative candidate of every TVM model (``sirius optimize --cooperative``, what
``sirius tune`` offers as auto+cooperative) at the small configuration: the cooperative
launches run (not the fallback) and the results equal the original's on the CPU backend,
which runs all blocks of a cooperative grid at once. The LSTM's step loop becomes waves of
(step, layer) cells (fusion/cell_waves.py). seq2seq and deepspeech2, whose step bodies
hold a layer's copies among other launches, run with --persistent as well: each step loop
one cooperative launch (the body one copy of itself; their steps' cooperative launches
without --persistent are the same phases). bert_fp16 (bert_fp32's graph in half
precision, whose clang compiles take minutes) runs with SIRIUS_SLOW_TESTS=1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
SIRIUS = str(Path(sys.executable).parent / "sirius")
# (the front end's compile of these six at the small size is tests/test_model_corpus.py's clang check)
MODELS = ["bert_fp32", "lstm", "resnext", "nasnet", "seq2seq", "deepspeech2"] + (
    ["bert_fp16"] if os.environ.get("SIRIUS_SLOW_TESTS") == "1" else [])


# launches per run at the small size of the models whose step loop runs as one launch with --persistent
WHOLE_LOOP = {"seq2seq": 68, "deepspeech2": 34}


def sirius(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("model", MODELS)
def test_the_cooperative_candidate_runs_and_verifies_at_the_small_size(model, tmp_path):
    original = ROOT / "cuda_inputs" / "models" / f"{model}.cu"
    out, log = tmp_path / f"{model}.coop.cu", tmp_path / "launches.txt"
    whole_loop = model in WHOLE_LOOP
    proc = sirius("optimize", str(original), "-DSIRIUS_SMALL", "--cooperative", *(("--persistent",) if whole_loop else ()),
                  "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    cells = model == "lstm"  # its step loop's body is ten (small: three) copies of one layer: waves of cells
    expected = "waves of cells" if cells else "one cooperative launch"
    assert expected in proc.stdout and "violations undone" not in proc.stdout, proc.stdout
    if whole_loop:  # the prologue's cooperative launch, then the step loop's
        assert f"launches per run: {WHOLE_LOOP[model]} -> 2" in proc.stdout, proc.stdout
    # verify runs the original, then the optimized program: the log ends up holding the latter's launches
    verify = sirius("verify", str(original), str(out), "-DSIRIUS_SMALL", env={"SIRIUS_LAUNCH_LOG": str(log)})
    assert verify.returncode == 0 and "result: all equal" in verify.stdout, verify.stdout + verify.stderr
    names = log.read_text().split()
    if cells:  # 4 steps x 3 layers: one launch per anti-diagonal, and nothing else
        assert names == ["sirius_cells_0"] * 6, names
    if whole_loop:
        assert sorted(names) == ["sirius_cells_1", "sirius_coop_0"], names
    assert any(name.startswith(("sirius_coop_", "sirius_cells_")) for name in names), "the fallback ran instead"
