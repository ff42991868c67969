"""A fragment is its kernel written again elsewhere; kernels whose copy would not mean the
same are refused as fragments with the reason (tests/analysis/unwritable_kernels.cu)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.analysis.source_index import build_source_index
from sirius.core.config import CompileFlags, resolve_toolchain

pytestmark = pytest.mark.toolchain


def test_kernels_a_copy_would_change_are_unwritable():
    job = CompileJob(Path(__file__).parent / "unwritable_kernels.cu", CompileFlags(), resolve_toolchain())
    why = {d.name: d.unwritable for d in build_source_index(job).kernels.values()}
    assert "preprocessor directive" in why["directive"]
    assert "__COUNTER__" in why["counter"]
    assert "the macro SHIFT, which the program defines again or #undefs" in why["shifted"]
    assert why["conditional"] is None  # a kernel inside #if stays a fragment
    assert why["plain"] is None
