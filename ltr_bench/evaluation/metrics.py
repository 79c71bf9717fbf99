"""Ranking metrics: NDCG@k, MAP(@k), MRR(@k), ERR@k, Precision@k and Recall@k, per query.

Pure numpy, no I/O. One entry point, :func:`evaluate`, sorts the input once and computes
every requested metric for every query without a Python loop over queries;
:func:`evaluate_conventions` gives what a result record holds (every metric under both
empty-query conventions, means and per-query values). Metric names, their definitions and
edge cases are one table, :data:`ltr_bench.evaluation.metric_keys.METRIC_TABLE`; its names are
re-exported here.

Conventions (the table's text is :data:`CONVENTIONS`, logged with every run)
---------------------------------------------------------------------------
* Labels are non-negative integers. A document is *relevant* when its label is >= 1
  (MAP, MRR, Precision, Recall and the empty-query test).
* Gain ``2^rel - 1``; discount ``1 / log2(rank + 1)``, rank 1-based (NDCG).
* ERR stop probability ``R = (2^g - 1) / 2^g_max`` (Chapelle et al. 2009); ``g_max`` is
  ``max_label``, by default the largest label in ``y_true`` of the whole call. Pass the
  dataset's maximum grade (e.g. 4 for MSLR) so that ERR does not depend on which labels
  happen to occur in one split.
* Empty queries (no document with label >= 1): NDCG, MAP, MRR, ERR and Recall take the
  value ``empty_query`` (default 1.0: LightGBM, XGBoost and allRank, hence published MSLR
  numbers; 0.0 is the trec_eval / ranx convention; ``nan`` leaves such queries out of the
  mean, like trec_eval, which skips them). For NDCG, MAP and Recall the value is 0/0; for
  MRR and ERR every ranking of such a query scores 0, so the query says nothing about the
  ranker; one rule for all keeps their per-query rows aligned. Note ERR's best value for a
  normal query is below 1 (at most ``1 - 2^-g_max`` at rank 1), so with ``empty_query=1``
  an empty query scores above any real one; use ``empty_query=0`` to compare with the
  Yahoo! challenge ERR, which has no special case. Precision@k is not affected: it counts
  hits among the top k, a well defined 0 for an empty query (XGBoost's ``pre@k`` agrees).
* Ties: every metric is the *expected value over all orderings of documents with equal
  scores*, each ordering equally likely (as ``sklearn.metrics.ndcg_score`` does by default
  for NDCG). A ranker gains nothing from ties and a constant scorer gets the value of a
  uniformly random ranking. Every tie formula below is exact (no sampling), and the test
  suite checks each against enumeration of all orderings.
* ``k`` larger than a query: the list is simply shorter; NDCG, MAP, MRR, ERR and Recall
  sum over the documents there are, Precision@k still divides by k (trec_eval, ranx).

The tie-aware computation itself lives in :mod:`ltr_bench.evaluation.ranked`.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ltr_bench.evaluation.metric_keys import (
    CONVENTIONS,
    DEFAULT_METRICS,
    METRIC_TABLE,
    METRICS_HELP,
    VALID_FORMS,
    MetricKey,
    MetricSpec,
    metric_display,
    metric_key_or_none,
    parse_metric,
    record_metric_keys,
)
from ltr_bench.evaluation.ranked import RankedQueries, check_1d

__all__ = [
    "CONVENTIONS",
    "DEFAULT_METRICS",
    "METRICS_HELP",
    "METRIC_TABLE",
    "MetricKey",
    "MetricSpec",
    "VALID_FORMS",
    "evaluate",
    "evaluate_conventions",
    "knn_error",
    "metric_display",
    "metric_key_or_none",
    "parse_metric",
    "query_ids",
    "record_metric_keys",
]


def query_ids(qid: ArrayLike) -> np.ndarray:
    """The distinct query ids in order of first appearance: the row order of ``per_query``."""
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be one-dimensional, got shape {qid.shape}")
    if qid.size == 0:
        return np.array(qid, copy=True)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    heads: np.ndarray = qid[starts]
    if np.unique(heads).size == heads.size:
        return heads
    _, first = np.unique(qid, return_index=True)
    return np.asarray(qid[np.sort(first)])


def evaluate(
    y_true: ArrayLike,
    scores: ArrayLike,
    qid: ArrayLike,
    metrics: Iterable[str] | str = ("ndcg@10",),
    *,
    empty_query: float = 1.0,
    per_query: bool = False,
    max_label: int | None = None,
) -> dict[str, float | np.ndarray]:
    """Evaluate a ranking: one value (mean over queries) or one value per query per metric.

    Parameters
    ----------
    y_true : (n_docs,) non-negative integer relevance labels.
    scores : (n_docs,) real scores, higher = ranked higher; ties are averaged (see module).
    qid : (n_docs,) query id per row (any type numpy can compare). Rows of a query need not
        be contiguous; contiguous input skips a grouping step.
    metrics : metric names in any spelling :meth:`MetricKey.parse` reads, or one string.
    empty_query : value of NDCG, MAP, MRR, ERR and Recall for a query without a document of
        label >= 1. ``nan`` marks such queries and leaves them out of the mean. A name with
        the 0-convention suffix (``ndcg@10_empty0``) uses 0 whatever this argument says.
    per_query : if True, each value is a float64 array with one entry per query, queries in
        order of first appearance of their id (:func:`query_ids` gives that order).
    max_label : ERR's ``g_max``; default ``max(y_true)``. Must be >= every label.

    Returns
    -------
    dict keyed by the metric strings exactly as given; values are Python floats (the mean
    over queries, or over the non-``nan`` queries) or arrays when ``per_query``.

    Raises ValueError for mismatched lengths, empty input, NaN scores, negative or
    non-integer labels, unknown metric names, or a ``max_label`` below the largest label.
    """
    if isinstance(metrics, str):
        metrics = (metrics,)
    metrics = tuple(metrics)
    if not metrics:
        raise ValueError("metrics is empty; give at least one, e.g. ('ndcg@10',)")
    parsed = [(name, MetricKey.parse(name)) for name in metrics]
    if isinstance(empty_query, bool) or not isinstance(empty_query, Real):
        raise ValueError(f"empty_query must be a real number (or nan), got {empty_query!r}")
    ranked = RankedQueries.build(y_true, scores, qid, max_label)

    out: dict[str, float | np.ndarray] = {}
    raw: dict[tuple[str, int | None], np.ndarray] = {}  # both conventions share one kernel run
    for name, key in parsed:
        spec = key.spec
        if (spec.kernel, key.k) not in raw:
            raw[spec.kernel, key.k] = getattr(ranked, spec.kernel)(key.k)
        values = raw[spec.kernel, key.k]
        empty = key.empty_query if key.empty == "0" else float(empty_query)
        if spec.follows_empty_query:
            values = np.where(ranked.empty, empty, values)
        kept = values[~ranked.empty] if spec.follows_empty_query and np.isnan(empty) else values
        if per_query:
            out[name] = values
        else:
            out[name] = float(kept.mean()) if kept.size else float("nan")
    return out


def evaluate_conventions(
    y_true: ArrayLike,
    scores: ArrayLike,
    qid: ArrayLike,
    metrics: Iterable[str] | str,
    *,
    max_label: int | None = None,
) -> tuple[dict[str, float], dict[str, list[Any]]]:
    """What a result record holds: every requested metric under both empty-query
    conventions, as means and per-query values.

    ``metrics`` in any spelling (duplicates and convention suffixes are folded, see
    :func:`record_metric_keys`); other arguments as for :func:`evaluate`.

    Returns ``(means, per_query)``. Both are keyed by :func:`record_metric_keys` (canonical
    ``MetricKey.text``: ``ndcg@10``, ``ndcg@10_empty0``, ``p@5``) in that order; ``means``
    values are floats (mean over all queries), ``per_query`` values are lists of floats, one
    per query in the order of :func:`query_ids`, and ``per_query["qid"]`` (first) lists
    those query ids. One sort serves every key.
    """
    keys = record_metric_keys(metrics)
    values = evaluate(y_true, scores, qid, keys, per_query=True, max_label=max_label)
    means = {key: float(np.mean(values[key])) for key in keys}
    per_query: dict[str, list[Any]] = {"qid": query_ids(qid).tolist()}
    per_query.update((key, np.asarray(values[key]).tolist()) for key in keys)
    return means, per_query


def knn_error(
    scores: ArrayLike, qid: ArrayLike, doc_class: ArrayLike, query_class: ArrayLike, *, k: int = 3
) -> float:
    """k-nearest-neighbour classification error read off a ranking (query-by-example data).

    For each query, the ``k`` documents with the highest scores (the nearest neighbours under
    the ranker's notion of similarity) vote with their ``doc_class``; the query is classified
    as the class with the most votes, a tied vote going to the tied class whose best member
    ranks highest. The error is the fraction of queries whose ``query_class`` (constant within
    a query) differs from that vote. Equal scores are ordered by row (stable sort): unlike the
    ranking metrics this is a classifier's error, and a classifier has to pick.

    This is the MLR paper's evaluation (McFee and Lanckriet 2010, Table 2), computed from any
    ranker's scores, so every ranker gets the same measurement. Queries are few on such data
    (one per test point), so the per-query loop is not a hot path.
    """
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    scores = check_1d("scores", scores, None).astype(np.float64)
    n = scores.size
    qid = check_1d("qid", qid, n)
    doc_class = check_1d("doc_class", doc_class, n)
    query_class = check_1d("query_class", query_class, n)
    order = np.argsort(qid, kind="stable")
    qs, starts = np.unique(qid[order], return_index=True)
    bounds = np.r_[starts, n]
    wrong = 0
    for i in range(qs.size):
        rows = order[bounds[i] : bounds[i + 1]]
        top = rows[np.argsort(-scores[rows], kind="stable")[: int(k)]]
        classes, first, votes = np.unique(doc_class[top], return_index=True, return_counts=True)
        best = votes == votes.max()
        predicted = classes[best][np.argmin(first[best])]
        wrong += int(predicted != query_class[rows[0]])
    return wrong / qs.size if qs.size else float("nan")
