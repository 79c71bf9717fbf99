"""Is MLflow's copy of finished records still exactly as logged? Read without MLflow.

A re-run of a command logs every finished record again unless its fold run is there, FINISHED
and intact (:mod:`.integrity`: the ``record.json`` and per-query artifacts equal the local
record), ends its parent runs FINISHED, and so repairs whatever was edited, damaged or deleted
in MLflow since. Opening MLflow for that costs seconds (importing it, its schema check), so a
re-run whose cells are all finished skips it when this module proves there is nothing to
repair (:func:`unchanged_since_logged`), and opens it otherwise.

The proof binds each record's local MLflow note (:meth:`ltr_bench.results.ResultStore.
note_mlflow`) to the artifacts as logged: right after a record is logged or found intact, the
logging process notes the size and SHA-256 of its fold run's :data:`BOUND_ARTIFACTS`
(:func:`artifact_binding`), read from the store's local artifact folder. A later run proves
"unchanged" only when, for every record, in one read-only query of the SQLite file:

* its fold run exists, is active in an active experiment, FINISHED, tagged with the record's
  key and ``finished`` stamp, and a child of the noted parent run;
* that parent run is active and FINISHED (a re-run would end it FINISHED);
* the noted logged model, if any, is still there (MLflow's ``logged_models`` table);
* each bound artifact file in the run's local artifact folder has its noted size and SHA-256,
  and no bound artifact appeared or vanished.

Anything else - a store that is not an ``sqlite:///`` file, an artifact location that is not
a local folder (a server's ``mlflow-artifacts:``, S3), a note without a binding (written
before bindings existed), an unreadable or locked file, a missing table - is no proof, and the
run opens MLflow and repairs as before. Never imports MLflow; costs one SQLite query and
hashing two small files per record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ltr_bench.tracking.layout import PER_QUERY_ARTIFACT, RECORD_ARTIFACT, TAG_FINISHED, TAG_KEY
from ltr_bench.tracking.sqlite_read import Unreadable, read_sqlite
from ltr_bench.tracking.store import sqlite_path

__all__ = ["BOUND_ARTIFACTS", "artifact_binding", "unchanged_since_logged"]

#: the artifacts a re-run checks against the local record (:mod:`.integrity`), so the ones
#: bound: a change to any of them must send the next run through MLflow
BOUND_ARTIFACTS = (RECORD_ARTIFACT, PER_QUERY_ARTIFACT)
_PARENT_TAG = "mlflow.parentRunId"
_CHUNK = 400  # run ids per query, well under SQLite's oldest limit of 999 variables


def _local_folder(artifact_uri: str | None) -> Path | None:
    """The folder of a ``file:`` artifact URI or an absolute path; None for anything else."""
    if not artifact_uri:
        return None
    if artifact_uri.startswith("/"):
        return Path(artifact_uri)
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(unquote(parsed.path))
    return None


def _file_signature(path: Path) -> list[Any] | None:
    """``[size, sha256 hex]`` of a file; None when it is missing or unreadable."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return [len(data), hashlib.sha256(data).hexdigest()]


def _files(folder: Path) -> dict[str, list[Any]]:
    found = {name: _file_signature(folder / name) for name in BOUND_ARTIFACTS}
    return {name: sig for name, sig in found.items() if sig is not None}


def _runs(db: Path, run_ids: list[str]) -> dict[str, tuple]:
    """run id -> (status, lifecycle stage, artifact URI, experiment id, experiment's stage,
    key tag, finished tag, parent tag) of the runs of ``run_ids`` found. Raises
    :class:`Unreadable`."""
    out: dict[str, tuple] = {}
    tag = "(select t.value from tags t where t.run_uuid = r.run_uuid and t.key = ?)"
    for start in range(0, len(run_ids), _CHUNK):
        chunk = run_ids[start : start + _CHUNK]
        query = (
            "select r.run_uuid, r.status, r.lifecycle_stage, r.artifact_uri, r.experiment_id,"
            f" e.lifecycle_stage, {tag}, {tag}, {tag} from runs r"
            " join experiments e on e.experiment_id = r.experiment_id"
            f" where r.run_uuid in ({','.join('?' * len(chunk))})"
        )
        rows = read_sqlite(db, query, params=(TAG_KEY, TAG_FINISHED, _PARENT_TAG, *chunk))
        out.update({row[0]: tuple(row[1:]) for row in rows})
    return out


def _models(db: Path, model_ids: list[str]) -> set[str]:
    """The ids of ``model_ids`` that MLflow's ``logged_models`` table holds, not deleted."""
    found: set[str] = set()
    for start in range(0, len(model_ids), _CHUNK):
        chunk = model_ids[start : start + _CHUNK]
        query = (
            "select model_id from logged_models where lifecycle_stage = 'active'"
            f" and model_id in ({','.join('?' * len(chunk))})"
        )
        found.update(row[0] for row in read_sqlite(db, query, params=tuple(chunk)))
    return found


def artifact_binding(uri: str, run_id: str) -> dict[str, list[Any]] | None:
    """``{artifact name: [size, sha256]}`` of fold run ``run_id``'s :data:`BOUND_ARTIFACTS`
    as they are now in store ``uri``'s local artifact folder; None when the store is not an
    ``sqlite:///`` file with local artifacts, or the run or its ``record.json`` cannot be
    read (then a re-run always opens MLflow)."""
    db = sqlite_path(uri)
    if db is None:
        return None
    try:
        row = _runs(db, [run_id]).get(run_id)
    except Unreadable:
        return None
    folder = _local_folder(row[2]) if row is not None else None
    if folder is None:
        return None
    files = _files(folder)
    return files if RECORD_ARTIFACT in files else None


def unchanged_since_logged(uri: str, notes: Iterable[tuple[str, str, dict, Any]]) -> bool:
    """Every ``(key, finished, ids, binding)`` of ``notes`` (a record's key and ``finished``
    stamp, the ids and artifact binding of its MLflow note) is in store ``uri`` exactly as
    logged (the module's list); False at the first doubt, so that a re-run opens MLflow
    and repairs."""
    notes = list(notes)
    db = sqlite_path(uri)
    if db is None or not notes:
        return False
    fold_ids, parent_ids, model_ids = [], [], []
    for _key, _finished, ids, binding in notes:
        if (
            not isinstance(binding, dict)
            or RECORD_ARTIFACT not in binding
            or not ids.get("run_id")
            or not ids.get("parent_run_id")
        ):
            return False
        fold_ids.append(ids["run_id"])
        parent_ids.append(ids["parent_run_id"])
        if ids.get("model_id"):
            model_ids.append(ids["model_id"])
    try:
        runs = _runs(db, sorted(set(fold_ids) | set(parent_ids)))
        if model_ids and len(_models(db, sorted(set(model_ids)))) != len(set(model_ids)):
            return False
    except Unreadable:
        return False
    for parent in set(parent_ids):
        row = runs.get(parent)
        if row is None or row[0] != "FINISHED" or row[1] != "active" or row[4] != "active":
            return False
    for key, finished, ids, binding in notes:
        row = runs.get(ids["run_id"])
        if row is None:
            return False
        status, stage, artifact_uri, experiment, exp_stage, tag_key, tag_finished, parent = row
        if (
            (status, stage, exp_stage) != ("FINISHED", "active", "active")
            or str(experiment) != str(ids.get("experiment_id"))
            or (tag_key, tag_finished, parent) != (key, finished, ids["parent_run_id"])
        ):
            return False
        folder = _local_folder(artifact_uri)
        if folder is None or _files(folder) != binding:
            return False
    return True
