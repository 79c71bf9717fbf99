"""Saving and loading a fitted ``neural`` ranker: a torch ``state_dict`` and numbers, no pickle.

Files (in the model's ``native/`` folder):

* ``scorer.pt``: ``torch.save(model_.state_dict())``: the scorer's parameters and buffers
  (float64: ``fit`` leaves the model in float64), read back with
  ``torch.load(..., weights_only=True, map_location="cpu")``, which refuses anything but
  tensors and plain containers;
* ``state.npz`` / ``state.json`` (:mod:`ltr_bench.model_state`): the other fitted
  attributes: ``feature_mean_`` / ``feature_scale_`` (d,) (the training standardisation of
  the transformed features, ``(transform(x) - mean) / scale``), ``curves_``, ``info_``,
  ``n_features_in_``; and ``effective_``: the parameters the model was really trained
  with when ``config`` named an allRank config (``get_params()`` of the ranker the config
  produced; None otherwise), so a loaded model needs neither the config file nor its
  interpretation again.

What else ``fit`` learned is in the module's structure: the scorer kind and its arguments
(``scorer``, ``scorer_args``, ``dim``, ``activation``, ``tau``, ``query_dim``: parameters) and,
for ``quadratic``, the products kept (``ia``, ``ib``, their ``mu`` / ``inv_sd``: buffers in the
``state_dict``). Loading rebuilds the module from the parameters (the quadratic one from its
buffers' shapes), converts it to float64, loads the ``state_dict`` strictly (every key, every
shape) and sets it to eval mode: ``predict`` is bit for bit the saved ranker's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench_neural.search_space import scorer_args_of

__all__ = ["SCORER_FILE", "load_neural", "save_neural"]

SCORER_FILE = "scorer.pt"

#: attributes ``fit_with_config`` copies from the ranker the config produced
_SHARED = ("n_features_in_", "model_", "feature_mean_", "feature_scale_", "curves_")


def save_neural(ranker: Any, folder: Path) -> dict[str, Any]:
    """Write ``ranker``'s fitted model to ``folder``; returns the manifest extras (scorer,
    the feature transform ``predict`` applies itself, torch's version)."""
    import torch

    folder = Path(folder)
    torch.save(ranker.model_.state_dict(), folder / SCORER_FILE)
    work = getattr(ranker, "effective_", None)
    replace = {"effective_": None if work is None else work.get_params(deep=False)}
    save_fitted_state(ranker, folder, skip=("model_",), replace=replace)
    used = work if work is not None else ranker
    return {
        "scorer": used.scorer,
        "feature_transform": used.feature_transform,
        "library": "torch",
        "library_version": torch.__version__.split("+")[0],
    }


def load_neural(cls: Any, folder: Path, manifest: dict[str, Any]) -> Any:
    """The ranker :func:`save_neural` wrote in ``folder``."""
    import torch

    folder = Path(folder)
    ranker = load_fitted_state(cls, folder, manifest)
    work = None
    if ranker.effective_ is not None:
        work = cls(**ranker.effective_)
        for name in _SHARED:
            if name != "model_":
                setattr(work, name, getattr(ranker, name))
        work.info_ = dict(ranker.info_)
        ranker.effective_ = work
    else:
        del ranker.effective_  # predict reads effective_ only when a config made one
    state = torch.load(folder / SCORER_FILE, weights_only=True, map_location="cpu")
    ranker.model_ = _rebuild(work if work is not None else ranker, state)
    if work is not None:
        work.model_ = ranker.model_
    return ranker


def _rebuild(ranker, state: dict):
    """The scorer module of ``ranker``'s parameters with ``state`` loaded (float64, eval)."""
    import torch

    from ltr_bench_neural.scorers import SCORERS, ScorerContext
    from ltr_bench_neural.training import _dtype

    dtype = _dtype(ranker.dtype)
    n = int(ranker.n_features_in_)
    if ranker.scorer == "quadratic":  # its structure (the products kept) came from the data
        from ltr_bench_neural.scorers.quadratic import QuadraticScorer

        ia, ib = state["ia"].numpy(), state["ib"].numpy()
        model = QuadraticScorer(n, ia, ib, np.zeros(ia.size), np.ones(ia.size), dtype)
    else:
        ctx = ScorerContext(
            n_features=n,
            X_train=np.zeros((1, n)),  # read by no scorer but the quadratic one
            y_train=np.zeros(1, dtype=np.int64),
            query_dim=ranker.query_dim,
            dim=int(ranker.dim),
            activation=ranker.activation,
            tau=float(ranker.tau),
            rho=float(ranker.rho),
            generator=torch.Generator().manual_seed(0),  # initial values, overwritten below
            dtype=dtype,
        )
        # the shortcuts (width, depth, dropout) resolved as fit resolved them
        model = SCORERS[ranker.scorer].build_function()(ctx, **scorer_args_of(ranker))
    model = model.double()
    model.load_state_dict(state, strict=True)
    return model.eval()
