"""Recognising a results folder on disk, whoever owns it: :func:`is_record_file`,
:func:`results_folder_of`.

A results folder (:class:`~ltr_bench.results.store.ResultStore`) has no marker file; what
identifies it is its finished records: ``<key>.json``, ``key`` the cell's SHA-256 (64
lower-case hex digits), a JSON object with the record's required fields
(:data:`~ltr_bench.results.record.REQUIRED_FIELDS`) whose ``key`` is the file's name. Beside
them the store keeps ``<key>.per_query.csv``, ``<key>.run.txt``, ``<key>.model.<token>/``,
``failures.log``, ``.mlflow/<key>.json`` (where a record is in MLflow), ``.folds/`` (what
each fold was loaded from: :mod:`ltr_bench.run.fold_proof`) and ``.claims/``.
The output rule (:func:`ltr_bench.cli.outputs.check_output_paths`) refuses to write any of
these, or anything else into such a folder, so that no command replaces another results
folder's record.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ltr_bench.results.record import REQUIRED_FIELDS

__all__ = ["is_record_file", "results_folder_of"]

#: a record file's name: the cell's key (SHA-256, hex) and ``.json``
RECORD_NAME = re.compile(r"[0-9a-f]{64}\.json")
#: a record file larger than this is not read to recognise it (records are a few KiB)
MAX_RECORD_BYTES = 16 * 1024 * 1024
#: record-named files read, at most, to decide whether a folder holds records
MAX_PROBES = 16
#: the store's own subfolders (notes and claims), whose parent is the results folder
STORE_SUBFOLDERS = (".mlflow", ".claims", ".folds")


def is_record_file(path: str | Path) -> bool:
    """``path`` is a regular file named ``<64 hex>.json`` holding a JSON object with the
    record's required fields and its own name as ``key`` (a finished or failed record, or a
    store's ``.mlflow`` note of one is told apart by its folder). Reads at most
    :data:`MAX_RECORD_BYTES`; an unreadable file is not a record."""
    path = Path(path)
    if not RECORD_NAME.fullmatch(path.name):
        return False
    try:
        if not path.is_file() or path.stat().st_size > MAX_RECORD_BYTES:
            return False
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return (
        isinstance(doc, dict)
        and all(name in doc for name in REQUIRED_FIELDS)
        and doc.get("key") == path.stem
    )


def _holds_records(folder: Path) -> bool:
    """``folder`` holds a record file (:func:`is_record_file`; at most :data:`MAX_PROBES`
    record-named files are read)."""
    try:
        names = [e.name for e in os.scandir(folder) if RECORD_NAME.fullmatch(e.name)]
    except OSError:
        return False
    return any(is_record_file(folder / name) for name in sorted(names)[:MAX_PROBES])


def results_folder_of(path: str | Path) -> Path | None:
    """The results folder that a file at ``path`` (existing or not; links resolved) would
    be part of: its folder when that holds finished records, or, for a file in ``.mlflow``
    or ``.claims``, that folder's parent when it does; a record file itself anywhere (a
    copy outside any store) is its own folder's. None otherwise."""
    real = Path(os.path.realpath(path))
    folder = real.parent
    if _holds_records(folder) or is_record_file(real):
        return folder
    if folder.name in STORE_SUBFOLDERS and _holds_records(folder.parent):
        return folder.parent
    return None
