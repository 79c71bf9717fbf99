"""Keeping a cell's fitted model beside its result: :func:`keep_model`.

Where. ``<results>/<key>.model.<token>/``: a folder written by
:func:`ltr_bench.models.save_model` (atomic: the whole folder or none) in the process that
fitted the ranker (in process, or on a Dask worker, which shares the results folder as it
shares the data home), before the record exists. ``token`` is 12 random hex digits, new for
every fit, and the record names its folder (``ResultRecord.model_dir``).

Why a token. The record is written after its model (``ResultStore.save``), so a record always
names a complete model. A kill between the two leaves a folder no record names; a ``--force``
run killed there leaves the old record naming its old, intact folder. When a record is saved
the store removes every other ``<key>.model.*`` folder (:meth:`ResultStore.save`: the cell's
claim is held then), so a resumed or forced run never leaves a model that is not its record's.

A ranker that cannot be saved (a plugin without persistence, a full disk) does not fail the
cell: its metrics stand; the record gets ``model_dir = None`` and a warning saying why.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from ltr_bench.timing import Stopwatch

__all__ = ["MODEL_SUFFIX", "keep_model", "model_folder"]

#: the model folders of a cell are ``<key>.model.<token>``
MODEL_SUFFIX = ".model."


def model_folder(root: str | Path, key: str) -> Path:
    """A new, unused model folder name for cell ``key`` under ``root``."""
    return Path(root) / f"{key}{MODEL_SUFFIX}{secrets.token_hex(6)}"


def preprocessing_of(cell, fold) -> dict[str, Any]:
    """What the model expects of its input beyond the features as read from a file: LETOR's
    ``QueryLevelNorm`` (``query_norm``, the dataset option) and, on query-by-example data,
    the width of the query block (``query_dim``, the last columns of each row)."""
    out: dict[str, Any] = {"query_norm": bool(dict(cell.dataset_options).get("query_norm"))}
    query_dim = getattr(fold, "query_dim", None)
    if query_dim:
        out["query_dim"] = int(query_dim)
    return out


def keep_model(ranker, cell, fold, rec) -> None:
    """Save the fitted ``ranker`` of ``cell`` (fitted on ``fold``) to a new model folder under
    ``cell.keep_models`` and note it in ``rec`` (``model_dir``, ``stage_seconds["save"]``);
    a failure is a warning in ``rec``, never an exception (see the module)."""
    if not cell.keep_models:
        return
    folder = model_folder(cell.keep_models, cell.key)
    try:
        from ltr_bench.models import save_model

        with Stopwatch() as sw:
            path = save_model(
                ranker,
                folder,
                ranker_name=cell.ranker,
                preprocessing=preprocessing_of(cell, fold),
                data_fingerprint=dict(fold.fingerprints()),
            )
        rec.stage_seconds["save"] = sw.seconds
        rec.model_dir = str(Path(path).resolve())
    except Exception as exc:  # noqa: BLE001 - the metrics stand without the model
        rec.model_dir = None
        rec.warnings.append(
            f"model not kept: {type(exc).__name__}: {exc} (the metrics are unaffected)"
        )
