"""Exact analysis facts of the hand-written corpus (default sizes).

Access maps are compared with isl by meaning; lines are located in the
source text so the tests follow edits to comments.
"""

import pytest

from .conftest import CORPUS, maps_of, same_map

pytestmark = pytest.mark.toolchain


def lines_of(name: str, needle: str) -> list[int]:
    """Lines holding ``needle`` as code (comment lines skipped)."""
    text = (CORPUS / name).read_text().splitlines()
    return [i + 1 for i, line in enumerate(text) if needle in line.split("//")[0]
            and not line.lstrip().startswith(("*", "/*"))]


def test_elementwise_chain_launches_and_maps(corpus):
    m = corpus("elementwise_chain.cu")
    assert [l.kernel.name for l in m.launches] == ["scale2", "add", "relu", "square_plus_one"]
    for inst in m.launches:
        assert inst.statement.grid.constant() == (256, 1, 1)
        assert inst.statement.block.constant() == (256, 1, 1)
        assert all(mp.exact for mp in inst.maps)
    (load,) = maps_of(m, 0, "load")
    assert same_map(load, "{ [bx, tx] -> dx[256bx + tx] : 0 <= bx < 256 and 0 <= tx < 256 }")
    (store,) = maps_of(m, 3, "store")
    assert same_map(store, "{ [bx, tx] -> dd[256bx + tx] : 0 <= bx < 256 and 0 <= tx < 256 }")
    (a_load,) = maps_of(m, 1, "load", "da")
    assert same_map(a_load, "{ [bx, tx] -> da[256bx + tx] : 0 <= bx < 256 and 0 <= tx < 256 }")



def test_a_launch_is_looked_up_by_its_statement_index(corpus):
    m = corpus("elementwise_chain.cu")
    for inst in m.launches:
        assert m.launch(inst.statement.index) is inst
    statements = {s.index for s in m.host.statements}
    not_a_launch = next(i for i in sorted(statements) if i not in {inst.index for inst in m.launches})
    with pytest.raises(KeyError):
        m.launch(not_a_launch)

def test_aliasing_arguments_resolve_to_offsets_in_one_allocation(corpus):
    m = corpus("aliasing.cu")
    assert [a.name for a in m.host.allocations] == ["d_buf", "d_out"]
    assert m.host.allocations[0].bytes.constant_value() == 3 * 4096 * 4
    args = {inst.kernel.name: dict(inst.bindings) for inst in m.launches}
    assert args["produce"]["dst"].buffer == "d_buf" and args["produce"]["dst"].offset.constant_value() == 0
    assert args["transform"]["src"].buffer == "d_buf"
    assert args["transform"]["src"].offset.constant_value() == 4096 * 4
    assert args["transform"]["dst"].offset.constant_value() == 2 * 4096 * 4
    assert args["combine"]["a"].offset.constant_value() == 0
    assert args["combine"]["b"].offset.constant_value() == 2 * 4096 * 4
    assert args["combine"]["out"].buffer == "d_out"
    (src,) = maps_of(m, 1, "load")
    assert same_map(src, "{ [bx, tx] -> d_buf[i] : 0 <= bx < 16 and 0 <= tx < 256 and i = 4096 + 256bx + tx }")
    (dst,) = maps_of(m, 1, "store")
    assert same_map(dst, "{ [bx, tx] -> d_buf[8192 + 256bx + tx] : 0 <= bx < 16 and 0 <= tx < 256 }")
    copies = [s for s in m.host.statements if s.kind == "copy"]
    h2d = [c for c in copies if c.direction == "HostToDevice"]
    assert h2d and h2d[0].dst.buffer == "d_buf" and h2d[0].dst.offset.constant_value() == 4096 * 4


def test_lstm_host_loops_become_one_domain_per_launch(corpus):
    m = corpus("lstm.cu")
    assert len(m.launches) == 9  # 8 gemv + 1 solve statements ...
    from sirius.analysis.program_model import launch_count
    assert launch_count(m) == 100 * 10 * 9  # ... standing for 9000 launches
    import islpy as isl
    for inst in m.launches:
        s_it, c_it = inst.statement.loops
        dom = isl.Set(f"{{ [{s_it}, {c_it}] : {inst.statement.domain.to_isl()} }}")
        assert dom.is_equal(isl.Set(f"{{ [s, c] : 0 <= s < 100 and 0 <= c < 10 }}"))
    gemv = m.launches[0]
    s_it, c_it = gemv.statement.loops
    args = dict(gemv.bindings)
    # input of cell (s, c): slot ((s+1)*(CELLS+1) + c) of hs, HIDDEN floats a slot
    env = {s_it: 3, c_it: 4}
    assert args["x"].buffer == "d_hs"
    assert args["x"].offset.subs(env).constant_value() == ((3 + 1) * 11 + 4) * 256 * 4
    h_gemv = dict(m.launches[4].bindings)  # the first gemv on the previous state h
    assert h_gemv["x"].offset.subs(env).constant_value() == (3 * 11 + 4 + 1) * 256 * 4
    solve = dict(m.launches[8].bindings)
    assert m.launches[8].kernel.name == "solve"
    assert solve["h_new"].buffer == "d_hs"
    assert solve["h_new"].offset.subs(env).constant_value() == ((3 + 1) * 11 + 4 + 1) * 256 * 4
    assert solve["c_prev"].buffer == "d_cs"
    assert solve["c_prev"].offset.subs(env).constant_value() == (3 * 11 + 4 + 1) * 256 * 4
    assert [dict(i.bindings)["n"].value.constant_value() for i in m.launches] == [256] * 9


def test_bert_qkv_kernels_launches_and_tiles(corpus):
    m = corpus("bert_qkv.cu")
    assert [l.kernel.name for l in m.launches] == ["gemm_tiled", "bias_add", "reshape_heads"] * 3
    gemm = m.launches[0]
    assert gemm.statement.grid.constant() == (48, 24, 1)
    assert gemm.statement.block.constant() == (16, 16, 1)
    k = gemm.kernel
    assert sorted((s.name, s.bytes) for s in k.shared) == [("As", 1024), ("Bs", 1024)]
    assert [b.line for b in k.barriers] == lines_of("bert_qkv.cu", "__syncthreads()")
    assert all(b.loops == ("k0",) for b in k.barriers)
    assert not k.early_exits
    (x_load,) = maps_of(m, 0, "load", "dX")
    assert same_map(x_load, "{ [bx, by, tx, ty, k0] -> dX[768*(16by + ty) + 16k0 + tx] : "
                            "0 <= bx < 48 and 0 <= by < 24 and 0 <= tx < 16 and 0 <= ty < 16 and 0 <= k0 < 48 }")
    (y_store,) = maps_of(m, 0, "store", "dYq")
    assert same_map(y_store, "{ [bx, by, tx, ty] -> dYq[768*(16by + ty) + 16bx + tx] : "
                             "0 <= bx < 48 and 0 <= by < 24 and 0 <= tx < 16 and 0 <= ty < 16 }")
    (bias,) = maps_of(m, 1, "load", "dbq")
    assert same_map(bias, "{ [bx, tx] -> dbq[(256bx + tx) mod 768] : 0 <= bx < 1152 and 0 <= tx < 256 }")
    (reshape_in,) = maps_of(m, 2, "load", "dYq")
    # out[h][s][d] = Y[s][64h + d] with i = (h*384 + s)*64 + d
    assert same_map(reshape_in, "{ [bx, tx] -> dYq[o] : 0 <= bx < 1152 and 0 <= tx < 256 and "
                                "exists (h, s, d : o = 768s + 64h + d and 256bx + tx = 64*(384h + s) + d "
                                "and 0 <= d < 64 and 0 <= s < 384 and 0 <= h < 12) }")
    assert all(mp.exact for inst in m.launches for mp in inst.maps)


def test_softmax_reductions_have_barriers_and_one_block_per_row(corpus):
    m = corpus("softmax.cu")
    names = [l.kernel.name for l in m.launches]
    assert names == ["row_max", "exp_sub", "row_sum", "normalize"]
    counts = {l.kernel.name: len([b for b in l.kernel.barriers if b.kind == "block"]) for l in m.launches}
    assert counts == {"row_max": 2, "exp_sub": 0, "row_sum": 2, "normalize": 0}
    for inst in m.launches:
        assert inst.statement.grid.constant() == (128, 1, 1)
    (e_store,) = maps_of(m, 1, "store", "de")
    assert same_map(e_store, "{ [bx, tx, k0] -> de[512bx + tx + 256k0] : 0 <= bx < 128 and 0 <= tx < 256 "
                             "and 0 <= k0 and tx + 256k0 < 512 }")
    (mx_store,) = maps_of(m, 0, "store", "dmax")
    assert same_map(mx_store, "{ [bx, tx] -> dmax[bx] : 0 <= bx < 128 and tx = 0 }")


def test_early_exit_before_a_barrier_is_found(corpus):
    m = corpus("early_exit.cu")
    k = m.launches[0].kernel
    assert k.name == "shift_add"
    (exit_,) = k.early_exits
    assert exit_.divergent and exit_.reaches_barrier
    assert exit_.line == lines_of("early_exit.cu", "return;")[0]
    assert [b.line for b in k.barriers] == lines_of("early_exit.cu", "__syncthreads()")
    assert [(s.name, s.bytes) for s in k.shared] == [("s", 1024)]
    assert not m.launches[1].kernel.early_exits


def test_gather_index_is_over_approximated(corpus):
    m = corpus("gather.cu")
    inst = m.launches[1]
    y_loads = [mp for mp in inst.maps if mp.buffer == "dy"]
    assert y_loads and not any(mp.exact for mp in y_loads)
    import islpy as isl
    # the over-approximation covers every element a thread could read
    touched = isl.Map(y_loads[0].isl).range()
    assert touched.is_subset(isl.Set("{ dy[i] : 0 <= i < 4096 }")) is False or touched.is_bounded() is False
    (idx,) = [mp for mp in inst.maps if mp.buffer == "didx"]
    assert idx.exact


def test_dependent_pair_reads_whole_vector(corpus):
    m = corpus("dependent_pair.cu")
    (y_read,) = maps_of(m, 1, "load", "dy")
    import islpy as isl
    assert isl.Map(y_read).range().is_equal(isl.Set("{ dy[i] : 0 <= i < 4096 }"))


def test_independent_pair_two_dimensional_maps(corpus):
    m = corpus("independent_pair.cu")
    (a2d,) = maps_of(m, 0, "load", "dA")
    assert same_map(a2d, "{ [bx, by, tx, ty] -> dA[512*(16by + ty) + 16bx + tx] : "
                         "0 <= bx < 32 and 0 <= by < 32 and 0 <= tx < 16 and 0 <= ty < 16 }")
    (a1d,) = maps_of(m, 1, "load", "dA")
    assert same_map(a1d, "{ [bx, tx] -> dA[256bx + tx] : 0 <= bx < 1024 and 0 <= tx < 256 }")


def test_reduced_sizes_follow_defines(corpus):
    m = corpus("lstm.cu", "STEPS=3", "CELLS=2", "HIDDEN=64")
    from sirius.analysis.program_model import launch_count
    assert launch_count(m) == 3 * 2 * 9
    assert m.launches[0].statement.block.constant()[0] * m.launches[0].statement.grid.constant()[0] >= 64
