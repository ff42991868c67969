"""The generator steps of the constructs that once made the optimizer miscompile (the
second random stream): host statements between launches, host helpers, overloads,
device globals, a helper with static shared memory, and a two-deep host loop nest.
"""

from __future__ import annotations

from sirius.testing.progen.constructs import ConstMap, GlobalArray, HelperReduce, NestCell, Overload, PtrWrite
from sirius.testing.progen.statements import _Stmt
from sirius.testing.progen.templates import BINARY_OPS, UNARY_OPS


_UPLOAD_HELPER = """static void upload(float* d, float* h, int n, int k) {
  for (int i = 0; i < n; ++i) h[i] = (float)((i * k + 5) % 97 - 48) * 0.015625f;
  cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
}
"""


class _ConstructSteps:
    """Steps of ``_Gen`` for the newer constructs (all drawn from ``xrng``)."""

    def step_host_op(self) -> None:
        """A host statement between launches (an ordering point)."""
        x, n = self.xrng, self.size
        kind = x.choice(("memcpy2d", "memset", "memcpy_d2d", "memcpy_async", "readback"))
        if kind == "readback":
            b = self.pick_input(rng=x)
            self.probe = True
            self.host(kind, (b,), (), [
                f"cudaMemcpy(h, d_{b}, n * sizeof(float), cudaMemcpyDeviceToHost);",
                "for (int i = 0; i < n; ++i) probe += (double)h[i] * (double)(i % 7 + 1);",
            ])
            return
        if kind == "memset":
            b = self.pick_output(rng=x)
            if x.random() < 0.5:
                line = f"cudaMemset(d_{b}, 0, n * sizeof(float));"
            else:
                off = x.randrange(0, n // 2, 32)
                cnt = x.randrange(32, n - off + 1, 32)
                line = f"cudaMemset({_at(b, off)}, 0, {cnt} * sizeof(float));"
            self.host(kind, (), (b,), [line])
            self.wrote(b)
            return
        src = self.pick_input(rng=x)
        dst = self.pick_output((src,), rng=x)
        red = self.reduced.get(src)
        whole = False
        if kind == "memcpy2d":
            # a rectangle of h rows of w floats, rows spitch / dpitch floats apart
            sp, dp = x.choice((64, 128)), x.choice((64, 128))
            w = x.choice((8, 16, 32, 48))
            h = x.randint(2, max(2, min(n // sp, n // dp) // 2))
            so = x.randrange(0, n // sp - h + 1) * sp + x.randrange(0, sp - w + 1)
            do = x.randrange(0, n // dp - h + 1) * dp + x.randrange(0, dp - w + 1)
            line = (f"cudaMemcpy2D({_at(dst, do)}, {dp} * sizeof(float), {_at(src, so)}, "
                    f"{sp} * sizeof(float), {w} * sizeof(float), {h}, cudaMemcpyDeviceToDevice);")
        else:
            whole = x.random() < 0.6
            if whole:
                so = do = 0
                count = "n"
            else:
                cnt = x.randrange(64, n // 2 + 1, 64)
                so, do = x.randrange(0, n - cnt + 1, 64), x.randrange(0, n - cnt + 1, 64)
                count = str(cnt)
            if kind == "memcpy_d2d":
                line = (f"cudaMemcpy({_at(dst, do)}, {_at(src, so)}, {count} * sizeof(float), "
                        "cudaMemcpyDeviceToDevice);")
            else:
                line = (f"cudaMemcpyAsync({_at(dst, do)}, {_at(src, so)}, {count} * sizeof(float), "
                        "cudaMemcpyDeviceToDevice, 0);")
        self.host(kind, (src,), (dst,), [line])
        self.wrote(dst)
        if whole and red:
            self.reduced[dst] = red

    def step_helper_call(self, room: int) -> bool:
        """Call of the program's own host helper: it uploads a host array, or
        launches a kernel itself."""
        x = self.xrng
        if not self.stmts:
            return False  # between launches, not before the first
        if x.random() < 0.5:
            b = self.pick_output(rng=x)
            self.host_helpers.append(_UPLOAD_HELPER)
            self.host("helper_upload", (), (b,), [f"upload(d_{b}, h, n, {x.randrange(1, 96, 2)});"])
            self.wrote(b)
            return True
        tmpl = self.unary_template(allow_2d=False, rng=x)
        a = self.pick_input(rng=x)
        out = self.pick_output((a,), rng=x)
        stmt = _Stmt(tmpl, (a, out), ("a", "out"), "helper", step=self.n_steps)
        self.stmts.append(stmt)
        args = ", ".join(stmt.arg_text + tmpl.scalars())
        self.host_helpers.append(
            "static void launch_helper(const float* a, float* out, int n) {\n"
            f"  {tmpl.name}<<<{tmpl.launch_config()}>>>({args});\n"
            "}\n")
        self.body.append(f"  launch_helper(d_{a}, d_{out}, n);")
        self.wrote(out)
        return True

    def step_overload(self, room: int) -> bool:
        """Both of two overloaded kernels of one name, in either order."""
        x = self.xrng
        first = x.random() < 0.5
        for reverse in (first, not first):
            a = self.pick_input(rng=x)
            self.plain(Overload(self.ctx, reverse, x.randrange(len(UNARY_OPS))),
                       (a, self.pick_output((a,), rng=x)))
        return True

    def step_globals(self, room: int) -> bool:
        """``__device__`` arrays: filled from a buffer (or left as initialised),
        mapped into another by a kernel without pointer parameters, read back
        into a buffer or by cudaMemcpyFromSymbol at the end."""
        x, ctx = self.xrng, self.ctx
        g = self.new_symbol("array")
        used = 0
        if x.random() < 0.6:
            a = self.pick_input(rng=x)
            self.plain(GlobalArray(ctx, "put", a, g, x.randrange(len(UNARY_OPS)), gidx=self.gidx), (a, g))
            used += 1
        if x.random() < 0.3:
            self.plain(GlobalArray(ctx, "map", g, g, x.randrange(len(UNARY_OPS)), gidx=self.gidx), (g, g))
            last = g
        else:
            last = self.new_symbol("array")
            if x.random() < 0.4:
                tmpl = GlobalArray(ctx, "shift", g, last, k=x.choice((1, 5, 64)), gidx=self.gidx)
            else:
                tmpl = GlobalArray(ctx, "map", g, last, x.randrange(len(UNARY_OPS)), gidx=self.gidx)
            self.plain(tmpl, (g, last))
        used += 1
        if used < room and (used < 2 or x.random() < 0.5):
            out = self.pick_output(rng=x)
            self.plain(GlobalArray(ctx, "get", last, "out", x.randrange(len(UNARY_OPS)),
                                   gidx=self.gidx), (last, out))
        return True

    def step_const_symbol(self, room: int) -> bool:
        """``__constant__ float c0`` read by launches and rewritten with
        cudaMemcpyToSymbol between them (or in each trip of a host loop)."""
        x = self.xrng
        c = self.new_symbol("constant")
        tmpl = ConstMap(self.ctx, x.randrange(len(UNARY_OPS)))
        if x.random() < 0.5:
            a = self.pick_input(rng=x)
            self.plain(tmpl, (a, c, self.pick_output((a,), rng=x)))
            v = x.choice(("0.375f", "-0.25f", "0.125f", "0.0f"))
            self.host("to_symbol", (), (c,), [f"{{ float v = {v}; cudaMemcpyToSymbol(c0, &v, sizeof(float)); }}"])
            a = self.pick_input(rng=x)
            self.plain(tmpl, (a, c, self.pick_output((a,), rng=x)))
            return True
        src = self.pick_input(rng=x)
        dst = self.pick_output((src,), rng=x)
        trips = x.randint(2, 3)
        loop = self.n_loops
        self.body.append("  " + self.loop_header(trips))
        self.host("to_symbol", (), (c,), [
            "{ float v = 0.125f * (float)it - 0.25f; cudaMemcpyToSymbol(c0, &v, sizeof(float)); }"],
            indent=2, loop=loop)
        for a, b in ((src, dst), (dst, src)):
            self.emit(_Stmt(tmpl, (a, c, b), (f"d_{a}", f"d_{b}"), "loop_symbol", loop, trips), 2)
        self.body.append("  }")
        self.wrote(dst, src)
        return True

    def step_global_pointer(self, room: int) -> bool:
        """``__device__ float* gp`` set to a buffer by cudaMemcpyToSymbol and
        written through by a kernel; sometimes re-pointed and launched again."""
        x = self.xrng
        gp = self.new_symbol("pointer")
        tmpl = PtrWrite(self.ctx, x.randrange(len(UNARY_OPS)))
        for k in range(2 if room >= 2 and x.random() < 0.5 else 1):
            target = self.pick_output(rng=x)
            a = self.pick_input((target,), rng=x)
            self.host("to_symbol", (), (gp,), [f"cudaMemcpyToSymbol(gp, &d_{target}, sizeof(float*));"])
            self.plain(tmpl, (a, gp, target))
        return True

    def step_helper_reduce(self, room: int) -> bool:
        """Two different kernels calling ``block_sum_dev`` (static __shared__
        inside the helper), in either order."""
        x, B = self.xrng, self.ctx.block
        order = ("sum", "norm") if x.random() < 0.5 else ("norm", "sum")
        for kind in order:
            a = self.pick_input(rng=x)
            out = self.pick_output((a,), rng=x)
            self.plain(HelperReduce(self.ctx, kind, B), (a, out))
            if kind == "sum":
                self.reduced[out] = f"block:{B}"
        return True

    def step_loop_nest(self, room: int) -> bool:
        """Cells (s, c) of a two-deep host loop nest over slots of one buffer
        (cuda_inputs/lstm.cu): slot (t, j) starts at (t * (C + 2) + j) * W.
        Cell (s, c) reads slots (s + 1, c) (written by cell (s, c - 1)),
        (s, c + 1) (by cell (s - 1, c)) and (s, c + 2) (by cell (s - 1, c + 1),
        on the same anti-diagonal), writes slot (s + 1, c + 1), through a
        per-column temporary of another buffer."""
        x, n = self.xrng, self.size
        S, C = x.randint(2, 3), x.randint(2, 3)
        P = C + 2
        fits = [w for w in (128, 64, 32) if (S + 1) * P * w <= n]
        if not fits:
            return False
        W = fits[0]
        B = x.choice([b for b in (32, 64, 128) if b <= W])
        H = self.pick_output(rng=x)
        T = self.pick_output((H,), rng=x)
        cell_a = NestCell(self.ctx, "a", W, B, op=x.randrange(len(BINARY_OPS)))
        cell_b = NestCell(self.ctx, "b", W, B, rev=x.random() < 0.3)
        iters_a, iters_b = [], []
        for s in range(S):
            for c in range(C):
                xo, ho, do = ((s + 1) * P + c) * W, (s * P + c + 1) * W, (s * P + c + 2) * W
                no, go = ((s + 1) * P + c + 1) * W, c * W
                iters_a.append((xo, ho, go))
                iters_b.append((go, do, no))
        loop = self.n_loops
        self.n_loops += 1
        self.body += [
            "  {",
            f"    for (int s = 0; s < {S}; ++s) {{",
            f"      for (int c = 0; c < {C}; ++c) {{",
            f"        const float* x = d_{H} + ((s + 1) * {P} + c) * {W};",
            f"        const float* hp = d_{H} + (s * {P} + c + 1) * {W};",
            f"        const float* dg = d_{H} + (s * {P} + c + 2) * {W};",
            f"        float* hn = d_{H} + ((s + 1) * {P} + c + 1) * {W};",
            f"        float* g = d_{T} + c * {W};",
        ]
        self.emit(_Stmt(cell_a, (H, H, T), ("x", "hp", "g"), "loop_nest", loop, S * C,
                        iters=tuple(iters_a), nest=(S, C)), 4)
        self.emit(_Stmt(cell_b, (T, H, H), ("g", "dg", "hn"), "loop_nest", loop, S * C,
                        iters=tuple(iters_b), nest=(S, C)), 4)
        self.body += ["      }", "    }", "  }"]
        self.wrote(T, H)
        return True


def _at(buf: str, offset: int) -> str:
    return f"d_{buf} + {offset}" if offset else f"d_{buf}"
