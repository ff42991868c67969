"""The Python API without the command line: a policy defined here, two programs optimized
with it, their groups and refusals read as typed objects, one verified."""

from __future__ import annotations

from pathlib import Path

import pytest

import sirius
from sirius.core.errors import InputError
from sirius.fusion.policies import FusionPolicy, Merge
from sirius.fusion.schedule import RefusalKind

ROOT = Path(__file__).resolve().parents[1]
CHAIN, SOFTMAX = ROOT / "cuda_inputs" / "elementwise_chain.cu", ROOT / "cuda_inputs" / "softmax.cu"

pytestmark = pytest.mark.toolchain


class NoSquares(FusionPolicy):
    """Declines every merge that takes in a kernel whose name has ``square`` in it."""

    name = "no-squares"
    summary = "kernels named *square* stay alone"

    def accept(self, merge: Merge) -> bool:
        return not any("square" in launch.kernel for lane in merge.lanes for launch in lane)


def test_a_policy_object_shapes_what_fuses_and_its_refusals_are_data(tmp_path):
    chain = sirius.optimize(CHAIN, policy=NoSquares())
    assert (chain.launches_before, chain.launches_after) == (4, 2)
    (group,) = chain.groups
    assert group.kernel == "sirius_fused_0" and [launch.kernel for launch in group.launches] == [
        "scale2", "add", "relu"]
    declined = [r for r in chain.refusals if r.kind is RefusalKind.POLICY]
    assert declined and all("no-squares" in r.reason for r in declined)
    assert {launch.kernel for r in declined for launch in r.launches} >= {"square_plus_one"}

    softmax = sirius.optimize(SOFTMAX, tmp_path / "softmax.opt.cu", flags=["-DROWS=64"], policy=NoSquares())
    assert (softmax.launches_before, softmax.launches_after) == (4, 1)
    assert softmax.report["launches_after"] == 1 and "sirius_fused_0" in softmax.output
    checked = sirius.verify(SOFTMAX, tmp_path / "softmax.opt.cu", flags=["-DROWS=64"])
    assert checked.equal and checked.status == 0 and checked.fused_code_ran
    assert [r.paths for r in checked.regions] == [{"fused launches": 1}]
    # built without the -D it was optimized with: equal, but no fused code was compared
    unchecked = sirius.verify(SOFTMAX, tmp_path / "softmax.opt.cu")
    assert unchecked.equal and not unchecked.fused_code_ran and "no fused code ran" in unchecked.text


def test_the_model_and_bad_input():
    analysis = sirius.analyze(CHAIN)
    assert [launch.kernel.name for launch in analysis.launches] == ["scale2", "add", "relu", "square_plus_one"]
    assert analysis.uar.dependences
    with pytest.raises(InputError, match="unknown compiler flag --frobnicate"):
        sirius.optimize(CHAIN, flags=["--frobnicate"])
    with pytest.raises(InputError, match="no such file"):
        sirius.optimize(ROOT / "absent.cu")
