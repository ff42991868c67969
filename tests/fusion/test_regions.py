"""Regions and what ends them (sirius/fusion/regions.py). Control flow between two launches
is read from clang's AST (sirius/analysis/statement_flow.py): a comment, a string literal
or a macro is what the compiler makes of it, not text that looks like a keyword."""

from __future__ import annotations

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.analysis.program_model import analyze_program
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.fusion.regions import find_regions
from sirius.fusion.schedule import RefusalKind

pytestmark = pytest.mark.toolchain

PROGRAM = r"""#include <cstdio>
#include <cstdlib>
#define CHECK(call)                                                  \
  do {                                                               \
    cudaError_t err_ = (call);                                       \
    if (err_ != cudaSuccess) {                                       \
      fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err_)); \
      exit(1);                                                       \
    }                                                                \
  } while (0)
#define ONLY_IF(cond) if (!(cond)) { puts("skipped"); }

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

__global__ void shift(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

int main(int argc, char** argv) {
  const int n = 1 << 12;
  float* x;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  scale<<<n / 256, 256>>>(x, n);
BETWEEN
  shift<<<n / 256, 256>>>(x, n);
  CHECK(cudaDeviceSynchronize());
  return 0;
}
"""


def regions_and_refusals(tmp_path, between: str) -> tuple[list[tuple[int, ...]], list[tuple[RefusalKind, str]]]:
    path = tmp_path / "between.cu"
    path.write_text(PROGRAM.replace("BETWEEN", between))
    model = analyze_program(CompileJob(path, CompileFlags(), resolve_toolchain()))
    regions, refusals = find_regions(model)
    return [r.launches for r in regions], [(r.kind, r.reason) for r in refusals]


@pytest.mark.parametrize("between", [
    "  // if (argc > 1) { return 1; } else { while (1) {} }\n  /* for (;;) { goto out; } switch */",
    '  printf("if (x) { return; } else { break; } // }\\n");\n  char brace = \'{\';\n  printf("%c\\n", brace);',
    "  CHECK(cudaGetLastError());",
    '  if (argc > 5) {\n    fprintf(stderr, "too many arguments\\n");\n    exit(2);\n  }',
], ids=["keywords-in-comments", "keywords-in-strings", "error-check-macro", "error-check"])
def test_launches_with_no_control_flow_between_them_share_a_region(tmp_path, between):
    regions, refusals = regions_and_refusals(tmp_path, between)
    assert len(regions) == 1 and len(regions[0]) == 2 and refusals == []


@pytest.mark.parametrize("between", [
    # the // inside the string starts no comment: the branch after it on the same line is code
    '  printf("see http://example.com\\n"); if (argc > 1) { puts("more"); }',
    # the branch is written by a macro: no keyword in the text between the launches
    "  ONLY_IF(argc > 1);",
    # a branch that does not leave the program: the launches run in one path only
    '  if (argc > 1) {\n    puts("more");\n  }',
], ids=["comment-marker-in-a-string", "branch-in-a-macro", "branch-that-stays"])
def test_control_flow_between_launches_ends_the_region(tmp_path, between):
    regions, refusals = regions_and_refusals(tmp_path, between)
    assert [len(r) for r in regions] == [1, 1]
    assert refusals == [(RefusalKind.CONTROL_FLOW, "control flow between them in the source")]
