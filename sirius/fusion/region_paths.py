"""Which path each fused region of an optimized program took when it ran.

Every rewritten region of the emitted program chooses at run time between its fused code
(fused launches, one cooperative launch, waves of cells, a wavefront) and the launches as
written: the guard compares the values the fusion was proven for (build macros, launch
shapes, integer arguments, pointer distances) with those the program computes, and a
cooperative kernel needs a device that launches it. A verification that only ever took the
original launches compared nothing fused, so the emitted program counts, per region, how
often each path ran and, for the original launches, which guard condition failed first.

The counters are host code at the top of the emitted program (``counter_header``); at exit
a program run with ``SIRIUS_PATH_COUNTS=FILE`` appends one line ``SLOT COUNT`` per nonzero
counter to FILE (a build with ``-DSIRIUS_NO_PATH_COUNTS`` counts nothing). The same header
carries the region table as one JSON comment line (``// sirius-regions: {...}``), so that
``sirius verify`` reads what each slot means from the optimized program itself
(``regions_of``) and the counts from the file (``read_counts``), and ``summarize`` gives
per region the runs of each path.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

ENVIRONMENT = "SIRIUS_PATH_COUNTS"
TABLE_PREFIX = "// sirius-regions: "


class PathKind(enum.IntEnum):
    """A region's counter slots, in this order; then one slot per guard condition."""

    FUSED = 0          # the fused launches
    COOPERATIVE = 1    # one cooperative launch
    WAVES = 2          # waves of cells, cooperative launches
    WAVEFRONT = 3      # a wavefront over a loop nest
    NO_COOPERATIVE = 4  # guard held, but the device launched nothing cooperatively: the original code
    GUARD_FAILED = 5   # the original code, the failing condition not recorded

    @property
    def fused(self) -> bool:
        return self <= PathKind.WAVEFRONT


PATH_NAMES = {PathKind.FUSED: "fused launches", PathKind.COOPERATIVE: "cooperative launch",
              PathKind.WAVES: "waves of cells", PathKind.WAVEFRONT: "wavefront",
              PathKind.NO_COOPERATIVE: "original code: no cooperative launch on this device",
              PathKind.GUARD_FAILED: "original code: guard failed"}
FUSED_PATH = {"fused": PathKind.FUSED, "cooperative": PathKind.COOPERATIVE, "waves": PathKind.WAVES,
              "wavefront": PathKind.WAVEFRONT}


@dataclass(frozen=True)
class FusedRegion:
    """One rewritten region as the emitted program counts it: slots ``base`` to
    ``base + size - 1`` (``PathKind`` then one per condition, in ``conditions`` order)."""

    id: int
    kind: str                      # a key of FUSED_PATH
    line: int | None               # of its first launch in the program
    kernels: tuple[str, ...]       # the kernels of its launches, in order
    conditions: tuple[str, ...]    # the guard's conditions, readable
    base: int
    file: str | None = None        # the file ``line`` is in, when not the main file (an included one)

    @property
    def size(self) -> int:
        return len(PathKind) + len(self.conditions)

    def as_record(self) -> dict:
        """As the emitted table and the report hold it (``file`` only where there is one)."""
        record = asdict(self)
        if record["file"] is None:
            del record["file"]
        return record


@dataclass
class RegionSlots:
    """One region's counting as the printer writes it: its guard conditions are numbered
    as ``holds`` meets them (``describe`` gives each its readable text for the table)."""

    id: int
    kind: str
    line: int | None
    kernels: tuple[str, ...]
    base: int
    describe: Callable[[str], str]
    conditions: list[str] = field(default_factory=list)
    file: str | None = None

    def holds(self, text: str) -> str:
        """The C condition ``text``, the next of the guard, recorded when it fails."""
        self.conditions.append(self.describe(text))
        return f"sirius_holds({len(self.conditions) - 1}, ({text}))"

    def guard(self, conditions: list[str]) -> str:
        """The conjunction of ``conditions``, or ``true``."""
        return " && ".join(self.holds(c) for c in conditions) or "true"

    def took(self, path: PathKind) -> str:
        return f"sirius_took({self.base + int(path)});"

    def fell_back(self) -> str:
        """The guard failed: counts the first failing condition ``holds`` recorded (call it
        after the guard is written)."""
        return f"sirius_fell_back({self.base + int(PathKind.GUARD_FAILED)}, {len(self.conditions)});"

    def region(self) -> FusedRegion:
        return FusedRegion(self.id, self.kind, self.line, self.kernels, tuple(self.conditions), self.base, self.file)


@dataclass
class RegionTable:
    """The regions of one emitted program, numbered as the printer meets them; a region's
    slots follow the previous one's, so each is written whole before the next opens."""

    slots: list[RegionSlots] = field(default_factory=list)

    def open(self, kind: str, line: int | None, kernels, describe: Callable[[str], str] = str,
             file: str | None = None) -> RegionSlots:
        assert kind in FUSED_PATH, kind
        base = sum(r.region().size for r in self.slots)
        self.slots.append(RegionSlots(len(self.slots), kind, line, tuple(kernels), base, describe, file=file))
        return self.slots[-1]

    @property
    def regions(self) -> list[FusedRegion]:
        return [s.region() for s in self.slots]

    def header(self) -> str:
        """The counters and the table, host code for the top of the program."""
        slots = max(1, sum(r.size for r in self.regions))
        table = json.dumps({"version": 1, "regions": [r.as_record() for r in self.regions]}, separators=(",", ":"))
        # every name sirius_-prefixed or unnamed: a build's -D macros must not reach into it; a forked
        # child starts from zero (what the parent counted, the parent writes)
        return (TABLE_PREFIX + table + "\n"
                "#include <stdio.h>\n#include <stdlib.h>\n"
                f"// sirius: how often each fused region took each path; written at exit to ${ENVIRONMENT}\n"
                "#ifndef SIRIUS_NO_PATH_COUNTS\n"
                "#if defined(__unix__) || defined(__APPLE__)\n#include <pthread.h>\n"
                "#define SIRIUS_AT_FORK(sirius_child) pthread_atfork(0, 0, sirius_child)\n"
                "#else\n#define SIRIUS_AT_FORK(sirius_child) 0\n#endif\n"
                "static void sirius_paths_forked();\n"
                f"static struct sirius_path_counter {{ unsigned long long sirius_count[{slots}]; int sirius_failed; "
                "sirius_path_counter() { (void)SIRIUS_AT_FORK(sirius_paths_forked); } "
                f"~sirius_path_counter() {{ const char* sirius_f = getenv(\"{ENVIRONMENT}\"); "
                "FILE* sirius_o = sirius_f ? fopen(sirius_f, \"a\") : 0; if (!sirius_o) return; "
                f"for (int sirius_i = 0; sirius_i < {slots}; ++sirius_i) if (sirius_count[sirius_i]) "
                "fprintf(sirius_o, \"%d %llu\\n\", sirius_i, sirius_count[sirius_i]); fclose(sirius_o); } } sirius_paths;\n"
                f"static void sirius_paths_forked() {{ for (int sirius_i = 0; sirius_i < {slots}; ++sirius_i) "
                "sirius_paths.sirius_count[sirius_i] = 0; sirius_paths.sirius_failed = 0; }\n"
                "static inline bool sirius_holds(int sirius_condition, bool sirius_now) "
                "{ if (!sirius_now) sirius_paths.sirius_failed = sirius_condition + 1; return sirius_now; }\n"
                "static inline void sirius_took(int sirius_slot) { ++sirius_paths.sirius_count[sirius_slot]; }\n"
                "static inline void sirius_fell_back(int sirius_slot, int sirius_conditions) { "
                "int sirius_f = sirius_paths.sirius_failed; sirius_paths.sirius_failed = 0; "
                "++sirius_paths.sirius_count[sirius_slot + (sirius_f > 0 && sirius_f <= sirius_conditions ? sirius_f : 0)]; }\n"
                "#else\n"
                "static inline bool sirius_holds(int, bool sirius_now) { return sirius_now; }\n"
                "static inline void sirius_took(int) {}\n"
                "static inline void sirius_fell_back(int, int) {}\n"
                "#endif\n")


def regions_of(source: str) -> list[FusedRegion]:
    """The region table of an emitted program (empty when it has none)."""
    for line in source.splitlines():
        if line.startswith(TABLE_PREFIX):
            data = json.loads(line[len(TABLE_PREFIX):])
            return [FusedRegion(r["id"], r["kind"], r["line"], tuple(r["kernels"]), tuple(r["conditions"]), r["base"],
                                r.get("file")) for r in data["regions"]]
    return []


def read_counts(path: Path) -> dict[int, int] | None:
    """Counter slot -> count, summed over the lines a run appended; None when the program
    wrote nothing (it has no regions, or did not exit normally)."""
    if not path.exists():
        return None
    counts: dict[int, int] = {}
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"(\d+) (\d+)", line.strip())
        if m:
            counts[int(m[1])] = counts.get(int(m[1]), 0) + int(m[2])
    return counts


@dataclass(frozen=True)
class RegionRuns:
    """How often one region took each path in a run; ``failed`` maps a guard condition
    (its text; "" where not recorded) to the runs that fell back on it."""

    region: FusedRegion
    paths: dict[str, int]
    failed: dict[str, int]

    @property
    def fused_runs(self) -> int:
        return sum(n for name, n in self.paths.items() if name == PATH_NAMES[FUSED_PATH[self.region.kind]])

    @property
    def runs(self) -> int:
        return sum(self.paths.values())

    def to_json(self) -> dict:
        r = self.region
        return {"region": r.id, "kind": r.kind, "line": r.line, "kernels": list(r.kernels), "runs": self.runs,
                "fused_runs": self.fused_runs, "paths": self.paths, "guard_failed_on": self.failed}


def summarize(regions: list[FusedRegion], counts: dict[int, int]) -> list[RegionRuns]:
    """Per region, the runs of each path (only those that ran)."""
    out = []
    for r in regions:
        paths: dict[str, int] = {}
        failed: dict[str, int] = {}
        for slot in range(r.size):
            n = counts.get(r.base + slot, 0)
            if not n:
                continue
            if slot >= PathKind.GUARD_FAILED:
                paths[PATH_NAMES[PathKind.GUARD_FAILED]] = paths.get(PATH_NAMES[PathKind.GUARD_FAILED], 0) + n
                cond = r.conditions[slot - len(PathKind)] if slot >= len(PathKind) else ""
                failed[cond] = failed.get(cond, 0) + n
            else:
                paths[PATH_NAMES[PathKind(slot)]] = n
        out.append(RegionRuns(r, paths, failed))
    return out


def render(runs: list[RegionRuns], program: str) -> tuple[list[str], list[str]]:
    """Lines describing ``runs``, and warnings: no fused code ran at all, or a region ran
    and never took its fused path."""
    fused = sum(1 for rr in runs if rr.fused_runs)
    lines, warnings = [f"fused regions: {len(runs)}, {fused} of them took their fused path in this run:"], []
    for rr in runs:
        r = rr.region
        where = f"{Path(r.file).name if r.file else program}:{r.line}" if r.line else program
        took = ", ".join(f"{name} {n}" for name, n in rr.paths.items()) or "not reached"
        lines.append(f"  region {r.id} ({r.kind}, {where}, {' '.join(r.kernels)}): {took}")
        for cond, n in rr.failed.items():
            lines.append(f"    guard failed {n}x on: {cond or '(condition not recorded)'}")
        if rr.runs and not rr.fused_runs:
            warnings.append(f"warning: region {r.id} ({where}) ran {rr.runs}x and never took its fused path")
    if not any(rr.fused_runs for rr in runs):
        warnings = ["warning: no fused code ran: every region took the original code, so this run compared "
                    "nothing the optimizer fused (build with the -D values and run with the arguments it was "
                    "optimized for)"]
    return lines, warnings


def fallback_only(runs: list[RegionRuns]) -> list[RegionRuns]:
    """The regions whose fused code this run did not test: all of them when no fused code
    ran, else those that ran and never took their fused path."""
    if runs and not any(rr.fused_runs for rr in runs):
        return list(runs)
    return [rr for rr in runs if rr.runs and not rr.fused_runs]
