"""The entry point: ``generate_program`` checks its options, draws a program for the seed
and returns its source with what it intends (launches, host statements, dependences).
"""

from __future__ import annotations

from sirius.testing.progen.assemble import _assemble, _macros_used
from sirius.testing.progen.dependences import _dependences
from sirius.testing.progen.generator import _Gen
from sirius.testing.progen.hazards import PROGRAM_MACROS
from sirius.testing.progen.layouts import LAYOUTS, Layouts
from sirius.testing.progen.model import GeneratedProgram, HostOp, Launch


def generate_program(seed: int, *, max_kernels: int = 8, size: int = 4096,
                     max_buffers: int = 8, argv_block: bool = False, hazards: bool = True,
                     layouts: bool = False) -> GeneratedProgram:
    """A complete random CUDA program with 2..``max_kernels`` launches.

    ``size`` is the number of floats per buffer, a positive multiple of 256;
    the 2-D templates (tiles, transpose) appear when it is the square of a
    multiple of 16 (the default 4096 = 64 x 64). With ``argv_block`` the element-wise
    launches of the default block size take their block size from the program's first
    argument (grid rounded up, the kernels check bounds); the description (shapes,
    footprints, dependences) is then that of a run without arguments. With ``hazards`` false
    no program holds the constructs of ``P_HAZARDS``: each seed gives the program older
    versions generated (seeds kept as regressions of those versions keep their program).
    With ``layouts`` some programs are laid out as application code is (``progen.layouts``:
    an array of device pointers, kernels in an included file, launches in host helpers,
    CRLF line ends), from a stream of their own: without it, every seed gives the program
    it gave before; with it, the same launches, dependences and results, laid out anew
    (``GeneratedProgram.layouts``, and ``files`` to write beside the source).
    """
    if size <= 0 or size % 256:
        raise ValueError(f"size must be a positive multiple of 256, not {size}")
    if max_kernels < 2:
        raise ValueError("max_kernels must be at least 2")
    if max_buffers < 3:
        raise ValueError("max_buffers must be at least 3")
    gen = _Gen(seed, max_kernels, size, max_buffers, argv_block, hazards)
    gen.run()
    stmts = gen.stmts
    launches: list[Launch] = []
    for idx, s in enumerate(stmts):
        grid, block = s.tmpl.shape()
        reads, writes = set(), set()
        for ptrs in (s.ptrs, *s.alts):
            for p, role in zip(ptrs, s.tmpl.roles):
                if "r" in role:
                    reads.add(p)
                if "w" in role:
                    writes.add(p)
        launches.append(Launch(
            index=idx, kernel=s.tmpl.name, pattern=s.tmpl.pattern, structure=s.structure,
            grid=grid, block=block, reads=tuple(sorted(reads, key=_buf_key)),
            writes=tuple(sorted(writes, key=_buf_key)),
            args=s.arg_text + s.tmpl.scalars(), loop=s.loop, trips=s.trips, step=s.step,
            features=s.tmpl.features, nest=s.nest,
        ))
    host_ops = tuple(
        HostOp(index=k, kind=o.kind, position=o.position, reads=tuple(sorted(o.reads, key=_buf_key)),
               writes=tuple(sorted(o.writes, key=_buf_key)), text=o.text, loop=o.loop)
        for k, o in enumerate(gen.host_ops))
    # data written by launches or host statements (not the scalar c0, not the pointer gp)
    written = {b for l in launches for b in l.writes} | {b for o in host_ops for b in o.writes}
    outputs = sorted((b for b in written if gen.symbols.get(b, "array") == "array"), key=_buf_key)
    chosen = Layouts.draw(seed, layouts)
    source, kernels, files = _assemble(gen, outputs, chosen)
    return GeneratedProgram(
        seed=seed, source=source, launches=tuple(launches),
        expected_dependences=tuple(_dependences(stmts, gen.host_ops)),
        buffers=tuple(gen.buffers) + tuple(gen.symbols), outputs=tuple(outputs), size=size,
        kernels=kernels, host_ops=host_ops, symbols=tuple(gen.symbols),
        rebuild_defines=tuple(f"{name}={PROGRAM_MACROS[name][1]}" for name in _macros_used(gen)),
        macro_kernels=tuple(sorted({s.tmpl.name for s in stmts if s.tmpl.macros})),
        files=files, layouts=_layouts_used(chosen, source, files),
    )


def _layouts_used(chosen: Layouts, source: str, files: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The layouts the program shows (one drawn may have nothing to change: no launch of
    main to move, a pool in place of separate buffers)."""
    shown = {"included_kernels": bool(files), "crlf": "\r\n" in source or any("\r\n" in t for _, t in files),
             "pointer_array": "d_bufs[" in source, "host_helpers": "run_part0(" in source}
    return tuple(name for name in LAYOUTS if shown[name])


def _buf_key(name: str) -> tuple:
    """b0, b1, ..., b10, then the device globals g0, g1, ..., c0, gp."""
    digits = name[1:]
    return (name[0] != "b", name[0] != "g", int(digits) if digits.isdigit() else 0, name)
