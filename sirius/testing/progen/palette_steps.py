"""The generator steps that draw from the palette (the main random stream): single
launches of each template family, independent branches, and host loops (ping-pong,
pointer swap, accumulation).
"""

from __future__ import annotations

from sirius.testing.progen.elementwise import Accumulate, Broadcast, Hist, Map
from sirius.testing.progen.shared_memory import BlockReduce, FullReduce
from sirius.testing.progen.statements import _Stmt
from sirius.testing.progen.templates import BINARY_OPS, UNARY_OPS


class _PaletteSteps:
    """Steps of ``_Gen`` drawn from ``rng``: the palette of templates and structures."""

    def step_unary(self) -> None:
        tmpl = self.unary_template()
        a = self.pick_input()
        self.plain(tmpl, (a, self.pick_output((a,))))

    def step_map2(self) -> None:
        block = self.ctx.block if self.rng.random() < 0.75 else self.other_block()
        tmpl = Map(self.ctx, self.rng.randrange(len(BINARY_OPS)), 2, block, self.gidx)
        a = self.pick_input()
        b = self.pick_input((a,)) if self.rng.random() < 0.8 else a
        self.plain(tmpl, (a, b, self.pick_output((a, b))))

    def step_block_reduce(self) -> None:
        if self.rng.random() < 0.6:
            chunk = self.ctx.block  # one sum per block of the usual element-wise launch
        else:
            chunk = self.rng.choice([c for c in (128, 256, 512) if self.size % c == 0])
        a = self.pick_input()
        out = self.pick_output((a,))
        self.plain(BlockReduce(self.ctx, chunk, self.variant()), (a, out))
        self.reduced[out] = f"block:{chunk}"

    def step_full_reduce(self) -> None:
        a = self.pick_input()
        kind = self.reduced.get(a, "")
        if kind.startswith("block:") and self.rng.random() < 0.7:
            chunk = int(kind.split(":")[1])
            count, text = self.size // chunk, f"n / {chunk}"
        else:
            count, text = self.size, "n"
        out = self.pick_output((a,))
        threads = self.rng.choice((128, 256))
        self.plain(FullReduce(self.ctx, threads, count, text, self.variant()), (a, out))
        self.reduced[out] = "first"

    def step_broadcast(self) -> None:
        red = [b for b in self.recent if b in self.reduced]
        s = self.rng.choice(red) if red else self.pick_input()
        kind = self.reduced.get(s, "")
        per_block = kind.startswith("block:") and self.rng.random() < 0.8
        if per_block:
            block = int(kind.split(":")[1])  # one value per consumer block
        elif kind.startswith("block:") and self.rng.random() < 0.5:
            per_block, block = True, self.ctx.block
        else:
            block = self.ctx.block
        a = self.pick_input((s,)) if self.rng.random() < 0.8 else s
        self.plain(Broadcast(self.ctx, block, per_block), (a, s, self.pick_output((a, s))))

    def step_hist(self) -> None:
        block = self.ctx.block if self.rng.random() < 0.7 else self.other_block()
        a = self.pick_input()
        self.plain(Hist(self.ctx, block, 64), (a, self.pick_output((a,))))

    def step_branches(self, room: int) -> None:
        k = self.rng.randint(2, min(3, room))
        same_code = self.rng.random() < 0.75
        x = self.pick_input()
        outs: list[str] = []
        weights: list[str] = [x]
        for _ in range(k):
            outs.append(self.pick_output((x, *outs)))
        binary = self.rng.random() < 0.6
        op = self.rng.randrange(len(BINARY_OPS) if binary else len(UNARY_OPS))
        for j in range(k):
            if not same_code:
                op = self.rng.randrange(len(BINARY_OPS) if binary else len(UNARY_OPS))
            if binary:
                # a weight of its own per branch, as for Q, K and V
                w = self.pick_input((x, *outs, *weights))
                weights.append(w)
                self.plain(Map(self.ctx, op, 2, self.ctx.block, self.gidx), (x, w, outs[j]), "branch")
            else:
                # fully disjoint: each branch reads an input of its own
                src = x if j == 0 else self.pick_input((*outs, *weights))
                weights.append(src)
                self.plain(Map(self.ctx, op, 1, self.ctx.block, self.gidx), (src, outs[j]), "branch")

    def step_pingpong(self) -> None:
        tmpl = self.unary_template()
        x = self.pick_input()
        y = self.pick_output((x,))
        trips = self.rng.randint(2, 3)
        loop = self.n_loops
        self.body.append("  " + self.loop_header(trips))
        for src, dst in ((x, y), (y, x)):
            self.emit(_Stmt(tmpl, (src, dst), (f"d_{src}", f"d_{dst}"), "loop_pingpong", loop, trips), 2)
        self.body.append("  }")
        self.wrote(y, x)

    def step_swap(self) -> None:
        tmpl = self.unary_template()
        x = self.pick_input()
        y = self.pick_output((x,))
        trips = self.rng.randint(2, 4)
        loop = self.n_loops
        src, dst = f"src{loop}", f"dst{loop}"
        self.body.append("  {")
        self.body.append(f"    float* {src} = d_{x};")
        self.body.append(f"    float* {dst} = d_{y};")
        self.body.append("    " + self.loop_header(trips))
        self.emit(_Stmt(tmpl, (x, y), (src, dst), "loop_swap", loop, trips, alts=((y, x),)), 3)
        self.body.append(f"      float* tmp = {src};")
        self.body.append(f"      {src} = {dst};")
        self.body.append(f"      {dst} = tmp;")
        self.body.append("    }")
        self.body.append("  }")
        # after an even number of trips the last write went to x
        if trips % 2 == 0:
            self.wrote(y, x)
        else:
            self.wrote(x, y)

    def step_accumulate(self, room: int) -> None:
        acc = self.pick_output()
        x = self.pick_input((acc,))
        trips = self.rng.randint(2, 4)
        loop = self.n_loops
        block = self.ctx.block if self.rng.random() < 0.8 else self.other_block()
        self.body.append("  " + self.loop_header(trips))
        tmpl = Accumulate(self.ctx, block, "0.125f * (float)it")
        if room >= 2 and self.rng.random() < 0.4:
            # a producer inside the loop body feeding the accumulation
            feed = self.unary_template(allow_2d=False)
            src = self.pick_input((acc, x))
            self.emit(_Stmt(feed, (src, x), (f"d_{src}", f"d_{x}"), "loop_accumulate", loop, trips), 2)
            self.wrote(x)
        self.emit(_Stmt(tmpl, (acc, x), (f"d_{acc}", f"d_{x}"), "loop_accumulate", loop, trips), 2)
        self.body.append("  }")
        self.wrote(acc)
