"""Every program of the hand-written corpus (cuda_inputs/*.cu) builds.

(a) clang-22 compiles it to device IR (nvptx64) and host IR (x86-64), the way
    the analysis front end does; (b) nvcc compiles it to an object file when
    nvcc is available. Default sizes; nothing is run (no GPU needed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sirius.core.config import DEFAULT_ARCH, resolve_toolchain
from sirius.core.errors import ToolchainError

pytestmark = pytest.mark.toolchain

CORPUS = Path(__file__).resolve().parent.parent / "cuda_inputs"
PROGRAMS = sorted(CORPUS.glob("*.cu"))

EXPECTED = {
    "bert_qkv",
    "lstm",
    "elementwise_chain",
    "softmax",
    "independent_pair",
    "dependent_pair",
    "gather",
    "aliasing",
    "early_exit",
    "storage_reuse",
    "run_time_sizes",
}

# launch sites in main, as counted in the host IR (calls of
# __cudaPushCallConfiguration); lstm's 9 sites sit in its host loops
LAUNCH_SITES = {
    "bert_qkv": 9,
    "lstm": 9,
    "elementwise_chain": 4,
    "softmax": 4,
    "independent_pair": 2,
    "dependent_pair": 2,
    "gather": 2,
    "aliasing": 3,
    "early_exit": 2,
    "storage_reuse": 4,
    "run_time_sizes": 5,
}

ALLOWED_INCLUDES = {"cstdio", "cstdlib", "cmath", "cuda_runtime.h"}


def _clang_cmd(tc, source: Path, side: str, out: Path) -> list[str]:
    cmd = [
        tc.clang,
        "-x", "cuda",
        f"--cuda-path={tc.cuda_path}",
        f"--cuda-gpu-arch={DEFAULT_ARCH}",
        "-Wno-unknown-cuda-version",
        "-O1", "-S", "-emit-llvm",
        f"--cuda-{side}-only",
    ]
    for inc in tc.extra_include_dirs:
        cmd += ["-isystem", inc]
    return cmd + [str(source), "-o", str(out)]


def _nvcc_cmd(nvcc: str, source: Path, out: Path) -> list[str]:
    return [nvcc, f"-arch={DEFAULT_ARCH}", "-c", "-o", str(out), str(source)]


class Build:
    """Result of one compile: exit status, diagnostics, the output file."""

    def __init__(self, cmd: list[str], out: Path):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        self.returncode = proc.returncode
        self.stderr = proc.stderr
        self.out = out

    def check(self, what: str) -> None:
        assert self.returncode == 0, f"{what} failed:\n{self.stderr}"


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """All compiles of the corpus, run concurrently once per module.

    Keys: (stem, "device" | "host" | "nvcc"); the nvcc entries are absent
    when nvcc is not on PATH, all entries when clang-22 or the CUDA tree is
    missing (then the clang tests skip).
    """
    outdir = tmp_path_factory.mktemp("corpus_builds")
    jobs: dict[tuple[str, str], tuple[list[str], Path]] = {}
    try:
        tc = resolve_toolchain()
    except ToolchainError:
        tc = None
    nvcc = shutil.which("nvcc")
    for source in PROGRAMS:
        if tc is not None:
            for side in ("device", "host"):
                out = outdir / f"{source.stem}.{side}.ll"
                jobs[(source.stem, side)] = (_clang_cmd(tc, source, side, out), out)
        if nvcc is not None:
            out = outdir / f"{source.stem}.o"
            jobs[(source.stem, "nvcc")] = (_nvcc_cmd(nvcc, source, out), out)
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {key: pool.submit(Build, cmd, out) for key, (cmd, out) in jobs.items()}
        return {key: fut.result() for key, fut in futures.items()}


def _clang_ir(builds, source: Path, side: str) -> str:
    build = builds.get((source.stem, side))
    if build is None:
        try:
            resolve_toolchain()
        except ToolchainError as exc:
            pytest.skip(f"toolchain not available: {exc}")
        pytest.fail(f"no {side} build of {source.name}")
    build.check(f"clang ({side}) on {source.name}")
    return build.out.read_text()


def test_corpus_has_the_nine_programs():
    names = {p.stem for p in PROGRAMS}
    missing = EXPECTED - names
    assert not missing, f"missing corpus programs: {sorted(missing)}"
    assert (CORPUS / "README.md").is_file()


@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
def test_program_conventions(source: Path):
    text = source.read_text()
    includes = set(re.findall(r"#include\s*[<\"]([^>\"]+)[>\"]", text))
    assert includes <= ALLOWED_INCLUDES, f"unexpected includes: {sorted(includes - ALLOWED_INCLUDES)}"
    assert "int main(" in text
    assert "cudaMalloc(" in text
    assert "cudaMemcpyHostToDevice" in text and "cudaMemcpyDeviceToHost" in text
    assert 'checksum: %.6f' in text
    assert '"OK"' in text and '"MISMATCH"' in text
    assert "<<<" in text
    assert not re.search(r"\brand\s*\(", text), "inputs must be deterministic formulas"


@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
def test_clang_device_ir(builds, source: Path):
    ir = _clang_ir(builds, source, "device")
    assert "nvptx64" in ir
    kernels = re.findall(r"^define\b.*\bptx_kernel\b", ir, flags=re.M)
    assert kernels, f"no kernel in the device IR of {source.name}"


@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
def test_clang_host_ir(builds, source: Path):
    ir = _clang_ir(builds, source, "host")
    assert re.search(r"^define\b.*@main\(", ir, flags=re.M), "no main in the host IR"
    sites = len(re.findall(r"call\b.*@__cudaPushCallConfiguration\(", ir))
    assert sites >= 1
    if source.stem in LAUNCH_SITES:
        assert sites == LAUNCH_SITES[source.stem]


@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
def test_nvcc_object(builds, source: Path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH: the nvcc build check needs the CUDA toolkit's nvcc")
    build = builds[(source.stem, "nvcc")]
    build.check(f"nvcc on {source.name}")
    assert build.out.stat().st_size > 0
