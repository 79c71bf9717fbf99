"""Saving a fitted ranker to a model folder, atomically.

Layout of a model folder::

    <folder>/manifest.json     the manifest (:mod:`.manifest`), written last
    <folder>/native/...        the ranker's own files (``save_native``): LightGBM model text,
                               XGBoost UBJSON, CatBoost .cbm, torch state_dict, state.npz ...

Atomic as the result files are (:func:`ltr_bench.results.atomic_write_bytes`: temporary,
fsync, rename), at folder level: everything is written into a temporary sibling folder
``.<name>.tmp-<pid>-<random>``, every file and folder in it is fsynced, then the folder is
renamed to ``<name>``. An existing model at ``<name>`` is first
renamed aside (``.<name>.old-...``) and removed after the new one is in place. A kill at any
moment leaves ``<name>`` holding a whole model (the old or the new) or nothing, never a part;
a leftover temporary sibling of a dead process is removed by the next save to that name.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from ltr_bench.environment import process_alive
from ltr_bench.model_state import encode_state, fitted_attributes
from ltr_bench.models.manifest import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    NATIVE,
    ModelSaveError,
    check_preprocessing,
    encode_params,
    file_digests,
)
from ltr_bench.ranker import can_save, tags_of
from ltr_bench.results.files import fsync_all, reason_of

__all__ = ["save_model"]


def save_model(
    ranker,
    folder,
    *,
    ranker_name: str,
    preprocessing: dict | None = None,
    data_fingerprint: str | dict[str, str] | None = None,
) -> Path:
    """Save the fitted ``ranker`` (registered as ``ranker_name``) to ``folder``; returns it.

    ``preprocessing``: what was done to the features before ``fit`` (keys ``query_norm``,
    ``query_dim``, ``feature_transform``; see :mod:`.manifest`); ``query_dim`` defaults to
    the value of the ranker's ``RankerTags.query_dim_param`` and ``feature_transform`` to
    the one the ranker's ``save_native`` reports in its extras. ``data_fingerprint``: the
    fingerprint of the fold the model was fitted on (``run``: ``Fold.fingerprints()``).

    An existing model at ``folder`` is replaced; an existing folder that is not a model (no
    manifest) and not empty is refused. Raises :class:`ModelSaveError` (the ranker cannot be
    saved, or the folder cannot be written: the message names it and the reason)."""
    from ltr_bench.registry import get_entry

    folder = Path(folder)
    if not can_save(ranker):
        raise ModelSaveError(
            f"ranker {ranker_name!r} ({type(ranker).__name__}) cannot be saved: it does not "
            "implement save_native() and load_native() (see the plugin guide, 'Save and load')"
        )
    if not fitted_attributes(ranker):  # the contract: learned state ends in "_"
        raise ModelSaveError(
            f"ranker {ranker_name!r} ({type(ranker).__name__}) is not fitted: call fit() "
            "before saving it"
        )
    entry = get_entry(ranker_name)
    try:
        prep = check_preprocessing(preprocessing)
    except ValueError as exc:
        raise ModelSaveError(f"cannot save {folder}: {exc}") from None
    params = encode_params(ranker.get_params(deep=False), ranker_name)
    _check_target(folder)
    tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            _remove_stale(folder)
            (tmp / NATIVE).mkdir(parents=True)
        except OSError as exc:
            raise ModelSaveError(f"cannot write {folder}: {reason_of(exc)}") from None
        try:
            extras = ranker.save_native(tmp / NATIVE)
        except OSError as exc:
            raise ModelSaveError(f"cannot write {folder}: {reason_of(exc)}") from None
        except (TypeError, ValueError, AttributeError, NotImplementedError) as exc:
            raise ModelSaveError(f"ranker {ranker_name!r} cannot be saved: {exc}") from None
        extras = _json_extras(extras, ranker_name)
        if preprocessing is None or "feature_transform" not in preprocessing:
            prep["feature_transform"] = str(extras.get("feature_transform", "none"))
        if preprocessing is None or "query_dim" not in preprocessing:
            param = tags_of(ranker).query_dim_param
            value = ranker.get_params(deep=False).get(param) if param else None
            prep["query_dim"] = None if value is None else int(value)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "ranker": ranker_name,
            "target": entry.target,
            "distribution": entry.distribution,
            "distribution_version": entry.version,
            "ltr_bench_version": _ltr_bench_version(),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "params": params,
            "n_features": _n_features(ranker),
            "preprocessing": prep,
            "data_fingerprint": data_fingerprint,
            "extras": extras,
            "files": file_digests(tmp),
        }
        try:
            text = json.dumps(manifest, indent=1, allow_nan=False) + "\n"
        except ValueError as exc:  # NaN in extras: the manifest must stay strict JSON
            raise ModelSaveError(f"ranker {ranker_name!r} cannot be saved: {exc}") from None
        try:
            (tmp / MANIFEST).write_text(text, encoding="utf-8")
            _fsync_tree(tmp)
            _swap_in(tmp, folder)
        except OSError as exc:
            raise ModelSaveError(f"cannot write {folder}: {reason_of(exc)}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after a successful rename
    return folder


def _check_target(folder: Path) -> None:
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ModelSaveError(f"cannot save a model to {folder}: it exists and is not a folder")
    if folder.is_dir() and not (folder / MANIFEST).exists() and any(folder.iterdir()):
        raise ModelSaveError(
            f"cannot save a model to {folder}: it is a folder that is not empty and holds no "
            f"saved model ({MANIFEST}); choose a new or empty folder"
        )


def _json_extras(extras, ranker_name: str) -> dict:
    if extras is None:
        return {}
    if not isinstance(extras, dict):
        raise ModelSaveError(
            f"ranker {ranker_name!r}: save_native() must return a dict, got {type(extras).__name__}"
        )
    arrays: dict[str, np.ndarray] = {}
    try:
        out = {k: encode_state(v, arrays, f"extra {k!r}") for k, v in extras.items()}
    except TypeError as exc:
        raise ModelSaveError(f"ranker {ranker_name!r}: save_native() returned {exc}") from None
    if arrays:
        raise ModelSaveError(f"ranker {ranker_name!r}: save_native() returned numpy arrays")
    return out


def _n_features(ranker) -> int | None:
    n = getattr(ranker, "n_features_in_", None)
    return None if n is None else int(n)


def _ltr_bench_version() -> str:
    from ltr_bench.registry import installed_version

    return installed_version("ltr-bench") or "?"


def _fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root``, concurrently (:func:`fsync_all`: one
    journal commit instead of one per file). All of them are durable when this returns,
    which is all the rename that follows needs (whole or none); their order among
    themselves does not matter."""
    fds: list[int] = []
    try:
        for dirpath, _dirs, files in os.walk(root, topdown=False):
            for name in files:
                fds.append(os.open(os.path.join(dirpath, name), os.O_RDONLY))
            fds.append(os.open(dirpath, os.O_RDONLY))
        fsync_all(fds)
    finally:
        for fd in fds:
            os.close(fd)


def _swap_in(tmp: Path, folder: Path) -> None:
    """Rename the complete ``tmp`` to ``folder``; an existing ``folder`` is renamed aside
    first (rename cannot replace a non-empty folder) and removed afterwards."""
    old = None
    if folder.exists():
        old = folder.parent / f".{folder.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        os.rename(folder, old)
    # no fsync of the parent: "whole or none" needs only that the files and folders renamed
    # are durable first (as the result files: fsync, then rename); ~4 ms saved a model
    os.rename(tmp, folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _remove_stale(folder: Path) -> None:
    """Remove temporary siblings of ``folder`` left by a process that is gone."""
    for kind in ("tmp", "old"):
        for path in folder.parent.glob(f".{folder.name}.{kind}-*"):
            pid = path.name.rsplit(".", 1)[-1].split("-")[1:2]
            if pid and pid[0].isdigit() and not process_alive(int(pid[0])):
                shutil.rmtree(path, ignore_errors=True)
