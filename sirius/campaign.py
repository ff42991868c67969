"""Independent tasks of a campaign (an experiment's programs, a fuzz run's seeds), run in this
process or on a Dask cluster, each result cached on disk so that a rerun does only what is left.

A :class:`Task` is a pure function of its arguments: a module-level function (a worker imports
it by name), picklable arguments, and a result that JSON can hold. Its ``key`` is a hash of what
decides the result (``task_key``: the program's text, the flags, the policy, the settings that
change a row, ``code_fingerprint()``; not the commit), so two tasks with one key are one task.

Where the tasks run is an :class:`Engine`:

- ``workers`` 0 or 1 and no scheduler: one after another in this process; Dask is not started
  (nor imported).
- ``workers`` N > 1: a local Dask cluster of N worker processes of one thread each, started
  for the campaign and stopped after it.
- ``scheduler`` ADDRESS (``tcp://host:8786``): the workers of an existing cluster
  (``dask scheduler``; ``dask worker ADDRESS`` on each machine, which must see the same
  files: the programs are read by path).

A task that needs a GPU (``gpu=True``: a measurement, a verification on the GPU backend) is
submitted with ``resources={"GPU": 1}``, so it runs only on a worker that declares one
(``dask worker ADDRESS --resources GPU=1``), one such task per GPU at a time. In a local
cluster the first worker declares the GPU; an existing cluster with no such worker is refused.

Results are gathered in this process, in the order they arrive (``on_result`` is called for
each, for a progress bar), and returned in the order of the tasks. With a ``cache`` folder each
result is written there as ``KEY.json`` the moment it arrives (only this process writes), and a
task whose result is there is not run again: a campaign stopped half-way resumes where it
stopped. A worker that dies mid-task (killed, out of memory) loses nothing: the scheduler runs
its tasks again on another worker, and each task's result is taken once, from its future.
A task that has killed ``distributed.scheduler.allowed-failures`` + 1 workers (3 by default)
stops the campaign; what arrived before it stays cached.

``run_tasks`` runs one round of tasks; a :class:`Session` runs several on one cluster, where a
round's tasks are made from the results of the one before (``sirius tune``: the candidates of
each program on any worker, then their measurements on a GPU worker).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

from sirius.core.errors import InputError, SiriusError

CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Task:
    """One unit of work: ``function(*args)``, its result cached under ``key``."""

    key: str
    function: Callable[..., Any]
    args: tuple = ()
    label: str = ""
    gpu: bool = False


@dataclass(frozen=True)
class Engine:
    """Where a campaign's tasks run (see the module's docstring)."""

    workers: int = 1
    scheduler: str | None = None

    @property
    def uses_dask(self) -> bool:
        return self.scheduler is not None or self.workers > 1

    def describe(self) -> str:
        if self.scheduler:
            return f"the Dask cluster at {self.scheduler}"
        return f"a local Dask cluster of {self.workers} workers" if self.workers > 1 else "this process"


def add_engine_options(parser, default_workers: int) -> None:
    """``--workers N`` and ``--scheduler ADDRESS`` (read back with ``engine_from_args``)."""
    parser.add_argument("--workers", metavar="N", default=None,
                        help=f"run the tasks on a local Dask cluster of N worker processes; 0 or 1: in this "
                             f"process, without Dask (default: {default_workers})")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run the tasks on the workers of an existing Dask cluster (tcp://HOST:PORT); tasks "
                             "that need a GPU go to workers started with --resources GPU=1")
    parser.set_defaults(_default_workers=default_workers)


def engine_from_args(args) -> Engine:
    """The engine ``--workers``/``--scheduler`` name; InputError (exit 2) for a bad value."""
    workers = parse_workers(args.workers, getattr(args, "_default_workers", 1))
    scheduler = args.scheduler
    if scheduler is not None:
        if args.workers is not None:
            raise InputError("error: --workers and --scheduler: give one (with --scheduler the cluster's "
                             "workers run the tasks)")
        if not scheduler.strip():
            raise InputError("error: --scheduler: empty address (expected tcp://HOST:PORT)")
    return Engine(workers=workers, scheduler=scheduler)


def parse_workers(given: str | int | None, default: int) -> int:
    if given is None:
        return default
    try:
        workers = int(given)
    except (TypeError, ValueError):
        raise InputError(f"error: --workers {given}: not a whole number (0 or 1: this process, N: a local "
                         "cluster of N workers)") from None
    if workers < 0:
        raise InputError(f"error: --workers {given}: a number of workers cannot be negative")
    cap = max(64, 4 * (os.cpu_count() or 1))
    if workers > cap:
        raise InputError(f"error: --workers {given}: more than {cap} local workers on this machine; "
                         "use --scheduler for a larger cluster")
    return workers


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of the package's own files (sources, the runtime the backends build with): a
    result made by other code is not reused. Not the commit: a commit that changes no file of
    the package keeps the cache."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def task_key(*parts: Any) -> str:
    """A stable hash of ``parts`` (JSON-able values: texts, flags, names, numbers)."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ResultCache:
    """Results on disk, one ``KEY.json`` per task, written whole (a temporary file renamed).
    ``read=False``: nothing is read (every task runs), results are still written."""

    def __init__(self, folder: Path, read: bool = True):
        self.folder, self.read = Path(folder), read

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> tuple[bool, Any]:
        if not self.read:
            return False, None
        try:
            return True, json.loads(self._path(key).read_text())["result"]
        except (OSError, ValueError, KeyError):  # absent, or cut short by a crash: run it again
            return False, None

    def put(self, key: str, label: str, result: Any) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"key": key, "label": label, "result": result}) + "\n")
        partial.replace(path)


OnResult = Callable[[int, Task, Any, bool], None]  # (index, task, result, from the cache)
OnStart = Callable[[Task], None]  # a task about to run in this process (progress names it)


def run_tasks(tasks: Sequence[Task], engine: Engine = Engine(), cache: ResultCache | None = None,
              on_result: OnResult | None = None, on_start: OnStart | None = None) -> list[Any]:
    """Every task's result, in the order of ``tasks``; ``on_result`` as each arrives,
    ``on_start`` before each task run in this process (on Dask several run at once)."""
    with Session(engine, gpu=any(t.gpu for t in tasks)) as session:
        return session.run(tasks, cache, on_result, on_start)


class Session:
    """An engine held for several rounds of tasks, where a round's tasks are made from the
    results of the round before (``sirius tune``: each program's candidates, then their
    measurements on a GPU): one Dask cluster for all of them. The cluster is started (or the
    scheduler connected to) by the first round with a task to run, so that a campaign
    answered from its caches starts none, and stopped when the session ends. ``gpu``: whether
    a round may hold a task that needs a GPU (a local cluster's first worker then declares
    one; an existing cluster must have a worker that does)."""

    def __init__(self, engine: Engine = Engine(), gpu: bool = False):
        self.engine, self.gpu = engine, gpu
        self._connection: _Connection | None = None
        self._client = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._connection is not None:
            connection, self._connection, self._client = self._connection, None, None
            connection.__exit__(None, None, None)

    def _dask_client(self):
        if self._client is None:
            connection = _Connection(self.engine, self.gpu)
            self._client = connection.__enter__()
            self._connection = connection
        return self._client

    def run(self, tasks: Sequence[Task], cache: ResultCache | None = None,
            on_result: OnResult | None = None, on_start: OnStart | None = None) -> list[Any]:
        """Every task's result, in the order of ``tasks``; ``on_result`` as each arrives,
        ``on_start`` before each task run in this process."""
        if any(t.gpu for t in tasks) and not self.gpu:
            raise ValueError("a task needs a GPU and the session was opened with gpu=False")
        results: list[Any] = [None] * len(tasks)
        waiting: dict[str, list[int]] = {}  # key -> indices of the tasks not yet answered
        for i, task in enumerate(tasks):
            found, value = cache.get(task.key) if cache is not None else (False, None)
            if found:
                results[i] = value
                if on_result:
                    on_result(i, task, value, True)
            else:
                waiting.setdefault(task.key, []).append(i)

        def arrived(key: str, value: Any) -> None:
            first = tasks[waiting[key][0]]
            if cache is not None:
                cache.put(key, first.label, value)
            for i in waiting[key]:
                results[i] = value
                if on_result:
                    on_result(i, tasks[i], value, False)

        if not waiting:
            return results
        todo = [tasks[indices[0]] for indices in waiting.values()]
        if not self.engine.uses_dask:
            for task in todo:
                if on_start:
                    on_start(task)
                arrived(task.key, task.function(*task.args))
        else:
            _run_on_dask(todo, self._dask_client(), arrived)
        return results


def _dask_key(task: Task) -> str:
    name = re.sub(r"[^\w.-]", "_", task.label)[:60] or "task"
    return f"{name}-{task.key}"


def _run_on_dask(todo: list[Task], client, arrived: Callable[[str, Any], None]) -> None:
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    futures = {client.submit(task.function, *task.args, key=_dask_key(task), pure=False,
                             resources={"GPU": 1} if task.gpu else None): task for task in todo}
    for future in as_completed(list(futures)):
        task = futures.pop(future)
        try:
            value = future.result()
            future.release()  # the worker may drop it: a worker lost later is not asked for it again
        except KilledWorker as err:
            raise SiriusError(f"error: {task.label or task.key}: the task stopped every worker that ran it "
                              f"({err}); the results that arrived before it are kept where a cache is given", exit_code=3) from None
        arrived(task.key, value)


class _Connection:
    """A Dask client: connected to ``engine.scheduler``, or over a local cluster it starts and stops."""

    def __init__(self, engine: Engine, gpu: bool):
        self.engine, self.gpu, self.cluster, self.client = engine, gpu, None, None

    def __enter__(self):
        from distributed import Client

        if self.engine.scheduler:
            try:
                self.client = Client(self.engine.scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
            except Exception as err:  # OSError, TimeoutError, ValueError for a malformed address
                detail = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise InputError(f"error: --scheduler {self.engine.scheduler}: no Dask scheduler answered "
                                 f"({detail})") from None
            if self.gpu and not any("GPU" in (w.get("resources") or {})
                                    for w in self.client.scheduler_info()["workers"].values()):
                self.client.close()
                raise InputError(f"error: --scheduler {self.engine.scheduler}: these tasks need a GPU and no "
                                 "worker of the cluster declares one (start one with dask worker ADDRESS "
                                 "--resources GPU=1)")
            return self.client
        from distributed import Nanny, Scheduler, SpecCluster

        workers = {f"sirius-{i}": {"cls": Nanny, "options": {
            "nthreads": 1, "memory_limit": 0, "silence_logs": logging.ERROR, "dashboard": False,
            "resources": {"GPU": 1} if self.gpu and i == 0 else {}}} for i in range(self.engine.workers)}
        scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard": False, "port": 0}}
        self.cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR,
                                   name="sirius")
        self.client = Client(self.cluster)
        return self.client

    def __exit__(self, *exc) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
