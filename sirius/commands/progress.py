"""Progress of long work, drawn on the terminal with ``rich``: the stage a pipeline run is
in, the program or seed a campaign is at.

Progress is shown only where someone watches it: standard error is a terminal and
``--quiet`` was not given. Otherwise nothing is drawn (no escape codes in a log or a pipe);
what a command prints as its result is not progress and stays.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


def shown(quiet: bool, console: Console | None = None) -> bool:
    """Whether progress is drawn: not ``quiet``, and standard error (or ``console``) a terminal."""
    return not quiet and (console.is_terminal if console is not None else sys.stderr.isatty())


def _bar(console: Console | None) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console or Console(stderr=True), transient=True)


@contextmanager
def stage_progress(what: str, stages: list[str], quiet: bool,
                   console: Console | None = None) -> Iterator[Callable[[str], None]]:
    """A callback ``entering(stage)`` for ``pipeline.run_pipeline``: a bar over ``stages``
    titled ``what: stage`` while it is drawn; a no-op otherwise. A rerun from the schedule
    (late facts) moves the bar back."""
    if not shown(quiet, console):
        yield lambda stage: None
        return
    with _bar(console) as bar:
        task = bar.add_task(what, total=len(stages))
        yield lambda stage: bar.update(task, completed=stages.index(stage), description=f"{what}: {stage}",
                                       refresh=True)


@contextmanager
def item_progress(what: str, total: int, quiet: bool,
                  console: Console | None = None) -> Iterator[Callable[..., None]]:
    """A callback ``done(label, line=None, advance=1)`` for a campaign of ``total`` items:
    advances the bar by ``advance`` (titled ``what: label``) and prints ``line`` above it when
    given; ``advance=0`` tells where an item is without finishing it (a stage, a candidate).
    Not drawn: ``line`` goes to standard error as it is, unless ``quiet``."""
    if not shown(quiet, console):
        def done(label: str, line: str | None = None, advance: int = 1) -> None:
            if line is not None and not quiet:
                print(line, file=sys.stderr, flush=True)
        yield done
        return
    with _bar(console) as bar:
        task = bar.add_task(what, total=total)

        def step(label: str, line: str | None = None, advance: int = 1) -> None:
            if line is not None:
                bar.console.print(line, markup=False, highlight=False)
            bar.update(task, advance=advance, description=f"{what}: {label}", refresh=True)
        yield step
