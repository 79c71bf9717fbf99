"""The one check of a tracking URI that every command runs before MLflow may touch the store:
:func:`check_store`.

MLflow opens whatever it is given: an SQLite file that is someone else's database gets
MLflow's tables added to it, and a path that does not exist becomes a new, empty store (MLflow
3 even makes ``./mlflow.db`` when no URI is set). So before any command (``run``, ``tune``,
``report``, ``predict``, ``models``, ``ui``, ``export``) hands a URI to MLflow, it calls
:func:`check_store`, which decides without MLflow, in milliseconds:

* an SQLite path that is not an SQLite database, or a database without MLflow's schema that
  ltr-bench was not creating (a user's own), is refused and left byte for byte as it was
  (:func:`~ltr_bench.tracking.store.check_not_foreign`: exit 2);
* a command that only reads (``writes=False``) refuses a store that does not exist (a
  missing or empty file, a folder, a dangling link), or one that ltr-bench is creating or
  whose creation was interrupted (its ``<db>.creating`` marker is there: MLflow would run
  its migrations on it): :class:`NoResultsError`, exit 1, and nothing is created or
  changed -- not the file, not its folder;
* a command that writes (``writes=True``: ``run``, ``tune``) needs a writable folder (a new
  store is created later, under the store's lock: :func:`~ltr_bench.tracking.store.
  prepare_sqlite_store`);
* a server must answer at ``/health`` (:func:`~ltr_bench.tracking.store.probe_server`), a
  database URI's driver must be installed.

Opening the store with MLflow (:meth:`ltr_bench.tracking.Tracker.check`, the readers)
checks the SQLite file again under the store's lock.
"""

from __future__ import annotations

from pathlib import Path

from ltr_bench.tracking.store import (
    NoResultsError,
    _check_sqlite_file,
    _probe_folder,
    check_not_foreign,
    creation_marker,
    driver_missing,
    probe_server,
    resolve_tracking_uri,
    sqlite_path,
)

__all__ = ["check_store"]

#: database URI schemes whose SQLAlchemy driver is checked before use
DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")


def check_store(tracking_uri: str | None, *, writes: bool, cwd: str | Path | None = None) -> str:
    """Check the store that ``tracking_uri`` names (else ``$MLFLOW_TRACKING_URI``, else the
    default in ``cwd``) for a command that ``writes`` to it or only reads it (see the
    module); returns the resolved URI. Raises :class:`~ltr_bench.tracking.store.
    ForeignStoreError` / :class:`~ltr_bench.tracking.store.TrackingUriError` (exit 2),
    :class:`NoResultsError` (a reader's missing store, exit 1), :class:`TrackingError`."""
    uri = resolve_tracking_uri(tracking_uri, cwd)
    db = sqlite_path(uri)
    if db is not None:
        if writes:
            _probe_folder(db.parent, uri)
        else:
            _check_exists(db)
            _check_not_being_created(db)
        _check_sqlite_file(db, uri)
        check_not_foreign(db, uri)
    elif uri.startswith(("http://", "https://")):
        probe_server(uri)
    elif uri.split("://", 1)[0].split("+", 1)[0] in DATABASE_SCHEMES:
        _check_database_driver(uri)
    return uri


def _check_exists(db: Path) -> None:
    """A reader's store must be there: nothing is created for a command that only reads."""
    if db.is_dir():
        raise NoResultsError(f"{db} is a folder, not an MLflow store (an SQLite file)")
    if db.is_file() and db.stat().st_size == 0:
        # opening it would make MLflow create its schema there
        raise NoResultsError(f"{db} is an empty file, not an MLflow store: nothing to read")
    if (db.exists() or db.is_symlink()) and not db.is_file():
        what = "a symbolic link to a missing file" if db.is_symlink() else "not a regular file"
        raise NoResultsError(f"{db} is {what}, not an MLflow store (an SQLite file)")
    if not db.is_file():
        raise NoResultsError(
            f"no MLflow store at {db} (nothing was logged there): run "
            "`ltr-bench run ...` in this folder first, or pass --tracking-uri / set "
            "MLFLOW_TRACKING_URI"
        )


def _check_not_being_created(db: Path) -> None:
    """A store whose ``<db>.creating`` marker is there is being created by ltr-bench, or its
    creation was interrupted (a half-made schema): a reader must not hand it to MLflow,
    whose migrations would write into it (and fail, e.g. "table ... already exists"). The
    writer that made it, re-run, rebuilds it (:func:`~ltr_bench.tracking.store.
    prepare_sqlite_store`)."""
    from ltr_bench.environment import process_alive

    marker = creation_marker(db)
    if not marker.exists():
        return
    try:
        pid = int(marker.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        pid = 0
    if pid and process_alive(pid):
        raise NoResultsError(
            f"{db} is being created by ltr-bench (process {pid}): nothing to read yet; "
            "try again once that run has opened it"
        )
    raise NoResultsError(
        f"{db} is an MLflow store whose creation was interrupted (its marker {marker.name} "
        "is still there): nothing was read and nothing changed. Re-running the same "
        "`ltr-bench run` rebuilds it and logs the saved results (nothing is recomputed)"
    )


def _check_database_driver(uri: str) -> None:
    """Raise :func:`~ltr_bench.tracking.store.driver_missing` when ``uri``'s driver cannot be
    imported."""
    try:
        from sqlalchemy.engine.url import make_url

        make_url(uri).get_dialect().import_dbapi()
    except ImportError as exc:
        raise driver_missing(uri, exc) from None
    except Exception:  # noqa: BLE001, S110 - anything else is for MLflow to say
        pass
