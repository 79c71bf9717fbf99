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


#: Rows normalised at a time: bounds the temporaries to a few chunk-sized arrays beside the
#: output (MSLR-WEB30K's 2.27M x 136 training split would otherwise need three full copies).
CHUNK_ROWS = 1 << 16


def query_level_norm(X: np.ndarray, qid: np.ndarray, *, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """LETOR's ``QueryLevelNorm`` features: per query q and feature j,
    ``x'_ij = (x_ij - min_q x_.j) / (max_q x_.j - min_q x_.j)``, and 0 where the feature is
    constant within the query (the range is 0). ``X``: (n_docs, n_features); ``qid``:
    (n_docs,), each query's rows contiguous (as every loaded split has them). Returns a new
    float64 array in [0, 1]; ``X`` is not changed (it may be a read-only memory map).

    Whole queries are processed together in chunks of about ``chunk_rows`` rows (a query
    longer than that is one chunk), vectorised within a chunk with ``np.minimum.reduceat``."""
    qid = np.asarray(qid)
    n = qid.size
    out = np.empty((n, np.shape(X)[1]), dtype=np.float64)
    if n == 0:
        return out
    bounds = np.r_[np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]), n]
    q = 0
    while q < bounds.size - 1:
        first = bounds[q]
        # the last query boundary within chunk_rows of the chunk's start, at least one query on
        end = max(int(np.searchsorted(bounds, first + chunk_rows, side="right")) - 1, q + 1)
        block = np.asarray(X[first : bounds[end]], dtype=np.float64)
        starts = bounds[q:end] - first
        counts = np.diff(bounds[q : end + 1])
        lo = np.minimum.reduceat(block, starts, axis=0)
        span = np.repeat(np.maximum.reduceat(block, starts, axis=0) - lo, counts, axis=0)
        res = out[first : bounds[end]]
        np.subtract(block, np.repeat(lo, counts, axis=0), out=res)
        np.divide(res, span, out=res, where=span > 0)
        res[span <= 0] = 0.0
        q = end
    return out


def normalised(fold: Fold) -> Fold:
    """``fold`` with every split's features query-level normalised (:func:`query_level_norm`)."""

    def norm(s: Split) -> Split:
        X = query_level_norm(s.X, s.qid)
        return Split(name=s.name, X=X, y=s.y, qid=s.qid, extras=s.extras)

    vali = None if fold.vali is None else norm(fold.vali)
    return dataclasses.replace(fold, train=norm(fold.train), test=norm(fold.test), vali=vali)
