"""Reading an SQLite file without changing it: :func:`read_sqlite` (the store checks of
``ltr_bench.tracking.store`` use it before MLflow opens a file)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["READONLY_ROLLBACK", "Unreadable", "read_sqlite"]

#: SQLite's extended code for a read-only connection that meets a hot journal
READONLY_ROLLBACK = getattr(sqlite3, "SQLITE_READONLY_ROLLBACK", 776)


class Unreadable(Exception):
    """An SQLite file could not be read (locked, damaged); ``str`` is the reason."""


def read_sqlite(db: Path, query: str, *, recovered: bool = False):
    """Rows of ``query`` on ``db`` opened read-only (raises :class:`Unreadable`: a file that
    cannot be read is never taken for an empty one).

    A hot journal (a writer killed mid-transaction, e.g. a SIGKILLed MLflow logging process)
    cannot be rolled back by a read-only connection (SQLITE_READONLY_ROLLBACK, "attempt to
    write a readonly database"): one read-write connection lets SQLite do its own recovery,
    undoing only what was never committed, and the read is tried again."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(query).fetchall()
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
            return read_sqlite(db, query, recovered=True)
        reason = str(exc)
        if "locked" in reason or "busy" in reason:
            reason = "it is locked by another process"
        raise Unreadable(reason) from None
