"""Models: the saved-model format, saving a fitted ranker and loading it back.

Owns the model folder (a JSON manifest, :mod:`.manifest`, beside the ranker's own native
files), the atomic writer (:func:`save_model`, :mod:`.writer`), the loader
(:func:`load_model`, :class:`LoadedModel`, :mod:`.loading`) and its reader of an untrusted
folder (:mod:`.folder`: only the regular files the manifest lists, checked before use). The
ranker-specific part is the contract's ``save_native`` / ``load_native``
(:class:`ltr_bench.ranker.BaseRanker`), written beside each ranker. May import the root
contract, ``data`` (the preprocessing a model expects, e.g. ``query_level_norm``),
``evaluation`` and ``results`` (its atomic-write conventions); never unpickles a file it is
handed.

Public API::

    save_model(ranker, folder, *, ranker_name, preprocessing=None, data_fingerprint=None) -> Path
    load_model(folder) -> LoadedModel        # .ranker, .manifest, .predict(X, qid)
    ModelLoadError, ModelSaveError, FORMAT_VERSION
"""

from ltr_bench.models.loading import LoadedModel, load_model, read_manifest
from ltr_bench.models.manifest import (
    FORMAT_VERSION,
    MANIFEST,
    ModelLoadError,
    ModelSaveError,
)
from ltr_bench.models.writer import save_model

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST",
    "LoadedModel",
    "ModelLoadError",
    "ModelSaveError",
    "load_model",
    "read_manifest",
    "save_model",
]
