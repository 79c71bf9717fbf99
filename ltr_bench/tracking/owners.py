"""Who owns a RUNNING parent run, and ending the parents whose owner is gone.

A parent run is RUNNING while an invocation works on its group. If that process dies
(``kill -9``, a power cut) or the MLflow store stops answering before the end, nobody ends
it. So every parent records its owner when an invocation takes it: the tags
``ltr_bench_owner_pid``, ``ltr_bench_owner_host`` and ``ltr_bench_owner_started`` (the
process's start time, so a reused pid is not taken for the owner). An invocation that opens
the store (:meth:`~ltr_bench.tracking.writer.Tracker.check`) ends every RUNNING parent whose
owner is provably gone as ``KILLED``, with the tag ``ltr_bench_end_reason`` saying why; one
that takes the same parent again resumes it (:meth:`Tracker.parent_run`).

Provably gone means: the owner ran on this host and no process with its pid and start time
is alive (a zombie counts as gone). A parent owned by a live process, by another host, or
written by an older version without owner tags is left as it is.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Set

from ltr_bench.environment import process_alive

__all__ = [
    "TAG_END_REASON",
    "TAG_OWNER_HOST",
    "TAG_OWNER_PID",
    "TAG_OWNER_STARTED",
    "TAG_RESUMED",
    "end_orphaned_parents",
    "owner_gone",
    "owner_tags",
]

TAG_OWNER_PID = "ltr_bench_owner_pid"
TAG_OWNER_HOST = "ltr_bench_owner_host"
TAG_OWNER_STARTED = "ltr_bench_owner_started"
#: why a parent run was ended by someone else than its owner (or with a failure)
TAG_END_REASON = "ltr_bench_end_reason"
#: set on a parent taken over from a gone owner: who it was and what happened
TAG_RESUMED = "ltr_bench_resumed"


def _started(pid: int) -> float | None:
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:  # noqa: BLE001 - unknown start time: the pid alone decides
        return None


def owner_tags(pid: int | None = None) -> dict[str, str]:
    """The owner tags of a parent run taken by process ``pid`` (default: this process; a
    logging process working for another passes that one's pid)."""
    pid = os.getpid() if pid is None else pid
    started = _started(pid)
    return {
        TAG_OWNER_PID: str(pid),
        TAG_OWNER_HOST: socket.gethostname(),
        TAG_OWNER_STARTED: "" if started is None else f"{started:.3f}",
    }


def _alive(pid: int, started: float | None) -> bool:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return process_alive(pid)
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False  # dead, only not yet reaped by its parent
        if started is not None and abs(proc.create_time() - started) > 1.0:
            return False  # the pid was reused by a later process
        return True
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # e.g. AccessDenied: a process is there
        return True


def owner_gone(tags: dict[str, str]) -> str | None:
    """Why the owner of a parent run with ``tags`` is provably gone, or None (alive, on
    another host, or unknown)."""
    pid, host = tags.get(TAG_OWNER_PID), tags.get(TAG_OWNER_HOST)
    if not pid or not pid.isdigit() or host != socket.gethostname():
        return None
    try:
        started = float(tags.get(TAG_OWNER_STARTED) or "nan")
    except ValueError:
        started = float("nan")
    if _alive(int(pid), None if started != started else started):
        return None
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    return (
        f"its process (pid {pid} on {host}) ended without ending it (killed, or the MLflow "
        f"store stopped answering); found by pid {os.getpid()} at {when}"
    )


def _end_folds(client, run) -> int | None:
    """End a gone owner's half-logged fold runs of the parent ``run`` (FAILED: a re-run
    replaces them) and return the end time of its last finished fold (so the parent's
    Duration stays the work done)."""
    folds = client.search_runs(
        [run.info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{run.info.run_id}'",
        max_results=1000,
    )
    for fold in folds:
        if fold.info.status == "RUNNING":
            client.set_terminated(fold.info.run_id, "FAILED")
    ends = [f.info.end_time for f in folds if f.info.end_time and f.info.status == "FINISHED"]
    return max(ends) if ends else None


def end_orphaned_parents(client, *, skip: Set[str] = frozenset()) -> list[str]:
    """End as KILLED every RUNNING parent run of the store's ltr-bench experiments whose
    owner is provably gone (:func:`owner_gone`), except the runs in ``skip``; the tag
    ``ltr_bench_end_reason`` says why. Returns one note per run ended."""
    from ltr_bench.tracking.layout import TAG_ROLE
    from ltr_bench.tracking.store import EXPERIMENT_PREFIX

    exps = [
        e.experiment_id
        for e in client.search_experiments(max_results=1000)
        if e.name.startswith(EXPERIMENT_PREFIX)
    ]
    if not exps:
        return []
    running = client.search_runs(
        exps,
        filter_string=f"tags.{TAG_ROLE} = 'parent' and attributes.status = 'RUNNING'",
        max_results=1000,
    )
    notes = []
    for run in running:
        if run.info.run_id in skip or owner_gone(run.data.tags) is None:
            continue
        fresh = client.get_run(run.info.run_id)  # taken over meanwhile?
        why = owner_gone(fresh.data.tags) if fresh.info.status == "RUNNING" else None
        if why is None:
            continue
        client.set_tag(run.info.run_id, TAG_END_REASON, why)
        client.set_terminated(run.info.run_id, "KILLED", end_time=_end_folds(client, run))
        notes.append(
            f"MLflow parent run {run.info.run_id} ({run.info.run_name}) was left RUNNING: "
            f"{why.split(';')[0]}; ended as KILLED (re-run its command to complete it)"
        )
    return notes
