"""Reading results back from MLflow (for ``ltr-bench report``), and attaching report files.

Each fold run holds the whole :class:`~ltr_bench.results.ResultRecord` as ``record.json``
and its per-query values as ``per_query_metrics.csv``, so what comes back is exactly what the
local store holds: ``ltr-bench report`` gives the same table from either source. Reads only;
never creates a store or an experiment (except :func:`log_parent_artifacts`, which attaches
report files to existing runs).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ltr_bench.results import DamagedRecordError, ResultRecord, read_per_query_csv
from ltr_bench.tracking.background import wait_for_background_logging
from ltr_bench.tracking.layout import PER_QUERY_ARTIFACT, RECORD_ARTIFACT, TAG_ROLE
from ltr_bench.tracking.store import (
    EXPERIMENT_PREFIX,
    NoResultsError,
    TrackingError,
    experiment_name,
    message,
    open_client,
    resolve_tracking_uri,
)
from ltr_bench.tracking.store_check import check_store

__all__ = ["fetch_fold_results", "list_datasets_in_store", "log_parent_artifacts"]


def _all_runs(client, exp_id: str, filter_string: str) -> list:
    runs: list = []
    token = None
    while True:
        page = client.search_runs(
            [exp_id], filter_string=filter_string, max_results=1000, page_token=token
        )
        runs.extend(page)
        token = getattr(page, "token", None)
        if not token:
            return runs


def _download(uri: str, run, name: str, where: Path) -> str:
    """Artifact ``name`` of ``run`` (a search result) downloaded into ``where``: the local
    path. Read from the artifact location the search returned; ``MlflowClient.
    download_artifacts(run_id, ...)`` looks the run up in the store again for every file,
    most of a report's time on a SQLite store."""
    from mlflow.artifacts import download_artifacts

    return download_artifacts(
        artifact_uri=f"{run.info.artifact_uri.rstrip('/')}/{name}",
        dst_path=str(where),
        tracking_uri=uri,
    )


def list_datasets_in_store(
    tracking_uri: str | None = None, *, cwd: str | Path | None = None
) -> list[str]:
    """Dataset names that have an ``ltr-bench/<dataset>`` experiment in the store."""
    uri = resolve_tracking_uri(tracking_uri, cwd)
    wait_for_background_logging(uri)  # an earlier run's last fold runs, still being logged
    check_store(uri, writes=False)
    try:
        exps = open_client(uri).search_experiments(max_results=1000)
    except TrackingError:
        raise
    except Exception as exc:
        raise TrackingError(message(uri, "list experiments", exc)) from exc
    return sorted(
        e.name[len(EXPERIMENT_PREFIX) :] for e in exps if e.name.startswith(EXPERIMENT_PREFIX)
    )


def fetch_fold_results(
    dataset: str,
    tracking_uri: str | None = None,
    *,
    per_query: bool = True,
    cwd: str | Path | None = None,
    damaged: list | None = None,
) -> list[ResultRecord]:
    """Every finished fold run of ``ltr-bench/<dataset>`` as a :class:`ResultRecord`.

    ``record.mlflow`` notes where it was read (``tracking_uri``, ``experiment_id``,
    ``run_id``, ``parent_run_id``); ``record.per_query`` is loaded unless
    ``per_query=False``. A run whose ``record.json`` is missing, or whose ``record.json`` or
    per-query artifact is damaged (not JSON, a field of the wrong type, a non-number
    value), is left out and a
    :class:`~ltr_bench.results.DamagedRecordError` naming the run, the artifact and the field
    is appended to ``damaged`` (when given). Raises :class:`NoResultsError` (no store file,
    no experiment for the dataset: the message names the datasets the store has) and
    :class:`TrackingError` (store unusable).
    """
    uri = resolve_tracking_uri(tracking_uri, cwd)
    wait_for_background_logging(uri)  # an earlier run's last fold runs, still being logged
    check_store(uri, writes=False)
    client = open_client(uri)
    try:
        exp = client.get_experiment_by_name(experiment_name(dataset))
    except Exception as exc:
        raise TrackingError(message(uri, "read the experiments", exc)) from exc
    if exp is None or exp.lifecycle_stage == "deleted":
        known = list_datasets_in_store(uri)
        raise NoResultsError(
            f"no results for dataset {dataset!r} in the MLflow store {uri}; "
            + (
                f"datasets with results: {', '.join(known)}"
                if known
                else "the store has no ltr-bench results yet (run `ltr-bench run` first)"
            )
        )
    try:
        runs = _all_runs(client, exp.experiment_id, f"tags.{TAG_ROLE} = 'fold'")
    except Exception as exc:
        raise TrackingError(message(uri, f"search the runs of {dataset}", exc)) from exc
    out: list[ResultRecord] = []
    bad: list[DamagedRecordError] = []
    with tempfile.TemporaryDirectory(prefix="ltr-bench-report-") as tmp:
        for run in runs:
            if run.info.status != "FINISHED":
                continue  # a half-logged or superseded run
            where = Path(tmp) / run.info.run_id
            name = f"MLflow run {run.info.run_id} ({run.info.run_name}) artifact"
            try:
                path = _download(uri, run, RECORD_ARTIFACT, where)
                text = Path(path).read_text("utf-8")
            except Exception:  # noqa: BLE001 - deleted, unreadable: named, left out
                bad.append(
                    DamagedRecordError(f"{name} {RECORD_ARTIFACT}", None, "missing or unreadable")
                )
                continue
            try:
                record = ResultRecord.checked(json.loads(text), f"{name} {RECORD_ARTIFACT}")
            except DamagedRecordError as exc:
                bad.append(exc)
                continue
            except ValueError as exc:
                bad.append(
                    DamagedRecordError(f"{name} {RECORD_ARTIFACT}", None, f"not JSON: {exc}")
                )
                continue
            if per_query:
                try:
                    path = _download(uri, run, PER_QUERY_ARTIFACT, where)
                except Exception:  # noqa: BLE001 - reported by the report as "no per-query"
                    record.per_query = None
                else:
                    try:
                        record.per_query = read_per_query_csv(Path(path))
                    except DamagedRecordError as exc:
                        exc.where = f"{name} {PER_QUERY_ARTIFACT} ({exc.where.rsplit(':', 1)[-1]})"
                        exc.reason += f" ({record.summary_line()})"
                        bad.append(exc)
                        continue
            record.mlflow = {
                "tracking_uri": uri,
                "experiment_id": exp.experiment_id,
                "run_id": run.info.run_id,
                "parent_run_id": run.data.tags.get("mlflow.parentRunId"),
            }
            out.append(record)
    if damaged is not None:
        damaged.extend(bad)
    if not out:
        raise NoResultsError(
            f"the experiment {experiment_name(dataset)!r} in {uri} has no finished fold runs"
            + (
                f"; {len(bad)} set aside as damaged: "
                + "; ".join(str(b) for b in bad[:5])
                + (" ..." if len(bad) > 5 else "")
                + "; re-run their command to log them again from the local results"
                if bad
                else ""
            )
        )
    out.sort(key=lambda r: (r.label or r.ranker, r.plan_key, r.seed, r.fold))
    return out


def log_parent_artifacts(
    parent_run_id: str,
    paths: Iterable[str | Path],
    *,
    tracking_uri: str | None = None,
    artifact_path: str = "report",
    cwd: str | Path | None = None,
) -> None:
    """Attach files (e.g. report plots) to a parent run under ``artifact_path/``.

    Re-logging a file of the same name replaces it. Raises :class:`TrackingError`.
    """
    uri = resolve_tracking_uri(tracking_uri, cwd)
    client = open_client(uri)
    try:
        for p in paths:
            client.log_artifact(parent_run_id, str(p), artifact_path=artifact_path)
    except Exception as exc:
        raise TrackingError(
            message(uri, f"log report artifacts to run {parent_run_id}", exc)
        ) from exc
