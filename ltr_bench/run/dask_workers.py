"""How the workers of :class:`~ltr_bench.run.dask_executor.DaskExecutor` start and what they
import before the first cell.

A local cluster's workers are forked from one ``multiprocessing`` forkserver (when this
platform has one, see :func:`start_forkserver`) that imports Dask and the modules the cells
need once, through :mod:`ltr_bench.run.worker_preload`; each forked worker starts with them
imported. Spawned workers (Dask's default, used otherwise and for a worker restarted after a
death) each import scikit-learn, LightGBM and XGBoost themselves: about 1.5 s of CPU per
worker. Any worker is also sent :func:`import_modules` by the executor's warm-up, which
imports what it still lacks (a no-op on a forked worker).

The thread-pool sizes (:data:`THREAD_ENV`) go into the client's own environment when the
forkserver starts (a nanny does the same before it spawns a worker): the client computes no
cell, so its own pools are then that size too.

Also what a worker adds to a record of a cell that could not load its data there
(:func:`said_where`). Light on purpose: the client imports it before anything heavy.
"""

from __future__ import annotations

import socket
from typing import Any

#: environment variables that size the BLAS/OpenMP thread pools of a local worker
THREAD_ENV = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

#: the environment variable naming (comma-separated) the modules the forkserver imports;
#: read by :mod:`ltr_bench.run.worker_preload`
WORKER_IMPORTS = "LTR_BENCH_WORKER_IMPORTS"

#: the thread count the forkserver serves (empty: not set up by this process)
_forkserver_threads: list[int] = []


def ranker_modules(names) -> set[str]:
    """The unit of work's module and the modules the registered rankers ``names`` live in."""
    from ltr_bench.registry import get_entry

    modules = {"ltr_bench.run.unit"}
    for name in set(names):
        try:
            modules.add(get_entry(name).target.partition(":")[0])
        except Exception:  # noqa: BLE001 - the cell reports an unknown ranker itself
            continue
    return modules


def start_forkserver(threads: int, env: dict[str, str]) -> bool:
    """Start the forkserver that local workers of ``threads`` threads are forked from, now
    (the first time: it imports while the client goes on), with ``env`` (the thread-pool
    sizes and :data:`WORKER_IMPORTS`) added to this process's environment first, as a
    nanny adds ``distributed.nanny.pre-spawn-environ`` before it starts a worker. False when
    workers of ``threads`` threads cannot be forked from it: no forkserver on this
    platform, or it already serves another thread count (BLAS/OpenMP pools are sized when
    those libraries load, in the forkserver); such workers are spawned."""
    import multiprocessing
    import os

    if _forkserver_threads:
        return _forkserver_threads[0] == threads
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    from multiprocessing import forkserver

    os.environ.update({name: str(value) for name, value in env.items()})
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["distributed", "ltr_bench.run.worker_preload"])
    forkserver.ensure_running()
    _forkserver_threads.append(threads)
    return True


def import_modules(modules: list[str]) -> None:
    """Run on a worker by the executor's warm-up: import ``modules`` (those that fail are
    left to the cell that needs them, which records the error)."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the cell that needs it records the error
            pass


def cancel_and_free(client, futures, *, restart: bool) -> None:
    """Cancel ``futures`` (cells still out when ``map_cells`` stops: Ctrl-C, a full disk)
    and, with ``restart`` (a long-lived cluster this run does not own), restart through its
    nanny every worker that was running only those cells.

    Why: Dask cannot stop a task inside a worker's thread. A cancelled fit runs on to its
    end, holding its worker's thread and ``cores``, so the next run on that cluster would
    wait for fits nobody wants any more (an hour for a long one). A restarted worker is a
    new process, free at once (its nanny starts it again; the scheduler sees it rejoin). A
    worker running anything else too (another client's task) is left alone, as is one
    without a nanny (``dask worker --no-nanny``: it could not come back); a warning names
    it. A local cluster is closed by its owner right after, which ends its workers anyway."""
    import logging

    if not futures:
        return
    keys = {f.key for f in futures}
    busy: dict = {}
    if restart:
        try:  # where each cell runs, asked before the cancel makes the scheduler forget it
            busy = client.processing()
        except Exception:  # noqa: BLE001 - a lost scheduler: nothing left to free
            busy = {}
    client.cancel(list(futures), force=True)
    running = {w: set(ks) & keys for w, ks in busy.items() if set(ks) & keys}
    if not running:
        return
    log = logging.getLogger("ltr_bench")
    try:
        info = client.scheduler_info(n_workers=-1).get("workers", {})
    except Exception:  # noqa: BLE001
        info = {}
    alone = [w for w in running if set(busy[w]) <= keys and (info.get(w) or {}).get("nanny")]
    for w in sorted(set(running) - set(alone)):
        log.warning(
            "the Dask worker %s keeps running %d cancelled cell(s) until their fits end "
            "(%s); the next run there may wait for them",
            w,
            len(running[w]),
            "it has no nanny to restart it"
            if not (info.get(w) or {}).get("nanny")
            else "it runs other tasks too",
        )
    if alone:
        log.warning(
            "restarting %d Dask worker(s) to stop the cancelled cell(s) they were fitting: %s",
            len(alone),
            ", ".join(sorted(alone)),
        )
        try:
            client.restart_workers(alone, timeout=120, raise_for_error=False)
        except Exception as exc:  # noqa: BLE001 - the run is over; say what was left
            log.warning("could not restart them (%s: %s)", type(exc).__name__, exc)


def said_where(record: Any) -> Any:
    """A cell that failed to load its data on a worker says so: the worker saw the data
    home, ``--dataset PATH`` and the cache as that worker sees them, not as the client
    does (``docs/dask.md``, "What must be where")."""
    if getattr(record, "status", None) != "failed" or record.error_stage != "load":
        return record
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not on a worker
        return record
    record.error = (
        f"on the Dask worker {worker.address} (host {socket.gethostname()}), which loads "
        f"the data itself: {record.error} (the data home, --dataset PATH and the parsed-data "
        "cache are the worker's: give every worker the same data at the same path, or set "
        "LTR_BENCH_DATA in the workers' environment; see docs/dask.md)"
    )
    return record
