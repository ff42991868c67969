"""`sirius check`: optimize, verify, thresholds; exit 0 when all hold, 1 when one fails
(naming it and by how much), 2 on error; the JSON and JUnit outputs say the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[1]
CHAIN = str(ROOT / "cuda_inputs" / "elementwise_chain.cu")  # 4 launches -> 1
SIRIUS = str(Path(sys.executable).parent / "sirius")


def sirius(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SIRIUS, *args], capture_output=True, text=True, timeout=600)


def test_a_program_that_verifies_and_meets_the_threshold_passes(tmp_path):
    out, js, junit = tmp_path / "out.cu", tmp_path / "check.json", tmp_path / "check.xml"
    proc = sirius("check", CHAIN, "--min-launch-reduction", "4", "-o", str(out), "--json", str(js),
                  "--junit", str(junit))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check " in proc.stdout and ": PASSED" in proc.stdout
    assert "pass launch-reduction: 4 -> 1 launches per run: 4.00x, above the threshold by 0.00" in proc.stdout
    assert "sirius_fused_0" in out.read_text()  # -o keeps the optimized program
    data = json.loads(js.read_text())
    assert "pass fused-code: 1 of 1 fused regions took their fused path in the verified run" in proc.stdout
    assert data["passed"] and [(c["name"], c["passed"]) for c in data["checks"]] == [
        ("verify", True), ("fused-code", True), ("launch-reduction", True)]
    assert data["checks"][2]["value"] == 4.0 and data["report"]["launches_after"] == 1
    assert [(r["kind"], r["paths"]) for r in data["region_paths"]] == [("fused", {"fused launches": 1})]
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "3" and suite.get("failures") == "0"
    assert [c.get("name").split(":")[0] for c in suite.iter("testcase")] == ["verify", "fused-code",
                                                                             "launch-reduction"]


def test_a_threshold_that_fails_exits_1_and_says_by_how_much(tmp_path):
    junit, out = tmp_path / "check.xml", tmp_path / "out.cu"
    proc = sirius("check", CHAIN, "--min-launch-reduction", "6.5", "--junit", str(junit), "-o", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert not out.exists()  # a failed check leaves nothing a build could compile
    assert "FAIL launch-reduction: 4 -> 1 launches per run: 4.00x, below the threshold by 2.50" in proc.stdout
    assert "pass verify: result: all equal (cpu backend)" in proc.stdout
    failures = list(ET.parse(junit).getroot().iter("failure"))
    assert len(failures) == 1 and failures[0].get("message").startswith("4 -> 1 launches per run")


def test_a_difference_found_by_verification_exits_1(tmp_path):
    # each run prints its own process id: the outputs of original and optimized differ
    p = tmp_path / "pid.cu"
    p.write_text("#include <cstdio>\n#include <unistd.h>\n"
                 "__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n"
                 "__global__ void m(float* a) { a[threadIdx.x] *= 2.0f; }\n"
                 "int main() { float* a; cudaMalloc(&a, 128); k<<<1, 32>>>(a); m<<<1, 32>>>(a);\n"
                 "  cudaDeviceSynchronize(); printf(\"pid %d\\n\", (int)getpid()); return 0; }\n")
    proc = sirius("check", str(p), "--json", "-")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL verify: result: DIFFERENT (cpu backend)" in proc.stdout
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert data["passed"] is False and data["checks"][0]["name"] == "verify"


@pytest.mark.parametrize("args, message", [
    (("missing.cu",), "no such file"),
    ((CHAIN, "--min-launch-reduction", "-1"), "must be positive"),
    ((CHAIN, "--passes", "fold-everything"), "unknown pass"),
])
def test_bad_input_exits_2(args, message):
    proc = sirius("check", *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_an_original_that_fails_exits_2(tmp_path):
    p = tmp_path / "three.cu"
    p.write_text("#include <cstdio>\n__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n"
                 "int main() { float* a; cudaMalloc(&a, 128); k<<<1, 32>>>(a); cudaDeviceSynchronize();\n"
                 "  printf(\"done\\n\"); return 3; }\n")
    proc = sirius("check", str(p))
    assert proc.returncode == 2 and "the original program exited with status 3" in proc.stderr, proc.stderr


def test_a_predicted_speedup_threshold_says_it_is_predicted(tmp_path):
    js = tmp_path / "check.json"
    proc = sirius("check", CHAIN, "--min-speedup", "1.5", "--predicted", "--json", str(js))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    speedup = next(c for c in json.loads(js.read_text())["checks"] if c["name"] == "speedup")
    assert speedup["passed"] and speedup["value"] >= 1.5 and "predicted by the cost model, not measured" in speedup["detail"]
    failing = sirius("check", CHAIN, "--min-speedup", "100", "--predicted")
    assert failing.returncode == 1 and "FAIL speedup" in failing.stdout and "below the threshold" in failing.stdout


def test_a_measured_speedup_threshold_without_a_gpu_is_bad_input():
    proc = subprocess.run([SIRIUS, "check", CHAIN, "--min-speedup", "1.1"], capture_output=True, text=True,
                          env={**os.environ, "PATH": "/usr/bin:/bin"})  # no nvidia-smi
    assert proc.returncode == 2 and "needs a GPU to measure on" in proc.stderr and "--predicted" in proc.stderr


def test_a_verification_that_ran_no_fused_code_fails_the_check(tmp_path):
    """Built so that no cooperative launch is possible (as on a device without them), the
    cooperative region runs its original launches: equal, but nothing fused was compared."""
    js = tmp_path / "check.json"
    proc = sirius("check", str(ROOT / "cuda_inputs" / "dependent_pair.cu"), "--cooperative",
                  "-DSIRIUS_COOPERATIVE_MAX_BLOCKS=0", "--json", str(js))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pass verify: result: all equal" in proc.stdout
    assert "FAIL fused-code: 0 of 1 fused regions took their fused path in the verified run" in proc.stdout
    assert "original code: no cooperative launch on this device 1" in proc.stdout
    (region,) = json.loads(js.read_text())["region_paths"]
    assert region["kind"] == "cooperative" and region["fused_runs"] == 0 and region["runs"] == 1


def test_a_run_that_writes_no_path_counts_is_not_evidence_and_prints_alike(tmp_path):
    """The program prints where verify's files go (both runs are told the same names) and
    leaves through quick_exit, so no static destructor writes the path counts: the check
    says the counts are missing, not that the region was not reached."""
    p = tmp_path / "quick.cu"
    text = Path(CHAIN).read_text().replace("#include <cstdio>", "#include <cstdio>\n#include <cstdlib>")
    assert "  return ok ? 0 : 1;\n}" in text
    p.write_text(text.replace("  return ok ? 0 : 1;\n}", '  printf("%s %s\\n", getenv("SIRIUS_PATH_COUNTS"), '
                              'getenv("SIRIUS_DUMP"));\n  fflush(stdout);\n  std::quick_exit(ok ? 0 : 1);\n}'))
    proc = sirius("check", str(p))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pass verify: result: all equal" in proc.stdout, proc.stdout
    assert "FAIL fused-code: the verified run wrote no path counts for its 1 fused regions" in proc.stdout
    assert "not reached" not in proc.stdout
