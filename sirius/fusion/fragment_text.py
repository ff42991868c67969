"""Text surgery on code copied from the program: the one module that edits a kernel body's
text, at sites the kernel model found.

A fragment (``codegen``) is a kernel's body verbatim as a ``__device__`` function: the
edits here are the only changes made to it: its own barriers that order nothing
commented out (the lines ``fusion.redundant_barriers`` found), its static shared arrays
declared as references into the fused kernel's pool (the declarations' byte ranges
``source_index`` found, laid out by ``pool_layout``), its barriers counting only its
own threads in a narrow phase, and ``__restrict__`` left to the fused kernel's
parameters. ``#line`` directives keep ``__LINE__`` and diagnostics where the program
wrote them.
"""

from __future__ import annotations

import re

from sirius.analysis.program_model import LaunchInstance
from sirius.analysis.source_index import KernelDecl, SharedDecl


RESTRICT = re.compile(r"\b__restrict(?:__)?\b")


def strip_restrict(text: str) -> str:
    """A type or parameter list without its ``__restrict__`` qualifiers."""
    return " ".join(RESTRICT.sub(" ", text).split())


BARRIER_CALL = re.compile(r"\b__syncthreads\s*\(\s*\)\s*;")


def drop_barrier_lines(body_text: str, body_line: int, lines: tuple[int, ...]) -> str:
    """The kernel body without the ``__syncthreads();`` on each of ``lines`` (the printer's
    side of this pass)."""
    text = body_text.split("\n")
    for line in lines:
        i = line - body_line
        text[i] = BARRIER_CALL.sub("/* barrier removed: it orders no dependence */", text[i], count=1)
    return "\n".join(text)


POOL_ALIGNMENT = 128  # bytes: the pool's, and an array's that asks for one (TVM writes alignas(64))


def pool_layout(decl: KernelDecl) -> tuple[list[tuple[SharedDecl, int]], int]:
    """Where each of the kernel's shared variables lies in its part of the pool (each at its
    ``SharedDecl.align``), and the bytes it needs."""
    out, at = [], 0
    for d in decl.shared_decls:
        at = -(-at // d.align) * d.align
        out.append((d, at))
        at += d.bytes
    return out, -(-at // 16) * 16


def pooled_declaration(d: SharedDecl, offset: int, original: str) -> str:
    """The declaration of ``d`` as a reference into the pool (as many lines as ``original``)."""
    dims = "".join(f"[{n}]" for n in d.dims)
    if dims:
        text = f"{d.element} (&{d.name}){dims} = *reinterpret_cast<{d.element} (*){dims}>(sirius_pool + {offset});"
    else:
        text = f"{d.element}& {d.name} = *reinterpret_cast<{d.element}*>(sirius_pool + {offset});"
    return text + "\n" * original.count("\n")


def fragment_name(inst: LaunchInstance) -> str:
    return f"sirius_frag_{inst.kernel.ident}"


def fragment_call(inst: LaunchInstance, decl) -> str:
    """How a fused kernel (at file scope) names the fragment of ``inst``'s kernel."""
    scope = "".join(f"{ns}::" for ns in decl.namespaces if ns)
    targs = f"<{', '.join(decl.template_args)}>" if decl.template_params else ""
    return f"{scope}{fragment_name(inst)}{targs}"


def fragment_body(decl, removed_barriers: tuple[int, ...], pooled: bool, narrow: bool = False) -> str:
    """The kernel's body as a fragment runs it: its static shared arrays as references into
    the pool when ``pooled``, without the own barriers at ``removed_barriers``, and with
    ``narrow`` its barriers counting only its own threads (a phase of a cooperative kernel
    may run in the first threads of a larger block: ``fusion.cooperative``)."""
    text = decl.body_text
    if pooled:
        for d, offset in sorted(pool_layout(decl)[0], key=lambda p: -p[0].start):
            text = text[:d.start] + pooled_declaration(d, offset, text[d.start:d.end]) + text[d.end:]
    text = drop_barrier_lines(text, decl.body_line, removed_barriers)
    return BARRIER_CALL.sub("sirius_block_sync(sirius_bdim);", text) if narrow else text


# a barrier over the threads of a fragment's own block, which may be the first threads of a larger one
BLOCK_SYNC_HELPER = """static __device__ __forceinline__ void sirius_block_sync(const dim3 sirius_b) {
  const unsigned sirius_n = sirius_b.x * sirius_b.y * sirius_b.z;
  if (sirius_n == blockDim.x * blockDim.y * blockDim.z) __syncthreads(); else __barrier_sync_count(1, sirius_n);
}
"""


# in a fragment whose block fills part of a warp, the rest of which runs other code of the
# fused kernel: __activemask() answers the block's lanes only, as in a warp of the original
# block, where the other lanes do not exist (fragments.part_warp_problem)
BLOCK_LANES_ACTIVEMASK = """  const auto __activemask = [&]() -> unsigned {  // sirius: the lanes of this warp in the block only
    const unsigned sirius_n = blockDim.x * blockDim.y * blockDim.z;
    const unsigned sirius_t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned sirius_left = sirius_n - (sirius_t & ~31u);
    return ::__activemask() & (sirius_left >= 32u ? 0xffffffffu : (1u << sirius_left) - 1u);
  };
  (void)__activemask;"""


def fragment_function(inst: LaunchInstance, decl, removed_barriers: tuple[int, ...] = (), pooled: bool = False,
              narrow: bool = False, in_place: bool = False, part_warp: bool = False,
              file: str | None = None) -> str:
    """The kernel's body as a device function, in the kernel's namespaces (its body names
    what they hold; ``in_place``: it is written right after the kernel, inside them already)
    and, for a template instance, a template called with the instance's arguments (see
    ``fragment_body`` for what the passes change in it); with ``part_warp``, its
    ``__activemask()`` answers only its block's lanes of a warp. ``file``: the body is
    printed in another file than the one it is written in, whose name its ``#line`` gives."""
    shadow = "\n".join([
        "  const uint3 blockIdx = sirius_bid;", "  const uint3 threadIdx = sirius_tid;",
        "  const dim3 blockDim = sirius_bdim;", "  const dim3 gridDim = sirius_gdim;",
        "  (void)blockIdx; (void)threadIdx; (void)blockDim; (void)gridDim;"]
        + ([BLOCK_LANES_ACTIVEMASK] if part_warp else []))
    # a fragment promises nothing about its pointers: the fused kernel's parameters carry
    # the __restrict__ qualifiers the alias facts prove (fusion.promises)
    params = strip_restrict(decl.params_text.strip())
    sep = ", " if params and params != "void" else ""
    params = "" if params == "void" else params
    namespaces = () if in_place else decl.namespaces
    opening = "".join(f"namespace {ns} {{ " if ns else "namespace { " for ns in namespaces)
    template = f"template <{decl.template_params}>\n" if decl.template_params else ""
    return (f"// fragment of kernel {inst.kernel.name}: its body, with its own block and thread indices\n"
            + (opening + "\n" if opening else "") + template +
            f"static __device__ __forceinline__ void {fragment_name(inst)}(\n"
            f"    const uint3 sirius_bid, const uint3 sirius_tid, const dim3 sirius_bdim, const dim3 sirius_gdim"
            + (", unsigned char* const sirius_pool" if pooled else "")
            + f"{sep}{params}) {{\n{shadow}\n{line_directive(decl.body_line, file)}{fragment_body(decl, removed_barriers, pooled, narrow)}\n}}\n"
            + ("}" * len(namespaces) + "\n" if namespaces else ""))


def line_directive(line: int | None, file: str | None = None) -> str:
    """``#line`` for text copied from the program: ``__LINE__`` in it (an error code, an
    assertion's message) reads as where the program wrote it; with ``file``, ``__FILE__``
    and diagnostics name that file (text copied from an included file)."""
    if not line:
        return ""
    if file is None:
        return f"#line {line}\n"
    return f'#line {line} "{line_file_name(file)}"\n'


def line_file_name(file: str) -> str:
    """``file`` as a ``#line`` directive's string literal holds it."""
    return file.replace("\\", "\\\\").replace('"', '\\"')


def line_end(source: bytes) -> str:
    """The line end of a file: CRLF where most of its lines end so (a mixed file: its
    dominant ending), else LF."""
    crlf = source.count(b"\r\n")
    return "\r\n" if crlf > source.count(b"\n") - crlf else "\n"


# a C++ raw string literal: its line ends are part of its value, never converted
RAW_STRING = re.compile(r'R"([^ ()\\\t\v\f\r\n]{0,16})\((.*?)\)\1"', re.S)


def with_line_end(text: str, end: str) -> str:
    """``text`` (inserted by sirius, with LF line ends and copies of the program's text)
    with each LF not already part of a CRLF ending as ``end``: an emitted CRLF file has
    CRLF lines only. The inside of a raw string literal is left as it is (its line ends
    are its value); so are the CRLFs the copies bring."""
    if end == "\n":
        return text
    out, at = [], 0
    for m in RAW_STRING.finditer(text):
        out.append(LONE_LF.sub(end, text[at:m.start()]) + m.group(0))
        at = m.end()
    return "".join(out) + LONE_LF.sub(end, text[at:])


LONE_LF = re.compile(r"(?<!\r)\n")


def keeping_lines(source: bytes, start: int, end: int, text: str, file: str | None = None) -> str:
    """``text`` replacing ``source[start:end]``, so that the lines after it keep their
    numbers: padded with newlines when it has fewer, else followed by a ``#line`` (naming
    ``file``, the main file, where other ``#line`` directives name included files)."""
    old, new = source[start:end].count(b"\n"), text.count("\n")
    if new < old:
        return text + "\n" * (old - new)
    if new > old:
        return text + "\n" + line_directive(source[:end].count(b"\n") + 1, file)
    return text
