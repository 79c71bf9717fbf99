"""Where the Optuna studies of ``ltr-bench tune`` live, checked before any data loads.

* :func:`resolve_storage`: the ``--optuna-storage`` value made absolute and checked (a journal
  file whose folder takes files, or a database URL SQLAlchemy can open; an SQLite file must
  be empty or Optuna's); exit 2 naming the option otherwise.
* :func:`check_journal`: every line of a journal file parses; a torn last line (a power cut
  or a full disk in the middle of an append: no final newline) is cut off under Optuna's own
  journal lock and kept in ``<journal>.torn``; any other damage is named by file and line.
* :func:`study_lock`: one process per study. A second ``tune`` of the same study says which
  process holds it (its pid) and waits for it, up to a bound, instead of marking the other
  process's live trial stale (Optuna's ``UpdateFinishedTrialError`` in the other process).
  Lock files live in ``<storage>.locks/`` beside a journal or SQLite file; a remote database
  URL has no local place for them (one ``tune`` per study is then the user's to ensure).
* :func:`open_storage`: the Optuna storage object.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ltr_bench.errors import LtrBenchError, UsageError

__all__ = [
    "JournalDamagedError",
    "StorageError",
    "StudyBusyError",
    "check_journal",
    "counted_trials",
    "open_storage",
    "resolve_storage",
    "study_lock",
    "study_trials",
]

#: seconds a ``tune`` waits for another process tuning the same study before skipping it
#: (``$LTR_BENCH_STUDY_WAIT`` overrides)
STUDY_WAIT_SECONDS = 600.0
#: tables every Optuna RDB storage has
OPTUNA_TABLES = frozenset({"studies", "trials", "version_info"})


class StorageError(UsageError):
    """``--optuna-storage`` cannot name a usable Optuna storage (exit code 2)."""


class JournalDamagedError(LtrBenchError):
    """A journal file has a damaged line other than a torn last one (exit code 1)."""


class StudyBusyError(LtrBenchError):
    """Another process kept tuning the same study for longer than the wait."""


def _journal_path(spec: str) -> str | None:
    if spec.endswith(".journal"):
        return spec.removeprefix("journal:")
    return None


def resolve_storage(spec: str | None, default_folder: Path) -> str:
    """The storage ``ltr-bench tune`` uses: ``spec`` (``--optuna-storage``) or
    ``<default_folder>/optuna.journal``; a journal file as an absolute path (every worker
    opens the same file whatever its working directory). Checked before any data loads:
    raises :class:`StorageError` (exit 2) or :class:`JournalDamagedError` (exit 1)."""
    from ltr_bench.results import check_writable_dir

    what = "--optuna-storage" + (f" {spec}" if spec else "")
    if spec is None:
        path = (Path(default_folder) / "optuna.journal").resolve()
    elif (journal := _journal_path(spec)) is not None:
        path = Path(journal).expanduser().resolve()
    else:
        _check_url(spec, what)
        return spec
    if path.exists() and not path.is_file():
        raise StorageError(f"{what}: {path} is not a file")
    try:
        check_writable_dir(path.parent, f"{what}: its folder")
    except UsageError as exc:
        raise StorageError(str(exc)) from None
    if path.exists():
        check_journal(path)
    return str(path)


def _check_url(spec: str, what: str) -> None:
    if "://" not in spec:
        raise StorageError(
            f"{what}: not a storage; give a file ending in .journal (Optuna's journal file, "
            "e.g. mlflow_runs/optuna.journal) or a database URL such as sqlite:///PATH/optuna.db"
            " or postgresql://USER@HOST/DB"
        )
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        url = make_url(spec)
        dialect = url.get_dialect()
        # the dialect is part of SQLAlchemy; its driver (psycopg2, MySQLdb, ...) may be missing
        load_driver: Any = getattr(dialect, "import_dbapi", None) or dialect.dbapi
        load_driver()
    except (NoSuchModuleError, ImportError):  # before ArgumentError: it is one
        raise StorageError(
            f"{what}: no database driver for {spec.split('://', 1)[0]!r} is installed "
            "(e.g. sqlite:///PATH/optuna.db, or postgresql://... with its Python driver)"
        ) from None
    except (ArgumentError, ValueError) as exc:
        raise StorageError(f"{what}: not a database URL ({exc})") from None
    if url.get_backend_name() != "sqlite":
        return
    if not url.database or url.database == ":memory:":
        raise StorageError(
            f"{what}: an in-memory database loses the studies on exit; give a file: "
            "sqlite:///PATH/optuna.db"
        )
    db = Path(url.database)
    if db.exists() and db.is_file() and db.stat().st_size > 0:
        # read-only, and after SQLite's own recovery of a hot journal (an Optuna process
        # SIGKILLed mid-transaction leaves one): the reader the MLflow store check uses
        from ltr_bench.tracking.sqlite_read import Unreadable, read_sqlite

        try:
            rows = read_sqlite(db, "select name from sqlite_master where type='table'")
        except Unreadable as exc:
            raise StorageError(f"{what}: cannot read {db}: {exc}") from None
        tables = {r[0] for r in rows}
        if tables and not OPTUNA_TABLES <= tables:
            raise StorageError(
                f"{what}: {db} is an SQLite database but not an Optuna storage (its tables: "
                f"{', '.join(sorted(tables)[:8])}); ltr-bench writes nothing into it"
            )


def check_journal(path: Path) -> None:
    """Every line of the journal ``path`` is a JSON object. A torn last line (no final
    newline: an append cut short) is moved to ``<path>.torn`` and cut off, under the lock
    Optuna takes for appends, so the next append starts on a line of its own. Any other bad
    line raises :class:`JournalDamagedError` with the file and the line number."""
    path = Path(path)
    data = path.read_bytes()
    if not data:
        return
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    for number, line in enumerate(lines, start=1):
        try:
            ok = isinstance(json.loads(line), dict)
            reason = "not a JSON object"
        except ValueError as exc:
            ok, reason = False, f"not JSON: {exc}"
        if not ok:
            raise JournalDamagedError(
                f"{path}:{number}: damaged Optuna journal line ({reason}). Its studies cannot "
                f"be resumed; move it aside to tune again: mv {path} {path}.broken (finished "
                "tuned cells are kept in the results folder)."
            )
    if tail:
        _cut_torn_tail(path, len(data) - len(tail))


def _cut_torn_tail(path: Path, keep: int) -> None:
    from optuna.storages.journal import JournalFileSymlinkLock

    lock = JournalFileSymlinkLock(str(path))  # the lock JournalFileBackend takes by default
    lock.acquire()
    try:
        with open(path, "r+b") as fh:
            fh.seek(keep)
            tail = fh.read()
            if not tail or b"\n" in tail:  # completed meanwhile by its writer: leave it
                return
            with open(str(path) + ".torn", "ab") as out:
                out.write(tail + b"\n")
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        lock.release()
    import logging

    logging.getLogger("ltr_bench").warning(
        "%s: its last line was cut off (an interrupted write); removed, kept in %s.torn",
        path,
        path,
    )


def _lock_folder(storage: str) -> Path | None:
    journal = _journal_path(storage)
    if journal is not None:
        return Path(journal + ".locks")
    if storage.startswith("sqlite:///") and storage != "sqlite:///:memory:":
        return Path(storage[len("sqlite:///") :] + ".locks")
    return None


@contextlib.contextmanager
def study_lock(
    storage, study_name: str, *, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the study ``study_name`` of ``storage`` for this process (an ``flock`` on
    ``<storage>.locks/<hash>.lock`` holding the owner's pid). When another process holds it,
    ``on_wait(message)`` hears which (its pid) and the lock is awaited for at most
    :data:`STUDY_WAIT_SECONDS`; then :class:`StudyBusyError`. Storages without a local file
    (a storage object, a server URL): no lock."""
    folder = _lock_folder(storage) if isinstance(storage, str) else None
    if folder is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(study_name.encode("utf-8")).hexdigest()[:32]
    fd = os.open(folder / f"{digest}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if not _try_lock(fd):
            holder = _holder(fd)
            wait = float(os.environ.get("LTR_BENCH_STUDY_WAIT", STUDY_WAIT_SECONDS))
            text = (
                f"another process (pid {holder}) is tuning {study_name}; waiting up to "
                f"{wait:g} s for it to finish"
            )
            if on_wait is not None:
                on_wait(text)
            deadline = time.monotonic() + wait
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    raise StudyBusyError(
                        f"another process (pid {_holder(fd)}) is still tuning {study_name} "
                        f"after {wait:g} s; skipped. Re-run when it has finished: its result "
                        "is then reused"
                    )
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the flock


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _holder(fd: int) -> str:
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text or "unknown"


def open_storage(spec: str):
    """An Optuna storage from a URL or file name. A path ending in ``.journal`` (the default
    of ``ltr-bench tune``) is Optuna's append-only journal file: each write is one appended
    line under a file lock, cheap enough that reporting a GBDT's validation curve for
    pruning costs next to nothing (an SQLite store commits a transaction per write, about
    tens of milliseconds each). Any other text is passed to Optuna as a storage URL
    (``sqlite:///...``, ``postgresql://...``)."""
    if spec.endswith(".journal"):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        path = spec[len("journal:") :] if spec.startswith("journal:") else spec
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    return spec


def counted_trials(study) -> list:
    """The trials that used budget: finished (COMPLETE, PRUNED, FAIL), and not ones an
    interruption cut short (user attribute ``interrupted``)."""
    from optuna.trial import TrialState

    finished = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    return [
        t
        for t in study.get_trials(deepcopy=False, states=finished)
        if not t.user_attrs.get("interrupted")
    ]


def study_trials(storage: str, study_name: str) -> list | None:
    """The finished trials of a study that used budget (as :func:`ltr_bench.tune.study.tune`
    counts them), read back from ``storage``; None when the storage has no such study. What
    a re-run logs to MLflow when an earlier one could not."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=study_name, storage=open_storage(storage))
    except KeyError:
        return None
    return counted_trials(study)
