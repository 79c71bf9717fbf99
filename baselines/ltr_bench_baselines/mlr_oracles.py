"""Separation oracles of Metric Learning to Rank (McFee & Lanckriet, ICML 2010, Section 4).

Written from the paper (and the structural-SVM papers it cites), not from any reference code.

Setting, for one query with ``P`` relevant (label >= 1) and ``N`` irrelevant candidates and
point-wise scores ``s_i = <W, phi(q, i)>_F = -||q - i||_W^2`` (higher = closer):

* the partial-order feature map (paper Eq. 3) gives, for a ranking ``y``,
  ``<W, psi(q, y)> = 1/(P N) * sum_{i in +, j in -} y_ij (s_i - s_j)``,
  ``y_ij = +1`` if ``i`` is placed before ``j``, else ``-1``;
* the oracle (paper Eq. 2) returns ``argmax_y  Delta(y*, y) + <W, psi(q, y)>``.

Every loss below is invariant to permutations inside the relevant and inside the irrelevant
set, so the maximiser places both sets in descending score order and only the *interleaving*
is searched. An interleaving is described by ``b_a`` = number of irrelevant candidates placed
before the ``a``-th best relevant one (``a = 1..P``, non-decreasing).

Losses ``Delta = Score(y*) - Score(y)``, binary relevance, ranks are 1-based:

* ``auc``:       fraction of (relevant, irrelevant) pairs in the wrong order,
                 ``sum_a b_a / (P N)``.
* ``precision``: Precision@k, ``(min(P, k) - #relevant in the top k) / k``. The paper writes
                 ``1 - Prec@k``; we subtract the best achievable value ``min(P, k)/k`` so that
                 ``Delta(y*, y*) = 0`` also when ``P < k`` (identical when ``P >= k``).
* ``map``:       ``1 - AP``, ``AP = 1/P * sum_a a / (a + b_a)``.
* ``mrr``:       ``1 - 1 / (1 + b_1)`` (reciprocal rank of the first relevant candidate).
* ``ndcg``:      the paper's binary NDCG@k, discount ``D(1) = 1``, ``D(r) = 1/log2(r)`` for
                 ``2 <= r <= k``, ``D(r) = 0`` beyond ``k``;
                 ``Delta = 1 - sum_a D(a + b_a) / sum_{r=1}^{min(P,k)} D(r)``. The paper
                 normalises by ``sum_{r=1}^{k} D(r)``; we normalise by the ideal DCG so that a
                 perfect ranking has loss 0 when ``P < k`` (identical when ``P >= k``).

``k`` defaults to 10 for ``precision`` and ``ndcg`` (unused by the others).

Algorithms: ``auc`` decomposes over pairs (Joachims 2005): the pair (i, j) is put in the wrong
order iff ``s_i - s_j < 1/2``; one sort per batch, O(n log n). The other four losses are
written as ``Delta = Delta_0 + sum_a w(a, b_a)`` and solved exactly by one dynamic programme
over the (relevant placed, irrelevant placed) grid, O(P N) per query, batched over queries
with numpy (one Python step per relevant rank, not per query). The DP is exact for any loss of
that form, which covers the greedy/enumeration oracles of the papers the MLR paper cites.

The oracle result per row ``r`` is ``coef_r = c*_r - c_r`` where ``psi(q, y) = sum_r c_r
phi(q, r)``; then ``delta_psi(q, y*, y) = sum_r coef_r phi(q, r)``. With ``b_a`` as above and
``k_t`` the number of relevant candidates placed before the ``t``-th irrelevant one:
``coef = 2 b_a / (P N)`` for relevant rows and ``coef = -2 (P - k_t) / (P N)`` for irrelevant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "LOSSES",
    "OracleResult",
    "most_violated_ranking",
    "ranking_loss",
    "separation_oracle",
]

LOSSES = ("auc", "precision", "map", "mrr", "ndcg")

# Cap on padded DP cells (x 4 bytes of back-pointers) held at once.
_MAX_DP_CELLS = 1 << 22


@dataclass
class OracleResult:
    """Output of :func:`separation_oracle`.

    coef: (n_rows,) float64, ``c*_r - c_r`` (zero for rows of unusable queries).
    delta: (n_queries,) float64, ``Delta(y*_q, y_q)`` (0 for unusable queries).
    usable: (n_queries,) bool, the query has at least one relevant and one irrelevant row.
    n_before: (n_rows,) int64, for relevant rows ``b_a``, for irrelevant rows ``k_t``
        (what defines the interleaving; used to rebuild rankings in tests).
    """

    coef: np.ndarray
    delta: np.ndarray
    usable: np.ndarray
    n_before: np.ndarray


def _discount(r: np.ndarray, k: int) -> np.ndarray:
    """The paper's NDCG discount D(r): 1 at r = 1, 1/log2(r) for 2 <= r <= k, 0 beyond k."""
    r = np.asarray(r, dtype=np.float64)
    out = np.zeros_like(r)
    inside = (r >= 1) & (r <= k)
    out[inside] = 1.0 / np.log2(np.maximum(r[inside], 2.0))
    return out


def _ideal_dcg(P: np.ndarray, k: int) -> np.ndarray:
    """sum_{r=1}^{min(P,k)} D(r), per query (P an integer array)."""
    table = np.r_[0.0, np.cumsum(_discount(np.arange(1, k + 1), k))]
    return table[np.minimum(P, k)]


def _delta0(loss: str, P: np.ndarray, k: int) -> np.ndarray:
    if loss == "auc":
        return np.zeros(P.shape)
    if loss == "precision":
        return np.minimum(P, k) / k
    return np.ones(P.shape)


def _step_weight(
    loss: str, a: int, b: np.ndarray, P: np.ndarray, N: np.ndarray, k: int, idcg: np.ndarray
) -> np.ndarray:
    """w(a, b): loss added when the a-th relevant item is placed after b irrelevant ones.

    b: (B, m) int array; P, N, idcg: (B, 1). Returns (B, m) float64.
    """
    return _row_weights(loss, np.asarray(a), b, P, N, k, idcg)


def ranking_loss(relevant_in_rank_order, loss: str, k: int = 10) -> float:
    """Delta(y*, y) of one ranking, written straight from the definitions (module docstring).

    relevant_in_rank_order: bool sequence, element r is True when the candidate at rank r + 1
    is relevant. A list without relevant or without irrelevant items has loss 0.
    """
    rel = np.asarray(relevant_in_rank_order, dtype=bool)
    P = int(rel.sum())
    N = rel.size - P
    if P == 0 or N == 0:
        return 0.0
    ranks = np.flatnonzero(rel) + 1  # 1-based ranks of the relevant items
    if loss == "auc":
        wrong = sum(int(np.count_nonzero(~rel[: r - 1])) for r in ranks)
        return wrong / (P * N)
    if loss == "precision":
        return (min(P, k) - int(np.count_nonzero(ranks <= k))) / k
    if loss == "map":
        return 1.0 - float(np.mean(np.arange(1, P + 1) / ranks))
    if loss == "mrr":
        return 1.0 - 1.0 / ranks[0]
    if loss == "ndcg":
        return 1.0 - float(_discount(ranks, k).sum() / _ideal_dcg(np.array([P]), k)[0])
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


def _sorted_within_query(qi: np.ndarray, s: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """rows ordered by (query, descending score, row index): a deterministic tie rule."""
    return rows[np.lexsort((rows, -s[rows], qi[rows]))]


def _auc_b(qi_pos, s_pos, qi_neg, s_neg):
    """b for each relevant row: # irrelevant rows of its query with s_j > s_i - 1/2.

    Inputs are grouped by query and sorted by descending score within each query.
    Exact (no float key mixing): a lexsort merge of thresholds and irrelevant scores.
    """
    thr = s_pos - 0.5
    n_pos, n_neg = thr.size, s_neg.size
    val = np.r_[thr, s_neg]
    q = np.r_[qi_pos, qi_neg]
    is_neg = np.r_[np.zeros(n_pos, np.int8), np.ones(n_neg, np.int8)]
    # Descending value; at equal value thresholds first, so s_j == s_i - 1/2 is not counted
    # (both choices give the same objective).
    order = np.lexsort((is_neg, -val, q))
    neg_sorted = is_neg[order].astype(np.int64)
    cum = np.cumsum(neg_sorted) - neg_sorted  # irrelevant rows strictly before, all queries
    before = np.empty(n_pos + n_neg, np.int64)
    before[order] = cum
    # Subtract the irrelevant rows of earlier queries.
    q_sorted = q[order]
    first = np.r_[True, q_sorted[1:] != q_sorted[:-1]]
    start_cum = np.maximum.accumulate(np.where(first, cum, 0))
    offset = np.empty_like(before)
    offset[order] = start_cum
    return (before - offset)[:n_pos]


def _dp_b(loss, k, sp_list, sn_list, P_all, N_all, batches):
    """Exact DP for losses of the form Delta_0 + sum_a w(a, b_a); returns b per relevant row.

    V[a, b] = best objective with a relevant and b irrelevant items placed;
    V[a, b] = max(V[a-1, b] + w(a, b), V[a, b-1] + g(b, a)) with
    g(t, a) = (2 C_a - S+ - (2a - P) s-_t) / (P N) the contribution of the t-th irrelevant
    item when a relevant items precede it (C_a = sum of the a best relevant scores,
    S+ = C_P). Along a row this is a running maximum: with G_a(b) = sum_{t<=b} g(t, a),
    V[a, b] = G_a(b) + max_{b' <= b} (V[a-1, b'] + w(a, b') - G_a(b')); the arg-max b' is
    b_a, kept as a back-pointer.
    """
    out = {}
    for batch in batches:
        B = len(batch)
        P = P_all[batch]
        N = N_all[batch]
        Pm, Nm = int(P.max()), int(N.max())
        sp = np.zeros((B, Pm))
        sn = np.zeros((B, Nm))
        for r, q in enumerate(batch):
            sp[r, : P[r]] = sp_list[q]
            sn[r, : N[r]] = sn_list[q]
        Pc = P[:, None].astype(np.float64)
        Nc = N[:, None].astype(np.float64)
        PN = Pc * Nc
        Cp = np.concatenate([np.zeros((B, 1)), np.cumsum(sp, axis=1)], axis=1)  # C_a
        S = Cp[np.arange(B), P][:, None]
        CN = np.concatenate([np.zeros((B, 1)), np.cumsum(sn, axis=1)], axis=1)  # (B, Nm+1)
        bcol = np.arange(Nm + 1)[None, :]
        idcg = _ideal_dcg(P, k)[:, None] if loss == "ndcg" else None

        def G(a):
            return (bcol * (2.0 * Cp[:, a : a + 1] - S) - (2.0 * a - Pc) * CN) / PN

        V = G(0)
        back = np.empty((Pm, B, Nm + 1), dtype=np.int32)
        neg_inf = np.full((B, 1), -np.inf)
        for a in range(1, Pm + 1):
            Ga = G(a)
            H = V + _step_weight(loss, a, bcol, Pc, Nc, k, idcg) - Ga
            M = np.maximum.accumulate(H, axis=1)
            new_max = H >= np.concatenate([neg_inf, M[:, :-1]], axis=1)
            back[a - 1] = np.maximum.accumulate(np.where(new_max, bcol, 0), axis=1)
            V = Ga + M
        b_cur = N.astype(np.int64).copy()
        b_of = np.zeros((B, Pm), dtype=np.int64)
        rows = np.arange(B)
        for a in range(Pm, 0, -1):
            active = a <= P
            nb = back[a - 1, rows, b_cur]
            b_cur = np.where(active, nb, b_cur)
            b_of[:, a - 1] = b_cur
        for r, q in enumerate(batch):
            out[q] = b_of[r, : P[r]]
    return out


def _batches(P: np.ndarray, N: np.ndarray, queries: np.ndarray) -> list[np.ndarray]:
    """Group queries of similar (P, N) so padding wastes little and memory stays bounded."""
    order = queries[np.lexsort((N[queries], P[queries]))]
    batches: list[np.ndarray] = []
    cur: list[int] = []
    pm, nm = 0, 0
    for q in order:
        p2, n2 = max(pm, int(P[q])), max(nm, int(N[q]))
        if cur and p2 * (n2 + 1) * (len(cur) + 1) > _MAX_DP_CELLS:
            batches.append(np.asarray(cur))
            cur, p2, n2 = [], int(P[q]), int(N[q])
        cur.append(q)
        pm, nm = p2, n2
    if cur:
        batches.append(np.asarray(cur))
    return batches


def separation_oracle(scores, relevant, bounds, loss: str, k: int = 10) -> OracleResult:
    """Most violated ranking of every query at once (paper Eq. 2 / Algorithm 1 line 5).

    scores: (n_rows,) point-wise scores ``<W, phi(q, r)>``, higher = ranked earlier.
    relevant: (n_rows,) bool. bounds: (n_queries + 1,) start offsets of contiguous queries.
    loss: one of :data:`LOSSES`; k: cut-off for ``precision`` and ``ndcg``.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    s = np.asarray(scores, dtype=np.float64)
    rel = np.asarray(relevant, dtype=bool)
    bounds = np.asarray(bounds, dtype=np.int64)
    nq = bounds.size - 1
    n = s.size
    qi = np.repeat(np.arange(nq), np.diff(bounds))
    P = np.bincount(qi[rel], minlength=nq).astype(np.int64)
    N = np.diff(bounds) - P
    usable = (P > 0) & (N > 0)
    coef = np.zeros(n)
    delta = np.zeros(nq)
    n_before = np.zeros(n, dtype=np.int64)
    if not usable.any():
        return OracleResult(coef, delta, usable, n_before)

    keep = usable[qi]
    pos_rows = _sorted_within_query(qi, s, np.flatnonzero(rel & keep))
    neg_rows = _sorted_within_query(qi, s, np.flatnonzero(~rel & keep))
    qp, qn = qi[pos_rows], qi[neg_rows]
    # 1-based rank of each row inside its own (relevant or irrelevant) list
    Pu, Nu = P[usable], N[usable]
    a_rank = np.arange(pos_rows.size) - np.repeat(np.cumsum(Pu) - Pu, Pu) + 1
    t_rank = np.arange(neg_rows.size) - np.repeat(np.cumsum(Nu) - Nu, Nu) + 1

    if loss == "auc":
        b = _auc_b(qp, s[pos_rows], qn, s[neg_rows])
    else:
        qs = np.flatnonzero(usable)
        pos_split = np.split(s[pos_rows], np.cumsum(P[qs])[:-1])
        neg_split = np.split(s[neg_rows], np.cumsum(N[qs])[:-1])
        sp_list = dict(zip(qs.tolist(), pos_split))
        sn_list = dict(zip(qs.tolist(), neg_split))
        b_map = _dp_b(loss, k, sp_list, sn_list, P, N, _batches(P, N, qs))
        b = np.concatenate([b_map[q] for q in qs.tolist()])

    # k_t = #relevant with b_a < t, via exact integer keys (query, b).
    stride = int(N.max()) + 2
    keys = qp * stride + b  # non-decreasing: grouped by query, b non-decreasing inside
    first_pos = np.searchsorted(keys, qn * stride, side="left")
    k_t = np.searchsorted(keys, qn * stride + t_rank, side="left") - first_pos

    Pp, Np = P[qp].astype(np.float64), N[qp].astype(np.float64)
    Pn, Nn = P[qn].astype(np.float64), N[qn].astype(np.float64)
    coef[pos_rows] = 2.0 * b / (Pp * Np)
    coef[neg_rows] = -2.0 * (Pn - k_t) / (Pn * Nn)
    n_before[pos_rows] = b
    n_before[neg_rows] = k_t

    # Delta from the chosen interleaving, via the same w(a, b) decomposition per row.
    idcg_row = _ideal_dcg(P, k)[qp] if loss == "ndcg" else None
    w = _row_weights(loss, a_rank, b, Pp, Np, k, idcg_row)
    delta[usable] = _delta0(loss, P[usable], k)
    np.add.at(delta, qp, w)
    return OracleResult(coef, delta, usable, n_before)


def _row_weights(loss, a, b, P, N, k, idcg):
    """w(a_r, b_r) for each relevant row (vectorised over rows with their own a)."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    if loss == "auc":
        return b / (P * N)
    if loss == "precision":
        return -((a + b) <= k).astype(np.float64) / k
    if loss == "map":
        return -a / ((a + b) * P)
    if loss == "mrr":
        return np.where(a == 1, -1.0 / (1.0 + b), 0.0)
    return -_discount(a + b, k) / idcg


def most_violated_ranking(scores, relevant, loss: str, k: int = 10):
    """One query: the oracle's ranking as row indices in rank order, and its Delta.

    A convenience over :func:`separation_oracle` for tests and inspection.
    """
    s = np.asarray(scores, dtype=np.float64)
    rel = np.asarray(relevant, dtype=bool)
    res = separation_oracle(s, rel, np.array([0, s.size]), loss, k)
    if not res.usable[0]:
        return np.argsort(-s, kind="stable"), 0.0
    pos = np.flatnonzero(rel)
    neg = np.flatnonzero(~rel)
    pos = pos[np.lexsort((pos, -s[pos]))]
    neg = neg[np.lexsort((neg, -s[neg]))]
    # position of a relevant item = its rank among relevant + its b; the rest are irrelevant
    n = s.size
    slot = np.full(n, -1, dtype=np.int64)
    pos_slots = np.arange(pos.size) + res.n_before[pos]
    slot[pos_slots] = pos
    slot[np.setdiff1d(np.arange(n), pos_slots)] = neg
    return slot, float(res.delta[0])
