"""Finding kept models in MLflow, read-only: a record's fold run and logged model, and what a
``--model`` reference (a run id, ``runs:/...``, a logged model's id) names.

Each finished cell is logged as a *fold run* (tag ``ltr_bench_role = fold``, its record's key
in ``ltr_bench_key``) under a *parent run* of its configuration (``ltr_bench_role =
parent``), and its kept model as the fold run's logged model ``model`` (MLflow 3:
``models:/<model id>``, also reachable as ``runs:/<fold run id>/model``); see
:mod:`ltr_bench.tracking.writer`. A parent run holds no model: a reference to one is answered
with its fold runs (:class:`ParentRunError`), never with MLflow's "failed to download".

Nothing here writes: a store that does not exist is reported, never created.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ltr_bench.errors import LtrBenchError, UsageError
from ltr_bench.tracking.background import wait_for_background_logging
from ltr_bench.tracking.layout import MLFLOW_PARENT_RUN_ID, TAG_FINISHED, TAG_KEY, TAG_ROLE
from ltr_bench.tracking.models_index import MODEL_NAME
from ltr_bench.tracking.reader import _all_runs
from ltr_bench.tracking.store import (
    EXPERIMENT_PREFIX,
    NoResultsError,
    TrackingError,
    experiment_name,
    message,
    open_client,
    resolve_tracking_uri,
    sqlite_path,
)
from ltr_bench.tracking.store_check import check_store

__all__ = [
    "FoldModel",
    "ModelRefError",
    "ParentRunError",
    "fold_models",
    "ltr_experiments",
    "model_uri_for",
    "noted_run_problems",
    "store_problem",
]

#: an MLflow run id: 32 lower-case hex digits
RUN_ID = re.compile(r"[0-9a-f]{32}")
#: an MLflow 3 logged model's id
MODEL_ID = re.compile(r"m-[0-9a-f]{32}")


class ModelRefError(LtrBenchError):
    """A ``--model`` reference that MLflow cannot answer with a model (no such run, a run
    without a logged model, no store): exit code 1."""


class ParentRunError(UsageError):
    """A ``--model`` reference to a parent run, which holds no model; the message lists its
    fold runs and their models (exit code 2: the user named a group, not a model)."""


@dataclass(frozen=True)
class FoldModel:
    """A finished fold run and its logged model: ``model_id`` and ``model_uri``
    (``models:/<model id>``) are empty when the run logged no model (``--keep-models
    none``). :meth:`as_record_mlflow` is the shape of ``ResultRecord.mlflow``."""

    tracking_uri: str
    experiment_id: str
    parent_run_id: str
    run_id: str
    finished: str = ""
    fold: str = ""
    label: str = ""
    model_id: str = ""

    @property
    def model_uri(self) -> str:
        return f"models:/{self.model_id}" if self.model_id else ""

    def as_record_mlflow(self) -> dict[str, str]:
        out = {
            "tracking_uri": self.tracking_uri,
            "experiment_id": self.experiment_id,
            "parent_run_id": self.parent_run_id,
            "run_id": self.run_id,
        }
        if self.model_id:
            out.update(model_id=self.model_id, model_uri=self.model_uri)
        return out


def store_problem(uri: str) -> str | None:
    """Why the store at ``uri`` cannot be read (no SQLite file there, an empty file, a
    folder), else None; opening a missing SQLite store would create it, so it is checked
    first."""
    try:
        check_store(uri, writes=False)
    except NoResultsError as exc:
        return str(exc)
    return None


def ltr_experiments(uri: str) -> list[tuple[str, str]]:
    """``(name, experiment id)`` of the store's active ltr-bench experiments
    (``ltr-bench/<dataset>``), by name. An SQLite store is read with ``sqlite3``, read-only
    and without importing MLflow (``ltr-bench ui`` prints their addresses before its server
    starts); another store through MLflow. Empty when they cannot be read (the caller then
    names the experiments list instead)."""
    db = sqlite_path(uri)
    try:
        if db is not None:
            import sqlite3

            with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
                found = conn.execute(
                    "SELECT name, experiment_id FROM experiments "
                    "WHERE lifecycle_stage = 'active' AND substr(name, 1, ?) = ?",
                    (len(EXPERIMENT_PREFIX), EXPERIMENT_PREFIX),
                ).fetchall()
        else:
            found = [
                (e.name, e.experiment_id)
                for e in open_client(uri).search_experiments()
                if e.name.startswith(EXPERIMENT_PREFIX)
            ]
    except Exception:  # noqa: BLE001 - the caller falls back to the experiments list
        return []
    return sorted((str(name), str(i)) for name, i in found)


def _logged_models(client, experiment_id: str) -> dict[str, str]:
    """source run id -> model id of the experiment's logged models named ``model``."""
    out: dict[str, str] = {}
    token = None
    while True:
        page = client.search_logged_models(
            experiment_ids=[experiment_id], max_results=100, page_token=token
        )
        for m in page:
            if m.name == MODEL_NAME and m.source_run_id:
                out.setdefault(m.source_run_id, m.model_id)
        token = getattr(page, "token", None)
        if not token:
            return out


def _fold_model(uri: str, experiment_id: str, run, models: dict[str, str]) -> FoldModel:
    tags = run.data.tags
    return FoldModel(
        tracking_uri=uri,
        experiment_id=experiment_id,
        parent_run_id=tags.get(MLFLOW_PARENT_RUN_ID, ""),
        run_id=run.info.run_id,
        finished=tags.get(TAG_FINISHED, ""),
        fold=tags.get("fold", ""),
        label=tags.get("label", ""),
        model_id=models.get(run.info.run_id, ""),
    )


def fold_models(
    datasets: Iterable[str], tracking_uri: str | None = None
) -> dict[tuple[str, str], FoldModel]:
    """``(record key, finished)`` -> :class:`FoldModel` for every finished fold run of the
    datasets' experiments (the pair names one record exactly: a re-computed cell has a new
    ``finished``). Waits for a background logger first (as ``report`` does). Raises
    :class:`NoResultsError` when there is no store, :class:`TrackingError` when it cannot be
    read."""
    uri = check_store(tracking_uri, writes=False)
    wait_for_background_logging(uri)
    client = open_client(uri)
    out: dict[tuple[str, str], FoldModel] = {}
    for dataset in sorted(set(datasets)):
        try:
            exp = client.get_experiment_by_name(experiment_name(dataset))
            if exp is None or exp.lifecycle_stage == "deleted":
                continue
            runs = _all_runs(client, exp.experiment_id, f"tags.{TAG_ROLE} = 'fold'")
            models = _logged_models(client, exp.experiment_id)
        except Exception as exc:  # noqa: BLE001 - said in one sentence
            raise TrackingError(message(uri, f"read the runs of {dataset}", exc)) from None
        for run in runs:
            key = run.data.tags.get(TAG_KEY)
            if run.info.status == "FINISHED" and key:
                found = _fold_model(uri, exp.experiment_id, run, models)
                out.setdefault((key, found.finished), found)
    return out


def noted_run_problems(uri: str, noted: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Why a run id noted for a record (``noted``: record key -> ``(run id, finished)``, from
    ``<results>/.mlflow/<key>.json``) is not that record's live fold run in the store
    ``uri``: key -> a phrase ("deleted in MLflow", "not in this store", "the fold run of
    another cell", "of an earlier computation of this cell", "not a fold run"). Keys whose
    run is the record's own live fold run are left out. Read-only; the store must have
    passed :func:`store_problem`."""
    out: dict[str, str] = {}
    if not noted:
        return out
    client = open_client(uri)
    for key, (run_id, finished) in noted.items():
        try:
            run = client.get_run(run_id)
        except Exception:  # noqa: BLE001 - MLflow's "not found" (and a malformed id)
            out[key] = "not in this store"
            continue
        tags = run.data.tags
        if run.info.lifecycle_stage == "deleted":
            out[key] = "deleted in MLflow"
        elif tags.get(TAG_ROLE) != "fold":
            out[key] = "not a fold run"
        elif tags.get(TAG_KEY) != key:
            other = tags.get("label") or run.info.run_name or tags.get(TAG_KEY, "")
            out[key] = f"the fold run of another cell ({other})"
        elif tags.get(TAG_FINISHED, "") != finished:
            out[key] = "of an earlier computation of this cell"
        elif run.info.status != "FINISHED":
            out[key] = f"not finished ({run.info.status})"
    return out


def _run_of(text: str) -> tuple[str, str] | None:
    """``(run id, artifact path)`` of a bare run id or a ``runs:/<id>[/<path>]`` URI."""
    if RUN_ID.fullmatch(text):
        return text, MODEL_NAME
    if text.startswith("runs:/"):
        run_id, _, path = text[len("runs:/") :].strip("/").partition("/")
        return run_id, path.strip("/") or MODEL_NAME
    return None


#: ``models:/<name>/<version>`` with a version that is a number (MLflow reads any other text
#: as a stage name)
REGISTERED_VERSION = re.compile(r"models:/(?P<name>[^/@]+)/(?P<version>[+-]?\d+)")


def _check_version(ref: str) -> None:
    """A registered version is a positive number: ``models:/NAME/0`` or ``/-1`` is refused
    in our words (MLflow's speaks of stages)."""
    m = REGISTERED_VERSION.fullmatch(ref)
    if m is not None and int(m["version"]) < 1:
        raise UsageError(
            f"--model {ref}: model versions are numbered from 1 (models:/{m['name']}/1, "
            f"models:/{m['name']}/2, ...; models:/{m['name']}@ALIAS for an alias); "
            "`ltr-bench models` lists the kept models"
        )


def _deleted_note(client, ref: str, run_id: str) -> str | None:
    """A note when the run behind ``ref`` is deleted in MLflow (soft-deleted: its model can
    still be read until ``mlflow gc`` removes it)."""
    try:
        run = client.get_run(run_id)
    except Exception:  # noqa: BLE001 - no run to speak of
        return None
    if run.info.lifecycle_stage != "deleted":
        return None
    return (
        f"--model {ref}: MLflow run {run_id} is deleted (in MLflow's trash: `mlflow gc` "
        f"removes it for good, `mlflow runs restore --run-id {run_id}` brings it back); its "
        "model was read all the same"
    )


def _source_run(client, ref: str) -> str | None:
    """The run that logged the model ``ref`` names (``models:/<model id>``,
    ``models:/<name>/<version>``), if MLflow says."""
    body = ref[len("models:/") :]
    try:
        if MODEL_ID.fullmatch(body):
            return client.get_logged_model(body).source_run_id
        m = REGISTERED_VERSION.fullmatch(ref)
        if m is not None:
            return client.get_model_version(m["name"], m["version"]).run_id
    except Exception:  # noqa: BLE001 - downloading it says what is wrong
        return None
    return None


def model_uri_for(
    ref: str, tracking_uri: str | None = None, notes: list[str] | None = None
) -> tuple[str, str]:
    """``(model URI, tracking URI)`` that MLflow can download for a ``--model`` reference that
    is not a folder: ``runs:/<fold run>/model`` for a fold run's id, ``runs:/<id>`` or
    ``runs:/<id>/model``; ``models:/<id>`` for a logged model's bare id ``m-...``; other
    ``models:/...`` URIs as given. A parent run raises :class:`ParentRunError` listing its
    fold runs' models; a run that is not in the store, or has no logged model, raises
    :class:`ModelRefError` saying so; a missing store raises :class:`ModelRefError` (it is
    never created); a version numbered below 1 raises :class:`UsageError`. ``notes`` gets
    what the user should know (the model's run is deleted in MLflow)."""
    uri = resolve_tracking_uri(tracking_uri)
    run = _run_of(ref)
    if MODEL_ID.fullmatch(ref):
        ref = f"models:/{ref}"
    _check_version(ref)
    problem = store_problem(uri)
    if problem is not None:
        raise ModelRefError(f"--model {ref}: {problem}")
    wait_for_background_logging(uri)
    notes = notes if notes is not None else []
    if run is None:
        if ref.startswith("models:/"):
            client = open_client(uri)
            source = _source_run(client, ref)
            note = _deleted_note(client, ref, source) if source else None
            if note:
                notes.append(note)
        return ref, uri
    run_id, path = run
    client = open_client(uri)
    try:
        found = client.get_run(run_id)
    except Exception as exc:  # noqa: BLE001 - MLflow's "not found" and store errors alike
        raise ModelRefError(
            f"--model {ref}: no run {run_id} in the MLflow store {uri} ({type(exc).__name__}); "
            "`ltr-bench models` lists the kept models with their run ids and model URIs"
        ) from None
    if found.info.lifecycle_stage == "deleted":
        notes.append(_deleted_note(client, ref, run_id) or "")
    tags = found.data.tags
    if tags.get(TAG_ROLE) == "parent":
        raise ParentRunError(_parent_message(client, uri, ref, found))
    if path == MODEL_NAME and tags.get(TAG_ROLE) == "fold":
        models = _logged_models(client, found.info.experiment_id)
        if run_id not in models:
            raise ModelRefError(
                f"--model {ref}: MLflow run {run_id} ({found.info.run_name}) has no logged "
                "model: its cell ran with --keep-models none, or its model could not be kept "
                "(see the run's warnings)"
            )
    return f"runs:/{run_id}/{path}", uri


def _parent_message(client, uri: str, ref: str, parent) -> str:
    """What a parent run reference gets: the run is a configuration's group, and the models
    are in its fold runs (each with its model URI)."""
    exp_id = parent.info.experiment_id
    parent_tag = f"tags.`{MLFLOW_PARENT_RUN_ID}` = '{parent.info.run_id}'"
    try:
        runs = _all_runs(client, exp_id, f"tags.{TAG_ROLE} = 'fold' and {parent_tag}")
        models = _logged_models(client, exp_id)
    except Exception as exc:  # noqa: BLE001 - the message still says what the run is
        listing = f" (they could not be listed: {message(uri, 'search the runs', exc)})"
    else:
        folds = [_fold_model(uri, exp_id, r, models) for r in runs if r.info.status == "FINISHED"]
        folds.sort(key=lambda f: (int(f.fold) if f.fold.isdigit() else 0, f.run_id))
        listing = (
            ": "
            + "; ".join(
                f"fold {f.fold} runs:/{f.run_id}/model"
                + (f" ({f.model_uri})" if f.model_uri else " (no logged model)")
                for f in folds
            )
            if folds
            else " (it has no finished fold run yet)"
        )
    name = parent.data.tags.get("label") or parent.info.run_name
    return (
        f"--model {ref}: MLflow run {parent.info.run_id} is the parent run of {name} "
        f"(one per configuration, holding its fold means); the models are in its fold runs"
        f"{listing}. Give one of those (`ltr-bench models` lists every kept model)"
    )
