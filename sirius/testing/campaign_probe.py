"""Tiny tasks for the tests of :mod:`sirius.campaign`: each records that it ran (a file per
run in ``log``, so runs in any process on this machine can be counted), and one kills the
worker process running it the first time it runs."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path


def _record(log: str, name: str) -> None:
    Path(log).mkdir(parents=True, exist_ok=True)
    (Path(log) / f"{name}.{uuid.uuid4().hex}.run").write_text(str(os.getpid()))


def runs(log: str, name: str) -> int:
    """How many times task ``name`` ran."""
    return len(list(Path(log).glob(f"{name}.*.run")))


def square(log: str, n: int, seconds: float = 0.0) -> dict:
    _record(log, f"square-{n}")
    time.sleep(seconds)
    return {"n": n, "square": n * n}


def square_or_die(log: str, n: int, marker: str, seconds: float = 0.0) -> dict:
    """``square``, except that the first run (no ``marker`` file yet) writes the marker and
    kills its own process, as a worker lost mid-task would be."""
    _record(log, f"square-{n}")
    if not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(seconds)
    return {"n": n, "square": n * n}


def worker_resources() -> dict:
    """The resources the Dask worker running this task declares."""
    from distributed import get_worker

    return dict(get_worker().state.total_resources)
