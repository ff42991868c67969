"""UAR dependences and widths on the corpus: expected widths, absent edges,
the LSTM's wavefront structure, aliasing by offsets."""

import islpy as isl
import pytest

from sirius.analysis.uar import build_uar

pytestmark = pytest.mark.toolchain


def launch_edges(model, uar):
    """{(src kernel pos, dst kernel pos): [deps]} between launch statements, by launch position."""
    pos = {inst.statement.index: i for i, inst in enumerate(model.launches)}
    out = {}
    for d in uar.dependences:
        if d.src in pos and d.dst in pos:
            out.setdefault((pos[d.src], pos[d.dst]), []).append(d)
    return out


def test_elementwise_chain_is_thread_level(corpus):
    m = corpus("elementwise_chain.cu")
    edges = launch_edges(m, build_uar(m))
    assert set(edges) == {(0, 1), (1, 2), (2, 3)}
    assert all(d.width == "thread" and d.kind == "flow" for ds in edges.values() for d in ds)


def test_bert_gemm_to_bias_becomes_thread_level_after_reindexing(corpus):
    m = corpus("bert_qkv.cu")
    edges = launch_edges(m, build_uar(m))
    for branch in range(3):
        gemm, bias, reshape = 3 * branch, 3 * branch + 1, 3 * branch + 2
        flows = [d for d in edges[(gemm, bias)] if d.kind == "flow"]
        assert flows and all(d.width == "global" for d in flows)  # 2-D tiles vs 1-D elements as launched
        assert all(d.width_reindexed == "thread" and d.reindexed == "consumer" for d in flows)
        assert all(d.width_reindexed == "thread" for d in edges[(bias, reshape)])
    # the three branches share only the input, which nobody writes: no edge between branches
    for (a, b) in edges:
        assert a // 3 == b // 3, (a, b)


def test_dependent_pair_is_global(corpus):
    m = corpus("dependent_pair.cu")
    (deps,) = launch_edges(m, build_uar(m)).values()
    assert [d.width for d in deps] == ["global"]
    assert deps[0].width_reindexed is None  # the consumer reads everything: no re-indexing helps


def test_gather_is_conservatively_global(corpus):
    m = corpus("gather.cu")
    (deps,) = launch_edges(m, build_uar(m)).values()
    assert {d.width for d in deps} == {"global"}


def test_aliasing_offsets_give_exactly_the_implied_edges(corpus):
    m = corpus("aliasing.cu")
    edges = launch_edges(m, build_uar(m))
    # produce writes [0, N), transform reads [N, 2N) and writes [2N, 3N), combine reads [0, N) and [2N, 3N)
    assert set(edges) == {(0, 2), (1, 2)}
    assert all(d.kind == "flow" and d.width == "thread" and d.buffer == "d_buf"
               for ds in edges.values() for d in ds)


def test_softmax_row_kernels_are_block_level(corpus):
    m = corpus("softmax.cu")
    edges = launch_edges(m, build_uar(m))
    assert {d.width for d in edges[(0, 1)]} == {"block"}  # row max read by every thread of its row's block
    assert {d.width for d in edges[(1, 2)]} == {"thread"}
    assert {d.width for d in edges[(2, 3)]} == {"block"}


def _cell_relation(model, uar) -> isl.Map:
    """All launch-to-launch dependences projected onto host iterators (s, c)."""
    total = None
    launches = {inst.statement.index: inst for inst in model.launches}
    for d in uar.dependences:
        if d.src not in launches or d.dst not in launches:
            continue
        rel = isl.Map(d.relation)
        n_in = len(launches[d.src].statement.loops)
        n_out = len(launches[d.dst].statement.loops)
        rel = rel.project_out(isl.dim_type.in_, n_in, rel.dim(isl.dim_type.in_) - n_in)
        rel = rel.project_out(isl.dim_type.out, n_out, rel.dim(isl.dim_type.out) - n_out)
        rel = rel.set_tuple_name(isl.dim_type.in_, "C").set_tuple_name(isl.dim_type.out, "C")
        total = rel if total is None else total.union(rel)
    return total


def test_lstm_cells_depend_on_left_and_previous_step_and_waves_are_independent(corpus):
    m = corpus("lstm.cu", "STEPS=6", "CELLS=4", "HIDDEN=64")
    rel = _cell_relation(m, build_uar(m))
    left = isl.Map("{ C[s, c] -> C[s, c + 1] : 0 <= s < 6 and 0 <= c < 3 }")
    below = isl.Map("{ C[s, c] -> C[s + 1, c] : 0 <= s < 5 and 0 <= c < 4 }")
    assert left.is_subset(rel) and below.is_subset(rel)
    same_wave = isl.Map("{ C[s, c] -> C[s2, c2] : s + c = s2 + c2 and (s != s2 or c != c2) }")
    assert rel.intersect(same_wave).is_empty()


def test_gemm_barriers_order_the_tile_dependences(corpus):
    m = corpus("bert_qkv.cu")
    uar = build_uar(m)
    gemm = m.launches[0].statement.index
    first, second = uar.barriers[gemm]
    assert first.needed and second.needed
    same_iter = {(d.kind, d.buffer) for d in first.orders if d.carried_by is None}
    assert same_iter == {("flow", "As"), ("flow", "Bs")}  # tiles loaded, then read by other threads
    carried = {(d.kind, d.buffer) for d in second.orders if d.carried_by == "k0"}
    assert {("anti", "As"), ("anti", "Bs")} <= carried  # reads done before the next tile overwrites
    assert not any(d.race for d in uar.virtual[gemm])


def test_barrier_between_thread_private_accesses_orders_nothing(snippet):
    m = snippet("""#include <cuda_runtime.h>
__global__ void private_tile(float* a) {
  __shared__ float t[128];
  t[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = 2.0f * t[threadIdx.x];
}
int main() { float* a; cudaMalloc(&a, 512); private_tile<<<1, 128>>>(a); cudaDeviceSynchronize(); return 0; }
""")
    uar = build_uar(m)
    (role,) = uar.barriers[m.launches[0].statement.index]
    assert not role.orders and not role.needed


def test_missing_barrier_shows_as_unordered_dependence(snippet):
    m = snippet("""#include <cuda_runtime.h>
__global__ void reverse(float* a) {
  __shared__ float t[128];
  t[threadIdx.x] = a[threadIdx.x];
  a[threadIdx.x] = t[127 - threadIdx.x];
}
int main() { float* a; cudaMalloc(&a, 512); reverse<<<1, 128>>>(a); cudaDeviceSynchronize(); return 0; }
""")
    uar = build_uar(m)
    deps = uar.virtual[m.launches[0].statement.index]
    assert any(d.race and d.kind == "flow" and d.buffer == "t" for d in deps)
