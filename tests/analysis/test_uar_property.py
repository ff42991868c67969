"""Soundness of the UAR on generated programs: every dependence the program has
lies inside a UAR edge at least as wide.

The reference is the generator's own footprint model: each kernel template
enumerates, in Python, which (block, thread) instance reads or writes which
element (sirius.testing.progen), independently of the IR analysis. The UAR may
be wider (over-approximation is allowed), never narrower or missing.
"""

import pytest

from sirius.analysis.uar import build_uar
from sirius.testing.progen import generate_program

from .conftest import analyze_file

pytestmark = pytest.mark.toolchain

RANK = {"thread": 0, "block": 1, "global": 2}
SEEDS = range(0, 16)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_generated_dependence_is_covered(seed, tmp_path):
    prog = generate_program(seed)
    path = tmp_path / f"seed_{seed}.cu"
    path.write_text(prog.source)
    model = analyze_file(str(path))
    uar = build_uar(model)
    assert len(model.launches) == len(prog.launches)
    index = [inst.statement.index for inst in model.launches]
    for dep in prog.expected_dependences:
        if dep.width == "none":
            continue
        src, dst = index[dep.producer], index[dep.consumer]
        if dep.kinds:
            edges = [d for d in uar.dependences if d.src == src and d.dst == dst]
            assert edges, f"seed {seed}: no UAR edge for {dep}"
            widest = max(RANK[d.width] for d in edges)
            assert widest >= RANK[dep.width], f"seed {seed}: UAR width {widest} narrower than {dep}"
        if dep.carried_kinds:
            back = [d for d in uar.dependences if d.src == dst and d.dst == src and not d.same_iteration]
            assert back, f"seed {seed}: no loop-carried UAR edge for {dep}"
