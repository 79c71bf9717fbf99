"""Reading an SQLite file without changing it: :func:`read_sqlite` (the store checks of
``ltr_bench.tracking.store`` use it before MLflow opens a file) and
:func:`mlflow_store_kind` (is a file an MLflow store: the output rule refuses to replace one)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

__all__ = ["READONLY_ROLLBACK", "Unreadable", "mlflow_store_kind", "read_sqlite"]

#: SQLite's extended code for a read-only connection that meets a hot journal
READONLY_ROLLBACK = getattr(sqlite3, "SQLITE_READONLY_ROLLBACK", 776)


class Unreadable(Exception):
    """An SQLite file could not be read (locked, damaged); ``str`` is the reason."""


def read_sqlite(db: Path, query: str, *, params: tuple = (), recovered: bool = False):
    """Rows of ``query`` (its ``?`` bound to ``params``) on ``db`` opened read-only (raises
    :class:`Unreadable`: a file that cannot be read is never taken for an empty one).

    A hot journal (a writer killed mid-transaction, e.g. a SIGKILLed MLflow logging process)
    cannot be rolled back by a read-only connection (SQLITE_READONLY_ROLLBACK, "attempt to
    write a readonly database"): one read-write connection lets SQLite do its own recovery,
    undoing only what was never committed, and the read is tried again."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(query, params).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorcode", None) == READONLY_ROLLBACK and not recovered:
            try:
                rw = sqlite3.connect(db, timeout=5)
                try:
                    rw.execute("select count(*) from sqlite_master").fetchall()
                finally:
                    rw.close()
            except sqlite3.Error:
                pass  # the read below says what is wrong
            return read_sqlite(db, query, params=params, recovered=True)
        reason = str(exc)
        if "locked" in reason or "busy" in reason:
            reason = "it is locked by another process"
        raise Unreadable(reason) from None


#: the first 16 bytes of every SQLite database file
SQLITE_HEADER = b"SQLite format 3\x00"
#: tables every MLflow tracking schema has (alembic_version: MLflow's migrations ran)
MLFLOW_TABLES = frozenset({"alembic_version", "experiments", "runs"})
#: files SQLite keeps beside a database while it is written
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")


def mlflow_store_kind(path: Path) -> str | None:
    """What ``path`` is, when it is an SQLite database that may hold MLflow runs:
    ``"mlflow"`` (its tables include :data:`MLFLOW_TABLES`), ``"unreadable"`` (the SQLite
    header, but its tables could not be read: locked, damaged, a hot journal), else None
    (not a regular file, not SQLite, or an SQLite file without MLflow's tables). A store
    being created (ltr-bench's ``<db>.creating`` marker beside it) is ``"mlflow"`` too.

    Read-only and without side effects: the 16-byte header first, then ``sqlite_master``
    through a ``mode=ro`` connection (no journal recovery, unlike :func:`read_sqlite`), so
    the file is never changed."""
    try:  # never blocks: a named pipe is opened non-blocking and is not a regular file
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.read(fd, 16) != SQLITE_HEADER:
            return None
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=1)
        try:
            names = {row[0] for row in con.execute("select name from sqlite_master")}
        finally:
            con.close()
    except sqlite3.Error:
        return "unreadable"
    creating = Path(path).with_name(Path(path).name + ".creating").exists()
    return "mlflow" if MLFLOW_TABLES <= names or creating else None
