"""The promise check: what an emitted program's fused kernels promise must hold.

Runs on every program the optimizer is about to write (the ``check`` stage of
the pipeline) and in ``sirius verify`` on the optimized program. It does not
trust code generation: it analyses the emitted program itself (clang's IR of
it, launches and alias facts of every fused launch) and, where nvcc is
installed and a limit depends on them, the figures ``ptxas -v`` gives for its
kernels (a block of at most 256 threads fits the register file at the 255
registers a thread may have; shared memory well below the limit is the kernel
model's: then ptxas is not asked, and the result says so). A fused kernel
(``sirius_fused_N``, ``sirius_wave_N``) violates a promise when

- a ``__restrict__`` parameter (in the source or ``noalias`` in the IR)
  reaches bytes another of its pointers reaches while one of them writes, or
  an inlined fragment still carries a restrict promise of its own (scoped
  alias metadata in the IR);
- a load through the read-only cache reads bytes another fragment writes;
- a block needs more registers than the register file holds
  (registers x threads, with the per-warp allocation granularity), more
  threads than its ``__launch_bounds__``, or more shared memory (static from
  ptxas plus the launch's dynamic size) than 48 KB without the program's
  opt-in, or than the device allows with it.

The CPU backend cannot find any of these by running the program: the first
two are undefined behaviour only nvcc exploits, the last are limits only a
GPU enforces.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sirius.analysis.frontend import CompileJob
from sirius.analysis.program_model import ProgramModel, analyze_program
from sirius.core.errors import InputError, SiriusError, ToolchainError
from sirius.core.target import target_for
from sirius.fusion.fragment_text import RESTRICT
from sirius.fusion.promises import broken_promises, pointer_uses
from sirius.fusion.check_cache import cached_check, check_key
from sirius.toolchain import KernelResources, compile_resources, find_nvcc

FUSED_KERNEL = re.compile(r"^sirius_(fused|wave|coop|cells)_(\d+)$")  # coop, cells: N is the region, else the group
GENERATED_KERNEL = re.compile(r"\bsirius_(?:fused|wave|coop|cells)_\d+\b")  # in a program's text
FUSED_MANGLED = re.compile(r"(?:^|\d)sirius_(?:fused|wave|coop|cells)_\d+")
_FRAGMENT_PARAM = re.compile(r"^s(\d+)_")
_OPT_IN = re.compile(r"cudaFuncSetAttribute\(\s*(\w+)\s*,\s*cudaFuncAttributeMaxDynamicSharedMemorySize\s*,"
                     r"\s*(\d+)\s*\)")


@dataclass(frozen=True)
class Violation:
    """A promise or a launch limit an emitted fused kernel breaks."""

    kernel: str
    group: int
    what: str  # "restrict", "read-only cache", "fragment restrict", "registers", "threads", "shared memory"
    message: str


@dataclass
class CheckResult:
    violations: list[Violation] = field(default_factory=list)
    kernels_checked: int = 0
    ptxas: bool = False  # register and shared memory figures came from ptxas
    bounded: bool = False  # not asked of ptxas: no figure it could give breaks a limit (_ptxas_needed)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, KernelResources] = field(default_factory=dict)  # every kernel's, by mangled name (ptxas)


def ptxas_figures(job: CompileJob) -> dict[str, KernelResources] | None:
    """Registers and static shared memory of every kernel of ``job``'s program, from
    ``nvcc -cubin -Xptxas -v`` (None when nvcc is not installed or cannot compile it)."""
    return compile_resources(job.path, job.flags.arch, job.flags.preprocessor_args(), job.toolchain.cuda_path)


def check_model(model: ProgramModel, source: str, figures: dict[str, KernelResources] | None,
                bounded: bool = False) -> CheckResult:
    """Every fused launch of an analysed emitted program, against its promises and limits
    (``bounded``: without ptxas's figures, which no limit depends on)."""
    result = CheckResult(ptxas=figures is not None, figures=dict(figures or {}), bounded=bounded)
    target = target_for(model.arch)
    opted_in = {name: int(v) for name, v in _OPT_IN.findall(source)}
    for note in model.notes:  # launched as declared, but the definition is another function
        undefined = re.search(r"kernel (\S+) not found in device code", note)
        kernel = re.search(r"sirius_(fused|wave|coop|cells)_(\d+)", undefined[1]) if undefined else None
        if kernel is not None:
            result.violations.append(Violation(
                kernel[0], int(kernel[2]), "does not link",
                f"{kernel[0]} is launched as declared where it is launched, but defined in another scope (a "
                "namespace or class): the program would not link"))
    for inst, m in _fused_launches(model):
        name, group, wave = m.group(0), int(m.group(2)), m.group(1) in ("wave", "cells")
        result.kernels_checked += 1
        found = lambda what, message: result.violations.append(Violation(name, group, what, message))
        decl = model.kernel_decls.get(inst.kernel.mangled)
        restrict = {p for p, t in (decl.params if decl else ()) if RESTRICT.search(t)}
        restrict |= {inst.kernel.params[k].name for k in inst.kernel.noalias if k < len(inst.kernel.params)}
        uses = pointer_uses(inst, lambda j, n: n)
        uses = [dataclasses.replace(u, launch=int(f.group(1)) if (f := _FRAGMENT_PARAM.match(u.pointer)) else -1)
                for u in uses]
        for b in broken_promises(name, uses, restrict, across_cells=wave):
            found(b.promise, b.describe())
        if inst.kernel.scoped_alias:
            found("fragment restrict", f"{name}: an inlined fragment keeps a restrict promise of its own "
                                       f"(scoped alias metadata at line {inst.kernel.scoped_alias})")
        block = inst.statement.block.constant() if inst.statement.block else None
        threads = block[0] * block[1] * block[2] if block else None
        if threads is not None and inst.kernel.max_threads is not None and threads > inst.kernel.max_threads:
            found("threads", f"{name}: launched with {threads} threads per block, over its "
                             f"__launch_bounds__({inst.kernel.max_threads})")
        fig = (figures or {}).get(inst.kernel.mangled)
        if fig is not None and threads is not None and target.block_registers(fig.registers, threads) > \
                target.max_block_registers:
            found("registers", f"{name}: {fig.registers} registers x {threads} threads exceed the register "
                               f"file ({target.max_block_registers} per block)")
        static = fig.static_shared if fig is not None else sum(s.bytes or 0 for s in inst.kernel.shared
                                                               if not s.dynamic)
        dynamic = inst.statement.shmem.constant_value() if inst.statement.shmem else 0
        limit = target.shared_opt_in_limit
        allowed = opted_in.get(name, target.static_shared_limit - static)
        if dynamic is not None and (dynamic > allowed or static + allowed > limit):
            found("shared memory", f"{name}: needs {static} bytes of static and {dynamic} of dynamic shared "
                                   f"memory; the launch may have {target.static_shared_limit} bytes in all"
                                   + (f", {allowed} dynamic after the program's opt-in" if name in opted_in
                                      else " without cudaFuncSetAttribute(MaxDynamicSharedMemorySize)")
                                   + f", at most {limit} on {model.arch}")
    if bounded:
        result.notes.append("ptxas not asked: every fused block has at most 256 threads, which fit the register "
                            "file at the most registers a thread may have, and its shared memory is known from "
                            "the kernel model")
    elif figures is None:
        result.notes.append("nvcc not found or could not compile the program: registers not checked, static "
                            "shared memory from the kernel models")
    return result


def check_program(job: CompileJob, entry: str = "main", source: str | None = None) -> CheckResult:
    """Analyse the program of ``job`` (as written, or ``source`` written beside it: under the
    original's name, its folder on the include path) and check it. A text checked before
    under the same flags, folder, tools and code is answered from the check cache
    (``fusion.check_cache``)."""
    if source is None:
        return _check_file(job, entry)[0]
    folder = str(job.path.resolve().parent)
    try:
        nvcc: str | None = find_nvcc(job.toolchain.cuda_path)
    except ToolchainError:
        nvcc = None
    key = check_key((repr(job.flags), repr(job.toolchain), folder, job.path.name, entry),
                    (job.toolchain.clang, nvcc), source)

    def check_beside_the_original() -> tuple[CheckResult, tuple[str, ...] | None]:
        with tempfile.TemporaryDirectory(prefix="sirius-check-") as tmp:
            return _check_file(_beside(job, source, Path(tmp)), entry)
    return cached_check(key, check_beside_the_original)


@functools.lru_cache(maxsize=8)
def emitted_figures(job: CompileJob, source: str) -> dict[str, KernelResources]:
    """ptxas's figures of every kernel of the emitted program ``source``, compiled as
    ``check_program`` compiles it (beside the original); empty without nvcc. For what needs
    them where the check did not (the cost model's registers)."""
    with tempfile.TemporaryDirectory(prefix="sirius-check-") as tmp:
        return ptxas_figures(_beside(job, source, Path(tmp))) or {}


def _beside(job: CompileJob, source: str, folder: Path) -> CompileJob:
    """``source`` written in ``folder`` under the original's name, compiled with the
    original's flags: its includes are found relative to the original's folder."""
    path = folder / job.path.name
    path.write_text(source)
    flags = dataclasses.replace(job.flags, include_dirs=(str(job.path.resolve().parent),) + job.flags.include_dirs)
    return CompileJob(path, flags, job.toolchain)


def _check_file(job: CompileJob, entry: str) -> tuple[CheckResult, tuple[str, ...] | None]:
    """The check of the program ``job`` names, and the files it includes (None when it does
    not compile). ptxas's figures are asked only where a limit depends on them
    (``_ptxas_needed``)."""
    source = job.path.read_text()
    with ThreadPoolExecutor(max_workers=1) as nvcc:
        # ptxas's figures while clang's analysis runs, where a block may be too large to do without
        early = nvcc.submit(ptxas_figures, job) if _large_blocks(source) else None
        try:
            model = analyze_program(job, entry=entry, kernels=lambda name: FUSED_MANGLED.search(name) is not None)
        except (InputError, SiriusError) as err:
            if not re.search(r":\d+:\d+: error", str(err)):
                raise SiriusError(f"internal error: the emitted program does not analyse: {err}") from None
            return _not_compiling(job, str(err)), None
        if early is None and not _ptxas_needed(model):
            return check_model(model, source, None, bounded=True), model.source.included
        figures = early.result() if early is not None else ptxas_figures(job)
    return check_model(model, source, figures), model.source.included


# a fused launch's static shared memory (from the kernel model) is taken without ptxas's
# figure below this share of the 48 KB a block may have without an opt-in: ptxas adds
# alignment, and arrays of functions the model did not see inlined
_SHARED_WITHOUT_PTXAS = 0.5


_GENERATED_DEFINITION = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\((\d+)[^)]*\)\s+)?"
                                   r"sirius_(?:fused|wave|coop|cells)_\d+\s*\(")


def _large_blocks(source: str) -> bool:
    """Whether a generated kernel of ``source`` may run blocks of more than 256 threads (its
    ``__launch_bounds__`` says so, or it has none): then ptxas's figures are likely needed."""
    return any(m.group(1) is None or int(m.group(1)) > 256 for m in _GENERATED_DEFINITION.finditer(source))


def _fused_launches(model: ProgramModel):
    """Each launch of a generated kernel, once: the launch, and the kernel's name and match."""
    done: set[tuple[str, int]] = set()
    for inst in model.launches:
        m = FUSED_KERNEL.match(inst.kernel.name.split("(")[0].split(" ")[-1].split("::")[-1])  # (ns::sirius_fused_0)
        if m is None or (inst.kernel.mangled, inst.index) in done:
            continue
        done.add((inst.kernel.mangled, inst.index))
        yield inst, m


def _ptxas_needed(model: ProgramModel) -> bool:
    """Whether some fused launch's limits depend on ptxas's figures: its block size is not
    a constant, or a block of it at the most registers a thread may have would overflow the
    register file (more than 256 threads), or its shared memory is not known from the kernel
    model with room to spare. Else no figure ptxas could give breaks a limit."""
    target = target_for(model.arch)
    for inst, _ in _fused_launches(model):
        block = inst.statement.block.constant() if inst.statement.block else None
        if block is None:
            return True
        threads = block[0] * block[1] * block[2]
        if target.block_registers(target.max_thread_registers, threads) > target.max_block_registers:
            return True
        static = [s.bytes for s in inst.kernel.shared if not s.dynamic]
        dynamic = inst.statement.shmem.constant_value() if inst.statement.shmem else 0
        if None in static or dynamic is None \
                or sum(static) + dynamic > _SHARED_WITHOUT_PTXAS * target.static_shared_limit:
            return True
    return False


def _not_compiling(job: CompileJob, diagnostics: str) -> CheckResult:
    """clang rejects the emitted program: a violation of the group whose generated code
    the first error points into (group -1: it cannot be told, every group)."""
    lines = job.path.read_text().splitlines()
    where = re.search(rf"{re.escape(job.path.name)}:(\d+):\d+: error", diagnostics)
    group = _group_at(lines, int(where.group(1)) - 1) if where else -1
    first = next((ln for ln in diagnostics.splitlines() if ": error" in ln), diagnostics.strip()[:300])
    kernel = f"sirius_fused_{group}" if group >= 0 else "the emitted program"
    return CheckResult([Violation(kernel, group, "does not compile",
                                  f"{kernel}: the emitted program does not compile: {first.strip()}")])


def _group_at(lines: list[str], k: int) -> int:
    """The fused kernel a line of generated code belongs to (-1 when none can be told)."""
    own = re.search(r"sirius_(?:fused|wave|cells)_(\d+)", lines[k]) if 0 <= k < len(lines) else None
    if own:
        return int(own.group(1))
    start = next((i for i in range(k, -1, -1) if "// ---- kernels generated by sirius ----" in lines[i]), None)
    if start is None or any("// ---- end of generated kernels ----" in ln for ln in lines[start:k]):
        return -1
    for i in range(k, start, -1):
        head = re.match(r"__global__ void (?:__launch_bounds__\(\d+\) )?sirius_(?:fused|wave|cells)_(\d+)", lines[i])
        if head:
            return int(head.group(1))
        frag = re.match(r"static __device__ __forceinline__ void (sirius_frag_\w+)\(", lines[i])
        if frag:  # a fragment: the first fused kernel that calls it
            call = next((j for j in range(i + 1, len(lines)) if re.search(rf"{frag.group(1)}\s*[(<]", lines[j])
                         and not lines[j].startswith("static __device__")), None)
            return _group_at(lines, call) if call is not None and call > k else -1
    return -1
