"""NDCG of one ranking, or of many rankings of the same documents, used to choose anchors
(docs/decisions.md#lgmml-anchors).

The project's conventions (docs/decisions.md#metric-ndcg and #metric-ties):
``DCG@k = sum_{r<=k} (2^rel_r - 1) / log2(r + 1)``, ``NDCG@k = DCG@k / IDCG@k``. Tied
scores get the expected DCG over all orderings of the tie (each position in a tied group
receives the group's mean gain), as ``sklearn.metrics.ndcg_score`` does. A ranking with no
relevant document (IDCG = 0) returns ``empty`` (0 by default: for anchor selection every
candidate is then equally good).

:func:`ndcg_at_k_rows` scores many rankings of one query at once (one per anchor candidate)
and returns exactly -- to the last bit -- what :func:`ndcg_at_k` returns for each row: it
performs the same floating-point operations on the same operands (see its docstring).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ndcg_at_k", "ndcg_at_k_rows"]


def _gains_discounts(labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(gains (n,), discounts (n,) zero beyond k, IDCG@k)`` of one query's labels."""
    n = labels.size
    gains = np.exp2(labels) - 1.0
    disc = 1.0 / np.log2(np.arange(2, n + 2))
    disc[min(k, n) :] = 0.0
    ideal = np.sort(gains)[::-1]
    return gains, disc, float(ideal @ disc)


def ndcg_at_k(labels: np.ndarray, scores: np.ndarray, k: int = 10, *, empty: float = 0.0) -> float:
    """NDCG@k of ranking ``labels`` by ``scores`` descending (ties: expected value)."""
    labels = np.asarray(labels, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    n = labels.size
    if n == 0:
        return float(empty)
    gains, disc, idcg = _gains_discounts(labels, k)
    if idcg <= 0.0:
        return float(empty)
    order = np.argsort(-scores, kind="stable")
    s, gn = scores[order], gains[order]
    # Tie groups of equal score: average gain over the group, times summed discounts.
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    mean_gain = np.add.reduceat(gn, starts) / np.diff(np.r_[starts, n])
    disc_sum = np.add.reduceat(disc, starts)
    return float(mean_gain @ disc_sum / idcg)


def ndcg_at_k_rows(
    labels: np.ndarray, scores: np.ndarray, k: int = 10, *, empty: float = 0.0
) -> np.ndarray:
    """NDCG@k of each row of ``scores`` (n_rankings, n_docs), all ranking the same documents
    with relevance ``labels`` (n_docs,); returns (n_rankings,) float64.

    Row ``r`` equals ``ndcg_at_k(labels, scores[r], k, empty=empty)`` bit for bit. The sort
    (stable, so ties keep document order), the tie groups and the per-group sums of gains and
    discounts are computed for all rows at once: the groups of every row are segments of one
    flattened array, and ``np.add.reduceat`` sums each segment exactly as it sums the same
    segment of a single row. Only the last step, ``mean_gain @ disc_sum`` over a row's groups
    (a BLAS dot whose summation order depends on the length and the kernel of the machine),
    is called once per row on exactly the arrays the single-row function builds -- the
    price of bit-identity (one short call per row, against about 15 numpy calls per row
    before).
    """
    labels = np.asarray(labels, dtype=np.float64)
    S = np.asarray(scores, dtype=np.float64)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D (n_docs,), got shape {labels.shape}")
    if S.ndim != 2 or S.shape[1] != labels.size:
        raise ValueError(
            f"scores must be 2-D (n_rankings, {labels.size}) for "
            f"{labels.size} labels, got shape {S.shape}"
        )
    n_rows, n = S.shape
    if n == 0 or n_rows == 0:
        return np.full(n_rows, float(empty))
    gains, disc, idcg = _gains_discounts(labels, k)
    if idcg <= 0.0:
        return np.full(n_rows, float(empty))
    order = np.argsort(-S, axis=1, kind="stable")  # a stable order is unique: same as per row
    s = np.take_along_axis(S, order, axis=1)
    new_group = np.ones((n_rows, n), dtype=bool)
    np.not_equal(s[:, 1:], s[:, :-1], out=new_group[:, 1:])
    # Flat starts: every row opens a group at its first position, so no segment spans rows.
    starts = np.flatnonzero(new_group)
    sizes = np.diff(np.r_[starts, n_rows * n])
    mean_gain = np.add.reduceat(gains[order].ravel(), starts) / sizes
    disc_sum = np.add.reduceat(np.tile(disc, n_rows), starts)
    ends = np.cumsum(np.count_nonzero(new_group, axis=1))
    firsts = np.r_[0, ends[:-1]]
    dcg = np.array([mean_gain[a:b] @ disc_sum[a:b] for a, b in zip(firsts.tolist(), ends.tolist())])
    return dcg / idcg
