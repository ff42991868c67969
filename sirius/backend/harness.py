"""Timing harness: time the kernel launches of any CUDA program, unchanged.

The harness is a shared library (``sirius/runtime/harness/launch_timer.cpp``)
preloaded into a program built with ``nvcc -cudart shared``. It records the
launches the program issues between two points where the host waits for the
device or touches device memory outside a kernel (a *segment*), and replays
each segment before that point: launched one by one as the program did, and
captured once as a CUDA graph and launched whole; each mode is timed over
warm-up plus timed repetitions with CUDA events. At exit it writes a JSON
report, which ``read_timings`` parses into a ``HarnessRun``.

Replays re-run the program's kernels, so a program whose kernels update memory
in place computes different results under the harness: judge correctness in a
separate run without it.

    library = build_harness()
    env = os.environ | harness_env(library, Path("timings.json"))
    subprocess.run(["./program"], env=env)
    run = read_timings("timings.json")
    run.direct_us, run.graph_us
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sirius.backend.cpu import _short_diagnostics, cache_root
from sirius.backend.gpu import find_nvcc
from sirius.core.config import tool_answer
from sirius.core.errors import InputError, ToolchainError

HARNESS_DIR = Path(__file__).resolve().parent.parent / "runtime" / "harness"
HARNESS_SOURCES = ("launch_timer.cpp", "timing_core.h")
LIBRARY_NAME = "libsirius_timer.so"
BUILD_FLAGS = ("-O2", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared")
MODES = ("direct", "graph")
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    sm_count: int
    driver: int  # cudaDriverGetVersion, e.g. 13000
    runtime: int  # cudaRuntimeGetVersion
    compute_capability: str  # "9.0"


@dataclass(frozen=True)
class ReplayTiming:
    """One replay mode of one segment, in microseconds per pass over the segment."""

    median: float
    minimum: float
    samples: tuple[float, ...]


@dataclass(frozen=True)
class SegmentTiming:
    """The launches between two synchronization points and their timings."""

    index: int  # ordinal of the call that ended the segment, counting empty segments
    ended_by: str  # that call ("cudaDeviceSynchronize", "cudaMemcpy", ...) or "exit"
    launches: int
    streams: int  # distinct streams the program launched on; the replay used one
    kernels: tuple[tuple[str, int], ...]  # (kernel name, launches), in first-launch order
    replayed: bool
    reason: str | None  # why not replayed, or which mode failed
    direct: ReplayTiming | None  # launched one by one
    graph: ReplayTiming | None  # launched as one CUDA graph


@dataclass(frozen=True)
class HarnessRun:
    device: DeviceInfo
    reps: int
    warmup: int
    segments: tuple[SegmentTiming, ...]

    @property
    def direct_us(self) -> float:
        """Sum of the direct-launch medians of the segments timed that way."""
        return sum(s.direct.median for s in self.segments if s.direct is not None)

    @property
    def graph_us(self) -> float:
        """Sum of the graph-launch medians of the segments timed that way."""
        return sum(s.graph.median for s in self.segments if s.graph is not None)

    @property
    def launches(self) -> int:
        return sum(s.launches for s in self.segments)


# ---- building -----------------------------------------------------------------------


def _nvcc_version(nvcc: str) -> str:
    return tool_answer(nvcc, "--version")


def _sources_hash() -> str:
    h = hashlib.sha256()
    for name in HARNESS_SOURCES:
        h.update(name.encode())
        h.update((HARNESS_DIR / name).read_bytes())
    return h.hexdigest()


def _compile_library(nvcc: str, output: Path) -> None:
    cmd = [nvcc, *BUILD_FLAGS, str(HARNESS_DIR / "launch_timer.cpp"), "-o", str(output), "-ldl"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as err:
        raise ToolchainError(f"error: cannot run {nvcc}: {err}") from None
    if proc.returncode != 0:
        raise ToolchainError("error: nvcc cannot build the timing harness:\n"
                             + _short_diagnostics(proc.stderr + proc.stdout))


def build_harness(nvcc: str | None = None) -> Path:
    """The harness library, built once per source and nvcc version under the
    build cache (``$SIRIUS_CACHE/harness``)."""
    nvcc = nvcc or find_nvcc()
    key = hashlib.sha256(
        (_sources_hash() + _nvcc_version(nvcc) + " ".join(BUILD_FLAGS)).encode()
    ).hexdigest()[:24]
    library = cache_root() / "harness" / key / LIBRARY_NAME
    if library.is_file():
        return library
    library.parent.mkdir(parents=True, exist_ok=True)
    # Built beside its final place and renamed in, so a concurrent build or a
    # reader never sees half a library.
    with tempfile.TemporaryDirectory(dir=library.parent) as scratch:
        partial = Path(scratch) / LIBRARY_NAME
        _compile_library(nvcc, partial)
        os.replace(partial, library)
    return library


def harness_env(library: Path, out: Path, reps: int = 20, warmup: int = 3,
                modes: tuple[str, ...] | list[str] = MODES) -> dict[str, str]:
    """The environment variables that run a program under the harness (add
    them to the program's environment; an ``LD_PRELOAD`` of its own must be
    appended to ours)."""
    if reps < 1 or warmup < 0:
        raise ValueError(f"reps must be at least 1 and warmup at least 0, not {reps} and {warmup}")
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValueError(f"modes must be a non-empty subset of {MODES}, not {tuple(modes)}")
    return {
        "LD_PRELOAD": str(Path(library).resolve()),
        "SIRIUS_TIMING_OUT": str(Path(out).resolve()),
        "SIRIUS_TIMING_REPS": str(reps),
        "SIRIUS_TIMING_WARMUP": str(warmup),
        "SIRIUS_TIMING_MODES": ",".join(modes),
    }


# ---- reading --------------------------------------------------------------------------


class _Malformed(Exception):
    """A field of the report is missing or has the wrong type; the message names it."""


def _field(obj: dict, key: str, kind: type | tuple[type, ...], where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise _Malformed(f"{where}: missing '{key}'")
    value = obj[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise _Malformed(f"{where}.{key}: expected {_kind_name(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise _Malformed(f"{where}.{key}: expected {_kind_name(kind)}, got {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
             list: "a list", dict: "an object", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _number(obj: dict, key: str, where: str) -> float:
    value = float(_field(obj, key, (int, float), where))
    if not math.isfinite(value) or value < 0:
        raise _Malformed(f"{where}.{key}: expected a non-negative number, got {value!r}")
    return value


def _count(obj: dict, key: str, where: str) -> int:
    value = _field(obj, key, int, where)
    if value < 0:
        raise _Malformed(f"{where}.{key}: expected a non-negative integer, got {value}")
    return value


def _timing(obj: dict, key: str, reps: int, where: str) -> ReplayTiming | None:
    value = _field(obj, key, (dict, type(None)), where)
    if value is None:
        return None
    where = f"{where}.{key}"
    samples = _field(value, "samples", list, where)
    for i, sample in enumerate(samples):
        if isinstance(sample, bool) or not isinstance(sample, (int, float)) or sample < 0:
            raise _Malformed(f"{where}.samples[{i}]: expected a non-negative number, "
                             f"got {sample!r}")
    if len(samples) != reps:
        raise _Malformed(f"{where}.samples: {len(samples)} samples, but reps is {reps}")
    return ReplayTiming(_number(value, "median", where), _number(value, "min", where),
                  tuple(float(s) for s in samples))


def _segment(obj: dict, reps: int, where: str) -> SegmentTiming:
    if not isinstance(obj, dict):
        raise _Malformed(f"{where}: expected an object")
    kernels = _field(obj, "kernels", dict, where)
    for name, count in kernels.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise _Malformed(f"{where}.kernels[{name!r}]: expected a positive integer, "
                             f"got {count!r}")
    launches = _count(obj, "launches", where)
    if sum(kernels.values()) != launches:
        raise _Malformed(f"{where}: {launches} launches, but the kernels add up to "
                         f"{sum(kernels.values())}")
    return SegmentTiming(
        index=_count(obj, "index", where),
        ended_by=_field(obj, "ended_by", str, where),
        launches=launches,
        streams=_count(obj, "streams", where),
        kernels=tuple(kernels.items()),
        replayed=_field(obj, "replayed", bool, where),
        reason=_field(obj, "reason", (str, type(None)), where),
        direct=_timing(obj, "direct_us", reps, where),
        graph=_timing(obj, "graph_us", reps, where),
    )


def _run(data: object) -> HarnessRun:
    if not isinstance(data, dict):
        raise _Malformed("expected a JSON object")
    version = _field(data, "harness", int, "file")
    if version != SCHEMA_VERSION:
        raise _Malformed(f"harness schema version {version}; this sirius reads {SCHEMA_VERSION}")
    device = _field(data, "device", dict, "file")
    info = DeviceInfo(
        name=_field(device, "name", str, "device"),
        sm_count=_count(device, "sm_count", "device"),
        driver=_count(device, "driver", "device"),
        runtime=_count(device, "runtime", "device"),
        compute_capability=_field(device, "cc", str, "device"),
    )
    reps = _count(data, "reps", "file")
    warmup = _count(data, "warmup", "file")
    segments = tuple(_segment(s, reps, f"segments[{i}]")
                     for i, s in enumerate(_field(data, "segments", list, "file")))
    total = _field(data, "total", dict, "file")
    launches = _count(total, "launches", "total")
    if launches != sum(s.launches for s in segments):
        raise _Malformed(f"total.launches is {launches}, but the segments add up to "
                         f"{sum(s.launches for s in segments)}")
    _number(total, "direct_us", "total")
    _number(total, "graph_us", "total")
    return HarnessRun(info, reps, warmup, segments)


def read_timings(path: str | os.PathLike) -> HarnessRun:
    """The timing report the harness wrote to ``path``; ``InputError`` naming
    the file and the offending field when it is missing or malformed."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as err:
        raise InputError(f"error: cannot read timing file {path}: {err.strerror or err}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"error: {path}: not a timing file: invalid JSON at line {err.lineno} "
                         f"column {err.colno}: {err.msg}") from None
    try:
        return _run(data)
    except _Malformed as err:
        raise InputError(f"error: {path}: malformed timing file: {err}") from None
