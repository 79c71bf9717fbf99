"""Cells on a Dask cluster: :class:`DaskExecutor` (see :mod:`ltr_bench.run.executors` for
the :class:`~ltr_bench.run.executors.Executor` contract it fulfils).

A ``distributed.LocalCluster`` of ``workers`` processes, or an existing cluster reached at
``scheduler`` (``tcp://host:8786``; ``DASK_SCHEDULER_ADDRESS`` on the command line). Each
cell travels as the picklable :class:`~ltr_bench.run.cells.Cell` and runs ``run_cell(cell)``
on a worker, which loads its fold itself: a LETOR fold from the data home (a shared
filesystem on a real cluster) through the worker's own parsed-data cache, a generated fold
generated on the worker from the cell's seed (never shipped).

Threads
-------
A cell runs with ``threads`` threads (``--threads``, default 1). A local cluster's worker has
``threads`` Dask threads, a resource ``cores = threads``, and BLAS/OpenMP pools of that size
(environment variables set before the worker starts); every cell asks for ``cores =
threads``, so a worker runs one cell at a time and ``workers x threads`` cores are busy, never
more. On an external cluster the same resource is used when every worker declares a
``cores`` resource (``dask worker --nthreads 4 --resources cores=4`` runs two 2-thread cells
at once); otherwise each Dask thread runs one cell (start workers with ``--nthreads 1``
unless the rankers are single-threaded).

At most as many cells are submitted as can run at once (the slots above, recounted as
workers join or leave): a cell is announced as started (``Listener.cell_started``) when it
starts, and Ctrl-C has little to cancel. A slot freed by a finished cell gets its next cell
before that record is handed to the caller (who saves and logs it meanwhile), announced
after the records that finished before it: never more cells announced than slots. Cells are
not queued ahead on the cluster: a worker that dies counts against every task it holds
(Dask hands resource-restricted tasks out before they can start), so a queued cell would
share the blame for a neighbour that kills its worker. A local cluster's workers are
forked from a forkserver that imported Dask and the rankers' modules once
(:mod:`ltr_bench.run.dask_workers`); :meth:`DaskExecutor.warm_up` imports what a worker
still lacks (spawned, restarted, external), also on each that joins later. Workers of a
local cluster run without Dask's profiler (a thread sampling every 10 ms, in a timed fit).

Progress
--------
On Dask each cell runs inside :class:`_WithProgress`, which installs a progress handler on
the worker that publishes Dask structured events (``Worker.log_event``) under a topic unique
to the ``map_cells`` call; the payload is ``{"position", "done", "total", "message"}``. The
worker throttles: at most one event per cell every :data:`PROGRESS_INTERVAL` seconds, a
report of ``done >= total`` always, and the last one held back when the cell's function
returns. The client subscribes to the topic (``Client.subscribe_topic``); its handler, on the
client's event-loop thread, only queues events, which ``map_cells`` drains in its poll loop
and before yielding a finished cell (its events arrive ahead of its result: each hop forwards
them in order on the same stream). Events of a cell already yielded are dropped.

Faults
------
A worker that dies while running a cell (killed, out of memory, a crash in native code)
costs that cell only: the scheduler reruns it on another worker up to
``distributed.scheduler.allowed-failures`` times (``retries`` of a local cluster; the
scheduler's own configuration on an external one), then gives up with ``KilledWorker`` and
the cell gets a ``status="failed"`` record with stage ``"worker"`` saying so; the other cells
go on. A local cluster keeps a worker whose nanny restarts it slowly (Dask drops one for good
after 15 s, ``distributed.deploy.lost-worker-timeout``: raised to 600 s); a result lost with
a worker after it was done is computed again and waited for. An exception inside the ranker
is already a failed record made by ``run_cell`` on the worker. Ctrl-C (or a listener's
exception) cancels every cell not yet returned and frees the workers fitting them
(:func:`~.dask_workers.cancel_and_free`); records returned are saved.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ltr_bench.errors import UsageError
from ltr_bench.results import ResultRecord
from ltr_bench.run.dask_workers import (
    THREAD_ENV,
    WORKER_IMPORTS,
    cancel_and_free,
    ranker_modules,
    said_where,
    start_forkserver,
)
from ltr_bench.run.executors import (
    Executor,
    ExecutorError,
    WorkerDied,
    _call_reporting,
    _defaults,
)

if TYPE_CHECKING:  # scikit-learn comes with the cells' module: not needed to start
    from ltr_bench.run.cells import Cell

__all__ = ["DaskExecutor"]

#: the Dask resource a cell asks for, one unit per thread it uses
CORES = "cores"

_POLL_SECONDS = 0.01
#: a cell's progress events are at least this many seconds apart on the wire (see Progress)
PROGRESS_INTERVAL = 0.5
#: how often the free worker slots are recounted (workers may join or leave)
_RECOUNT_SECONDS = 1.0


class DaskExecutor(Executor):
    """Cells on a Dask cluster: a new ``LocalCluster`` of ``workers`` processes, or the
    existing cluster whose scheduler is at ``scheduler``.

    Parameters
    ----------
    workers : number of local worker processes (ignored when ``scheduler`` is given).
    scheduler : address of a running scheduler, e.g. ``tcp://host:8786``.
    threads : threads of one cell (the plan's ``threads``; None means 1).
    retries : worker deaths a cell may cause before it is recorded as failed (sets
        ``distributed.scheduler.allowed-failures`` of a local cluster).
    memory_limit : per local worker, as ``LocalCluster`` takes it (``"auto"``: the machine's
        memory divided by ``workers``; 0: no limit). A worker above 95 % of it is restarted
        by its nanny, which counts as a worker death for the cell it was running.
    """

    in_process = False

    def __init__(
        self,
        *,
        workers: int | None = None,
        scheduler: str | None = None,
        threads: int | None = None,
        retries: int = 2,
        memory_limit: str | float | int = "auto",
    ):
        if scheduler is None and workers is None:
            raise UsageError(
                "DaskExecutor needs workers=N (a local cluster) or "
                "scheduler=ADDRESS (an existing cluster)"
            )
        if workers is not None and int(workers) < 1:
            raise UsageError(f"workers must be at least 1, got {workers}")
        if threads is not None and int(threads) < 1:
            raise UsageError(f"threads must be at least 1, got {threads}")
        if int(retries) < 0:
            raise UsageError(f"retries must be 0 or more, got {retries}")
        self.workers = None if workers is None else int(workers)
        self.scheduler = scheduler
        self.threads = int(threads or 1)
        self.retries = int(retries)
        self.memory_limit = memory_limit
        self._cluster = None
        self._client = None
        self._lock = threading.RLock()  # one start of the cluster, whichever thread asks
        self._starter: threading.Thread | None = None
        self._start_error: BaseException | None = None
        self._warmed: set[str] = set()  # modules of the registered warm-up plugin
        self._plugin = f"ltr-bench-imports-{uuid.uuid4().hex[:8]}"  # its name, ours alone
        self._preload: set[str] = {"ltr_bench.run.unit"}  # for the workers' forkserver

    # ---------------------------------------------------------------------------- cluster

    def start(self, rankers: Sequence[str] = ()) -> None:
        """Start (or connect to) the cluster and import the modules of ``rankers`` (registered
        names) on its workers, on a thread of this process, and return at once: the cluster
        comes up while this process imports the rankers and loads data. :meth:`client`
        waits for it (and raises what the start raised)."""
        if self._starter is not None or self._client is not None:
            return
        self._preload = ranker_modules(rankers)

        def run() -> None:
            try:
                self.client()
                self._warm(ranker_modules(rankers))
            except BaseException as exc:  # noqa: BLE001 - raised again by client()
                self._start_error = exc

        self._starter = threading.Thread(target=run, name="ltr-bench-dask-start", daemon=True)
        self._starter.start()

    def client(self):
        """The ``distributed.Client`` (connecting or starting the cluster on first use, or
        waiting for :meth:`start`)."""
        starter = self._starter
        if starter is not None and starter is not threading.current_thread():
            starter.join()
            self._starter = None
            error, self._start_error = self._start_error, None
            if error is not None and self._client is None:
                raise error
        with self._lock:
            return self._connect()

    def _connect(self):
        if self._client is not None:
            return self._client
        try:
            import dask

            forked = False
            if self.scheduler is None:
                env = {
                    **dask.config.get("distributed.nanny.pre-spawn-environ", {}),
                    **{name: str(self.threads) for name in THREAD_ENV},
                    WORKER_IMPORTS: ",".join(sorted(self._preload)),
                }
                # first: the forkserver imports the workers' modules while Dask loads here
                forked = start_forkserver(self.threads, env)
            from dask.utils import parse_timedelta
            from distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ExecutorError(
                f"the Dask executor needs dask[distributed] ({exc}); "
                "pip install 'dask[distributed]'"
            ) from None
        if self.scheduler is not None:
            try:
                self._client = Client(self.scheduler, timeout="30s")
            except (OSError, TimeoutError) as exc:
                raise ExecutorError(
                    f"cannot reach the Dask scheduler at {self.scheduler} ({exc}); is "
                    "`dask scheduler` running there and the port open?"
                ) from None
            return self._client
        # allowed-failures is read by the scheduler when it starts, here in this process
        # a worker a nanny restarts slowly (a loaded machine) is not dropped from the
        # cluster for good after Dask's 15 s (read when a worker leaves: set for good)
        if parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout")) < 600:
            dask.config.set({"distributed.deploy.lost-worker-timeout": "600s"})
        settings = {
            "distributed.scheduler.allowed-failures": self.retries,
            "distributed.nanny.pre-spawn-environ": env,
            # no statistical profiler waking every 10 ms for the GIL in a timed fit
            "distributed.worker.profile.enabled": False,
        }
        if forked:
            settings["distributed.worker.multiprocessing-method"] = "forkserver"
        with dask.config.set(settings):
            try:
                self._cluster = LocalCluster(
                    n_workers=self.workers, threads_per_worker=self.threads, processes=True,
                    resources={CORES: self.threads}, memory_limit=self.memory_limit,
                    dashboard_address=":0", silence_logs=logging.ERROR,
                )  # fmt: skip
                self._client = Client(self._cluster)
            except Exception as exc:  # no port, no memory for a worker, a broken install
                self.close()
                raise ExecutorError(
                    f"could not start a local Dask cluster of {self.workers} worker(s) "
                    f"({type(exc).__name__}: {exc}); no cell was run: run again without "
                    "--workers to compute them in this process"
                ) from None
        return self._client

    def close(self) -> None:
        if self._starter is not None and self._starter is not threading.current_thread():
            self._starter.join()  # a cluster half-started is closed once it is up
            self._starter = None
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        if client is not None and cluster is None and self._warmed:
            # an external cluster outlives us: its future workers need not import
            with contextlib.suppress(Exception):  # a lost scheduler: nothing to remove
                client.unregister_worker_plugin(self._plugin)
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def describe(self) -> str:
        if self.scheduler is not None:
            return f"on the Dask cluster at {self.scheduler}"
        return (
            f"on a local Dask cluster of {self.workers} worker process(es) x "
            f"{self.threads} thread(s)"
        )

    def _slots(self, client) -> tuple[int, dict[str, int] | None]:
        """(cells that can run at once, the resources each cell asks for or None)."""
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
        cores = [(w.get("resources") or {}).get(CORES) for w in workers.values()]
        if workers and all(c is not None for c in cores):
            slots = sum(int(c) // self.threads for c in cores if c is not None)
            return max(1, slots), {CORES: self.threads}
        # no resources declared: one cell per Dask thread; with no worker yet, queue one
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values())), None

    # ---------------------------------------------------------------------------- running

    def warm_up(self, cells: Sequence[Cell]) -> None:
        """Import the unit of work and the modules of ``cells``' rankers on every worker: a
        fresh worker otherwise pays them (~1 s for LightGBM, XGBoost, scikit-learn) in its
        first cell. Done on the workers there now, in parallel, and on each that joins later
        (restarted after a death, added to an external cluster) before it takes a cell: a
        worker plugin (:mod:`~ltr_bench.run.worker_plugin`, removed from an external cluster
        at :meth:`close`). A failed import is left to the cell, which records the error."""
        self._warm(ranker_modules({cell.ranker for cell in cells}))

    def _warm(self, modules: set[str]) -> None:
        if modules <= self._warmed:  # an earlier call, start()
            return
        from ltr_bench.run.worker_plugin import ImportModules

        # every module so far, under the same name: it replaces the previous registration
        self.client().register_plugin(ImportModules(self._warmed | modules), name=self._plugin)
        self._warmed |= modules

    def map_cells(self, cells, *, started=None, fn=None, on_failure=None, progress=None, cost=None):
        from distributed import as_completed

        from ltr_bench.run.cost import longest_first

        check_records = fn is None  # run_cell's results are checked; a caller's fn's are its own
        given, (fn, on_failure) = fn, _defaults(fn, on_failure)
        client = self.client()
        try:  # every worker, now or as it joins (a no-op after warm_up or start)
            self._warm(ranker_modules({cell.ranker for cell in cells}))
        except Exception:  # noqa: BLE001 - an optimisation; the cells report real problems
            pass
        waiting = deque(range(len(cells)))
        running: dict[Any, int] = {}
        done = as_completed()
        counted = -_RECOUNT_SECONDS
        events: queue.Queue = queue.Queue()
        topic = None
        if progress is not None:
            topic = f"ltr-bench-progress-{uuid.uuid4().hex}"
            # runs on the client's event-loop thread: only enqueue (timestamp, payload)
            client.subscribe_topic(topic, events.put)

        def relay() -> None:
            """Hand the queued events of cells still out to ``progress``, here."""
            out = set(running.values())
            while True:
                try:
                    _, event = events.get_nowait()
                except queue.Empty:
                    return
                if event.get("position") in out:  # a cell yielded already: too late
                    progress(event["position"], event["done"], event["total"], event["message"])

        unannounced: list[int] = []  # submitted, started() not yet called

        def fill() -> None:
            """Submit waiting cells to the free slots."""
            while waiting and len(running) < slots:
                if cost is None:
                    i = waiting.popleft()
                else:  # the longest first, so that the last cell does not run alone
                    i = waiting[longest_first([cost(cells[j]) for j in waiting])]
                    waiting.remove(i)
                cell = cells[i]
                # a fresh key per submission: a re-run is not served from Dask's memory
                key = f"ltr-bench-cell-{cell.key[:12]}-{uuid.uuid4().hex[:8]}"
                task = fn if topic is None else _WithProgress(given, topic, i)
                future = client.submit(task, cell, key=key, pure=False, resources=resources)
                running[future] = i
                done.add(future)
                unannounced.append(i)

        def announce() -> None:
            while unannounced:
                i = unannounced.pop(0)
                if started is not None:
                    started(i)

        try:
            while waiting or running:
                announce()  # before any of their progress is relayed
                if topic is not None:
                    relay()
                if time.monotonic() - counted >= _RECOUNT_SECONDS:  # an RPC: not every poll
                    slots, resources = self._slots(client)
                    counted = time.monotonic()
                fill()
                announce()
                if not done.has_ready():
                    time.sleep(_POLL_SECONDS)  # interruptible; recounts slots as workers join
                    continue
                batch = done.next_batch(block=False)
                if topic is not None:
                    relay()  # these cells' events came in ahead of their results
                finished = [(future, running.pop(future)) for future in batch]
                # the freed slots get their next cells now, not after the caller has saved
                # and logged these records (announced after them: never more than slots)
                fill()
                for future, i in finished:
                    result = self._result(future, cells[i], on_failure, check_records)
                    future.release()
                    yield i, result
        finally:
            cancel_and_free(client, list(running), restart=self._cluster is None)
            if topic is not None:
                try:
                    client.unsubscribe_topic(topic)
                except Exception:  # noqa: BLE001 - a closed client: nothing will arrive
                    pass

    def _result(self, future, cell: Cell, on_failure, check_record: bool):
        from distributed import KilledWorker

        if future.status not in ("finished", "cancelled", "error"):
            # done when yielded, then its result was lost with its worker (a nanny closed):
            # Dask computes it again, which this waits for
            with contextlib.suppress(Exception):
                future.exception()
        if future.status == "finished":
            result = future.result()
            if check_record and not isinstance(result, ResultRecord):
                return on_failure(
                    cell,
                    TypeError(f"the worker returned {type(result).__name__}, not a ResultRecord"),
                    "executor",
                )
            return result
        if future.status == "cancelled":
            return on_failure(
                cell,
                WorkerDied("the cell was cancelled on the cluster (scheduler restarted or lost?)"),
                "worker",
            )
        exc = future.exception()
        if isinstance(exc, KilledWorker):
            reason = WorkerDied(
                f"the worker running this cell died every time it was tried ({exc}); the "
                "scheduler gave up after distributed.scheduler.allowed-failures reruns. "
                "Usual causes: out of memory (the nanny restarts a worker at 95 % of its "
                "memory limit), a crash in native code, or the process was killed"
            )
            return on_failure(cell, reason, "worker")
        if exc is None:  # (not expected: a status Dask did not have before)
            exc = WorkerDied(f"the cell ended on the cluster as {future.status!r}, no result")
        return on_failure(cell, exc, "executor")


class _WithProgress:
    """What :meth:`DaskExecutor.map_cells` submits when progress is wanted: ``fn(cell)``
    (``fn`` None: ``run_cell``) with its progress reports published as events under
    ``topic``, tagged with the cell's ``position`` (picklable: it travels to the worker)."""

    def __init__(self, fn, topic: str, position: int):
        self.fn, self.topic, self.position = fn, topic, int(position)

    def __call__(self, cell: Cell) -> Any:
        publisher = _Publisher(self.topic, self.position)
        try:
            return said_where(_call_reporting(self.fn, cell, publisher))
        finally:
            publisher.flush()  # the last report held back by the throttle


class _Publisher:
    """A progress handler on a worker: ``log_event(topic, {"position", "done", "total",
    "message"})``, at most once per ``interval`` seconds (``done >= total`` always goes out);
    a report held back is kept and sent by the next one to go out or by :meth:`flush`.
    Off a worker (no ``get_worker()``) it publishes nothing."""

    def __init__(self, topic: str, position: int, interval: float = PROGRESS_INTERVAL):
        self.topic, self.position, self.interval = topic, position, interval
        self._held: dict | None = None
        self._sent_at = -float("inf")
        self._lock = threading.Lock()  # a ranker may report from its own threads

    def __call__(self, done: int, total: int, message: str) -> None:
        event = {
            "position": self.position,
            "done": int(done),
            "total": int(total),
            "message": str(message),
        }
        with self._lock:
            now = time.monotonic()
            if now - self._sent_at >= self.interval or (total > 0 and done >= total):
                self._send(event, now)
            else:
                self._held = event

    def flush(self) -> None:
        with self._lock:
            if self._held is not None:
                self._send(self._held, time.monotonic())

    def _send(self, event: dict, now: float) -> None:
        self._held, self._sent_at = None, now
        try:
            from distributed import get_worker

            worker = get_worker()
        except (ImportError, ValueError):  # ValueError: not running on a worker
            return
        # from a task thread this only schedules the send on the worker's event loop, in
        # order with the task's own result message
        worker.log_event(self.topic, event)
