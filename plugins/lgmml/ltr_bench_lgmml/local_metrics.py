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
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .anchors import select_anchor
from .gmml import LowRankQuadratic, gmml_lowrank

__all__ = ["QuerySets", "fit_local_metrics", "highly_relevant_threshold", "query_sets"]


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
        self.eligible = np.array([qi for qi in range(len(bounds) - 1)
                                  if self.pos[qi].size and self.neg[qi].size], dtype=np.int64)

    @property
    def n_queries(self) -> int:
        return len(self.bounds) - 1


def query_sets(y, bounds, highly_relevant, negatives) -> QuerySets:
    return QuerySets(y, bounds, highly_relevant, negatives)


def fit_local_metrics(
    *, rng: np.random.Generator, y: np.ndarray, sets: QuerySets,
    rows: Callable[[np.ndarray], np.ndarray],
    query_points: Callable[[int], np.ndarray] | None,
    n_metrics: int, queries_per_metric: int, max_positives: int, max_negatives: int,
    reg_lambda: float, t: float, distance: str, anchor_k: int, reg_scale: str = "absolute",
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[LowRankQuadratic], np.ndarray | None, np.ndarray]:
    """Learn ``n_metrics`` local metrics; returns (metrics, anchors (m, d) or None, ndcgs (m,)).

    rows(idx) returns the scaled document features of the given training rows;
    query_points(qi) (query-dependent mode only) the scaled query point of query qi.
    """
    bounds = sets.bounds
    fallback = sets.eligible.size == 0
    pool = sets.eligible if not fallback else np.flatnonzero(np.diff(bounds) > 0)
    metrics, anchors, ndcgs = [], [], []
    for i in range(n_metrics):
        picked = rng.choice(pool, size=min(queries_per_metric, pool.size), replace=False)
        groups, cands, qdata = [], [], []
        for qi in np.sort(picked):
            if fallback:
                pos_all = np.arange(bounds[qi], bounds[qi + 1])
                neg_all = np.zeros(0, dtype=np.int64)
            else:
                pos_all, neg_all = sets.pos[qi], sets.neg[qi]
            pos = _subsample(rng, pos_all, max_positives)
            neg = _subsample(rng, neg_all, max_negatives)
            Xp, Xn = rows(pos), rows(neg)
            if query_points is not None:
                Xp = np.vstack([query_points(qi)[None, :], Xp])
            groups.append((Xp, Xn))
            cands.append(Xp)
            q_rows = np.arange(bounds[qi], bounds[qi + 1])
            qdata.append((rows(q_rows), y[q_rows]))
        metric = gmml_lowrank(groups, reg_lambda=reg_lambda, t=t, distance=distance,
                              reg_scale=reg_scale)
        metrics.append(metric)
        if query_points is None:
            C = np.vstack(cands)
            best, nd = select_anchor(metric, C, qdata, anchor_k)
            anchors.append(C[best])
            ndcgs.append(nd)
        else:
            ndcgs.append(np.nan)
        if progress is not None:
            progress(i + 1, n_metrics)
    A = np.vstack(anchors) if query_points is None else None
    return metrics, A, np.asarray(ndcgs)


def _subsample(rng: np.random.Generator, idx: np.ndarray, cap: int | None) -> np.ndarray:
    if cap is None or idx.size <= cap:
        return idx
    return np.sort(rng.choice(idx, size=cap, replace=False))
