"""Anchors, the "ideal candidate documents" (Algorithm 2, inner loop; Section 3).

For local metric i with sampled queries D_i and candidate set D_i+ (the sampled highly
relevant documents): for each candidate p, rank every document d of each sampled query by
``||p - d||^2`` under M_i ascending and compute NDCG@k of that ranking; the anchor is the
candidate with the highest NDCG (averaged over the sampled queries when there are several).
Ties between candidates go to the first one in sampling order. A query with no relevant
document gives NDCG 0 for every candidate (no crash; the first candidate is kept).
"""

from __future__ import annotations

import numpy as np

from .gmml import LowRankQuadratic
from .ndcg import ndcg_at_k, ndcg_at_k_rows

__all__ = ["candidate_ndcgs", "pairwise_sq_distances", "select_anchor"]


def pairwise_sq_distances(metric: LowRankQuadratic, P: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``(p - x)^T Q (p - x)`` for every row p of P (a, d) and x of X (b, d) -> (a, b)."""
    P = np.asarray(P, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    pp = np.einsum("ij,ij->i", P, P)
    xx = np.einsum("ij,ij->i", X, X)
    iso = pp[:, None] + xx[None, :] - 2.0 * (P @ X.T)
    Zp, Zx = P @ metric.V, X @ metric.V
    gp = (Zp * Zp) @ metric.g
    gx = (Zx * Zx) @ metric.g
    low = gp[:, None] + gx[None, :] - 2.0 * ((Zp * metric.g) @ Zx.T)
    return np.maximum(metric.alpha * np.maximum(iso, 0.0) + low, 0.0)


def candidate_ndcgs(
    metric: LowRankQuadratic,
    candidates: np.ndarray,
    queries: list[tuple[np.ndarray, np.ndarray]],
    k: int = 10,
) -> np.ndarray:
    """Mean over ``queries`` ((X_q, y_q) pairs) of NDCG@k when ranking X_q by distance to
    each candidate (closest first). Returns (n_candidates,).

    All candidates of a query are scored at once (:func:`.ndcg.ndcg_at_k_rows` on the
    (n_candidates, n_docs) distance matrix); the values are bit-identical to calling
    :func:`.ndcg.ndcg_at_k` per candidate (:func:`_candidate_ndcgs_per_candidate`, kept as the
    reference), so the same anchors are chosen.
    """
    out = np.zeros(len(candidates))
    if len(candidates) == 0:
        return out
    for Xq, yq in queries:
        out += ndcg_at_k_rows(yq, -pairwise_sq_distances(metric, candidates, Xq), k)
    return out / max(len(queries), 1)


def _candidate_ndcgs_per_candidate(
    metric: LowRankQuadratic,
    candidates: np.ndarray,
    queries: list[tuple[np.ndarray, np.ndarray]],
    k: int = 10,
) -> np.ndarray:
    """:func:`candidate_ndcgs` one candidate at a time (the implementation before it was
    batched): the reference the tests hold the batched version to, bit for bit."""
    out = np.zeros(len(candidates))
    for Xq, yq in queries:
        dist = pairwise_sq_distances(metric, candidates, Xq)
        for c in range(len(candidates)):
            out[c] += ndcg_at_k(yq, -dist[c], k)
    return out / max(len(queries), 1)


def select_anchor(
    metric: LowRankQuadratic,
    candidates: np.ndarray,
    queries: list[tuple[np.ndarray, np.ndarray]],
    k: int = 10,
) -> tuple[int, float]:
    """Index (into ``candidates``) of the anchor and its NDCG@k."""
    scores = candidate_ndcgs(metric, candidates, queries, k)
    best = int(np.argmax(scores))
    return best, float(scores[best])
