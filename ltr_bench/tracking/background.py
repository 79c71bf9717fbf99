"""MLflow logging that outlives its run: when ``ltr-bench run`` waits for it, the lock a
background logger holds, and the wait of the readers.

By default ``ltr-bench run`` ends when MLflow has every run: a script, a CI job or a container
that reads MLflow right after the command (its client, the UI, a shared server) finds every
fold run and parent FINISHED. The logging still overlaps the fits while they run
(:mod:`ltr_bench.cli.mlflow_process`); only what is left after the last cell is waited for.
``LTR_BENCH_MLFLOW_WAIT=SECONDS`` (:func:`wait_seconds`) caps that wait: past it (``0``: at
once) the run exits and its logging process finishes the last fold runs and the parent runs
in the background (the local results are already saved). From the run's end to its own, it
holds an exclusive ``flock`` on ``<lock dir>/<pid>.lock``
(:func:`take_lock`: the run takes it when it is done and hands it to the logging process, so
a run still computing is never waited for); a
reader of the same store (``ltr-bench report``, :func:`~ltr_bench.tracking.fetch_fold_results`)
first waits for every such lock (:func:`wait_for_background_logging`), so what it reads is
complete. A lock whose process died is free (the kernel drops a dead process's ``flock``),
so a killed logger is never waited for; what it had not logged, the next ``run`` of the same
command logs from the local results.

Lock dir: ``<folder of the SQLite file>/.ltr-bench-logging/`` for an ``sqlite:///`` store,
else ``<temp dir>/ltr-bench-logging-<uid>/<hash of the URI>/`` (a server's store).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ltr_bench.environment import process_alive
from ltr_bench.tracking.store import sqlite_path

__all__ = [
    "adopt_parents",
    "hold_lock",
    "lock_dir",
    "release_lock",
    "take_lock",
    "wait_for_background_logging",
    "wait_seconds",
]

#: seconds ``ltr-bench run`` waits at its end for the logging to end (else it finishes in
#: the background): None, until MLflow has every run, unless ``LTR_BENCH_MLFLOW_WAIT`` says
#: otherwise
RUN_WAIT_SECONDS: float | None = None


def wait_seconds() -> float | None:
    """``LTR_BENCH_MLFLOW_WAIT`` (seconds; ``0`` exits at once and logs the rest in the
    background; ``inf`` waits for the end), else :data:`RUN_WAIT_SECONDS`; None: wait for
    the end. A value that is not a number is the default."""
    text = os.environ.get("LTR_BENCH_MLFLOW_WAIT", "").strip()
    try:
        value = float(text)
    except ValueError:
        return RUN_WAIT_SECONDS
    return max(0.0, value) if value < 1e9 else None  # None: Event.wait without a timeout


#: how long a reader waits for a background logger before reading all the same (seconds)
WAIT_SECONDS = 120.0


def lock_dir(uri: str) -> Path:
    """Where the loggers of store ``uri`` keep their locks (see the module)."""
    db = sqlite_path(uri)
    if db is not None:
        return db.parent / ".ltr-bench-logging"
    import tempfile

    digest = hashlib.sha1(uri.encode("utf-8")).hexdigest()[:16]  # noqa: S324 - a name only
    return Path(tempfile.gettempdir()) / f"ltr-bench-logging-{os.getuid()}" / digest


def take_lock(uri: str, pid: int | None = None) -> tuple[int, Path] | None:
    """Create and lock (``flock``, exclusive) ``<lock dir>/<pid>.lock`` for store ``uri``
    (``pid``: the logging process's, default this one's); returns the open descriptor and
    the path, or None where no lock can be made (the readers then do not wait: the logging
    still completes, only a report read meanwhile may miss its end). The lock lasts while
    any process holds a descriptor of it: ``ltr-bench run`` takes it and hands it to its
    logging process over their pipe, so it holds from the run's end to the logging's."""
    import fcntl

    try:
        folder = lock_dir(uri)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{os.getpid() if pid is None else pid}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        return None
    return fd, path


def release_lock(fd: int, path: Path) -> None:
    """Remove and unlock a lock of :func:`take_lock`."""
    try:
        path.unlink()
    except OSError:
        pass
    os.close(fd)


def hold_lock(uri: str) -> Callable[[], None] | None:
    """:func:`take_lock` for this process; returns its release (or None)."""
    taken = take_lock(uri)
    return None if taken is None else (lambda: release_lock(*taken))


def wait_for_background_logging(
    uri: str, *, timeout: float = WAIT_SECONDS, say: Callable[[str], None] | None = None
) -> bool:
    """Wait until no background logger holds a lock on store ``uri`` (at most ``timeout``
    seconds); ``say`` (default: stderr) hears once that it waits and for which process.
    Returns False when it gave up waiting."""
    import fcntl

    try:
        locks = sorted(lock_dir(uri).glob("*.lock"))
    except OSError:
        return True
    end = time.monotonic() + timeout
    said = False
    for path in locks:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:  # released meanwhile
            continue
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > end:
                        return False
                    if not said:
                        said = True
                        text = (
                            f"waiting for the MLflow logging of an earlier run (pid "
                            f"{path.stem}) to finish ..."
                        )
                        (say or (lambda t: print(t, file=sys.stderr, flush=True)))(text)
                    time.sleep(0.05)
            if not _alive(path.stem):
                path.unlink(missing_ok=True)  # left by a logger that died
        except OSError:
            continue
        finally:
            os.close(fd)
    return True


def _alive(pid: str) -> bool:
    """A lock file named by a pid: its process still runs (a name that is no pid: no)."""
    return pid.isdigit() and process_alive(int(pid))


def adopt_parents(tracker) -> None:
    """Make this process the owner of ``tracker``'s parent runs and of those it takes later
    (:mod:`ltr_bench.tracking.owners`), after the run it logged for exited: nobody ends them
    as orphaned while it logs. The claims of the cells left to log were released with the
    run; :class:`~ltr_bench.tracking.MlflowListener` (``claim_found``) takes each again
    before logging it. Best effort: an orphan is ended by the next command."""
    from mlflow.entities import RunTag

    from ltr_bench.tracking.owners import owner_tags

    tracker.owner_pid = os.getpid()
    tags = [RunTag(k, v) for k, v in owner_tags().items()]
    for run_id in list(tracker._parents.values()):
        try:
            tracker.client.log_batch(run_id, tags=tags)
        except Exception:  # noqa: BLE001, S112 - see the docstring
            continue
