"""The one package that talks to MLflow (imported lazily, so listing rankers stays fast).

* :mod:`.store`: where the store is (URIs, SQLite path, artifact root), opening it, errors.
* :mod:`.store_check`: :func:`check_store`, what every command checks before MLflow may
  touch a store.
* :mod:`.layout`: what a run holds (tag names, params, metric values, tags), without MLflow.
* :mod:`.writer`: :class:`Tracker` logs result records (layout in its docstring).
* :mod:`.listener`: :class:`MlflowListener`, the logging policy during a run (a harness
  listener).
* :mod:`.reader`: :func:`fetch_fold_results` reads records back for the report.
* :mod:`.integrity`: does a fold run still hold the local record (a re-run replaces it if not).
* :mod:`.as_logged`: is MLflow's copy still as logged, read without MLflow (a finished
  re-run opens MLflow to repair it if not).
* :mod:`.owners`: who owns a RUNNING parent run; ending those whose owner is gone.
* :mod:`.lookup`: read-only: a record's fold run and logged model, what a ``--model`` run id
  or URI names (``ltr-bench models``, ``predict``).

It depends on :mod:`ltr_bench.results` and :mod:`ltr_bench.evaluation.metrics`, never on the
harness, and it never writes the local results store.
"""

from ltr_bench.tracking.listener import MlflowListener
from ltr_bench.tracking.reader import (
    fetch_fold_results,
    list_datasets_in_store,
    log_parent_artifacts,
)
from ltr_bench.tracking.store import (
    NoResultsError,
    TrackingError,
    artifact_root_for,
    default_tracking_uri,
    experiment_name,
    mlflow_metric_key,
    resolve_tracking_uri,
    sqlite_path,
)
from ltr_bench.tracking.store_check import check_store
from ltr_bench.tracking.writer import Tracker

__all__ = [
    "MlflowListener",
    "NoResultsError",
    "Tracker",
    "TrackingError",
    "artifact_root_for",
    "check_store",
    "default_tracking_uri",
    "experiment_name",
    "fetch_fold_results",
    "list_datasets_in_store",
    "log_parent_artifacts",
    "mlflow_metric_key",
    "resolve_tracking_uri",
    "sqlite_path",
]
