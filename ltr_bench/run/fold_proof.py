"""Proving a finished cell's data unchanged without loading it: a note per fold of what it was
made from and the split fingerprints that gave, ``<results>/.folds/<proof key>.fold.json``.

A finished record is reused only on the data it was computed on (its recorded split
fingerprints, :meth:`ltr_bench.folds.Fold.fingerprints`). Loading the fold to recompute them
costs a re-run whose cells are all finished most of its time (parsing or mapping, hashing
every array). The cheaper proof: each time the harness loads a fold it notes the fold's
inputs (:func:`ltr_bench.data.inputs.fold_inputs`: each source file's path, size, mtime and
head/tail hash, the key the parsed-data cache itself trusts; for generated data the format
versions, the name, options and seed being in the proof key) read before *and* after the
load - the note is written only when they are equal, so it never pairs inputs with data
read from other ones - together with the fingerprints of the fold that came out. A later
run whose inputs read the same and whose records carry those fingerprints reuses them
without loading anything; anything else (no note, a file touched, renamed, replaced, added
or removed, another format version, an unreadable note) falls back to loading the fold and
comparing, as before.

The proof key covers everything else that shapes a fold (:func:`proof_key`): dataset
source, fold, seed, resolved options and the dataset identity (click simulation included).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from ltr_bench.results import ResultsWriteError, atomic_write_bytes
from ltr_bench.run.cells import Cell
from ltr_bench.run.plan import canonical_json

__all__ = ["FOLDER", "fold_inputs_of", "proof_key", "proven_fingerprints", "remember"]

#: the store's subfolder of fold notes
FOLDER = ".folds"


def proof_key(cell: Cell) -> str:
    """sha256 (hex) of what, besides its input files, determines a cell's fold."""
    what = {
        "source": cell.dataset_source,
        "fold": cell.fold,
        "seed": cell.seed,
        "options": cell.dataset_options,
        "identity": cell.dataset_identity,
        "data_dir": str(cell.data_dir or ""),
    }
    return hashlib.sha256(canonical_json(what).encode()).hexdigest()


def _note_path(root: Path, cell: Cell) -> Path:
    return Path(root) / FOLDER / f"{proof_key(cell)[:40]}.fold.json"


def fold_inputs_of(cell: Cell) -> dict[str, Any] | None:
    """The cell's fold inputs now (:func:`ltr_bench.data.inputs.fold_inputs`); None when they
    cannot be read (a missing file: loading the fold reports it properly)."""
    from ltr_bench.data.inputs import fold_inputs

    try:
        return fold_inputs(
            cell.dataset_source, cell.fold, data_dir=cell.data_dir, cache_dir=cell.cache_dir
        )
    except Exception:  # noqa: BLE001 - no proof; the load that follows says what is wrong
        return None


def proven_fingerprints(root: Path, cell: Cell) -> dict[str, str] | None:
    """The split fingerprints of the cell's fold as noted for its inputs as they read now;
    None without a note for these very inputs."""
    try:
        doc = json.loads(_note_path(root, cell).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("fingerprints"), dict):
        return None
    inputs = fold_inputs_of(cell)
    if inputs is None or doc.get("inputs") != json.loads(json.dumps(inputs)):
        return None
    fps = doc["fingerprints"]
    if not fps or not all(isinstance(v, str) for v in fps.values()):
        return None
    return dict(fps)


def remember(root: Path, cell: Cell, inputs_before: dict[str, Any] | None, fold) -> None:
    """Note the fold loaded for ``cell`` with its inputs, when its files read the same before
    the load (``inputs_before``) and now (the cache folder's state is the one after the load,
    which may have written entries); a note that cannot be written is no loss (the next run
    loads the fold)."""
    inputs = fold_inputs_of(cell)
    if inputs is None or inputs_before is None:
        return
    if {**inputs, "entries": None} != {**inputs_before, "entries": None}:
        return
    doc = {"inputs": inputs, "fingerprints": dict(fold.fingerprints())}
    with contextlib.suppress(ResultsWriteError, OSError):
        atomic_write_bytes(
            _note_path(root, cell), (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
        )


def proven_same(root: Path, cell: Cell, previous: list) -> bool:
    """Every record of ``previous`` (the finished records of the cells sharing ``cell``'s
    fold; None for one not finished) is there and was computed on the data the fold's note
    proves unchanged (:func:`proven_fingerprints`)."""
    if not previous or any(p is None or not p.fingerprints for p in previous):
        return False
    fps = proven_fingerprints(root, cell)
    return fps is not None and all(p.fingerprints == fps for p in previous)


def all_proven(root: Path, cells: list[Cell], store) -> bool:
    """Every cell of ``cells`` is finished in ``store`` on data proven unchanged without
    loading it: a run of them would load nothing and compute nothing."""
    groups: dict[str, tuple[Cell, list]] = {}
    for c in cells:
        groups.setdefault(proof_key(c), (c, []))[1].append(store.get(c.key))
    return all(proven_same(root, first, recs) for first, recs in groups.values())
