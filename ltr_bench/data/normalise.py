"""Feature normalisation of loaded folds: LETOR's ``QueryLevelNorm``.

The LETOR 3.0 and 4.0 archives ship each dataset in versions; ``QueryLevelNorm`` has every
feature min-max scaled within each query. ltr-bench reads the raw files (for OHSUMED the
``Feature-min`` version) and derives the normalised features with the dataset option
``query_norm = true`` (:mod:`ltr_bench.data.loading`), so one copy of the data serves both.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ltr_bench.folds import Fold, Split

__all__ = ["normalised", "query_level_norm"]


def query_level_norm(X: np.ndarray, qid: np.ndarray) -> np.ndarray:
    """LETOR's ``QueryLevelNorm`` features: per query q and feature j,
    ``x'_ij = (x_ij - min_q x_.j) / (max_q x_.j - min_q x_.j)``, and 0 where the feature is
    constant within the query (the range is 0). ``X``: (n_docs, n_features); ``qid``:
    (n_docs,), each query's rows contiguous (as every loaded split has them). Returns a new
    float64 array in [0, 1]; ``X`` is not changed (it may be a read-only memory map)."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return X.copy()
    qid = np.asarray(qid)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    counts = np.diff(np.r_[starts, qid.size])
    lo = np.minimum.reduceat(X, starts, axis=0)
    span = np.maximum.reduceat(X, starts, axis=0) - lo
    out = X - np.repeat(lo, counts, axis=0)
    span_rows = np.repeat(span, counts, axis=0)
    np.divide(out, span_rows, out=out, where=span_rows > 0)
    out[span_rows <= 0] = 0.0
    return out


def normalised(fold: Fold) -> Fold:
    """``fold`` with every split's features query-level normalised (:func:`query_level_norm`)."""

    def norm(s: Split | None) -> Split | None:
        if s is None:
            return None
        X = query_level_norm(s.X, s.qid)
        return Split(name=s.name, X=X, y=s.y, qid=s.qid, extras=s.extras)

    return dataclasses.replace(
        fold, train=norm(fold.train), test=norm(fold.test), vali=norm(fold.vali)
    )
