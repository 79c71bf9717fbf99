"""Loading a saved model folder: :func:`load_model` and :class:`LoadedModel`.

Nothing is unpickled: the manifest is JSON, native files are read by their library's own
loader (LightGBM model text, XGBoost UBJSON, CatBoost ``.cbm``, ``torch.load(...,
weights_only=True)``, ``np.load(..., allow_pickle=False)``). Only a ranker registered under
the manifest's name (an installed plugin) is imported; a manifest naming an import path
(``module:Class``) is refused, so a model folder never makes us import a module it names.

The folder is untrusted (:mod:`.folder`): only regular files inside it are read, only those
its manifest lists, each checked by size and SHA-256 as it is copied to a private folder,
and the ranker's ``load_native`` reads that copy. What it loaded is then checked against the
manifest and itself (:func:`check_loaded`: feature counts, finite learned numbers, a probe
scored) before any work, so a folder whose files are consistent with the manifest but not
with each other is refused by name, never a traceback or a wrong graph later.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.models.folder import (
    MAX_MANIFEST_BYTES,
    copy_listed,
    open_folder,
    read_member,
    verify_listed,
)
from ltr_bench.models.manifest import MANIFEST, NATIVE, ModelLoadError, parse_manifest
from ltr_bench.ranker import RankerInputError, can_save

__all__ = ["LoadedModel", "check_loaded", "load_model", "read_manifest"]

#: rows of the probe :func:`check_loaded` scores (one query)
PROBE_ROWS = 4


@dataclass
class LoadedModel:
    """A model loaded from ``folder``: ``ranker`` (fitted, ready to ``predict``) and its
    ``manifest`` (dict, :mod:`ltr_bench.models.manifest`)."""

    ranker: Any  # a fitted ranker (the contract's duck type)
    manifest: dict
    folder: Path
    #: what the user called the model (``--model runs:/<id>/model``) when the folder is a
    #: temporary download; messages name that instead of the folder (:attr:`shown`)
    name: str = ""

    @property
    def shown(self) -> str:
        """How messages name the model: ``name`` when given, else the folder."""
        return self.name or str(self.folder)

    @property
    def called(self) -> str:
        """``the model <name>``, else ``the model in <folder>`` (for messages)."""
        return f"the model {self.name}" if self.name else f"the model in {self.folder}"

    @property
    def n_features(self) -> int | None:
        return self.manifest.get("n_features")

    @property
    def preprocessing(self) -> dict:
        return self.manifest["preprocessing"]

    def predict(self, X, qid=None) -> np.ndarray:
        """Scores (float64, ``(n_docs,)``, input row order) of the rows ``X`` (``(n_docs,
        n_features)``, raw features as in the data file) with query ids ``qid``.

        Applies the manifest's preprocessing first: with ``query_norm`` each query's features
        are min-max scaled (LETOR ``QueryLevelNorm``, :func:`ltr_bench.data.normalise.
        query_level_norm`; needs ``qid``, rows of a query contiguous), exactly as the harness
        did before ``fit``; then the ranker's ``predict(X, qid=qid)``. A feature count other
        than the model's raises :class:`~ltr_bench.ranker.RankerInputError` naming both."""
        X = np.asarray(X)
        n = self.n_features
        if X.ndim == 2 and n is not None and X.shape[1] != n:
            raise RankerInputError(
                f"the rows have {X.shape[1]} features, but {self.called} was fitted on {n}"
            )
        if self.preprocessing["query_norm"]:
            if qid is None:
                raise RankerInputError(
                    f"{self.called} expects query-normalised features "
                    "(query_norm): pass qid so each query can be normalised"
                )
            from ltr_bench.data.normalise import query_level_norm
            from ltr_bench.ranker import query_boundaries

            query_boundaries(np.asarray(qid))  # raises when a query's rows are not contiguous
            X = query_level_norm(X, qid)
        return np.asarray(self.ranker.predict(X, qid=qid), dtype=np.float64)


def _manifest_of(root_fd: int, folder: Path) -> dict:
    data = read_member(
        root_fd,
        folder,
        MANIFEST,
        limit=MAX_MANIFEST_BYTES,
        missing=f": {folder} is not a saved ltr-bench model (or an incomplete one)",
    )
    return parse_manifest(data, folder / MANIFEST)


def read_manifest(folder) -> dict:
    """The manifest of the model in ``folder``, checked (:func:`~.manifest.parse_manifest`),
    with every listed file checked by size and SHA-256 and nothing unlisted under
    ``native/`` (:mod:`.folder`). Raises :class:`ModelLoadError` naming the file and the
    cause."""
    folder = Path(folder)
    root_fd = open_folder(folder)
    try:
        manifest = _manifest_of(root_fd, folder)
        verify_listed(root_fd, folder, manifest["files"], folder / MANIFEST)
    finally:
        os.close(root_fd)
    return manifest


def load_model(folder) -> LoadedModel:
    """Load the model saved in ``folder`` (by :func:`ltr_bench.models.save_model`).

    Raises :class:`ModelLoadError` naming the file and the cause: the folder or its manifest
    is missing, the manifest is damaged (a field of the wrong type or out of range), a file
    is damaged (size or SHA-256 differs from the manifest), is not a regular file of the
    folder (a link, a pipe, a device, a folder) or is not listed in the manifest, the format
    is newer than this ltr-bench reads, the ranker's plugin is not installed (with the
    distribution and version that wrote it), or the ranker's ``load_native`` fails."""
    from ltr_bench.registry import RegistryError, get_entry

    folder = Path(folder)
    root_fd = open_folder(folder)
    try:
        manifest = _manifest_of(root_fd, folder)
        name = manifest["ranker"]
        where = f"the model's manifest {folder / MANIFEST}"
        wrote = " ".join(manifest.get(k) or "?" for k in ("distribution", "distribution_version"))
        if ":" in name:
            raise ModelLoadError(
                f"{where} names the ranker by import path {name!r}; only registered rankers "
                "(`ltr-bench rankers`) are loaded from a model folder"
            )
        try:
            cls: Any = get_entry(name).load()
        except RegistryError as exc:
            raise ModelLoadError(
                f"{where}: the model's ranker {name!r} (written by {wrote}) is not available: "
                f"{exc}; install the plugin that provides it"
            ) from None
        if not can_save(cls):
            raise ModelLoadError(
                f"{where}: the installed ranker {name!r} ({cls.__name__}) cannot load saved models"
            )
        try:
            private = Path(tempfile.mkdtemp(prefix="ltr-bench-model-"))  # mode 0700
        except OSError as exc:
            raise _no_private_copy(folder, exc) from None
        try:
            try:
                copy_listed(root_fd, folder, manifest["files"], folder / MANIFEST, private)
                (private / NATIVE).mkdir(exist_ok=True)
            except OSError as exc:  # writing the copy (reading the folder is ModelLoadError)
                raise _no_private_copy(folder, exc) from None
            ranker = _load_native(cls, private / NATIVE, manifest, folder, wrote)
            check_loaded(ranker, manifest, folder)
        finally:
            shutil.rmtree(private, ignore_errors=True)
    finally:
        os.close(root_fd)
    return LoadedModel(ranker=ranker, manifest=manifest, folder=folder)


def _no_private_copy(folder: Path, exc: OSError) -> ModelLoadError:
    from ltr_bench.results.files import reason_of

    return ModelLoadError(
        f"{folder}: its checked files could not be copied to a private folder in "
        f"{tempfile.gettempdir()} for loading ({reason_of(exc)}); free space there or set "
        "TMPDIR to another folder"
    )


def _load_native(cls, native: Path, manifest: dict, folder: Path, wrote: str):
    """``cls.load_native`` on the checked copy ``native``; a failure is one message naming
    the model folder (the copy's path replaced by the folder's own)."""
    try:
        return cls.load_native(native, manifest)
    except Exception as exc:  # any library's failure becomes one message naming the folder
        text = str(exc).replace(str(native), str(folder / NATIVE))
        raise ModelLoadError(
            f"{folder}: the {manifest['ranker']!r} model (written by {wrote}) could not be "
            f"loaded: {type(exc).__name__}: {text}"
        ) from None


def check_loaded(ranker, manifest: dict, folder: Path) -> None:
    """Refuse (:class:`ModelLoadError`, naming ``folder``) a loaded ranker that disagrees with
    its manifest or with itself, before any work:

    * its ``n_features_in_`` is the manifest's ``n_features``;
    * a probe of :data:`PROBE_ROWS` rows of ``n_features`` values in [0, 1) (one query, no
      zeros) is scored by ``predict`` into :data:`PROBE_ROWS` finite scores: arrays of the
      wrong shape (a weight vector of another length, a matrix where a vector belongs) and a
      library model of another width fail here (the tree rankers' ``load_native`` says more
      first); a NaN or infinite weight makes a score NaN, and the message names the learned
      arrays (fitted attributes, a scaler's ``mean_`` / ``scale_``, a torch module's
      parameters) that hold NaN or infinity. Learned arrays are not required to be finite
      as such: some are diagnostics (``lgmml``'s ``anchor_ndcg_`` may be NaN)."""
    name = manifest["ranker"]

    def refuse(what: str) -> ModelLoadError:
        return ModelLoadError(
            f"{folder}: the {name!r} model's files do not agree with each other or with its "
            f"manifest: {what}"
        )

    n = manifest.get("n_features")
    fitted_n = getattr(ranker, "n_features_in_", None)
    if n is not None and fitted_n is not None and fitted_n != n:
        raise refuse(f"the fitted state says {fitted_n!r} features, the manifest {n}")
    if n is None:
        return
    X = np.random.default_rng(0).random((PROBE_ROWS, int(n)))
    try:
        scores = np.asarray(ranker.predict(X, qid=np.zeros(PROBE_ROWS, np.int64)))
    except Exception as exc:  # any library's failure on a probe means the files disagree
        raise refuse(
            f"scoring a probe of {PROBE_ROWS} rows of {n} features failed: "
            f"{type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    if scores.shape != (PROBE_ROWS,):
        raise refuse(
            f"a probe of {PROBE_ROWS} rows of {n} features gave scores of shape "
            f"{scores.shape}, not ({PROBE_ROWS},)"
        )
    if not np.isfinite(scores.astype(np.float64)).all():
        bad = [
            f"{attr} ({array.size - np.count_nonzero(np.isfinite(array))} of {array.size})"
            for attr, array in _learned_arrays(ranker)
            if not np.isfinite(array).all()
        ]
        culprits = f": NaN or infinite learned values in {', '.join(bad)}" if bad else ""
        raise refuse(
            f"a probe of {PROBE_ROWS} rows of {n} features scored NaN or infinite{culprits}"
        )


def _learned_arrays(ranker):
    """``(name, float array)`` of the learned numbers of ``ranker`` (see :func:`check_loaded`)."""
    for attr, value in vars(ranker).items():
        if not attr.endswith("_") or attr.startswith("_"):
            continue
        if isinstance(value, np.ndarray):
            if value.dtype.kind in "fc":
                yield attr, value
            continue
        if callable(getattr(value, "named_parameters", None)):  # a torch module
            for pname, param in value.named_parameters():
                yield f"{attr}.{pname}", param.detach().cpu().numpy()
            continue
        if hasattr(value, "get_params") and hasattr(value, "__dict__"):  # a scikit-learn part
            for sub, arr in vars(value).items():
                if sub.endswith("_") and isinstance(arr, np.ndarray) and arr.dtype.kind in "fc":
                    yield f"{attr}.{sub}", arr
