"""The program's macros as the build the analysis saw expands them.

Fusion is proven for the program as compiled: a macro in a kernel body or a launch
(``out[i] = in[i + SHIFT]``) decides which bytes a launch touches, and a program rebuilt
with another ``-D`` (or an edited header) may need what the proof did not cover. So the
emitted program compares, before a fused path runs, each such macro's expansion with the
one recorded here, and takes the original launches when one differs. The comparison is of
the preprocessor's own text (the macro stringized after full expansion, whitespace
ignored), so it holds for any object-like macro: numbers, floats, expressions, types.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.core.errors import SiriusError

# the helpers the emitted program compares with: the expansion of a macro as a string, and
# two such strings equal but for whitespace (constant expressions: nvcc folds the check)
STRINGIZE = ("#ifndef SIRIUS_STR\n#define SIRIUS_STR_(...) #__VA_ARGS__\n"
             "#define SIRIUS_STR(...) SIRIUS_STR_(__VA_ARGS__)\n#endif\n")
SAME_TOKENS = ("#ifndef SIRIUS_SAME_TOKENS\n#define SIRIUS_SAME_TOKENS\n"
               "static constexpr bool sirius_same_tokens(const char* a, const char* b) {\n"
               "  return *a == ' ' ? sirius_same_tokens(a + 1, b) : *b == ' ' ? sirius_same_tokens(a, b + 1)\n"
               "       : *a == *b && (*a == '\\0' || sirius_same_tokens(a + 1, b + 1));\n}\n#endif\n")


def macro_expansions(job: CompileJob, names: list[str]) -> dict[str, str]:
    """For each macro of ``names``: its full expansion in the build of ``job``, stringized
    by the preprocessor (a C string literal, as the emitted check writes it)."""
    if not names:
        return {}
    with tempfile.TemporaryDirectory(prefix="sirius-macros-") as tmp:
        probe = Path(tmp) / "probe.cu"
        lines = [f'#include "{job.path.resolve()}"', STRINGIZE]
        lines += [f"sirius_macro_{k} SIRIUS_STR({name})" for k, name in enumerate(names)]
        probe.write_text("\n".join(lines) + "\n")
        cmd = [job.toolchain.clang, *job.common_args(), "--cuda-host-only", "-E", "-P", str(probe)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise SiriusError(f"error: cannot preprocess {job.path}: {err}") from None
    if proc.returncode != 0:  # the program itself compiled: a macro that cannot be stringized
        raise SiriusError(f"internal error: preprocessing the macros of {job.path} failed:\n{proc.stderr[-2000:]}")
    found = dict(re.findall(r"^sirius_macro_(\d+) (\".*\")\s*$", proc.stdout, re.M))
    return {name: found[str(k)] for k, name in enumerate(names) if str(k) in found}


def macro_conditions(names: list[str], expansions: dict[str, str]) -> list[str]:
    """C conditions: each macro of ``names`` expands as it did when the program was optimized."""
    return [f"sirius_same_tokens(SIRIUS_STR({n}), {expansions[n]})" for n in names if n in expansions]
