"""Whether a launch can be a fragment of a fused kernel at all, and why not.

A fragment is a launch's kernel written again as a part of a fused kernel. That needs a
``<<<>>>`` launch found in the source, written as a statement of its own inside braces
and not through a macro, with all of its arguments written out; a kernel whose
definition can be written again and is visible there, using nothing the kernel model
does not support and no device ``printf``; the default stream and a constant dynamic
shared memory size. A kernel whose ``__device__`` helpers read the built-in indices
(``index_helpers``) may be a fragment, but only one that keeps its own blocks and
threads.
"""

from __future__ import annotations

from sirius.analysis.program_model import LaunchInstance, ProgramModel
from sirius.core.target import WARP_SIZE
from sirius.fusion.schedule import Problem, RefusalKind


def fragment_problem(model: ProgramModel, inst: LaunchInstance) -> Problem | None:
    """Why this launch cannot become a fragment of a fused kernel, if it cannot."""
    why = _not_a_fragment(model, inst)
    return None if why is None else Problem(RefusalKind.NOT_A_FRAGMENT, why)


def _not_a_fragment(model: ProgramModel, inst: LaunchInstance) -> str | None:
    k, site, stmt = inst.kernel, inst.site, inst.statement
    if site is None and stmt.call is not None:
        return (f"launched by {stmt.call} with an argument array, not <<<>>>: only <<<>>> launches are "
                "rewritten into fused kernels")
    if site is None and inst.unplaced:
        return f"its launch expression cannot be rewritten: {inst.unplaced}"
    if site is None and model.source.renumbered:
        return f"launch expression not found at line {stmt.line} of the file: {model.source.renumbered}"
    if site is None:
        return "launch expression not found in the source" + (
            f" (it is in {stmt.inlined_from}, which the compiler inlined at line {stmt.line})"
            if stmt.inlined_from else "")
    if site.macro is not None:  # (its arguments have no text of their own: checked first)
        return (f"launch is written through the macro {site.macro}; its expansion cannot be rewritten "
                "in the source")
    block = stmt.block.constant() if stmt.block else None
    if block is not None and k.max_threads is not None and block[0] * block[1] * block[2] > k.max_threads:
        return (f"launched with {block[0] * block[1] * block[2]} threads per block, over its "
                f"__launch_bounds__({k.max_threads}): the launch fails, where in a fused kernel its code would run")
    if site.several_in_one is not None:
        return (f"{site.several_in_one} is written once for several of the launch's values (a macro that expands "
                "to a list): the rewrite names each value by the text written for it")
    if any(a.rstrip().endswith("...") for a in site.args):
        return "an argument is a parameter pack expansion"
    written = [a for a in site.args if a.strip()]  # libclang lists default arguments with no text
    if len(written) < len(k.params):
        return (f"the launch writes {len(written)} of the kernel's {len(k.params)} arguments (the others are "
                "default arguments of its declaration)")
    decl = model.kernel_decls.get(k.mangled)
    if decl is None:
        return "the kernel's definition is not in the program's source or a header of its own"
    if decl.unwritable is not None:
        return f"the kernel cannot be written as a fragment: {decl.unwritable}"
    if model.source.visible_from(decl) is None:
        return (f"the kernel is defined in {decl.range.file}, which the main file does not include at file scope "
                "(its #include is not found, or is inside a namespace, a function or a class)")
    if not site.statement:
        return "launch is not a statement of its own inside braces"
    if k.unsupported:
        return "kernel uses " + "; ".join(k.unsupported)
    if k.prints:  # a kernel's output follows the previous kernel's; fused, threads would interleave them
        return (f"kernel prints (device printf at line {k.prints[0]}): fused, its lines could interleave with "
                "those of the launches around it")
    if stmt.stream != "default":
        return "launch on a non-default stream"
    if stmt.shmem is None or stmt.shmem.constant_value() is None:
        return "dynamic shared memory size is not a constant"
    return None


def index_helpers(model: ProgramModel, inst: LaunchInstance) -> tuple[str, ...]:
    """``__device__`` functions the launch's kernel calls (transitively) that read
    ``blockIdx``, ``threadIdx``, ``blockDim`` or ``gridDim``: inside a fused kernel they
    read the fused kernel's indices, not the fragment's remapped ones."""
    decl = model.kernel_decls.get(inst.kernel.mangled)
    return decl.callees_read_indices if decl is not None else ()


def helper_reason(model: ProgramModel, inst: LaunchInstance) -> str:
    return (f"{inst.kernel.name} calls {', '.join(index_helpers(model, inst))}, which reads the built-in "
            "block and thread indices; a fragment placed in other blocks or threads would see the fused "
            "kernel's indices there")


def part_warp_problem(model: ProgramModel, inst: LaunchInstance, size: int) -> str | None:
    """Why ``inst``'s kernel, whose blocks of ``size`` threads are not whole warps, cannot
    run them in the first threads of a larger block (None: it can). The other lanes of its
    last warp are there too, running other code of the fused kernel, so each of its warp
    operations must name only the block's own lanes: a constant mask within them, or
    ``__activemask()`` asked in the kernel's own body, where the printer limits what it
    answers to the block's lanes (on a GPU the converged lanes are those already; a model
    of the device that answers every live lane needs the limit)."""
    k = inst.kernel
    if not (k.warp_ops or k.warp_masks) or size % WARP_SIZE == 0:
        return None
    here = f"{k.name} ({inst.where}) uses warp operations in blocks of {size} threads, part of a warp"
    if k.skippable_warp_op is not None:  # in the original a thread that returned has exited: not waited for
        return (f"{here}, and a thread may return before the one at line {k.skippable_warp_op}: in the fused kernel "
                "it waits for the rest of the block instead, and the operation would wait for it")
    wide = next((m for m in k.warp_masks if not m.within(size % WARP_SIZE)), None)
    if wide is not None:
        named = "names lanes outside the block" if wide.bits is not None else \
            "has a mask the analysis cannot bound to the block's lanes"
        return (f"{here}, and the one at line {wide.line} {named}: the rest of that warp, elsewhere in the fused "
                "kernel, would never reach it")
    decl = model.kernel_decls.get(k.mangled)
    lines = decl.body_text.split("\n") if decl is not None else []
    for op, line in k.warp_ops:
        at = line - decl.body_line if decl is not None and line is not None else -1
        written = lines[at] if 0 <= at < len(lines) else ""
        if op == "activemask" and ("__activemask" not in written or "::__activemask" in written):
            return (f"{here}, and asks __activemask() at line {line} other than as a plain call in its own body (in "
                    "a helper function, a cooperative group, or qualified), where its answer cannot be limited to "
                    "the block's lanes")
    return None


def helper_problem(model: ProgramModel, inst: LaunchInstance) -> Problem:
    return Problem(RefusalKind.INDEX_HELPERS, helper_reason(model, inst))
