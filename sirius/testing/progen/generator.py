"""The generator's state and its choices: the probabilities of the newer constructs, the
buffers, which template a step uses (a palette template or a construct of issue 26 in
its place), the host text of each statement, and the loop of steps (``_Gen.run``).
"""

from __future__ import annotations

import random

from sirius.testing.progen.construct_steps import _ConstructSteps
from sirius.testing.progen.constructs import TailBarrier
from sirius.testing.progen.elementwise import Map, Shift, Tail
from sirius.testing.progen.hazards import (
    BIG_SHARED_BYTES, PROGRAM_MACROS, BigShared, ByteNeighbor, FloatMacro, LdgHelper, MacroShift,
)
from sirius.testing.progen.palette_steps import _PaletteSteps
from sirius.testing.progen.shared_memory import BlockNeighbor, TileMap, Transpose
from sirius.testing.progen.statements import _HostStmt, _Stmt
from sirius.testing.progen.templates import BARRIER_VARIANTS, UNARY_OPS, Ctx, Template


# Probabilities of the constructs that once made the optimizer miscompile
# (drawn from the second random stream, ``_Gen.xrng``).
P_HOST_OP = 0.12          # a host statement before a generator step (at most MAX_HOST_OPS)
MAX_HOST_OPS = 3
P_NEW_STEP = 0.22         # a step of the new kinds below instead of a palette step
P_BARRIER_VARIANT = 0.3   # __syncthreads_count/_and/_or in a barrier template
P_TAIL_BARRIER = 0.35     # a tail_return template becomes tail_barrier
P_GIDX = 0.2              # a program's element-wise kernels call gidx()
# Constructs that made a transformation take as a fact what it only assumed (issue 26): in a
# program drawn for them (P_HAZARDS), each replaces a palette template of the same footprint.
# They come from a third stream (``_Gen.hrng``), so that the palette's and the other newer
# constructs' choices stay those of the other two streams, and a program not drawn for them
# is the one older versions generated for its seed.
P_HAZARDS = 0.4           # the program holds these constructs
P_HAZARD_STEP = 0.35      # in such a program, a launch of one of them before a generator step
P_BYTE_VIEW = 0.8         # a block_neighbor read back through unsigned char* / short*
P_MACRO_SHIFT = 0.8       # a shift by the program macro SHIFT (rebuilt with another value)
P_LDG_HELPER = 0.3        # an element-wise map reading through a noinline __ldg / restrict helper
P_FLOAT_MACRO = 0.25      # an element-wise map scaled by the float macro GAIN
P_BIG_SHARED = 0.25       # an element-wise map through over 48 KB of dynamic shared memory
#: New step kinds: (launches needed, name); each at most once per program.
NEW_STEPS = (
    (1, "helper_call"), (2, "overload"), (2, "globals"), (2, "const_symbol"),
    (1, "global_pointer"), (2, "helper_reduce"), (2, "loop_nest"),
)


class _Gen(_PaletteSteps, _ConstructSteps):
    """One program being drawn: its random streams, buffers, statements and host text.

    The steps that draw from the palette are ``_PaletteSteps``, those of the newer
    constructs ``_ConstructSteps``; ``run`` chooses among them."""

    def __init__(self, seed: int, max_kernels: int, size: int, max_buffers: int, argv_block: bool = False,
                 hazards: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)
        # a second stream for the newer constructs, so that the palette's
        # choices stay those of the main stream
        self.xrng = random.Random(seed * 7919 + 104729)
        self.hrng = random.Random(seed * 15485863 + 32452843)
        self.hazards = self.hrng.random() < P_HAZARDS and hazards
        # the default value of each program macro (PROGRAM_MACROS) the kernels may use
        self.macro_defaults = {name: self.hrng.choice(values) for name, (values, _) in PROGRAM_MACROS.items()}
        self.size = size
        side = _isqrt(size)
        self.side = side if side * side == size and side % 16 == 0 else None
        self.ctx = Ctx(n=size, side=self.side, block=self.rng.choice((128, 256)), argv_block=argv_block)
        self.max_kernels = max_kernels
        self.max_buffers = max_buffers
        self.buffers: list[str] = []
        self.recent: list[str] = []  # buffers in order of last write, newest last
        self.reduced: dict[str, str] = {}  # buffer -> "first"/"block:<chunk>" when it holds reduced values
        self.body: list[str] = []  # host statements (launches and loops)
        self.stmts: list[_Stmt] = []
        self.host_ops: list[_HostStmt] = []
        self.host_helpers: list[str] = []  # host helper functions, emitted before main
        self.symbols: dict[str, str] = {}  # device global -> "array" / "constant" / "pointer"
        self.probe = False  # a device-to-host read feeds the probe line
        self.used_new: set[str] = set()
        self.gidx = self.xrng.random() < P_GIDX
        self.n_loops = 0
        self.n_steps = 0
        for _ in range(self.rng.randint(3, 4)):
            self.new_buffer()

    # ---- buffers
    def new_buffer(self) -> str:
        name = f"b{len(self.buffers)}"
        self.buffers.append(name)
        return name

    def new_symbol(self, kind: str) -> str:
        if kind == "constant":
            name = "c0"
        elif kind == "pointer":
            name = "gp"
        else:
            name = f"g{sum(1 for k in self.symbols.values() if k == 'array')}"
        self.symbols.setdefault(name, kind)
        return name

    def pick_input(self, exclude: tuple[str, ...] = (), rng: random.Random | None = None) -> str:
        rng = rng or self.rng
        recent = [b for b in self.recent if b not in exclude]
        if recent and rng.random() < 0.7:
            # one of the three newest results: chains of dependences
            return rng.choice(recent[-3:])
        pool = [b for b in self.buffers if b not in exclude]
        if not pool:
            return self.new_buffer()
        return rng.choice(pool)

    def pick_output(self, exclude: tuple[str, ...] = (), rng: random.Random | None = None) -> str:
        rng = rng or self.rng
        pool = [b for b in self.buffers if b not in exclude]
        if not pool or (len(self.buffers) < self.max_buffers and rng.random() < 0.45):
            return self.new_buffer()
        return rng.choice(pool)

    def wrote(self, *names: str) -> None:
        for b in names:
            if b in self.symbols:
                continue
            if b in self.recent:
                self.recent.remove(b)
            self.recent.append(b)
            self.reduced.pop(b, None)

    # ---- templates
    def other_block(self, rng: random.Random | None = None) -> int:
        rng = rng or self.rng
        choices = [b for b in (64, 128, 256, 512) if b != self.ctx.block and self.size % b == 0]
        return rng.choice(choices)

    def variant(self) -> str | None:
        """The barrier of a barrier template: usually ``__syncthreads()``."""
        if self.xrng.random() < P_BARRIER_VARIANT:
            return self.xrng.choice(BARRIER_VARIANTS[1:])
        return None

    def unary_template(self, allow_2d: bool = True, rng: random.Random | None = None) -> Template:
        """A one-input one-output template (for loops and plain steps)."""
        kinds = ["map", "map", "map_reblock", "tail", "shift", "nbr"]
        if allow_2d and self.side:
            kinds += ["tile", "transpose"]
        rng = rng or self.rng
        kind = rng.choice(kinds)
        tmpl = self._palette_unary(kind, rng)
        return self._hazard_variant(kind, tmpl)

    def _hazard_variant(self, kind: str, tmpl: Template) -> Template:
        """``tmpl``, or in its place a template of the same footprint holding a construct a
        transformation once took for what it is not (drawn from ``hrng`` only)."""
        h, ctx = self.hrng, self.ctx
        if not self.hazards:
            return tmpl
        if kind == "nbr" and not tmpl.features and h.random() < P_BYTE_VIEW:
            return ByteNeighbor(ctx, tmpl.block, h.choice(("char", "short")))
        if kind == "shift" and not self.gidx and h.random() < P_MACRO_SHIFT:
            return MacroShift(ctx, int(self.macro_defaults["SHIFT"]))
        if kind == "map" and not self.gidx:
            draw = h.random()
            if draw < P_LDG_HELPER:
                return LdgHelper(ctx, tmpl.op, h.choice(("ldg", "restrict")))
            if draw < P_LDG_HELPER + P_FLOAT_MACRO:
                return FloatMacro(ctx)
            if draw < P_LDG_HELPER + P_FLOAT_MACRO + P_BIG_SHARED:
                return BigShared(ctx, h.choice(BIG_SHARED_BYTES))
        return tmpl

    def step_hazard(self) -> None:
        """A plain launch of one of the constructs ``_hazard_variant`` substitutes, those
        not launched yet first (a program drawn for them holds several)."""
        h, ctx = self.hrng, self.ctx
        kinds = ["byte_neighbor", "macro_shift", "ldg_helper", "float_macro", "big_shared"]
        fresh = [k for k in kinds if k not in {s.tmpl.pattern for s in self.stmts}]
        kind = h.choice(fresh or kinds)
        if kind == "byte_neighbor":
            tmpl: Template = ByteNeighbor(ctx, h.choice((ctx.block, 128, 256)), h.choice(("char", "short")))
        elif kind == "macro_shift":
            tmpl = MacroShift(ctx, int(self.macro_defaults["SHIFT"]))
        elif kind == "ldg_helper":
            tmpl = LdgHelper(ctx, h.randrange(len(UNARY_OPS)), h.choice(("ldg", "restrict")))
        elif kind == "float_macro":
            tmpl = FloatMacro(ctx)
        else:
            tmpl = BigShared(ctx, h.choice(BIG_SHARED_BYTES))
        a = self.pick_input(rng=h)
        self.plain(tmpl, (a, self.pick_output((a,), rng=h)))

    def _palette_unary(self, kind: str, rng: random.Random) -> Template:
        ctx = self.ctx
        if kind == "map":
            return Map(ctx, rng.randrange(len(UNARY_OPS)), 1, ctx.block, self.gidx)
        if kind == "map_reblock":
            return Map(ctx, rng.randrange(len(UNARY_OPS)), 1, self.other_block(rng), self.gidx)
        if kind == "tail":
            block = rng.choice((ctx.block, self.other_block(rng)))
            cut = rng.randint(1, 200)
            if cut % block == 0:
                cut += 1  # the count must not be a multiple of the block size
            op = rng.randrange(len(UNARY_OPS))
            if self.xrng.random() < P_TAIL_BARRIER:
                return TailBarrier(ctx, op, block, cut, self.variant())
            return Tail(ctx, op, block, cut)
        if kind == "shift":
            return Shift(ctx, rng.choice((1, 3, 64)), ctx.block, self.gidx)
        if kind == "nbr":
            block = ctx.block if rng.random() < 0.7 else rng.choice((128, 256))
            return BlockNeighbor(ctx, block, rng.random() < 0.7, rng.random() < 0.3, self.variant())
        if kind == "tile":
            return TileMap(ctx, 16, rng.random() < 0.5, self.variant())
        return Transpose(ctx, 16)

    # ---- statements (the steps of the mixins build on these)
    def emit(self, stmt: _Stmt, indent: int = 1) -> None:
        stmt.step = self.n_steps
        self.stmts.append(stmt)
        t = stmt.tmpl
        args = ", ".join(stmt.arg_text + t.scalars())
        self.body.append("  " * indent + f"{t.name}<<<{t.launch_config()}>>>({args});")

    def plain(self, tmpl: Template, ptrs: tuple[str, ...], structure: str = "plain") -> None:
        args = tuple(f"d_{p}" for p, param in zip(ptrs, tmpl.params) if param)
        self.emit(_Stmt(tmpl, ptrs, args, structure))
        self.wrote(*[p for p, r in zip(ptrs, tmpl.roles) if "w" in r])

    def host(self, kind: str, reads: tuple[str, ...], writes: tuple[str, ...], lines: list[str],
             indent: int = 1, loop: int | None = None) -> None:
        self.host_ops.append(_HostStmt(kind, len(self.stmts), reads, writes,
                                       "\n".join(l.strip() for l in lines), loop))
        self.body.extend("  " * indent + l for l in lines)

    def loop_header(self, trips: int) -> str:
        self.n_loops += 1
        return f"for (int it = 0; it < {trips}; ++it) {{"

    def run(self) -> None:
        target = self.rng.randint(2, self.max_kernels)
        steps = [
            (3, 1, self.step_unary), (2, 1, self.step_map2), (1, 1, self.step_block_reduce),
            (1, 1, self.step_full_reduce), (1, 1, self.step_broadcast), (1, 1, self.step_hist),
            (1, 2, self.step_branches), (1, 2, self.step_pingpong), (1, 1, self.step_swap),
            (1, 1, self.step_accumulate),
        ]
        x = self.xrng
        while len(self.stmts) < target:
            room = target - len(self.stmts)
            if self.stmts and len(self.host_ops) < MAX_HOST_OPS and x.random() < P_HOST_OP:
                self.step_host_op()  # a launch always follows: the loop goes on
            if self.hazards and self.hrng.random() < P_HAZARD_STEP:
                self.step_hazard()
                self.n_steps += 1
                continue
            if x.random() < P_NEW_STEP:
                options = [name for need, name in NEW_STEPS if need <= room and name not in self.used_new]
                if options:
                    name = x.choice(options)
                    self.used_new.add(name)
                    if getattr(self, f"step_{name}")(room):
                        self.n_steps += 1
                        continue
            options = [(w, fn) for w, need, fn in steps if need <= room]
            fn = self.rng.choices([fn for _, fn in options], [w for w, _ in options])[0]
            if fn in (self.step_branches, self.step_accumulate):
                fn(room)
            else:
                fn()
            self.n_steps += 1


def _isqrt(v: int) -> int:
    r = int(v ** 0.5)
    while r * r > v:
        r -= 1
    while (r + 1) * (r + 1) <= v:
        r += 1
    return r
