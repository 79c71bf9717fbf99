"""Where the MLflow store is and how to open it; the error MLflow failures become.

Default tracking URI ``sqlite:///<cwd>/mlflow_runs/mlflow.db``; ``--tracking-uri`` or
``MLFLOW_TRACKING_URI`` point elsewhere (another SQLite file, a shared ``mlflow server``).
For an SQLite store, artifacts go to ``artifacts/`` beside the database file (so the default
is ``<cwd>/mlflow_runs/artifacts``); a server decides for itself.

Reliability of an SQLite store (:func:`prepare_sqlite_store`): its folder is probed for
writing first (an uncreatable or read-only location fails in milliseconds instead of after
MLflow's retries); creating the schema is serialized by an exclusive ``flock`` on
``<db>.lock`` beside the file (two runs starting together on a new store would otherwise
both run MLflow's migrations and one would fail); a store whose creation was interrupted
(kill, full disk) is detected when MLflow cannot open it: if ltr-bench was creating it (a
``<db>.creating`` marker) and it provably holds no runs it is rebuilt, otherwise the error
says exactly how to move it aside. Nothing else is ever deleted: a file with tables but no
MLflow schema is refused by name with its tables, and a store that is locked or cannot be
counted is not taken for an empty one. A new store starts as a copy of MLflow's empty schema,
built once per MLflow version (:mod:`ltr_bench.tracking.store_template`). MLflow's,
Alembic's and SQLAlchemy's log records never carry tracebacks to the terminal
(:func:`quiet_library_logging`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import tempfile
from pathlib import Path

from ltr_bench.errors import LtrBenchError, UsageError
from ltr_bench.tracking.sqlite_read import MLFLOW_TABLES  # tables every MLflow schema has
from ltr_bench.tracking.sqlite_read import Unreadable as _Unreadable
from ltr_bench.tracking.sqlite_read import read_sqlite as _read_sqlite
from ltr_bench.tracking.store_template import discard_template, seed_new_store

__all__ = [
    "EXPERIMENT_PREFIX",
    "ForeignStoreError",
    "NoResultsError",
    "TrackingError",
    "TrackingUriError",
    "prepare_sqlite_store",
    "quiet_library_logging",
    "artifact_root_for",
    "default_tracking_uri",
    "experiment_name",
    "mlflow_metric_key",
    "open_client",
    "resolve_tracking_uri",
    "sqlite_path",
]

EXPERIMENT_PREFIX = "ltr-bench/"


class TrackingError(LtrBenchError):
    """MLflow could not be reached or refused a write; ``str(err)`` is user-facing."""


class TrackingUriError(TrackingError, UsageError):
    """The tracking URI cannot name an MLflow store (exit code 2)."""


#: URI schemes MLflow's tracking stores understand (the rest are typos).
KNOWN_SCHEMES = (
    "sqlite",
    "postgresql",
    "mysql",
    "mssql",
    "http",
    "https",
    "file",
    "databricks",
    "databricks-uc",
    "uc",
)


class ForeignStoreError(TrackingError, UsageError):
    """The tracking URI names an SQLite file that is not an MLflow store (a user's own
    database): refused before any work, exit code 2; nothing is written into it."""


class NoResultsError(TrackingError):
    """The store has nothing to report for the request; ``str(err)`` is user-facing."""


def default_tracking_uri(cwd: str | Path | None = None) -> str:
    """``sqlite:///<abs cwd>/mlflow_runs/mlflow.db``."""
    base = Path(cwd) if cwd else Path.cwd()
    return "sqlite:///" + str((base / "mlflow_runs" / "mlflow.db").resolve())


def resolve_tracking_uri(uri: str | None = None, cwd: str | Path | None = None) -> str:
    """The argument, else ``$MLFLOW_TRACKING_URI``, else :func:`default_tracking_uri`.

    A bare path ending in ``.db`` is taken as an SQLite file.
    """
    source = "--tracking-uri" if uri else "$MLFLOW_TRACKING_URI"
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(cwd)
    if "://" not in uri and uri.endswith(".db"):
        uri = "sqlite:///" + str(Path(uri).expanduser().resolve())
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower() if ":" in uri else ""
    if scheme not in KNOWN_SCHEMES and "://" in uri:
        raise TrackingUriError(
            f"{source} {uri}: unknown scheme {scheme!r}; use sqlite:///PATH/mlflow.db, a "
            "PATH ending in .db, http(s)://HOST:PORT of an MLflow server, or a database URI ("
            + ", ".join(s + "://" for s in KNOWN_SCHEMES[1:4])
            + ")"
        )
    if uri.startswith("sqlite:") and not uri.startswith("sqlite:///"):
        raise TrackingUriError(
            f"{source} {uri}: an SQLite URI needs three slashes and an "
            "absolute path: sqlite:///PATH/mlflow.db"
        )
    return uri


def sqlite_path(uri: str) -> Path | None:
    """The database file of an ``sqlite:///`` URI, else None."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///") :])
    return None


def artifact_root_for(uri: str) -> str | None:
    """Artifact root (file URI) for an SQLite store: ``artifacts/`` beside the database.

    None for servers and other stores (they choose their artifact location).
    """
    db = sqlite_path(uri)
    if db is None:
        return None
    return (db.resolve().parent / "artifacts").as_uri()


def mlflow_metric_key(name: str) -> str:
    """The MLflow key of a record's metric or measure name (MLflow rejects ``@``).

    Metric names go through :class:`ltr_bench.evaluation.metrics.MetricKey` when they parse as one;
    other names (``fit_seconds``, ``knn_error``, ``model.n_trees``) keep their characters
    MLflow accepts and get ``_`` for the others."""
    from ltr_bench.evaluation.metrics import metric_key_or_none

    key = metric_key_or_none(name)
    if key is not None:
        return key.mlflow_key
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", name)


def experiment_name(dataset: str) -> str:
    return EXPERIMENT_PREFIX + dataset


def message(uri: str, what: str, exc: BaseException) -> str:
    """``MLflow at <uri>: could not <what>: <Error>: <first line>``."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"MLflow at {uri}: could not {what}: {type(exc).__name__}: {text}"


class _NoTraceback(logging.Filter):
    """Keeps a library's log record but drops its traceback and cuts it to its first line
    (a stack trace is never what a user of ltr-bench must act on)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info or record.stack_info or record.exc_text:
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed library record: keep it as is
            return True
        first = text.strip().splitlines()[0] if text.strip() else text
        if first != text:
            record.msg, record.args = first[:300], None
        return True


_FILTER = _NoTraceback()


def quiet_library_logging() -> None:
    """MLflow, Alembic and SQLAlchemy log at WARNING and above, one line per record and no
    tracebacks: the filter sits on every handler their records can reach (their own, the
    root logger's and :data:`logging.lastResort`)."""
    for name in ("mlflow", "alembic", "sqlalchemy"):
        lg = logging.getLogger(name)
        if lg.level == logging.NOTSET or lg.level < logging.WARNING:
            lg.setLevel(logging.WARNING)
        for h in lg.handlers:
            if _FILTER not in h.filters:
                h.addFilter(_FILTER)
    handlers = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for h in handlers:
        if _FILTER not in h.filters:
            h.addFilter(_FILTER)


def _probe_folder(folder: Path, uri: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".ltr-bench-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = (
            "no space left on the device"
            if exc.errno == errno.ENOSPC
            else (exc.strerror or str(exc))
        )
        raise TrackingError(
            f"MLflow at {uri}: cannot create the store in {folder}: "
            f"{reason}. Point --tracking-uri at a writable folder, or add "
            "--no-mlflow."
        ) from None


def _tables(db: Path) -> list[str]:
    """Table names of an SQLite file ([] for an empty or new one); :class:`_Unreadable`."""
    if not db.exists() or db.stat().st_size == 0:
        return []
    rows = _read_sqlite(db, "select name from sqlite_master where type = 'table' order by name")
    return [r[0] for r in rows]


def _run_count(db: Path) -> int | None:
    """Rows of the ``runs`` table of an SQLite file (None: no such table);
    :class:`_Unreadable` when the file cannot be read or counted."""
    if "runs" not in _tables(db):
        return None
    return int(_read_sqlite(db, "select count(*) from runs")[0][0])


def creation_marker(db: Path) -> Path:
    """``<db>.creating``: written (with the pid) before ltr-bench lets MLflow create a new
    store and removed once the store opened. Its presence is the proof that a store that
    cannot be opened is one ltr-bench was creating when it was interrupted -- the only kind
    :func:`prepare_sqlite_store` may rebuild."""
    return db.with_name(db.name + ".creating")


def check_not_foreign(db: Path, uri: str) -> None:
    """Refuse an SQLite file that holds tables but not MLflow's schema and that ltr-bench was
    not creating (a user's own database): MLflow would add its tables to it. Raises
    :class:`TrackingError` naming the file and its tables; a file that cannot be read
    (locked, damaged) is refused too, and nothing is written to it."""
    try:
        tables = _tables(db)
    except _Unreadable as reason:
        if "locked" in str(reason):
            advice = "try again when no other process holds it"
        else:
            advice = f"if it is damaged, move it aside and re-run: mv {db} {db}.broken"
        raise TrackingError(
            f"MLflow at {uri}: cannot read {db}: {reason}. Nothing was changed; {advice}; "
            "or point --tracking-uri at another file."
        ) from None
    if not tables or MLFLOW_TABLES <= set(tables) or creation_marker(db).exists():
        return
    shown = ", ".join(tables[:8]) + (f" and {len(tables) - 8} more" if len(tables) > 8 else "")
    hint = ""
    if MLFLOW_TABLES & set(tables):
        hint = (
            f" If it is an MLflow store whose creation was interrupted, move it aside and "
            f"re-run: mv {db} {db}.broken"
        )
    raise ForeignStoreError(
        f"MLflow at {uri}: {db} is an SQLite database but not an MLflow store (no "
        f"alembic_version table; its tables: {shown}); ltr-bench writes nothing into it. "
        "Point --tracking-uri at another file, e.g. sqlite:///"
        + str(db.with_name("mlflow.db"))
        + "."
        + hint
    )


def _forget_engine(uri: str) -> None:
    """Drop MLflow's cached SQLAlchemy engine of ``uri``: its pooled connections still point
    at the file being replaced. (``SqlAlchemyStore._engine_map`` is MLflow's private cache;
    without it nothing is cached and nothing needs dropping.)"""
    try:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    except Exception:  # noqa: BLE001 - another MLflow layout: nothing of ours to drop
        return
    engines = getattr(SqlAlchemyStore, "_engine_map", None)
    if isinstance(engines, dict):
        engine = engines.pop(uri, None)
        if engine is not None:
            engine.dispose()


def _check_sqlite_file(db: Path, uri: str) -> None:
    """Refuse a path that is not an SQLite database file (never deleted: not ours)."""
    if db.is_file() and db.stat().st_size > 0:
        with open(db, "rb") as fh:
            header = fh.read(16)
        if header != b"SQLite format 3\x00":  # never delete what is not a database
            raise TrackingError(
                f"MLflow at {uri}: {db} is not an SQLite database. Point --tracking-uri at "
                f"another file, or move it aside: mv {db} {db}.broken"
            )
    elif db.is_symlink() and not db.exists() and not db.resolve().parent.is_dir():
        raise TrackingUriError(
            f"--tracking-uri {uri}: {db} is a symbolic link to {os.readlink(db)}, whose folder "
            "does not exist; point it at an SQLite file"
        )
    elif db.exists() and not db.is_file():
        raise TrackingUriError(  # a folder or a device: a bad invocation, refused before work
            f"--tracking-uri {uri}: {db} is not a regular file; point it at an SQLite file "
            "(e.g. sqlite:///$PWD/mlflow_runs/mlflow.db)"
        )


def driver_missing(uri: str, exc: ImportError) -> TrackingUriError:
    """The error of a database URI whose driver (SQLAlchemy's DBAPI module) is not
    installed: it can never be reached, so it is a bad invocation."""
    return TrackingUriError(
        f"--tracking-uri {uri}: its database driver is not installed ({exc}); install "
        "it, or use sqlite:///PATH/mlflow.db"
    )


@contextlib.contextmanager
def prepare_sqlite_store(uri: str):
    """Context for opening an SQLite store: probes its folder, refuses a file that is not ours
    (:func:`check_not_foreign`), holds an exclusive lock on ``<db>.lock`` (other ltr-bench
    processes wait there while the schema is created) and yields a ``repair(exc)`` callable.

    A new store is created under a :func:`creation_marker`, removed when the block ends
    without an error. Call ``repair(exc)`` when MLflow failed to open the store: only a store
    ltr-bench was creating (the marker is there) and that provably holds no run (its ``runs``
    table, if any, counted 0 rows) is removed so that the next attempt rebuilds it (returns
    True). Anything else -- a store that cannot be counted, is locked, holds runs, or was not
    made by ltr-bench -- is left untouched and :class:`TrackingError` says how to move it
    aside. Other URIs: no-op."""
    db = sqlite_path(uri)
    if db is None:
        yield lambda exc: False
        return
    _probe_folder(db.parent, uri)
    _check_sqlite_file(db, uri)
    lock = db.with_name(db.name + ".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise TrackingError(
            f"MLflow at {uri}: cannot create the lock file {lock}: {exc.strerror or exc}"
        ) from None
    marker = creation_marker(db)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        check_not_foreign(db, uri)  # under the lock: a creation in progress has its marker
        seeded = False
        if not db.exists() or db.stat().st_size == 0:
            try:
                marker.write_text(f"{os.getpid()}\n", encoding="utf-8")
            except OSError as exc:
                raise TrackingError(
                    f"MLflow at {uri}: cannot write {marker}: {exc.strerror or exc}"
                ) from None
            seeded = seed_new_store(db)

        def repair(exc: BaseException) -> bool:
            if not db.exists():
                return False
            cause = message(uri, "open", exc).split(": could not open: ", 1)[-1]
            move = f"mv {db} {db}.broken"
            try:
                runs = _run_count(db)
            except _Unreadable as reason:
                raise TrackingError(
                    f"MLflow at {uri}: the store cannot be opened ({cause}) and cannot be "
                    f"read ({reason}); it was left as it is. If no other process uses it, "
                    f"move it aside and re-run: {move} (or add --no-mlflow)."
                ) from None
            if runs:
                raise TrackingError(
                    f"MLflow at {uri}: the store holds {runs} run(s) but cannot be opened "
                    f"({cause}). Move it aside and re-run: {move}; the results saved "
                    "locally are logged again without recomputing anything (or add "
                    "--no-mlflow)."
                ) from None
            if not marker.exists():
                raise TrackingError(
                    f"MLflow at {uri}: the store cannot be opened ({cause}) and ltr-bench did "
                    f"not create it; it was left as it is. Move it aside and re-run: {move} "
                    "(or add --no-mlflow)."
                ) from None
            _forget_engine(uri)
            if seeded:  # built by MLflow itself this time, from an empty file
                discard_template()
            for p in (
                db,
                db.with_name(db.name + "-journal"),
                db.with_name(db.name + "-wal"),
                db.with_name(db.name + "-shm"),
            ):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
            marker.write_text(f"{os.getpid()}\n", encoding="utf-8")
            logging.getLogger("ltr_bench").warning(
                "%s was incomplete (ltr-bench's creation of it was interrupted) and held no "
                "runs; it was rebuilt",
                db,
            )
            return True

        yield repair
        with contextlib.suppress(FileNotFoundError):
            marker.unlink()  # the store opened: it is complete
    finally:
        os.close(fd)


def probe_server(uri: str, timeout: float = 10.0) -> None:
    """Contact an MLflow server's ``/health`` once: an unreachable server fails in
    ``timeout`` seconds with :class:`TrackingError` instead of after MLflow's retries
    (minutes). Any HTTP answer counts as reachable."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout).close()
    except urllib.error.HTTPError:
        pass  # something answered; the real request tells whether it is MLflow
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TrackingError(f"MLflow at {uri}: could not connect: {reason}") from None


def open_client(uri: str, *, quiet: bool = True):
    """An ``MlflowClient`` for ``uri`` (probing an SQLite file's folder); TrackingError."""
    db = sqlite_path(uri)
    if db is not None:
        _probe_folder(db.parent, uri)
        check_not_foreign(db, uri)
    elif uri.startswith(("http://", "https://")):
        probe_server(uri)
    # MLflow draws a progress bar per downloaded artifact: noise on stderr for a report
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    try:
        from mlflow.tracking import MlflowClient

        if quiet:  # after the import: importing mlflow configures its loggers
            quiet_library_logging()
        return MlflowClient(tracking_uri=uri)
    except Exception as exc:
        raise TrackingError(message(uri, "open", exc)) from exc
