"""How control leaves a statement between two launches (sirius/analysis/statement_flow.py),
as the source index records it for the braces a launch stands in."""

from __future__ import annotations

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.analysis.source_index import build_source_index
from sirius.analysis.statement_flow import Flow
from sirius.core.config import CompileFlags, resolve_toolchain

pytestmark = pytest.mark.toolchain

PROGRAM = r"""#include <cstdio>
#include <cstdlib>
#include <stdexcept>
namespace mine { void exit(int); }
__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }
__attribute__((noinline)) int helper(float* x, int bad) {
  k<<<1, 32>>>(x);
HELPER
  k<<<1, 32>>>(x);
  return 0;
}
int main(int argc, char** argv) {
  float* x = nullptr;
  int bad = argc > 1;
  k<<<1, 32>>>(x);
MAIN
  k<<<1, 32>>>(x);
  auto twice = [&]() {
    k<<<1, 32>>>(x);
LAMBDA
    k<<<1, 32>>>(x);
  };
  twice();
  return helper(x, bad);
}
"""


def flows_between(tmp_path, main: str = "", helper: str = "", lambda_: str = "") -> dict[str, tuple[Flow, ...]]:
    """The flows of the statements between the two launches of main, of the helper and of
    the lambda in main, each written with the given statement between its launches."""
    path = tmp_path / "flows.cu"
    path.write_text(PROGRAM.replace("MAIN", main).replace("HELPER", helper).replace("LAMBDA", lambda_))
    index = build_source_index(CompileJob(path, CompileFlags(), resolve_toolchain()))
    out = {}
    for name, (a, b) in (("helper", index.launches[0:2]), ("main", index.launches[2:4]),
                         ("lambda", index.launches[4:6])):
        assert a.block is not None and a.block == b.block, name
        out[name] = index.host_blocks[a.block].flows[a.position + 1:b.position]
    return out


@pytest.mark.parametrize("statement, flow", [
    ("  int y = bad + 1; (void)y;", (Flow.NEXT, Flow.NEXT)),
    ("  int a[] = {1, 2}; (void)a;", (Flow.NEXT, Flow.NEXT)),  # braces of an initializer are no block
    ("  // if (bad) { return 1; }\n  ;", (Flow.NEXT,)),
    ('  printf("} else { goto end; ");', (Flow.NEXT,)),
    ('  if (bad) { fprintf(stderr, "bad\\n"); exit(1); }', (Flow.NEXT_OR_EXIT,)),
    ("  if (bad) std::abort();", (Flow.NEXT_OR_EXIT,)),
    ("  do { if (bad) _Exit(3); } while (0);", (Flow.NEXT_OR_EXIT,)),
    ("  { int y = 1; (void)y; }", (Flow.NEXT,)),
    ("  if (bad) return 1;", (Flow.NEXT_OR_EXIT,)),  # in main, return ends the program
    ('  if (bad) { puts("bad"); } else { exit(1); }', (Flow.OTHER,)),
    ('  if (bad) puts("bad");', (Flow.OTHER,)),
    ("  if (int e = bad) exit(e);", (Flow.OTHER,)),  # a condition variable: not proven
    ("  if (bad) mine::exit(1);", (Flow.OTHER,)),  # not the C library's exit
    ("  exit(0);", (Flow.OTHER,)),
    ("  do { bad--; } while (bad > 0);", (Flow.OTHER,)),
    ('  if (bad) throw std::runtime_error("bad");', (Flow.OTHER,)),
    ("  auto f = [] { return 1; }; (void)f;", (Flow.OTHER, Flow.NEXT)),  # a lambda's body holds statements
    ("  for (int i = 0; i < bad; ++i) {}", (Flow.OTHER,)),
])
def test_flow_of_a_statement_in_main(tmp_path, statement, flow):
    assert flows_between(tmp_path, main=statement)["main"] == flow


def test_return_leaves_the_program_only_in_main(tmp_path):
    check = "  if (bad) return 1;"
    flows = flows_between(tmp_path, main=check, helper=check, lambda_=check.replace("return 1", "return"))
    assert flows == {"main": (Flow.NEXT_OR_EXIT,), "helper": (Flow.OTHER,), "lambda": (Flow.OTHER,)}
