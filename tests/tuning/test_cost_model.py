"""The cost model (sirius/tuning/cost_model.py): launch-bound runs, block waves, how fused
launches compose, and its ranking on the corpus: fusing the LSTM's 9000 launches into 109
waves wins by far, a softmax's four launches into one wins, and a candidate that fuses
nothing is predicted as the original."""

from __future__ import annotations

from pathlib import Path

import pytest

from sirius.core.target import H100
from sirius.tuning.cost_model import (LaunchShape, ThreadWork, execution_us, fused_shape, predict)

ROOT = Path(__file__).resolve().parents[2]
SMALL = LaunchShape("small", blocks=4, threads=256, shared_bytes=0, global_bytes=16384,
                    work=ThreadWork(global_accesses=2))


def test_small_kernels_cost_their_launch_directly_and_a_graph_node_in_a_graph():
    run = predict([(SMALL, 4)])
    assert run.launches == 4
    assert run.direct_us == pytest.approx(4 * H100.launch_direct_us)
    assert run.graph_us == pytest.approx(4 * (H100.graph_node_us + execution_us(SMALL, H100)))
    assert run.graph_us < run.direct_us


def test_a_long_kernel_hides_its_launch_cost():
    long = LaunchShape("gemv", 1, 256, 0, 1 << 20, ThreadWork(global_accesses=512))
    one = execution_us(long, H100)
    assert one == pytest.approx(512 * H100.global_latency_us / H100.loads_in_flight)
    assert predict([(long, 1)]).direct_us == pytest.approx(one)


def test_blocks_beyond_what_the_gpu_holds_at_once_run_in_waves():
    resident = H100.sm_count * (H100.max_threads_per_sm // 1024)
    one_wave = LaunchShape("k", resident, 1024, 0, 0, ThreadWork(global_accesses=64))
    two_waves = LaunchShape("k", 2 * resident, 1024, 0, 0, ThreadWork(global_accesses=64))
    assert execution_us(two_waves, H100) == pytest.approx(2 * execution_us(one_wave, H100))
    shared_heavy = LaunchShape("k", resident, 1024, 150 * 1024, 0, ThreadWork(global_accesses=64))
    assert execution_us(shared_heavy, H100) == pytest.approx(2 * execution_us(one_wave, H100))
    # 64 registers x 1024 threads fill a multiprocessor's 65536: one block at a time (ptxas figures)
    register_heavy = LaunchShape("k", resident, 1024, 0, 0, ThreadWork(global_accesses=64), registers=64)
    assert execution_us(register_heavy, H100) == pytest.approx(2 * execution_us(one_wave, H100))


def test_a_cooperative_phase_runs_with_the_residency_of_the_one_kernel():
    """Measured on an H200: nasnet's 33 launches as one cooperative launch ran 2.1x slower
    than the original's CUDA Graph, the cost model (each phase with its own kernel's
    residency) said 1.3x slower. A phase's virtual blocks run on the blocks the one kernel has: its
    shared memory holds every phase's static arrays, so fewer fit on a multiprocessor."""
    from sirius.tuning.cost_model import _cooperative_shape, blocks_per_sm

    many = H100.sm_count * 8
    phase = LaunchShape("p", many, 256, 8 * 1024, 0, ThreadWork(global_accesses=64))
    alone = execution_us(phase, H100)
    crowded = _cooperative_shape("coop", 256, (phase, phase), 60 * 1024, {})
    assert blocks_per_sm(crowded.phases[0], H100) == 3 < blocks_per_sm(phase, H100) == 8
    assert execution_us(crowded, H100) == pytest.approx(2 * alone * 8 / 3 + H100.grid_sync_us)
    wide = LaunchShape("w", 10, 1024, 0, 0, ThreadWork(global_accesses=64))  # its threads in four turns
    assert execution_us(_cooperative_shape("c", 256, (wide,), 0, {}), H100) == pytest.approx(4 * execution_us(wide, H100))


def test_bandwidth_bounds_a_kernel_that_moves_much_data():
    stream = LaunchShape("copy", 4096, 256, 0, 3e9, ThreadWork(global_accesses=2))
    assert execution_us(stream, H100) == pytest.approx(3e9 / (H100.bandwidth_gbs * 1e3))


def test_lanes_run_side_by_side_and_fragments_of_a_lane_one_after_another():
    side_by_side = fused_shape("h", [[SMALL], [SMALL], [SMALL]])
    assert (side_by_side.blocks, side_by_side.work.global_accesses) == (12, 2)
    assert side_by_side.global_bytes == 3 * SMALL.global_bytes
    in_order = fused_shape("v", [[SMALL, SMALL, SMALL]])
    assert (in_order.blocks, in_order.work.global_accesses) == (4, 6)
    # a fragment with four times the anchor's threads is re-indexed: each thread runs four instances
    wide = LaunchShape("wide", 16, 256, 0, 0, ThreadWork(global_accesses=1))
    assert fused_shape("r", [[SMALL, wide]]).work.global_accesses == 2 + 4


@pytest.mark.toolchain
def test_the_lstm_wavefront_is_predicted_to_win_by_far_and_the_softmax_fusion_to_win():
    from sirius.analysis.frontend import CompileJob
    from sirius.core.config import CompileFlags, resolve_toolchain
    from sirius.pipeline import OptimizeState, run_pipeline
    from sirius.tuning.candidates import generate_candidates, rank_by_prediction
    from sirius.tuning.cost_model import compulsory_bytes, predict_program, registers_of

    toolchain = resolve_toolchain(None, None)
    lstm = run_pipeline(OptimizeState(CompileJob(ROOT / "cuda_inputs" / "lstm.cu", CompileFlags(), toolchain)))
    original, optimized = predict_program(lstm)
    assert (original.launches, optimized.launches) == (9000, 109)
    assert optimized.direct_us * 5 < original.direct_us
    assert optimized.graph_us * 5 < original.graph_us  # it wins against a CUDA Graph replay too

    softmax = run_pipeline(OptimizeState(CompileJob(ROOT / "cuda_inputs" / "softmax.cu", CompileFlags(), toolchain)))
    candidates = generate_candidates(softmax)
    assert candidates[0].name == "original" and candidates[0].launches == 4
    best = rank_by_prediction(candidates)[0]
    assert best.launches == 1 and best.name == "auto/all-passes"
    assert best.prediction.direct_us < candidates[0].prediction.direct_us
    # an arrangement that fuses nothing is the original program, one candidate
    assert any(name.startswith("horizontal/") for name in candidates[0].same_as)
    if softmax.check.ptxas:  # nvcc installed: residency uses the registers ptxas reports
        registers = registers_of(softmax)
        assert registers["sirius_fused_0"] > 0 and registers["_Z7row_maxPKfPfi"] > 0
    # 128 rows of 512 floats read, exponentials and results written, row maxima and sums: each once
    assert compulsory_bytes(softmax.model) == 3 * 128 * 512 * 4 + 2 * 128 * 4
