"""Host synchronizations between launches (sirius/analysis/host_observation.py, sirius/fusion/regions.py):
one the host cannot observe device work through does not keep launches apart; one it can
(managed memory, host memory a kernel writes, a kernel that prints), and a read of device
data back to the host, do, and say why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

PROGRAM = Path(__file__).parent / "programs" / "sync_after_every_launch.cu"
SIRIUS = str(Path(sys.executable).parent / "sirius")


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def optimize(program: Path, tmp_path: Path) -> tuple[dict, str, Path]:
    out, rep = tmp_path / "out.cu", tmp_path / "report.json"
    proc = sirius("optimize", str(program), "-o", str(out), "--report", str(rep))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(rep.read_text()), proc.stdout, out


def variant(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = PROGRAM.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "variant.cu"
    path.write_text(text)
    return path


def test_syncs_and_error_checks_after_every_launch_do_not_keep_launches_apart(tmp_path):
    rep, summary, out = optimize(PROGRAM, tmp_path)
    assert (rep["launches_before"], rep["launches_after"]) == (3, 1)
    assert rep["refused"] == []
    (group,) = rep["groups"]
    assert group["across_syncs"] == [{"call": "cudaDeviceSynchronize", "line": 35},
                                     {"call": "cudaStreamSynchronize", "line": 38}]
    assert "runs across cudaDeviceSynchronize (line 35), cudaStreamSynchronize (line 38)" in summary
    text = out.read_text()
    # the synchronizations and error checks stay; the last one follows the fused launch
    assert text.count("cudaDeviceSynchronize()") == 2 and text.count("cudaGetLastError()") == 2
    assert text.index("sirius_fused_0<<<") < text.rindex("CHECK(cudaDeviceSynchronize())")
    proc = sirius("verify", str(PROGRAM), str(out))
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("edit, why", [
    (("CHECK(cudaMalloc(&y, n * sizeof(float)));", "CHECK(cudaMallocManaged(&y, n * sizeof(float)));"),
     "managed memory"),
    (("  if (i < n) z[i] = y[i] + 1.0f;", "  if (i < n) z[i] = y[i] + 1.0f; if (i == 0) printf(\"z0 %f\\n\", z[0]);"),
     "shift prints"),
    (("CHECK(cudaMalloc(&y, n * sizeof(float)));", "CHECK(cudaMallocHost(&y, n * sizeof(float)));"),
     "points to"),
    (("  if (i < n) y[i] = 2.0f * x[i];", "  if (i < n) y[i] = 2.0f * x[i]; if (i < n && x[i] > 1e30f) __trap();"),
     "scale may stop at a device assert or trap"),
], ids=["managed", "device-printf", "pinned-host", "device-trap"])
def test_a_sync_the_host_may_observe_through_keeps_launches_apart(tmp_path, edit, why):
    rep, summary, _ = optimize(variant(tmp_path, edit), tmp_path)
    assert rep["launches_after"] > 1
    reasons = [r["reason"] for r in rep["refused"]]
    assert any("cudaDeviceSynchronize at line 35" in r and "the host may observe device work there" in r
               and why in r for r in reasons), reasons


def test_a_read_back_to_the_host_between_launches_keeps_them_apart(tmp_path):
    path = variant(tmp_path, ("  CHECK(cudaStreamSynchronize(0));\n",
                              "  CHECK(cudaMemcpy(h, z, sizeof(float), cudaMemcpyDeviceToHost));\n"))
    rep, summary, out = optimize(path, tmp_path)
    assert rep["launches_after"] == 2
    assert [g["across_syncs"] for g in rep["groups"]] == [[{"call": "cudaDeviceSynchronize", "line": 35}]]
    assert any("cudaMemcpy (DeviceToHost) at line 38" in r["reason"] for r in rep["refused"]), rep["refused"]
    proc = sirius("verify", str(path), str(out))
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


EXPLICIT_CHECK = ('''  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  shift''', '''  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    fprintf(stderr, "scale failed: %s {\\n", cudaGetErrorString(err));
    return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) exit(2);
  shift''')


def test_an_error_check_that_leaves_the_program_is_no_control_flow(tmp_path):
    path = variant(tmp_path, EXPLICIT_CHECK)
    rep, _, out = optimize(path, tmp_path)
    assert rep["launches_after"] == 1 and rep["refused"] == []
    proc = sirius("verify", str(path), str(out))
    assert proc.returncode == 0 and "result: all equal" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("edit", [
    ("    return 1;\n  }\n", "    return 1;\n  } else {\n    printf(\"scale ran\\n\");\n  }\n"),  # the else path goes on
    ("    return 1;\n  }\n", "    printf(\"scale failed\\n\");\n  }\n"),  # the branch does not leave
], ids=["else", "stays"])
def test_other_control_flow_between_launches_keeps_them_apart(tmp_path, edit):
    rep, _, _ = optimize(variant(tmp_path, EXPLICIT_CHECK, edit), tmp_path)
    assert [([m["kernel"] for m in r["launches"]], r["reason"]) for r in rep["refused"]] == [
        (["scale", "shift"], "control flow between them in the source")]


def test_a_return_outside_main_is_control_flow(tmp_path):
    # in a helper, returning goes back to a caller that may read what the first launch wrote
    text = variant(tmp_path, EXPLICIT_CHECK).read_text()
    text = text.replace("int main() {", "__attribute__((noinline)) int run() {").replace("  return 0;\n}\n", "  return 0;\n}\n"
                                                                       "int main() { return run(); }\n")
    path = tmp_path / "helper.cu"
    path.write_text(text)
    rep, _, _ = optimize(path, tmp_path)
    assert any(r["reason"] == "control flow between them in the source" for r in rep["refused"]), rep["refused"]


def test_kernels_that_print_are_not_fused(tmp_path):
    # the second kernel's lines follow all of the first's; fused, each thread would print both in turn
    path = tmp_path / "prints.cu"
    path.write_text('#include <cstdio>\n'
                    '__global__ void a(float* x) { x[threadIdx.x] = 1.0f; printf("a %d\\n", (int)threadIdx.x); }\n'
                    '__global__ void b(float* x) { x[threadIdx.x] += 1.0f; printf("b %d\\n", (int)threadIdx.x); }\n'
                    'int main() { float* x; cudaMalloc(&x, 256); a<<<1, 4>>>(x); b<<<1, 4>>>(x);\n'
                    '  cudaDeviceSynchronize(); return 0; }\n')
    rep, _, _ = optimize(path, tmp_path)
    assert rep["launches_after"] == 2
    assert [r["reason"].split(":")[0] for r in rep["refused"]] == ["kernel prints (device printf at line 2)",
                                                                   "kernel prints (device printf at line 3)"]
