"""The candidates a tuner chooses among: every arrangement the schedule can take (and auto
with each region's groups as one cooperative launch, ``fusion.cooperative``), each with
the kernel passes on and off, and the original program itself.

Candidates are legal by construction (each is the optimizer's output for one setting,
promise-checked); which is fastest is a question for the GPU, or, without one, for the
cost model (``sirius.tuning.cost_model``), whose prediction each candidate carries.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

from sirius.fusion.schedule import ARRANGEMENTS
from sirius.pipeline import OptimizeState, pass_names, rearrange, report
from sirius.core.target import H100, Target
from sirius.tuning.cost_model import (Prediction, optimized_launches, original_launches, predict,
                                      registers_of, statement_costs)

# kernel-pass settings tried with each arrangement: all passes, and fusion alone
PASS_SETTINGS: tuple[tuple[str, tuple[str, ...] | None], ...] = (("all-passes", None), ("fusion-alone", ()))
# (arrangement, cooperative launches, persistent waves): every arrangement; auto with each region as one
# cooperative launch (and a repeated layer pattern as waves of cells, one launch per wave); and those waves in
# one persistent launch, or a host loop as one launch (only where a program has waves or a host loop of
# launches: elsewhere it is the same program)
SCHEDULES: tuple[tuple[str, bool, bool], ...] = tuple((a, False, False) for a in ARRANGEMENTS) + (
    ("auto", True, False), ("auto", True, True))

ORIGINAL = "original"


@dataclass(frozen=True)
class Candidate:
    """One complete program the tuner may choose. ``arrangement`` is None for the original."""

    name: str
    arrangement: str | None
    passes: tuple[str, ...]
    source: str
    launches: int | None
    prediction: Prediction
    same_as: tuple[str, ...] = ()  # other settings that produced the same program

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def generate_candidates(state: OptimizeState, gpu: Target = H100,
                        making: Callable[[str], None] | None = None) -> list[Candidate]:
    """The original and one candidate per distinct program over ``SCHEDULES`` x
    ``PASS_SETTINGS``, in that order, each with its predicted time. ``state`` has been
    through the whole pipeline (its own setting is among those generated again only if it
    differs). ``making(name)`` is called before each setting is made (progress)."""
    costs = statement_costs(state.model, registers_of(state))
    notes = tuple(costs.notes)
    original = predict(original_launches(state.model, costs), gpu, notes)
    out = [Candidate(ORIGINAL, None, (), state.source, original.launches, original)]
    by_text: dict[str, int] = {state.source: 0}  # an arrangement that fuses nothing is the original
    has_waves = False
    for arrangement, cooperative, persistent in SCHEDULES:
        if persistent and not (has_waves or any(s.kind == "launch" and s.loops for s in state.model.host.statements)):
            continue
        for label, passes in PASS_SETTINGS:
            chosen = tuple(pass_names()) if passes is None else passes
            name = f"{arrangement}{'+cooperative' if cooperative else ''}{'+persistent' if persistent else ''}/{label}"
            if making is not None:
                making(name)
            same = (arrangement, chosen, cooperative, persistent) == (state.arrangement, state.passes,
                                                                      state.cooperative, state.persistent)
            st = state if same else rearrange(state, arrangement, chosen, cooperative, persistent=persistent)
            has_waves = has_waves or bool(st.schedule.cell_waves)
            if st.output in by_text:
                k = by_text[st.output]
                out[k] = Candidate(**{**out[k].__dict__, "same_as": out[k].same_as + (name,)})
                continue
            by_text[st.output] = len(out)
            launches = report(st)["launches_after"]
            out.append(Candidate(name, arrangement, chosen, st.output, launches,
                                 predict(optimized_launches(st, costs), gpu, notes)))
    return out


def candidate_json(c: Candidate) -> dict:
    """``c`` as JSON can hold it (a task's result that crosses processes): the prediction's
    times and notes, not its planned launches."""
    p = c.prediction
    return {"name": c.name, "arrangement": c.arrangement, "passes": list(c.passes), "source": c.source,
            "launches": c.launches, "same_as": list(c.same_as),
            "prediction": {"launches": p.launches, "direct_us": p.direct_us, "graph_us": p.graph_us,
                           "notes": list(p.notes)}}


def candidate_from_json(data: dict) -> Candidate:
    p = data["prediction"]
    return Candidate(data["name"], data["arrangement"], tuple(data["passes"]), data["source"], data["launches"],
                     Prediction(p["launches"], p["direct_us"], p["graph_us"], (), tuple(p["notes"])),
                     tuple(data["same_as"]))


def rank_by_prediction(candidates: list[Candidate]) -> list[Candidate]:
    """Fastest predicted direct run first; ties (the cost model does not see the kernel
    passes) go to the candidate with more passes on, then to the earlier one."""
    order = {c.name: k for k, c in enumerate(candidates)}
    return sorted(candidates, key=lambda c: (round(c.prediction.direct_us, 3), -len(c.passes), order[c.name]))
