"""The TVM model corpus (cuda_inputs/models/, made by scripts/gen_tvm_models.py).

Needs no TVM: the programs and their manifest are committed.

(a) the manifest matches the programs (kernels and launch sites per
    configuration, sizes, one file per model);
(b) every program compiles, in both configurations, with clang-22 to device
    and host IR the way the analysis front end does, and with nvcc -arch=sm_90
    when nvcc is available. The front end itself compiles six of the models in
    both configurations in other tests (full: tests/fusion/test_optimize_corpus.py,
    small: tests/fusion/test_cooperative_models.py), so clang compiles here only
    bert_fp16, which those leave out (clang spends about 30 s of CPU per compile
    of its float16 kernels, overload resolution of the half operators, so its
    full configuration is compiled only when SIRIUS_SLOW_TESTS=1; the small one,
    the same kernels at other sizes, always is);
(c) the small configuration (-DSIRIUS_SMALL) runs on the CPU execution backend
    and prints, for every output, the checksum of the NumPy reference stored
    in the manifest (within the model's tolerance).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pytest

from sirius.core.config import DEFAULT_ARCH, resolve_toolchain
from sirius.core.errors import ToolchainError

MODELS_DIR = Path(__file__).resolve().parent.parent / "cuda_inputs" / "models"
MANIFEST = json.loads((MODELS_DIR / "manifest.json").read_text())
ENTRIES = MANIFEST["models"]
NAMES = list(ENTRIES)
CONFIGS = ("full", "small")
EXPECTED_MODELS = {"bert_fp32", "bert_fp16", "lstm", "resnext", "nasnet", "seq2seq", "deepspeech2"}
CHECKSUM = re.compile(r"^output (\S+): checksum: (\S+)$", re.M)
KERNEL_DEF = re.compile(r'^extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(.*\{\s*$', re.M)
LAUNCH = re.compile(r"^\s*(\w+)<<<", re.M)
# clang compiles (model, config) left to SIRIUS_SLOW_TESTS=1, see the docstring
SLOW_CLANG = {("bert_fp16", "full")}
SLOW = os.environ.get("SIRIUS_SLOW_TESTS") == "1"
# what the front end compiles in the optimizer's tests (this test's clang flags, plus line tables and
# the managed-variable header; see the docstring)
FRONT_END_COMPILES = {(name, config) for name in NAMES if name != "bert_fp16" for config in CONFIGS}
CLANG_HERE = [(name, config) for name in NAMES for config in CONFIGS if (name, config) not in FRONT_END_COMPILES]


def _source(name: str) -> str:
    return (MODELS_DIR / ENTRIES[name]["file"]).read_text()


def _section(text: str, config: str) -> str:
    """The text of one configuration: between #ifdef SIRIUS_SMALL / #else / #endif."""
    start = text.index("\n#ifdef SIRIUS_SMALL\n")
    middle = text.index("\n#else  // full configuration\n", start)
    end = text.index("\n#endif  // SIRIUS_SMALL\n", middle)
    return text[start:middle] if config == "small" else text[middle:end]


def _model_forward(section: str) -> str:
    start = section.index("static void model_forward(")
    return section[start:section.index("\n}\n", start)]


# ---------------------------------------------------------------- manifest


def test_every_model_has_a_program_and_no_other():
    files = {p.name for p in MODELS_DIR.glob("*.cu")}
    assert files == {e["file"] for e in ENTRIES.values()}
    assert set(NAMES) == EXPECTED_MODELS


@pytest.mark.parametrize("name", NAMES)
def test_manifest_counts_match_the_program(name):
    text = _source(name)
    for config in CONFIGS:
        entry = ENTRIES[name]["configs"][config]
        sec = _section(text, config)
        kernels = KERNEL_DEF.findall(sec)
        assert len(kernels) == entry["kernels"] == len(set(kernels))
        launches = LAUNCH.findall(_model_forward(sec))
        assert len(launches) == entry["launch_sites"]
        assert set(launches) <= set(kernels)
        loops = sum(1 for p in entry["phases"] if p["steps"])
        assert _model_forward(sec).count("for (int step = 0; step < ") == loops
        assert entry["launches"] == sum(p["launches"] * (p["steps"] or 1) for p in entry["phases"])
        assert set(entry["reference"]) == set(entry["outputs"])


@pytest.mark.parametrize("name", NAMES)
def test_program_is_self_contained_and_reasonably_sized(name):
    text = _source(name)
    assert len(text.encode()) < 2_000_000
    assert not re.search(r'^\s*#\s*include\s*"', text, re.M), "only system headers"
    assert "int main(int argc, char** argv)" in text
    assert text.count('printf("output %s: checksum: %.6f\\n"') >= 1


# ---------------------------------------------------------------- builds


def _toolchain():
    try:
        return resolve_toolchain()
    except ToolchainError as err:
        pytest.skip(str(err))


def _clang_cmd(tc, source: Path, config: str, side: str, out: Path) -> list[str]:
    cmd = [tc.clang, "-x", "cuda", f"--cuda-path={tc.cuda_path}", f"--cuda-gpu-arch={DEFAULT_ARCH}",
           "-Wno-unknown-cuda-version", "-O1", "-S", "-emit-llvm", f"--cuda-{side}-only"]
    for inc in tc.extra_include_dirs:
        cmd += ["-isystem", inc]
    if config == "small":
        cmd.append("-DSIRIUS_SMALL")
    return cmd + [str(source), "-o", str(out)]


def _nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    try:
        tc = resolve_toolchain()
    except ToolchainError:
        return None
    cand = Path(tc.cuda_path) / "bin" / "nvcc"
    return str(cand) if cand.is_file() else None


def _run(cmd: list[str]) -> tuple[int, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stderr[-4000:]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """All compiles at once, in parallel: {(tool, name, config, side): (rc, stderr)}."""
    tc = _toolchain()
    tmp = tmp_path_factory.mktemp("model-builds")
    jobs = {}
    for name in NAMES:
        src = MODELS_DIR / ENTRIES[name]["file"]
        for config in CONFIGS:
            if (name, config) not in CLANG_HERE or (name, config) in SLOW_CLANG and not SLOW:
                continue
            for side in ("device", "host"):
                jobs[("clang", name, config, side)] = _clang_cmd(
                    tc, src, config, side, tmp / f"{name}-{config}-{side}.ll")
    nvcc = _nvcc()
    if nvcc:
        for name in NAMES:
            src = MODELS_DIR / ENTRIES[name]["file"]
            for config in CONFIGS:
                cmd = [nvcc, f"-arch={DEFAULT_ARCH}", "-c", "-o", str(tmp / f"{name}-{config}.o"), str(src)]
                if config == "small":
                    cmd.insert(1, "-DSIRIUS_SMALL")
                jobs[("nvcc", name, config, "both")] = cmd
    # longest first keeps the pool busy to the end
    order = sorted(jobs, key=lambda k: -os.path.getsize(MODELS_DIR / ENTRIES[k[1]]["file"]))
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = dict(zip(order, pool.map(lambda k: _run(jobs[k]), order)))
    return results


@pytest.mark.toolchain
@pytest.mark.parametrize("side", ["device", "host"])
@pytest.mark.parametrize("name,config", CLANG_HERE)
def test_clang_compiles_to_ir(builds, name, config, side):
    if ("clang", name, config, side) not in builds:
        pytest.skip("slow compile; set SIRIUS_SLOW_TESTS=1")
    rc, err = builds[("clang", name, config, side)]
    assert rc == 0, err


@pytest.mark.toolchain
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", NAMES)
def test_nvcc_compiles(builds, name, config):
    if ("nvcc", name, config, "both") not in builds:
        pytest.skip("nvcc not found")
    rc, err = builds[("nvcc", name, config, "both")]
    assert rc == 0, err


# ---------------------------------------------------------------- CPU backend


def _cpu_backend():
    try:
        from sirius.backend.cpu import build_program, run_program
    except ImportError:
        pytest.skip("the CPU execution backend is not available")
    return build_program, run_program


@lru_cache(maxsize=None)
def _cpu_run(name: str) -> str:
    from sirius.core.config import CompileFlags

    build_program, run_program = _cpu_backend()
    build = build_program(MODELS_DIR / ENTRIES[name]["file"], CompileFlags(defines=("SIRIUS_SMALL",)))
    res = run_program(build.binary, capture=True, timeout=600)
    assert not res.failed, res.failure_text
    return res.stdout


@pytest.fixture(scope="module")
def cpu_outputs():
    """Small configurations built and run on the CPU backend, two at a time."""
    _toolchain()
    _cpu_backend()
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {name: pool.submit(_cpu_run, name) for name in NAMES}
    return futures


@pytest.mark.toolchain
@pytest.mark.parametrize("name", NAMES)
def test_small_configuration_matches_reference_on_cpu_backend(cpu_outputs, name):
    stdout = cpu_outputs[name].result()
    got = {k: float(v) for k, v in CHECKSUM.findall(stdout)}
    entry = ENTRIES[name]
    refs = entry["configs"]["small"]["reference"]
    assert set(got) == set(refs), stdout
    for out, ref in refs.items():
        err = abs(got[out] - ref["checksum"]) / ref["magnitude"]
        assert err <= entry["rtol"], (
            f"{name} {out}: checksum {got[out]} vs reference {ref['checksum']} "
            f"(error {err:.2e} of the magnitude, rtol {entry['rtol']})")
