"""Saving and loading a fitted L-GMML ranker: numbers only, no pickle.

Everything goes through :mod:`ltr_bench.model_state` (``state.npz`` read with
``allow_pickle=False`` and ``state.json``): the fitted attributes of
:class:`~ltr_bench_lgmml.ranker.LGMMLRanker`, with its two objects replaced by their fields:
``metric_bank_`` (:class:`~ltr_bench_lgmml.scoring.MetricBank`: ``alpha`` (m,), ``V`` (d, K),
``g`` (K,), ``seg`` (m,), ``anchors`` (m, d) or None, ``score_form``, ``dist_scale`` (m,))
and ``scaler_`` (:class:`~ltr_bench_lgmml.preprocessing.FeatureScaler`: ``kind``, ``shift``
(d,), ``scale`` (d,)). Rebuilt from the same arrays, the loaded ranker scores bit for bit as
the saved one (the bank's derived scoring layout is recomputed from them on first use).
"""

from __future__ import annotations

import dataclasses

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.ranker import BaseRanker

from .preprocessing import FeatureScaler
from .scoring import MetricBank

__all__ = ["SavedLGMML", "load_lgmml", "save_lgmml"]


class SavedLGMML(BaseRanker):
    """``BaseRanker`` with the contract's save and export hooks of
    :class:`~ltr_bench_lgmml.ranker.LGMMLRanker` (its base class)."""

    def save_native(self, folder) -> dict:
        """The metric bank, feature scaling, weights and diagnostics as ``state.npz`` /
        ``state.json``."""
        self._check_fitted("metric_bank_", "weights_")
        return save_lgmml(self, folder)

    @classmethod
    def load_native(cls, folder, manifest):
        return load_lgmml(cls, folder, manifest)

    def export_onnx(self, kit):
        """``predict`` as an ONNX graph (:mod:`.onnx_export`)."""
        self._check_fitted("metric_bank_", "weights_", "scaler_")
        from .onnx_export import export_lgmml

        return export_lgmml(self, kit)


def save_lgmml(ranker, folder) -> dict:
    """Write ``ranker``'s fitted state to ``folder``; returns ``{}`` (no manifest extras)."""
    replace = {"metric_bank_": _fields(ranker.metric_bank_), "scaler_": _fields(ranker.scaler_)}
    return save_fitted_state(ranker, folder, replace=replace)


def load_lgmml(cls, folder, manifest):
    """The ranker :func:`save_lgmml` wrote in ``folder``."""
    rebuild = {
        "metric_bank_": lambda state: MetricBank(**state),
        "scaler_": lambda state: FeatureScaler(**state),
    }
    return load_fitted_state(cls, folder, manifest, rebuild=rebuild)


def _fields(obj) -> dict:
    """A dataclass's fields (its state), without derived caches such as ``_prep``."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
