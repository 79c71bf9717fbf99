"""The m local metrics and their anchors (Algorithm 2, first loop; Sections 3.1 and 3.4).

For each metric i: sample ``queries_per_metric`` training queries with at least one highly
relevant and one negative document; from each, sample up to ``max_positives`` highly relevant
documents (D_i+) and up to ``max_negatives`` negatives (D_i-). Similar pairs: the pairs of
distinct positives of a query; dissimilar pairs: positive x negative of a query (Section 3.4:
negatives are the label-0 documents). ``M_i = GMML(S_i, D_i)`` (:mod:`.gmml`), and the anchor
is the positive whose distance ranking of the sampled queries has the best NDCG
(:mod:`.anchors`). In query-dependent mode (Section 4.4) the query point joins D_i+ (the query
is the ideal candidate, so query-to-relevant pairs are similar and query-to-negative pairs
dissimilar) and there is no anchor search: the anchor is each row's own query point.

When no training query has both a highly relevant and a negative document (e.g. every label
equal), metrics are sampled from any query, with all its documents as positives and no
negatives: D = lambda*I then, and the model degrades to a smooth distance ranking rather than
crashing.

Parallelism (docs/decisions.md#lgmml-parallel-local-metrics): every random choice is drawn
first, in the order of the original sequential loop, then the m metrics -- independent given
their samples -- are fitted by a pool of ``n_threads`` threads; the model is bit-identical
for every ``n_threads``.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_bench.timing import thread_limit

from .anchors import select_anchor
from .gmml import LowRankQuadratic, gmml_lowrank

__all__ = [
    "MetricDraw",
    "QuerySets",
    "draw_metric_samples",
    "fit_local_metrics",
    "highly_relevant_threshold",
    "query_sets",
    "resolve_n_threads",
]


def highly_relevant_threshold(labels: np.ndarray, rule) -> float:
    """Smallest label that counts as highly relevant in one query (inf if none).

    rule ``"upper_half"`` (the authors' code): labels at or above the median of the query's
    distinct labels, and at least 1. ``"top"``: the query's top label, if it is >= 1. An int
    k: labels >= k (k >= 1).
    """
    if labels.size == 0:
        return np.inf
    top = labels.max()
    if rule == "upper_half":
        thr = max(float(np.median(np.unique(labels))), 1.0)
    elif rule == "top":
        thr = float(top) if top >= 1 else np.inf
    else:
        thr = float(rule)
    return thr if top >= thr else np.inf


class QuerySets:
    """Per-query row indices of highly relevant (positive) and negative documents.

    negatives ``"zero"`` (Section 3.4): label 0; ``"lower"``: any label below the query's
    highly-relevant threshold.
    """

    def __init__(self, y: np.ndarray, bounds: np.ndarray, highly_relevant, negatives: str):
        self.bounds = bounds
        self.pos: list[np.ndarray] = []
        self.neg: list[np.ndarray] = []
        for qi in range(len(bounds) - 1):
            a, b = bounds[qi], bounds[qi + 1]
            lab = y[a:b]
            thr = highly_relevant_threshold(lab, highly_relevant)
            pos = np.flatnonzero(lab >= thr) + a
            if negatives == "zero":
                neg = np.flatnonzero(lab == 0) + a
            else:
                neg = np.flatnonzero(lab < thr) + a if np.isfinite(thr) else np.zeros(0, int)
            self.pos.append(pos.astype(np.int64))
            self.neg.append(neg.astype(np.int64))
        self.eligible = np.array(
            [qi for qi in range(len(bounds) - 1) if self.pos[qi].size and self.neg[qi].size],
            dtype=np.int64,
        )

    @property
    def n_queries(self) -> int:
        return len(self.bounds) - 1


def query_sets(y, bounds, highly_relevant, negatives) -> QuerySets:
    return QuerySets(y, bounds, highly_relevant, negatives)


def resolve_n_threads(n_threads) -> int:
    """Worker threads for ``n_threads``: a positive int as is; None = every CPU this process
    may run on (``os.sched_getaffinity``). Anything else raises ValueError naming
    ``n_threads``."""
    if n_threads is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):  # not every OS has affinity masks
            return os.cpu_count() or 1
    if (
        isinstance(n_threads, numbers.Integral)
        and not isinstance(n_threads, bool)
        and int(n_threads) >= 1
    ):
        return int(n_threads)
    raise ValueError(f"n_threads must be an integer >= 1 or None, got {n_threads!r}")


@dataclass(frozen=True)
class MetricDraw:
    """The random choices of one local metric: the sampled training queries (ascending) and,
    per query, the sampled positive / negative row indices (ascending)."""

    queries: np.ndarray
    pos: tuple[np.ndarray, ...]
    neg: tuple[np.ndarray, ...]


def draw_metric_samples(
    rng: np.random.Generator,
    sets: QuerySets,
    *,
    n_metrics: int,
    queries_per_metric: int,
    max_positives: int | None,
    max_negatives: int | None,
) -> list[MetricDraw]:
    """Every random choice of the ``n_metrics`` local metrics, drawn up front.

    Order of the rng calls (kept from the sequential loop, so a seed gives the same model as
    before fits became parallel): for metric 0, 1, ...: the queries; then for each sampled
    query in ascending order, its positives, then its negatives.
    """
    bounds = sets.bounds
    fallback = sets.eligible.size == 0
    pool = sets.eligible if not fallback else np.flatnonzero(np.diff(bounds) > 0)
    draws = []
    for _ in range(n_metrics):
        picked = np.sort(rng.choice(pool, size=min(queries_per_metric, pool.size), replace=False))
        pos, neg = [], []
        for qi in picked:
            if fallback:
                pos_all = np.arange(bounds[qi], bounds[qi + 1])
                neg_all = np.zeros(0, dtype=np.int64)
            else:
                pos_all, neg_all = sets.pos[qi], sets.neg[qi]
            pos.append(_subsample(rng, pos_all, max_positives))
            neg.append(_subsample(rng, neg_all, max_negatives))
        draws.append(MetricDraw(picked, tuple(pos), tuple(neg)))
    return draws


def fit_local_metrics(
    *,
    rng: np.random.Generator,
    y: np.ndarray,
    sets: QuerySets,
    rows: Callable[[np.ndarray], np.ndarray],
    query_points: Callable[[int], np.ndarray] | None,
    n_metrics: int,
    queries_per_metric: int,
    max_positives: int | None,
    max_negatives: int | None,
    reg_lambda: float,
    t: float,
    distance: str,
    anchor_k: int,
    reg_scale: str = "absolute",
    progress: Callable[[int, int], None] | None = None,
    n_threads: int | None = 1,
) -> tuple[list[LowRankQuadratic], np.ndarray | None, np.ndarray]:
    """Learn ``n_metrics`` local metrics; returns (metrics, anchors (m, d) or None, ndcgs (m,)).

    rows(idx) returns the scaled document features of the given training rows;
    query_points(qi) (query-dependent mode only) the scaled query point of query qi. Both
    must be safe to call from several threads at once (pure reads).

    All random choices are drawn first (:func:`draw_metric_samples`); the metrics are then
    independent and are fitted by ``n_threads`` threads (:func:`resolve_n_threads`). BLAS is
    held at one thread during the fits whatever ``n_threads`` is: the workers are the
    parallelism (numpy's BLAS/LAPACK calls, sorts and larger element-wise operations release
    the GIL), ``n_threads`` x BLAS threads would oversubscribe the cores, and every metric is
    computed with the same kernels, so the result is bit-identical for every ``n_threads``.
    The limit is set once here, not per worker: threadpoolctl limits are process-wide, and
    workers entering / leaving their own limits would restore each other's values mid-fit.
    ``progress`` is called from this thread, in metric order.
    """
    workers = min(resolve_n_threads(n_threads), max(n_metrics, 1))
    draws = draw_metric_samples(
        rng,
        sets,
        n_metrics=n_metrics,
        queries_per_metric=queries_per_metric,
        max_positives=max_positives,
        max_negatives=max_negatives,
    )

    def fit_one(draw: MetricDraw):
        return _fit_metric(
            draw,
            y=y,
            bounds=sets.bounds,
            rows=rows,
            query_points=query_points,
            reg_lambda=reg_lambda,
            t=t,
            distance=distance,
            anchor_k=anchor_k,
            reg_scale=reg_scale,
        )

    results = []
    with thread_limit(1):
        if workers == 1:
            outcomes: Iterator[Any] = map(fit_one, draws)
            pool = None
        else:
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lgmml-metric")
            outcomes = pool.map(fit_one, draws)  # yields in submission (= metric) order
        try:
            for i, res in enumerate(outcomes):
                results.append(res)
                if progress is not None:
                    progress(i + 1, n_metrics)
        finally:
            if pool is not None:  # on an error, drop the metrics not started yet
                pool.shutdown(wait=True, cancel_futures=True)
    metrics = [m for m, _, _ in results]
    ndcgs = np.asarray([nd for _, _, nd in results])
    A = np.vstack([a for _, a, _ in results]) if query_points is None else None
    return metrics, A, ndcgs


def _fit_metric(
    draw: MetricDraw, *, y, bounds, rows, query_points, reg_lambda, t, distance, anchor_k, reg_scale
):
    """One local metric from its drawn samples: ``(metric, anchor (d,) or None, ndcg)``."""
    groups, cands, qdata = [], [], []
    for qi, pos, neg in zip(draw.queries, draw.pos, draw.neg):
        Xp, Xn = rows(pos), rows(neg)
        if query_points is not None:
            Xp = np.vstack([query_points(qi)[None, :], Xp])
        groups.append((Xp, Xn))
        cands.append(Xp)
        q_rows = np.arange(bounds[qi], bounds[qi + 1])
        qdata.append((rows(q_rows), y[q_rows]))
    metric = gmml_lowrank(
        groups, reg_lambda=reg_lambda, t=t, distance=distance, reg_scale=reg_scale
    )
    if query_points is not None:
        return metric, None, np.nan
    C = np.vstack(cands)
    best, nd = select_anchor(metric, C, qdata, anchor_k)
    return metric, C[best], nd


def _subsample(rng: np.random.Generator, idx: np.ndarray, cap: int | None) -> np.ndarray:
    if cap is None or idx.size <= cap:
        return idx
    return np.sort(rng.choice(idx, size=cap, replace=False))
