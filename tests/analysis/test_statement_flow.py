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
#include <csignal>
#include <csetjmp>
#include <vector>
#include <array>
#include <algorithm>
PRELUDE
#include <unistd.h>
namespace mine { void exit(int); }
[[noreturn]] static void die(const char* why) { fprintf(stderr, "%s\n", why); exit(1); }
[[noreturn]] static void die_reading(const float* p) { fprintf(stderr, "%f\n", p[0]); exit(1); }
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


def flows_between(tmp_path, main: str = "", helper: str = "", lambda_: str = "",
                  prelude: str = "") -> dict[str, tuple[Flow, ...]]:
    """The flows of the statements between the two launches of main, of the helper and of
    the lambda in main, each written with the given statement between its launches, and
    ``prelude`` before them all."""
    path = tmp_path / "flows.cu"
    path.write_text(PROGRAM.replace("MAIN", main).replace("HELPER", helper).replace("LAMBDA", lambda_)
                    .replace("PRELUDE", prelude))
    index = build_source_index(CompileJob(path, CompileFlags(), resolve_toolchain()))
    out = {}
    for name, (a, b) in (("helper", index.launches[0:2]), ("main", index.launches[2:4]),
                         ("lambda", index.launches[4:6])):
        assert a.block is not None and a.block == b.block, name
        out[name] = index.host_blocks[a.block].flows[a.position + 1:b.position]
    return out


# statements between two launches of main, each case between a pair of its own
MAIN_STATEMENTS = [
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
    ("  if (bad) _exit(1);", (Flow.NEXT_OR_EXIT,)),
    ("  if (bad) die(\"bad\");", (Flow.NEXT_OR_EXIT,)),  # a [[noreturn]] helper that only prints and exits
    ("  if (bad) die_reading(x);", (Flow.OTHER,)),  # it reads through a pointer: it could see device results
]


def test_flow_of_a_statement_in_main(tmp_path):
    """Every case in one program (one parse): the flows of each pair's statements. A case's
    flows are its own statements' (no name is declared twice in main's braces)."""
    body = "\n".join(f"  k<<<1, 32>>>(x);\n{statement}\n  k<<<1, 32>>>(x);" for statement, _ in MAIN_STATEMENTS)
    path = tmp_path / "flows.cu"
    path.write_text(PROGRAM.replace("MAIN", body).replace("HELPER", "").replace("LAMBDA", "").replace("PRELUDE", ""))
    index = build_source_index(CompileJob(path, CompileFlags(), resolve_toolchain()))
    n = len(MAIN_STATEMENTS)  # main's launches: its own first, the pairs, its own last (the helper's come before)
    firsts, seconds = index.launches[3:3 + 2 * n:2], index.launches[4:4 + 2 * n:2]
    assert len(firsts) == len(seconds) == n
    for (statement, flow), a, b in zip(MAIN_STATEMENTS, firsts, seconds):
        assert a.block is not None and a.block == b.block, statement
        assert index.host_blocks[a.block].flows[a.position + 1:b.position] == flow, statement


def test_return_leaves_the_program_only_in_main(tmp_path):
    check = "  if (bad) return 1;"
    flows = flows_between(tmp_path, main=check, helper=check, lambda_=check.replace("return 1", "return"))
    assert flows == {"main": (Flow.NEXT_OR_EXIT,), "helper": (Flow.OTHER,), "lambda": (Flow.OTHER,)}


REPORT = "static void report() { puts(\"report\"); }\n"
ATEXIT = REPORT + "static int registered = atexit(report);\n"
LOGGER = "struct Logger { ~Logger() { puts(\"bye\"); } };\n"
THROWS = "static void check(int c) { if (c) throw std::runtime_error(\"bad\"); }\n"
CATCHES = "static int guarded() { try { check(0); return 0; } catch (...) { return 1; } }\n"
FPE = "static void on_fpe(int) { _Exit(3); }\nstatic auto previous = signal(SIGFPE, on_fpe);\n"
EXITS = "static void die_if(int c) { if (c) { puts(\"dying\"); exit(2); } }\n"


@pytest.mark.parametrize("prelude, statement, flow", [
    # code of the program's own runs at exit: an early exit may show what ran before it
    (ATEXIT, "  if (bad) { fprintf(stderr, \"bad\\n\"); exit(1); }", (Flow.OBSERVED_EXIT,)),
    (ATEXIT, "  if (bad) return 1;", (Flow.OBSERVED_EXIT,)),
    (ATEXIT, "  if (bad) _Exit(1);", (Flow.NEXT_OR_EXIT,)),  # runs no handler
    (ATEXIT, "  if (bad) quick_exit(1);", (Flow.NEXT_OR_EXIT,)),
    (ATEXIT, "  if (bad) abort();", (Flow.NEXT_OR_EXIT,)),
    (REPORT + "static int registered = at_quick_exit(report);\n", "  if (bad) quick_exit(1);", (Flow.OBSERVED_EXIT,)),
    (REPORT + "static int registered = at_quick_exit(report);\n", "  if (bad) exit(1);", (Flow.NEXT_OR_EXIT,)),
    (LOGGER + "static Logger logger;\n", "  if (bad) exit(1);", (Flow.OBSERVED_EXIT,)),  # destroyed at exit
    (LOGGER + "static Logger logger;\n", "  if (bad) quick_exit(1);", (Flow.NEXT_OR_EXIT,)),
    (LOGGER, "  if (bad) exit(1);", (Flow.NEXT_OR_EXIT,)),  # a type with a destructor, no object of it
    ("static std::vector<float> samples;\n", "  if (bad) exit(1);", (Flow.NEXT_OR_EXIT,)),  # frees memory only
    ("static void on_abort(int) { puts(\"aborted\"); }\nstatic auto old = signal(SIGABRT, on_abort);\n",
     "  if (bad) abort();", (Flow.OBSERVED_EXIT,)),
    # a call that may leave the program: observed or not
    (ATEXIT + EXITS, "  die_if(bad);", (Flow.OBSERVED_EXIT,)),
    (EXITS, "  die_if(bad);", (Flow.NEXT,)),
    (THROWS + CATCHES, "  check(bad);", (Flow.OBSERVED_EXIT,)),  # a catch may see what ran
    (THROWS, "  check(bad);", (Flow.NEXT,)),  # uncaught: terminate, nothing of the program's runs
    (THROWS + CATCHES, "  printf(\"%d\\n\", bad);", (Flow.NEXT,)),  # C functions do not throw
    (THROWS + CATCHES, "  float* y = new float[4]; (void)y;", (Flow.OBSERVED_EXIT, Flow.NEXT)),  # bad_alloc
    # found by the second blind red team
    (REPORT.replace("static void", "__attribute__((destructor)) static void"), "  if (bad) exit(1);",
     (Flow.OBSERVED_EXIT,)),
    (REPORT + "static int (*const register_hook)(void (*)()) = std::atexit;\n"
     "static int hooked = register_hook(report);\n", "  if (bad) exit(1);", (Flow.OBSERVED_EXIT,)),
    (FPE, "  int share = 64 / (bad + 0); (void)share;", (Flow.OBSERVED_EXIT, Flow.NEXT)),  # a division may trap
    (FPE, "  int share = 64 + bad; (void)share;", (Flow.NEXT, Flow.NEXT)),
    (FPE.replace("SIGFPE", "SIGINT"), "  int share = 64 / (bad + 0); (void)share;", (Flow.NEXT, Flow.NEXT)),
    (FPE.replace("SIGFPE", "SIGINT"), "  raise(SIGINT);", (Flow.OBSERVED_EXIT,)),  # its handler runs there
    (REPORT + "static void on_abort(int) { report(); }\nstatic auto old = signal(SIGABRT, on_abort);\n" + THROWS,
     "  check(bad);", (Flow.OBSERVED_EXIT,)),  # uncaught: terminate, abort, the handler
    ("struct Scoped { int c; ~Scoped() noexcept(false) { if (c) throw std::runtime_error(\"bad\"); } };\n"
     + THROWS + CATCHES, "  Scoped{bad};", (Flow.OBSERVED_EXIT,)),  # the temporary's destructor throws
    (ATEXIT + "static void must_be_positive(int v) { if (v < 0) exit(2); }\n"
     "static void check_all(const std::vector<int>& v) { std::for_each(v.begin(), v.end(), must_be_positive); }\n",
     "  check_all(std::vector<int>(2, bad));", (Flow.OBSERVED_EXIT,)),  # a callback the library calls
    (REPORT + "static void on_abort(int) { report(); }\nstatic auto old = signal(SIGABRT, on_abort);\n"
     "static std::array<int, 4> table;\n", "  int v = table[bad]; (void)v;",
     (Flow.OBSERVED_EXIT, Flow.NEXT)),  # the library's assertions abort
    ("static jmp_buf restart;\nstatic void bail(int c) { if (c) longjmp(restart, 1); }\n"
     "static int armed() { return setjmp(restart); }\n", "  bail(bad);", (Flow.OBSERVED_EXIT,)),
])
def test_an_early_exit_that_runs_the_programs_own_code_is_observed(tmp_path, prelude, statement, flow):
    assert flows_between(tmp_path, main=statement, prelude=prelude)["main"] == flow


def test_main_s_own_objects_are_destroyed_when_main_returns_not_at_exit(tmp_path):
    logger = "  Logger here;\n  if (bad) return 1;\n  if (bad) exit(1);"
    flows = flows_between(tmp_path, main=logger, prelude=LOGGER)["main"]
    assert flows[1:] == (Flow.OBSERVED_EXIT, Flow.NEXT_OR_EXIT)
    samples = "  std::vector<float> samples(4);\n  auto sum = [=] { return samples[0]; };\n  if (bad) return 1;"
    assert flows_between(tmp_path, main=samples)["main"][-1] == Flow.NEXT_OR_EXIT
