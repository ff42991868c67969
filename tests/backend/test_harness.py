"""The timing harness (sirius/runtime/harness), without a GPU: its CUDA-free
core driven by a small C++ program, its build with nvcc, and its behaviour
when preloaded into a program that runs on a fake CUDA runtime
(harness_fixtures/fake_cudart.cpp, which logs every launch and keeps a fake
clock: 2 us per launch, 1 us per kernel of a graph launch)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sirius.backend import harness
from sirius.core.config import find_cuda_path
from sirius.core.errors import InputError, ToolchainError

FIXTURES = Path(__file__).resolve().parent / "harness_fixtures"
GXX = shutil.which("g++")

try:
    NVCC = harness.find_nvcc()
except Exception:  # no CUDA toolkit on this machine
    NVCC = None

try:
    CUDA_INCLUDE = Path(find_cuda_path()) / "include"
except Exception:
    CUDA_INCLUDE = None

needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
needs_cuda_headers = pytest.mark.skipif(
    GXX is None or CUDA_INCLUDE is None or not (CUDA_INCLUDE / "cuda_runtime_api.h").is_file(),
    reason="g++ or the CUDA toolkit headers are missing")


def compile_cxx(*args: str | Path) -> None:
    proc = subprocess.run([GXX, "-std=c++17", "-O1", *map(str, args)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr


# ---- the core (timing_core.h) -----------------------------------------------------------


@pytest.fixture(scope="module")
def core_run(tmp_path_factory):
    """The core driver's report and what it printed."""
    work = tmp_path_factory.mktemp("core")
    driver = work / "core_driver"
    compile_cxx("-Wall", "-Wextra", "-Werror", f"-I{harness.HARNESS_DIR}",
                FIXTURES / "core_driver.cpp", "-o", driver)
    report = work / "report.json"
    proc = subprocess.run([driver, report], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return harness.read_timings(report), proc.stdout


@needs_gxx
def test_core_reports_nonempty_segments_with_kernel_counts(core_run):
    run, _ = core_run
    assert [s.index for s in run.segments] == [1, 2]  # the empty segment 0 is left out
    first, second = run.segments
    assert first.ended_by == "cudaDeviceSynchronize"
    assert (first.launches, first.streams) == (3, 2)
    assert dict(first.kernels) == {"k1": 2, 'k"quoted"\\name\n': 1}
    assert first.replayed and first.reason is None
    assert second.ended_by == "exit"
    assert run.launches == 4


@needs_gxx
def test_core_statistics_are_median_and_minimum(core_run):
    run, _ = core_run
    first = run.segments[0]
    assert first.direct.samples == (5.0, 1.0, 3.0, 7.0)
    # an even count of samples: the median is the mean of the middle two
    assert (first.direct.median, first.direct.minimum) == (4.0, 1.0)
    assert (first.graph.median, first.graph.minimum) == (3.0, 2.0)
    assert (run.direct_us, run.graph_us) == (4.0, 3.0)
    assert (run.reps, run.warmup) == (4, 1)


@needs_gxx
def test_core_escapes_strings(core_run):
    run, _ = core_run
    second = run.segments[1]
    assert dict(second.kernels) == {"tab\tname": 1}
    assert not second.replayed and second.direct is None and second.graph is None
    assert second.reason == "kernel tab\tname: parameters unknown \x01"
    assert run.device.name == 'Test "GPU" \x01'
    assert run.device.compute_capability == "9.0"


@needs_gxx
def test_core_keeps_one_byte_copy_per_parameter(core_run):
    _, printed = core_run
    assert printed.splitlines() == ["segment 1: 8 4 | 8 | 8 4", "segment 2:"]


# ---- reading reports -------------------------------------------------------------------------


def a_report() -> dict:
    timing = {"median": 2.0, "min": 1.0, "samples": [1.0, 2.0, 3.0]}
    return {"harness": 1,
            "device": {"name": "H200", "sm_count": 132, "driver": 13000, "runtime": 13000,
                       "cc": "9.0"},
            "reps": 3, "warmup": 1,
            "segments": [{"index": 0, "ended_by": "cudaMemcpy", "launches": 2, "streams": 1,
                          "kernels": {"k": 2}, "replayed": True, "reason": None,
                          "direct_us": timing, "graph_us": None}],
            "total": {"launches": 2, "direct_us": 2.0, "graph_us": 0.0}}


def test_read_timings_accepts_a_well_formed_report(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(a_report()))
    run = harness.read_timings(path)
    assert run.device == harness.DeviceInfo("H200", 132, 13000, 13000, "9.0")
    assert run.segments[0].direct == harness.ReplayTiming(2.0, 1.0, (1.0, 2.0, 3.0))
    assert run.segments[0].graph is None
    assert (run.direct_us, run.graph_us, run.launches) == (2.0, 0.0, 2)


def _broken(change) -> dict:
    report = a_report()
    change(report)
    return report


@pytest.mark.parametrize("report, message", [
    ("{not json", "invalid JSON"),
    (_broken(lambda r: r.pop("device")), "missing 'device'"),
    (_broken(lambda r: r.update(harness=2)), "schema version 2"),
    (_broken(lambda r: r["segments"][0].update(launches="2")), "segments[0].launches"),
    (_broken(lambda r: r["segments"][0].update(replayed=1)), "segments[0].replayed"),
    (_broken(lambda r: r["segments"][0]["direct_us"]["samples"].pop()), "2 samples, but reps is 3"),
    (_broken(lambda r: r["segments"][0].update(kernels={"k": 1})), "kernels add up to 1"),
    (_broken(lambda r: r["total"].update(launches=5)), "total.launches"),
])
def test_read_timings_names_the_file_and_the_field(tmp_path, report, message):
    path = tmp_path / "t.json"
    path.write_text(report if isinstance(report, str) else json.dumps(report))
    with pytest.raises(InputError) as raised:
        harness.read_timings(path)
    assert str(path) in str(raised.value)
    assert message in str(raised.value)


def test_read_timings_of_a_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read timing file"):
        harness.read_timings(tmp_path / "absent.json")


def test_harness_env_names_library_output_and_settings(tmp_path):
    env = harness.harness_env(tmp_path / "lib.so", tmp_path / "t.json", reps=5, warmup=0,
                              modes=("graph",))
    assert env == {"LD_PRELOAD": str(tmp_path / "lib.so"),
                   "SIRIUS_TIMING_OUT": str(tmp_path / "t.json"),
                   "SIRIUS_TIMING_REPS": "5", "SIRIUS_TIMING_WARMUP": "0",
                   "SIRIUS_TIMING_MODES": "graph"}
    with pytest.raises(ValueError):
        harness.harness_env(tmp_path / "lib.so", tmp_path / "t.json", modes=("fast",))


# ---- building with nvcc --------------------------------------------------------------------


@pytest.fixture(scope="module")
def nvcc_harness(tmp_path_factory):
    """The harness built by build_harness into a cache of its own."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIRIUS_CACHE", str(cache))
        return harness.build_harness(), cache


@needs_nvcc
@pytest.mark.toolchain
def test_build_harness_defines_the_interceptors_once(nvcc_harness, monkeypatch):
    library, cache = nvcc_harness
    assert library.name == "libsirius_timer.so"
    assert library.is_relative_to(cache / "harness")
    symbols = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True,
                             text=True, check=True).stdout
    defined = {line.split()[2] for line in symbols.splitlines() if line.split()[1:2] == ["T"]}
    for name in ("__cudaGetKernel", "__cudaLaunchKernel", "__cudaLaunchKernel_ptsz",
                 "cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaLaunchKernelExC",
                 "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                 "cudaMemcpy", "cudaMemcpyAsync", "cudaMemset", "cudaFree",
                 "cudaStreamBeginCapture", "cudaGraphLaunch"):
        assert name in defined, name

    monkeypatch.setenv("SIRIUS_CACHE", str(cache))
    compiled = []
    monkeypatch.setattr(harness, "_compile_library", lambda *args: compiled.append(args))
    assert harness.build_harness() == library
    assert compiled == []


REAL_PROGRAM = """
#include <cstdio>
__global__ void store(int* p, int n) { p[0] = n; }
int main() {
    int* d = nullptr;
    int h = 0;
    std::printf("malloc %d\\n", (int)cudaMalloc(&d, sizeof(int)));
    store<<<1, 1>>>(d, 3);
    std::printf("launch %d\\n", (int)cudaGetLastError());
    std::printf("copy %d\\n", (int)cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
    std::printf("value %d\\n", h);
    return 0;
}
"""


@needs_nvcc
@pytest.mark.toolchain
def test_real_runtime_program_runs_unchanged(nvcc_harness, tmp_path):
    """With libcudart itself: on a machine without a GPU every call fails the
    same way with and without the harness, and the report has no segment; with
    one, the launch is timed."""
    library, _ = nvcc_harness
    source, program = tmp_path / "store.cu", tmp_path / "store"
    source.write_text(REAL_PROGRAM)
    subprocess.run([NVCC, "-cudart", "shared", source, "-o", program], check=True,
                   capture_output=True)
    alone = subprocess.run([program], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    report = tmp_path / "timings.json"
    env = os.environ | harness.harness_env(library, report, reps=2, warmup=1)
    timed_run = subprocess.run([program], capture_output=True, text=True, timeout=60, env=env,
                               cwd=tmp_path)
    assert timed_run.returncode == alone.returncode == 0, timed_run.stderr
    assert timed_run.stdout == alone.stdout
    run = harness.read_timings(report)
    if "malloc 0\n" in alone.stdout:  # a usable GPU
        assert [(s.ended_by, s.launches, s.replayed) for s in run.segments] == \
               [("cudaMemcpy", 1, True)]
        assert len(run.segments[0].direct.samples) == 2
    else:
        assert run.segments == ()


@needs_nvcc
@pytest.mark.toolchain
def test_build_errors_are_toolchain_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("SIRIUS_CACHE", str(tmp_path / "cache"))
    broken = tmp_path / "harness"
    broken.mkdir()
    (broken / "launch_timer.cpp").write_text("int main() { return undefined_name; }\n")
    (broken / "timing_core.h").write_text("")
    monkeypatch.setattr(harness, "HARNESS_DIR", broken)
    with pytest.raises(ToolchainError, match="undefined_name"):
        harness.build_harness()


# ---- behaviour, on a fake CUDA runtime -------------------------------------------------------

# fake_program.cpp's segments: (ended by, launches, streams, kernels, replayable).
PROGRAM_SEGMENTS = [
    ("cudaDeviceSynchronize", 4, 2, {"fill": 2, "axpy": 2}, True),
    ("cudaMemcpy", 2, 1, {"fill": 1, "axpy": 1}, True),
    ("cudaStreamSynchronize", 1, 1, {"opaque": 1}, False),
    ("cudaStreamEndCapture", 1, 1, {"fill": 1}, False),
    ("exit", 1, 1, {"fill": 1}, True),
]
PROGRAM_OUTPUT = "result 1 2 3 4\nlast error 0\n"


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """The fake runtime, the harness built against it with g++, and the program."""
    work = tmp_path_factory.mktemp("fake")
    runtime = work / "libcudart.so.13"
    compile_cxx("-shared", "-fPIC", f"-I{CUDA_INCLUDE}", FIXTURES / "fake_cudart.cpp",
                "-o", runtime, "-Wl,-soname,libcudart.so.13",
                f"-Wl,--version-script={FIXTURES / 'fake_cudart.map'}")
    library = work / "libsirius_timer.so"
    compile_cxx("-shared", "-fPIC", "-Wall", "-Wextra", f"-I{CUDA_INCLUDE}",
                harness.HARNESS_DIR / "launch_timer.cpp", "-o", library, runtime, "-ldl",
                "-Wl,--no-undefined")
    program = work / "program"
    compile_cxx(f"-I{CUDA_INCLUDE}", FIXTURES / "fake_program.cpp", "-o", program, runtime)
    return {"dir": work, "library": library, "program": program}


class ProgramRun:
    def __init__(self, proc: subprocess.CompletedProcess, log: Path, report: Path):
        self.proc = proc
        self.report = report
        # (how, entry, kernel, argument hex) per launch the fake runtime saw
        self.log = [tuple(line.split(" ")) for line in log.read_text().splitlines()]


def run_program(fake, tmp_path, preload=True, **settings: str) -> ProgramRun:
    log, report = tmp_path / "launches.log", tmp_path / "timings.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIRIUS_TIMING_")}
    env.update(FAKE_CUDART_LOG=str(log), LD_LIBRARY_PATH=str(fake["dir"]), **settings)
    if preload:
        env["LD_PRELOAD"] = str(fake["library"])
    proc = subprocess.run([fake["program"]], capture_output=True, text=True, env=env, timeout=60,
                          cwd=tmp_path)
    return ProgramRun(proc, log, report)


def timed(fake, tmp_path, reps="2", warmup="1", modes="direct,graph") -> ProgramRun:
    return run_program(fake, tmp_path, SIRIUS_TIMING_OUT=str(tmp_path / "timings.json"),
                       SIRIUS_TIMING_REPS=reps, SIRIUS_TIMING_WARMUP=warmup,
                       SIRIUS_TIMING_MODES=modes)


def expected_log(log: list[tuple], passes: int, direct: bool, graph: bool) -> list[tuple]:
    """The log of a timed run, rebuilt from its original launches: after each
    replayable segment, the same launches with the same bytes, PASSES times
    one by one, then captured once and PASSES times as a graph."""
    expected, position = [], 0
    for _, launches, _, _, replayable in PROGRAM_SEGMENTS:
        originals = log[position:position + launches]
        expected += originals
        if replayable:
            if direct:
                expected += originals * passes
            if graph:
                expected += [("capture", *line[1:]) for line in originals]
                expected += [("graph", *line[1:]) for line in originals] * passes
        position = len(expected)
    return expected


def without_pointers(line: tuple) -> tuple:
    """A log line with the 8-byte (pointer) arguments blanked: they differ between runs."""
    how, entry, kernel, arguments = line
    return how, entry, kernel, ":".join("ptr" if len(a) == 16 else a for a in arguments.split(":"))


@needs_cuda_headers
@pytest.mark.toolchain
def test_fake_program_references_versioned_symbols_like_nvcc_programs(fake):
    """Programs linked with libcudart.so.13 ask for __cudaLaunchKernel@libcudart.so.13;
    the harness's unversioned definitions must still be the ones they get."""
    table = subprocess.run(["objdump", "-T", fake["program"]], capture_output=True, text=True,
                           check=True).stdout
    assert re.search(r"\(libcudart\.so\.13\)\s+__cudaLaunchKernel$", table, re.M), table


@needs_cuda_headers
@pytest.mark.toolchain
def test_program_output_is_unchanged(fake, tmp_path):
    (tmp_path / "alone").mkdir()
    alone = run_program(fake, tmp_path / "alone", preload=False)
    timed_run = timed(fake, tmp_path)
    for run in (alone, timed_run):
        assert run.proc.returncode == 0, run.proc.stderr
        assert run.proc.stdout == PROGRAM_OUTPUT
        assert run.proc.stderr == ""
    originals = [line for line in timed_run.log if line[0] == "launch"][:4]
    assert [without_pointers(line) for line in originals] == \
           [without_pointers(line) for line in alone.log[:4]]


@needs_cuda_headers
@pytest.mark.toolchain
def test_segments_end_at_synchronizations_copies_and_exit(fake, tmp_path):
    run = harness.read_timings(timed(fake, tmp_path).report)
    assert [(s.ended_by, s.launches, s.streams, dict(s.kernels), s.replayed)
            for s in run.segments] == PROGRAM_SEGMENTS
    # the first cudaMemcpy and cudaStreamBeginCapture ended empty segments
    assert [s.index for s in run.segments] == [1, 2, 3, 5, 6]
    opaque, captured = run.segments[2], run.segments[3]
    assert opaque.reason == "kernel opaque: cudaFuncGetParamInfo failed with cudaErrorNotSupported"
    assert captured.reason == "kernel fill: launched while the program was capturing a graph"
    assert all(s.direct is None and s.graph is None for s in (opaque, captured))
    assert run.device == harness.DeviceInfo('Fake "GPU" \\ 1', 132, 13000, 13000, "9.0")


@needs_cuda_headers
@pytest.mark.toolchain
def test_timings_come_from_events_on_the_replays(fake, tmp_path):
    run = harness.read_timings(timed(fake, tmp_path).report)
    for segment in run.segments:
        if segment.replayed:
            # the fake clock: 2 us per direct launch, 1 us per kernel of a graph
            assert segment.direct.samples == pytest.approx([2.0 * segment.launches] * 2)
            assert segment.graph.samples == pytest.approx([1.0 * segment.launches] * 2)
    assert run.direct_us == pytest.approx(2.0 * 7)
    assert run.graph_us == pytest.approx(1.0 * 7)
    assert (run.reps, run.warmup, run.launches) == (2, 1, 9)


@needs_cuda_headers
@pytest.mark.toolchain
def test_replays_carry_the_argument_bytes_of_the_original_launch(fake, tmp_path):
    log = timed(fake, tmp_path).log
    assert log == expected_log(log, passes=3, direct=True, graph=True)
    # the program changed the values after each launch; the launches kept theirs
    fills = [line[3].split(":")[1] for line in log if line[:3] == ("launch", "handle", "fill")]
    assert set(fills) == {"07000000", "08000000", "00000000"}
    cooperative = [line for line in log if line[1] == "cooperative"]
    assert {line[3].split(":")[1] for line in cooperative} == {"63000000"}
    assert len(cooperative) == 1 + 3 + 1 + 3  # original, direct passes, capture, graph passes


@needs_cuda_headers
@pytest.mark.toolchain
def test_modes_reps_and_warmup_are_honoured(fake, tmp_path):
    run = timed(fake, tmp_path, reps="1", warmup="0", modes="graph")
    assert run.log == expected_log(run.log, passes=1, direct=False, graph=True)
    timings = harness.read_timings(run.report)
    assert (timings.reps, timings.warmup) == (1, 0)
    assert all(s.direct is None for s in timings.segments)
    assert all(len(s.graph.samples) == 1 for s in timings.segments if s.replayed)


@needs_cuda_headers
@pytest.mark.toolchain
def test_defaults_are_20_reps_3_warmup_both_modes(fake, tmp_path):
    run = run_program(fake, tmp_path, SIRIUS_TIMING_OUT=str(tmp_path / "timings.json"))
    assert run.log == expected_log(run.log, passes=23, direct=True, graph=True)
    timings = harness.read_timings(run.report)
    assert (timings.reps, timings.warmup) == (20, 3)


@needs_cuda_headers
@pytest.mark.toolchain
def test_without_an_output_path_launches_pass_through(fake, tmp_path):
    run = run_program(fake, tmp_path)
    assert run.proc.returncode == 0 and run.proc.stdout == PROGRAM_OUTPUT
    assert [line[0] for line in run.log] == ["launch"] * 7 + ["capture", "launch"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launches.log"]
