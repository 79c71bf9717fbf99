"""Where the MLflow store is and how to open it; the error MLflow failures become.

Default tracking URI ``sqlite:///<cwd>/mlflow_runs/mlflow.db``; ``--tracking-uri`` or
``MLFLOW_TRACKING_URI`` point elsewhere (another SQLite file, a shared ``mlflow server``).
For an SQLite store, artifacts go to ``artifacts/`` beside the database file (so the default
is ``<cwd>/mlflow_runs/artifacts``); a server decides for itself.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from ..errors import LtrBenchError

__all__ = [
    "EXPERIMENT_PREFIX",
    "NoResultsError",
    "TrackingError",
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
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(cwd)
    if "://" not in uri and uri.endswith(".db"):
        uri = "sqlite:///" + str(Path(uri).expanduser().resolve())
    return uri


def sqlite_path(uri: str) -> Path | None:
    """The database file of an ``sqlite:///`` URI, else None."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///"):])
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

    Metric names go through :class:`ltr_bench.metrics.MetricKey` when they parse as one;
    other names (``fit_seconds``, ``knn_error``, ``model.n_trees``) keep their characters
    MLflow accepts and get ``_`` for the others."""
    from ..metrics import metric_key_or_none

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


def open_client(uri: str, *, quiet: bool = True):
    """An ``MlflowClient`` for ``uri`` (creating an SQLite file's folder); TrackingError."""
    db = sqlite_path(uri)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    try:
        from mlflow.tracking import MlflowClient

        if quiet:  # after the import: importing mlflow configures its loggers
            for name in ("mlflow", "alembic"):
                logging.getLogger(name).setLevel(logging.WARNING)
        return MlflowClient(tracking_uri=uri)
    except Exception as exc:
        raise TrackingError(message(uri, "open", exc)) from exc
