"""Shared helpers: analyze a corpus program or an inline CUDA snippet once per session."""

from __future__ import annotations

import functools
from pathlib import Path

import islpy as isl
import pytest

from sirius.analysis.frontend import CompileJob
from sirius.analysis.program_model import ProgramModel, analyze_program
from sirius.core.config import CompileFlags, resolve_toolchain

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "cuda_inputs"


@functools.lru_cache(maxsize=None)
def analyze_file(path: str, defines: tuple[str, ...] = ()) -> ProgramModel:
    job = CompileJob(Path(path), CompileFlags(defines=defines), resolve_toolchain())
    return analyze_program(job)


@pytest.fixture
def corpus():
    def load(name: str, *defines: str) -> ProgramModel:
        return analyze_file(str(CORPUS / name), tuple(defines))
    return load


@pytest.fixture
def snippet(tmp_path):
    """Analyze CUDA source text written to a temporary file."""
    def load(source: str) -> ProgramModel:
        path = tmp_path / "snippet.cu"
        path.write_text(source)
        return analyze_file(str(path))
    return load


def same_map(actual: str, expected: str) -> bool:
    """isl maps compared by meaning, not by spelling."""
    return isl.Map(actual).is_equal(isl.Map(expected))


def maps_of(model: ProgramModel, launch_pos: int, kind: str | None = None, buffer: str | None = None) -> list[str]:
    inst = model.launches[launch_pos]
    return [m.isl for m in inst.maps if (kind is None or m.access.kind == kind)
            and (buffer is None or m.buffer == buffer)]
