"""Shared pieces of the classical LETOR baselines (:mod:`.ranksvm`, :mod:`.adarank`,
:mod:`.rankboost`, :mod:`.coordinate_ascent`).

- parameter checks that raise ``ValueError`` naming the parameter (``validate_params`` calls
  them before any data is loaded, so a bad value is exit 2);
- :func:`check_fit_input`: the contract's checks of ``X, y, qid`` and of ``eval_set``;
- :func:`varied_queries`: which training queries have label differences. A query whose
  labels are all equal (all 0, or all 2) has no pair of documents to order and every metric
  of it is the same for every ranking, so each baseline skips it, counts it
  (``n_queries_skipped`` in ``fitted_info``) and warns once per fit;
- :func:`parse_metric` / :func:`per_query_metric`: the training metric of AdaRank and
  Coordinate Ascent (``ndcg@k`` or ``map``), evaluated with
  :func:`ltr_bench.evaluation.metrics.evaluate` (gain ``2^rel - 1``, ties averaged over
  their orderings, a query with no relevant document scores 1 -- such queries are skipped
  anyway, see above).

All four run on one thread: numpy's BLAS is limited with :func:`ltr_bench.timing.thread_limit`
during fit and predict, and liblinear (RankSVM) is single-threaded.
"""

from __future__ import annotations

import numbers
import re
import warnings

import numpy as np

from ltr_bench.ranker import RankerInputError, check_ranking_input

__all__ = [
    "METRIC_FORMS",
    "check_fit_input",
    "check_int",
    "check_real",
    "kept_rows",
    "parse_metric",
    "per_query_metric",
    "seed_of",
    "varied_queries",
    "warn_skipped",
]

#: the training metrics AdaRank and Coordinate Ascent understand (``k`` a positive integer)
METRIC_FORMS = ("ndcg@k", "map")
_NDCG = re.compile(r"^ndcg@([0-9]+)$")


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; ``ValueError`` naming ``name`` otherwise."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(name: str, value, *, minimum: float = 0.0, allow_equal: bool = True) -> float:
    """``value`` as a finite float >= ``minimum`` (> when not ``allow_equal``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    ok = ok and bool(np.isfinite(float(value)))
    if not ok or float(value) < minimum or (float(value) == minimum and not allow_equal):
        bound = f">= {minimum:g}" if allow_equal else f"> {minimum:g}"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def seed_of(random_state) -> int | None:
    """``random_state`` (None or an int >= 0) checked; the int (or None) is returned."""
    if random_state is None:
        return None
    return check_int("random_state", random_state, 0)


def parse_metric(metric) -> tuple[str, str]:
    """``(canonical name for evaluate, display)`` of a training metric.

    Accepts ``"ndcg@k"`` (k >= 1, e.g. ``"ndcg@10"``) and ``"map"``, case-insensitive and
    without surrounding blanks. Anything else raises ``ValueError`` naming the valid forms.
    """
    text = metric.strip().lower() if isinstance(metric, str) else None
    if text == "map":
        return "map", "MAP"
    match = _NDCG.match(text) if text is not None else None
    if match and int(match.group(1)) >= 1:
        k = int(match.group(1))
        return f"ndcg@{k}", f"NDCG@{k}"
    raise ValueError(
        f"metric must be one of {', '.join(METRIC_FORMS)} (k a positive integer, e.g. "
        f"'ndcg@10'), got {metric!r}"
    )


def check_fit_input(X, y, qid, eval_set):
    """``(X, y, qid, eval_set)`` checked and converted (float64 X, int64 y and qid); the
    validation split, when given, must be a triple with the training feature count."""
    X, y, qid = check_ranking_input(X, y, qid)
    if eval_set is not None:
        if not isinstance(eval_set, (tuple, list)) or len(eval_set) != 3:
            raise RankerInputError("eval_set must be a tuple (X_val, y_val, qid_val)")
        Xv, yv, qv = check_ranking_input(*eval_set, n_features=X.shape[1])
        eval_set = (Xv, yv, qv)
    return X, y, qid, eval_set


def varied_queries(y: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Boolean (n_queries,): the query has at least two different labels.

    ``bounds`` from :func:`ltr_bench.ranker.query_boundaries`. An empty input gives an empty
    mask."""
    if y.size == 0:
        return np.zeros(0, dtype=bool)
    starts = bounds[:-1]
    return np.maximum.reduceat(y, starts) > np.minimum.reduceat(y, starts)


def warn_skipped(name: str, n_skipped: int, n_queries: int) -> None:
    """One ``UserWarning`` saying how many training queries had no label differences."""
    if n_skipped:
        warnings.warn(
            f"{name}: {n_skipped} of {n_queries} training queries have all labels equal "
            "(or a single document): no pairs to order; they are skipped",
            UserWarning,
            stacklevel=3,
        )


def kept_rows(bounds: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Row indices of the queries selected by the boolean ``keep`` (in row order)."""
    sizes = np.diff(bounds)
    row_keep = np.repeat(keep, sizes)
    return np.flatnonzero(row_keep)


def per_query_metric(metric: str, y: np.ndarray, scores: np.ndarray, qid: np.ndarray):
    """(n_queries,) values of ``metric`` (canonical, from :func:`parse_metric`) per query in
    row order, via :func:`ltr_bench.evaluation.metrics.evaluate` (ties averaged)."""
    from ltr_bench.evaluation.metrics import evaluate

    return evaluate(y, scores, qid, (metric,), per_query=True, empty_query=1.0)[metric]
