"""WARP learning of the local-metric weights Phi (Section 3.3, Eq. 14-21, Algorithm 2).

The score is linear in Phi: ``f(p) = sign * h(p) @ Phi`` (:mod:`.scoring`), so
``df(p)/dPhi = sign * h(p)``. One iteration:

1. take the iteration's query q (iid uniform over the queries that have positives and
   negatives) and a positive p+ uniformly from its highly relevant documents;
2. draw negatives (label 0) with replacement until one violates the margin,
   ``zeta + f(p-) > f(p+)``, at most ``|D_q-|`` draws (no violator: no update); N = draws;
3. ``L = L(floor(|D_q-| / N))`` with ``L(k) = sum_{i=1..k} 1 / log2(i + 1)`` (Eq. 16);
4. ``Phi <- max(0, Phi - mu_t * L * (df(p-)/dPhi - df(p+)/dPhi))`` (Eq. 21, projected).

Step size ``mu_t``: a constant, or ``"authors"``: ``1 / (1 + exp(t / (100 * n_queries)))``.

Two modes: ``per_query`` learns one Phi_q per training query (the paper; the queries' updates
are independent, so running each query's iterations together is exactly the sequential
algorithm), ``global`` learns one Phi shared by all queries (a query-independent reading).

Memory: features h are computed only for the positive and negative documents of the queries
an iteration block touches, a chunk of queries at a time within ``cache_bytes``. When all of
them fit (small data) the global mode is exactly iid sequential SGD; otherwise it makes one
pass over chunks of queries in random order, each chunk receiving its share of the T
iterations (iid within the chunk): a documented approximation for MSLR-sized data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .local_metrics import QuerySets

__all__ = ["rank_weight", "rank_weight_table", "train_warp", "warp_loss"]


def rank_weight(k: int) -> float:
    """``L(k) = sum_{i=1..k} 1 / log2(i + 1)`` (Eq. 16); L(0) = 0."""
    return float(np.sum(1.0 / np.log2(np.arange(2, k + 2)))) if k > 0 else 0.0


def rank_weight_table(n: int) -> np.ndarray:
    """``[L(0), L(1), ..., L(n)]``."""
    return np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(2, n + 2)))]


def warp_loss(
    Hpos: list[np.ndarray], Hneg: list[np.ndarray], phi, sign: float, margin: float
) -> float:
    """Eq. 14 averaged over queries: mean over positives of ``L(v(p+))`` where ``v`` counts
    negatives with ``zeta + f(p-) > f(p+)`` (the margin-violators WARP samples).

    ``phi`` is one vector (m,) shared by all queries or an array (n_queries, m).
    """
    phi = np.asarray(phi, dtype=np.float64)
    total, n = 0.0, 0
    for qi, (P, N) in enumerate(zip(Hpos, Hneg)):
        if P.shape[0] == 0 or N.shape[0] == 0:
            continue
        w = phi if phi.ndim == 1 else phi[qi]
        fp, fn = sign * (P @ w), sign * (N @ w)
        v = (fn[None, :] + margin > fp[:, None]).sum(axis=1)
        table = rank_weight_table(N.shape[0])
        total += float(table[v].mean())
        n += 1
    return total / max(n, 1)


def _mu(step_size, it: int | np.integer, n_queries: int) -> float:
    if step_size == "authors":
        return 1.0 / (1.0 + np.exp(it / (100.0 * n_queries)))
    return float(step_size)


def _iterate(phi, P, N, rng, mu, margin, sign, table) -> None:
    """One WARP iteration on one query, in place on ``phi``."""
    ip = int(rng.integers(P.shape[0]))
    hp = P[ip]
    fp = sign * (hp @ phi)
    viol = sign * (N @ phi) + margin > fp
    if not viol.any():
        return
    nn = N.shape[0]
    draws = rng.integers(0, nn, size=nn)
    hits = viol[draws]
    if not hits.any():  # |D_q-| draws without a violator: WARP gives up on this tuple
        return
    first = int(np.argmax(hits))
    j = int(draws[first])
    lk = table[nn // (first + 1)]
    phi -= (mu * lk * sign) * (N[j] - hp)
    np.maximum(phi, 0.0, out=phi)


def train_warp(
    *,
    rng: np.random.Generator,
    sets: QuerySets,
    features: Callable[[np.ndarray], np.ndarray],
    n_metrics: int,
    n_iter: int,
    mode: str,
    initial_weight: float,
    step_size,
    margin: float,
    sign: float,
    cache_bytes: int,
    progress: Callable[[int, int], None] | None = None,
):
    """Run WARP. Returns Phi (m,) in ``global`` mode, (n_queries, m) in ``per_query`` mode
    (rows of queries without positives or negatives keep ``initial_weight``).

    features(rows) -> (len(rows), m) float64 ``h`` of the given training rows.
    """
    elig = sets.eligible
    nq_all = sets.n_queries
    phi: np.ndarray
    if mode == "per_query":
        phi = np.full((nq_all, n_metrics), float(initial_weight))
    else:
        phi = np.full(n_metrics, float(initial_weight))
    if elig.size == 0 or n_iter <= 0:
        return phi
    max_neg = max(int(sets.neg[q].size) for q in elig)
    table = rank_weight_table(max_neg)
    row_bytes = 8 * n_metrics
    sizes = np.array([sets.pos[q].size + sets.neg[q].size for q in elig])
    fits = sizes.sum() * row_bytes <= cache_bytes

    if mode == "per_query" or fits:
        # One iid sequence of queries for all T iterations (exactly the paper's sampling).
        seq = elig[rng.integers(0, elig.size, size=n_iter)]
        chunk_order = elig
    else:
        chunk_order = elig[rng.permutation(elig.size)]
    chunks = _chunks(chunk_order, sets, row_bytes, cache_bytes)
    done = 0
    for ci, chunk in enumerate(chunks):
        if mode == "per_query" or fits:
            if fits:
                it_idx = np.arange(n_iter)
            else:
                it_idx = np.flatnonzero(np.isin(seq, chunk))
            chunk_seq = seq[it_idx]
        else:
            # Share of the T iterations proportional to the chunk's number of queries.
            lo = (n_iter * sum(len(c) for c in chunks[:ci])) // elig.size
            hi = (n_iter * sum(len(c) for c in chunks[: ci + 1])) // elig.size
            it_idx = np.arange(lo, hi)
            chunk_seq = chunk[rng.integers(0, len(chunk), size=it_idx.size)]
        used = np.unique(chunk_seq)
        if used.size == 0:
            continue
        Hpos, Hneg = _query_features(features, sets, used)
        if mode == "per_query":
            for q in used:  # each query's updates touch only Phi_q: run them together
                its = it_idx[chunk_seq == q]
                for it in its:
                    _iterate(
                        phi[q],
                        Hpos[q],
                        Hneg[q],
                        rng,
                        _mu(step_size, it, nq_all),
                        margin,
                        sign,
                        table,
                    )
        else:
            for it, q in zip(it_idx, chunk_seq):
                _iterate(
                    phi, Hpos[q], Hneg[q], rng, _mu(step_size, it, nq_all), margin, sign, table
                )
        done += it_idx.size
        if progress is not None:
            progress(done, n_iter)
        del Hpos, Hneg
    return phi


def _chunks(order: np.ndarray, sets: QuerySets, row_bytes: int, cache_bytes: int):
    chunks: list[np.ndarray] = []
    cur: list[Any] = []
    cur_bytes = 0
    for q in order:
        b = (sets.pos[q].size + sets.neg[q].size) * row_bytes
        if cur and cur_bytes + b > cache_bytes:
            chunks.append(np.asarray(cur))
            cur, cur_bytes = [], 0
        cur.append(q)
        cur_bytes += b
    if cur:
        chunks.append(np.asarray(cur))
    return chunks


def _query_features(features, sets: QuerySets, used: np.ndarray):
    """h of the positives and negatives of the ``used`` queries, one batched call."""
    rows = np.concatenate([np.r_[sets.pos[q], sets.neg[q]] for q in used])
    H = features(rows)
    Hpos, Hneg, at = {}, {}, 0
    for q in used:
        a, b = sets.pos[q].size, sets.neg[q].size
        Hpos[q] = H[at : at + a]
        Hneg[q] = H[at + a : at + a + b]
        at += a + b
    return Hpos, Hneg
