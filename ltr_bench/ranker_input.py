"""Checking a ranker's input against the contract (:mod:`ltr_bench.ranker`): the shapes and
types of ``X``, ``y``, ``qid`` and the contiguity of query blocks.

Everything here is re-exported by :mod:`ltr_bench.ranker`; import it from there.
"""

from __future__ import annotations

from typing import overload

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

__all__ = ["RankerInputError", "check_ranking_input", "query_boundaries"]


class RankerInputError(ValueError):
    """Raised when X, y, qid or eval_set do not satisfy the ranker contract."""


def query_boundaries(qid: np.ndarray) -> np.ndarray:
    """Start offsets of the contiguous query blocks, plus ``len(qid)`` at the end.

    ``qid = [7, 7, 3, 3, 3]`` gives ``[0, 2, 5]``. Block ``i`` is rows
    ``b[i]:b[i+1]``. Raises :class:`RankerInputError` when a query id occurs in two
    separate blocks (rows of one query must be contiguous).
    """
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise RankerInputError(f"qid must be one-dimensional, got shape {qid.shape}")
    if qid.size == 0:
        return np.zeros(1, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    if np.unique(qid[starts]).size != starts.size:
        raise RankerInputError(
            "rows of a query must be contiguous, but some query id occurs in separate "
            "blocks; sort the rows by query id (a stable sort keeps the document order)"
        )
    bounds: np.ndarray = np.r_[starts, qid.size].astype(np.int64)
    return bounds


@overload
def check_ranking_input(
    X: ArrayLike,
    y: ArrayLike,
    qid: ArrayLike,
    *,
    n_features: int | None = None,
    require_qid: bool = True,
    dtype: DTypeLike = np.float64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
@overload
def check_ranking_input(
    X: ArrayLike,
    y: None = None,
    qid: ArrayLike | None = None,
    *,
    n_features: int | None = None,
    require_qid: bool = True,
    dtype: DTypeLike = np.float64,
) -> tuple[np.ndarray, None, np.ndarray | None]: ...
@overload
def check_ranking_input(
    X: ArrayLike,
    y: ArrayLike | None = None,
    qid: ArrayLike | None = None,
    *,
    n_features: int | None = None,
    require_qid: bool = True,
    dtype: DTypeLike = np.float64,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]: ...
def check_ranking_input(
    X: ArrayLike,
    y: ArrayLike | None = None,
    qid: ArrayLike | None = None,
    *,
    n_features: int | None = None,
    require_qid: bool = True,
    dtype: DTypeLike = np.float64,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Validate and convert ``X`` (and ``y``, ``qid``) to the contract's shapes.

    Returns ``(X, y, qid)`` with X a C-contiguous 2-D array of ``dtype``, y int64 (or None),
    qid int64 (or None). Raises :class:`RankerInputError` naming what is wrong: wrong
    dimensions, sparse matrices (named as such, never densified), complex or non-numeric
    values, zero features, mismatched lengths, NaN/inf, non-integer labels, non-contiguous
    queries, or a feature count different from ``n_features`` (the one seen in ``fit``).
    """
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):  # scipy.sparse: refuse, do not densify
        raise RankerInputError(
            f"X is a sparse matrix ({type(X).__name__}); rankers take dense arrays: pass "
            "X.toarray() (LETOR data is dense, see ltr_bench.data)"
        )
    X = np.asarray(X)
    if X.ndim != 2:
        raise RankerInputError(f"X must be 2-D (n_docs, n_features), got shape {X.shape}")
    if np.issubdtype(X.dtype, np.complexfloating):
        raise RankerInputError(
            f"X must be real, got complex dtype {X.dtype} (the imaginary "
            "part would be dropped silently)"
        )
    if not np.issubdtype(X.dtype, np.number) or X.dtype == np.bool_:
        raise RankerInputError(f"X must be numeric, got dtype {X.dtype}")
    if X.shape[1] == 0:
        raise RankerInputError(
            f"X has no features (shape {X.shape}); every document needs at least one feature"
        )
    X = np.ascontiguousarray(X, dtype=dtype)
    if not np.isfinite(X).all():
        raise RankerInputError("X contains NaN or infinite values")
    if n_features is not None and X.shape[1] != n_features:
        raise RankerInputError(
            f"X has {X.shape[1]} features, but the ranker was fitted with {n_features}"
        )
    n = X.shape[0]
    if y is not None:
        y_arr = np.asarray(y)
        if y_arr.shape != (n,):
            raise RankerInputError(f"y must have shape ({n},), got {y_arr.shape}")
        if not np.all(np.isfinite(y_arr.astype(np.float64))) or np.any(
            y_arr.astype(np.float64) != np.round(y_arr.astype(np.float64))
        ):
            raise RankerInputError("y must hold integer relevance labels")
        y = y_arr.astype(np.int64)
    if qid is None:
        if require_qid:
            raise RankerInputError("qid is required: one query id per row")
    else:
        qid = np.asarray(qid)
        if qid.shape != (n,):
            raise RankerInputError(f"qid must have shape ({n},), got {qid.shape}")
        qid = qid.astype(np.int64)
        query_boundaries(qid)  # raises on non-contiguous queries
    return X, y, qid
