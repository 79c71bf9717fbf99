"""The ranker contract every ranker (built-in or plugin) implements.

Contract (scikit-learn style)::

    fit(X, y, *, qid, eval_set=None) -> self
        X: array (n_docs, n_features); y: integer relevance labels (n_docs,);
        qid: query id per row (n_docs,), rows of one query contiguous;
        eval_set: None or (X_val, y_val, qid_val), the validation split.
    predict(X, *, qid=None) -> np.ndarray float64 (n_docs,)
        Higher score = more relevant. Scores are in the input row order.
    get_params(deep=True) / set_params(**params)   (from scikit-learn's BaseEstimator)

Conventions: ``__init__`` only stores its arguments; learned state ends in ``_``;
randomness comes from ``random_state``; ``predict`` before ``fit`` raises
:class:`NotFittedError` with a message that says so. A query with one document or with all
labels 0 must not crash a ranker.

Query-by-example data (``wine``, ``wdbc``): each row is ``[query features, document
features]`` (two blocks of equal width). A ranker that understands this declares
``RankerTags.query_dependent`` and has a ``query_dim`` parameter, which the harness sets to
the width of the query block; other rankers simply learn on the concatenated features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

__all__ = [
    "BaseRanker",
    "NotFittedError",
    "Ranker",
    "RankerInputError",
    "RankerTags",
    "check_ranking_input",
    "query_boundaries",
]


class RankerInputError(ValueError):
    """Raised when X, y, qid or eval_set do not satisfy the ranker contract."""


@dataclass(frozen=True)
class RankerTags:
    """What a ranker can do; the harness and ``check_ranker`` read these.

    requires_qid_at_predict: ``predict`` needs ``qid`` (e.g. per-query normalisation).
    uses_eval_set: ``fit`` uses the validation split (early stopping, model selection).
    query_dependent: understands query-by-example rows (see module docstring).
    deterministic: the same ``random_state`` gives identical scores.
    thread_param: name of the parameter that sets the number of threads, or None.
    """

    requires_qid_at_predict: bool = False
    uses_eval_set: bool = False
    query_dependent: bool = False
    deterministic: bool = True
    thread_param: str | None = None


try:  # typing.Protocol for static checkers; the harness only relies on duck typing.
    from typing import Protocol, runtime_checkable

    @runtime_checkable
    class Ranker(Protocol):
        def fit(self, X, y, *, qid, eval_set=None): ...

        def predict(self, X, *, qid=None) -> np.ndarray: ...

        def get_params(self, deep: bool = True) -> dict: ...

        def set_params(self, **params): ...

except ImportError:  # pragma: no cover
    Ranker = object  # type: ignore[misc,assignment]


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
    return np.r_[starts, qid.size].astype(np.int64)


def check_ranking_input(X, y=None, qid=None, *, n_features: int | None = None,
                        require_qid: bool = True, dtype=np.float64):
    """Validate and convert ``X`` (and ``y``, ``qid``) to the contract's shapes.

    Returns ``(X, y, qid)`` with X a C-contiguous 2-D array of ``dtype``, y int64 (or None),
    qid int64 (or None). Raises :class:`RankerInputError` naming what is wrong: wrong
    dimensions, mismatched lengths, NaN/inf, non-integer labels, non-contiguous queries, or a
    feature count different from ``n_features`` (the one seen in ``fit``).
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise RankerInputError(f"X must be 2-D (n_docs, n_features), got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number):
        raise RankerInputError(f"X must be numeric, got dtype {X.dtype}")
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


class BaseRanker(BaseEstimator):
    """Base class: scikit-learn parameter handling (get/set_params, clone) plus tags.

    Subclasses implement ``fit`` and ``predict`` and override :meth:`ranker_tags` when they
    differ from the defaults.
    """

    def ranker_tags(self) -> RankerTags:
        return RankerTags()

    def _check_fitted(self, *attributes: str) -> None:
        attrs = attributes or tuple(
            k for k in vars(self) if k.endswith("_") and not k.startswith("_")
        )
        if not attrs or any(not hasattr(self, a) for a in attrs):
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet: call fit(X, y, qid=...) "
                "before predict"
            )
