"""Private temporaries in a scratch area per layer (sirius/fusion/privatisation.py): the
slots of the pattern's writes, aligned as an allocation; a read's pointer at its distance
into the slot of the write it reaches; the bytes copied back after the last cell, each
allocation's bytes from the last write of them. On hand-built facts, and on the program of
tests/filecheck/optimize_layer_waves.cu (t in two storages used in turns by three layers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sirius.analysis.frontend import CompileJob
from sirius.analysis.repetition import PatternArgument, PrivateWrite, Repetition, find_repetition, format_repetition
from sirius.core.config import CompileFlags, resolve_toolchain
from sirius.fusion.privatisation import CopyBack, format_copy_back, plan_scratch
from sirius.pipeline import PIPELINE, OptimizeState

PROGRAM = Path(__file__).resolve().parents[2] / "tests" / "filecheck" / "optimize_layer_waves.cu"


def facts(copies: int, *writes: PrivateWrite) -> Repetition:
    """A repetition of ``copies`` copies of a two-launch pattern whose private temporaries
    take ``writes`` (only what the plan reads: the copies and the writes)."""
    statements = tuple((2 * c, 2 * c + 1) for c in range(copies))
    return Repetition(None, "h0", 5, statements, (), ("t0",), writes)


def test_each_write_takes_a_slot_aligned_as_an_allocation():
    plan = plan_scratch(facts(2, PrivateWrite((0, 0), 0, 99, (("t0", 0), ("t0", 0))),
                              PrivateWrite((1, 2), 0, 300, (("t1", 0), ("t1", 0)))))
    assert dict(plan.slots) == {(0, 0): 0, (1, 2): 256}
    assert (plan.cell_bytes, plan.bytes) == (768, 1536)


def test_a_read_points_its_distance_into_the_slot_of_the_write_it_reaches():
    plan = plan_scratch(facts(2, PrivateWrite((0, 0), 0, 99, (("t0", 0), ("t0", 0))),
                              PrivateWrite((0, 1), 0, 511, (("t0", 512), ("t0", 512)))))
    read = PatternArgument("private", buffer="t0", write=(0, 1), distance=64)
    assert plan.slot(read) == 256 + 64
    assert plan.show(read) == "private slot 320 (+768 bytes per layer)"


def test_the_last_copy_writing_the_same_bytes_is_the_one_copied_back():
    plan = plan_scratch(facts(3, PrivateWrite((0, 0), 0, 255, (("t0", 0), ("t1", 0), ("t0", 0)))))
    assert plan.copy_back == (CopyBack("t1", 0, 256, 256), CopyBack("t0", 0, 512, 256))


def test_a_later_write_keeps_only_the_bytes_it_does_not_cover_of_an_earlier_one():
    # copy 1's pointer is 128 bytes further on: copy 0's first 128 bytes are the last written there
    plan = plan_scratch(facts(2, PrivateWrite((0, 0), 0, 255, (("t0", 0), ("t0", 128)))))
    assert plan.copy_back == (CopyBack("t0", 0, 0, 128), CopyBack("t0", 128, 256, 256))


def test_a_write_from_beyond_its_pointer_copies_back_only_its_bytes():
    plan = plan_scratch(facts(1, PrivateWrite((0, 0), 16, 47, (("t0", 64),))))
    assert plan.cell_bytes == 256 and plan.copy_back == (CopyBack("t0", 80, 16, 32),)


def test_cutting_the_middle_of_a_piece_leaves_both_ends():
    assert CopyBack("t0", 0, 512, 256).without("t0", 64, 128) == [CopyBack("t0", 0, 512, 64),
                                                                    CopyBack("t0", 128, 640, 128)]
    assert CopyBack("t0", 0, 512, 256).without("t1", 64, 128) == [CopyBack("t0", 0, 512, 256)]


def test_nothing_private_needs_no_scratch():
    plan = plan_scratch(facts(3))
    assert (plan.cell_bytes, plan.bytes, plan.slots, plan.copy_back) == (0, 0, (), ())


@pytest.mark.toolchain
def test_the_layers_take_one_slot_each_and_the_last_values_go_back():
    state = OptimizeState(CompileJob(PROGRAM, CompileFlags(), resolve_toolchain()), cooperative=True)
    for stage in PIPELINE:
        stage.run(state)
        if stage.name == "cell-waves":
            break
    [waves] = state.schedule.cell_waves.values()
    found = find_repetition(state.model)
    assert waves.scratch == plan_scratch(found)
    assert (waves.scratch.cell_bytes, waves.scratch.bytes) == (256, 768)
    # t1's last value is layer 1's, t0's layer 2's (layer 0's is overwritten)
    assert [(p.buffer, p.slot) for p in waves.scratch.copy_back] == [("t1", 256), ("t0", 512)]
    printed = (format_repetition(found, state.model, waves.scratch.show) + format_copy_back(waves.scratch)).splitlines()
    assert printed[1] == ("  gate<<<(2, 1, 1), (32, 1, 1)>>>(t = private slot 0 (+256 bytes per layer), "
                          "w = w + 16384layer bytes, below = layer == 0 ? x + 256step bytes : "
                          "h + 256layer + 768step + 512 bytes, prev = h + 256layer + 768step bytes)")
    assert printed[3:] == ["  after the loop: t1 bytes [0, 256) from scratch byte 256",
                           "  after the loop: t0 bytes [0, 256) from scratch byte 512"]
