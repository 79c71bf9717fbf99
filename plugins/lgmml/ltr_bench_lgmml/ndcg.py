"""NDCG of one ranking, used to choose anchors (docs/decisions.md#lgmml-anchors).

The project's conventions (docs/decisions.md#metric-ndcg and #metric-ties):
``DCG@k = sum_{r<=k} (2^rel_r - 1) / log2(r + 1)``, ``NDCG@k = DCG@k / IDCG@k``. Tied
scores get the expected DCG over all orderings of the tie (each position in a tied group
receives the group's mean gain), as ``sklearn.metrics.ndcg_score`` does. A ranking with no
relevant document (IDCG = 0) returns ``empty`` (0 by default: for anchor selection every
candidate is then equally good).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ndcg_at_k"]


def ndcg_at_k(labels: np.ndarray, scores: np.ndarray, k: int = 10, *,
              empty: float = 0.0) -> float:
    """NDCG@k of ranking ``labels`` by ``scores`` descending (ties: expected value)."""
    labels = np.asarray(labels, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    n = labels.size
    if n == 0:
        return float(empty)
    gains = np.exp2(labels) - 1.0
    kk = min(k, n)
    disc = 1.0 / np.log2(np.arange(2, n + 2))
    disc[kk:] = 0.0
    ideal = np.sort(gains)[::-1]
    idcg = float(ideal @ disc)
    if idcg <= 0.0:
        return float(empty)
    order = np.argsort(-scores, kind="stable")
    s, gn = scores[order], gains[order]
    # Tie groups of equal score: average gain over the group, times summed discounts.
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    mean_gain = np.add.reduceat(gn, starts) / np.diff(np.r_[starts, n])
    disc_sum = np.add.reduceat(disc, starts)
    return float(mean_gain @ disc_sum / idcg)
