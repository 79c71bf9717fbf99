"""The tie-aware kernels behind :func:`ltr_bench.evaluation.metrics.evaluate`.

:class:`RankedQueries` sorts the documents of every query once by (query, -score) and computes
each metric for all queries at once, as the *expected value over all orderings of tied
documents* (conventions in :mod:`ltr_bench.evaluation.metrics`). Position ``p`` (0-based,
global) has a 1-based rank within its query, a tie group and a query.

Notation for the tie formulas: after sorting a query by descending score, a *tie group* is
a maximal run of equal scores; it occupies ranks ``s+1 .. s+m`` (``s`` documents before
it), holds ``r`` relevant documents, and ``c`` relevant documents precede it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike

_MAX_LABEL = 1000  # 2^1000 still fits a float64 with room for sums over a query
#: the largest label the metrics take (public: the plan check refuses click counts above it)
MAX_LABEL = _MAX_LABEL


def check_1d(name: str, a: ArrayLike, n: int | None) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} entries but y_true has {n}; lengths must match")
    return a


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _segment_sum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over segments ``starts[i]:starts[i+1]`` (all segments non-empty)."""
    return np.add.reduceat(values, starts) if values.size else np.zeros(starts.size)


@dataclass
class RankedQueries:
    n_queries: int
    qstart: np.ndarray  # (Q,) first sorted position of each query
    qsize: np.ndarray  # (Q,) documents per query
    rank: np.ndarray  # (n,) 1-based rank within the query, sorted order
    label: np.ndarray  # (n,) float64 labels in score order
    ideal_label: np.ndarray  # (n,) float64 labels sorted descending within each query
    gstart: np.ndarray  # (G,) first sorted position of each tie group
    gsize: np.ndarray  # (G,) m: documents in the group
    gid: np.ndarray  # (n,) tie group of each position
    gquery: np.ndarray  # (G,) query of each group
    g_before: np.ndarray  # (G,) s: documents of the query ranked before the group
    g_rel: np.ndarray  # (G,) r: relevant documents in the group
    g_rel_before: np.ndarray  # (G,) c: relevant documents of the query before the group
    n_rel: np.ndarray  # (Q,) relevant documents per query
    empty: np.ndarray  # (Q,) bool, no relevant document
    max_label: float

    @classmethod
    def build(
        cls, y_true: ArrayLike, scores: ArrayLike, qid: ArrayLike, max_label: float | None
    ) -> RankedQueries:
        y = check_1d("y_true", y_true, None)
        n = y.shape[0]
        s = check_1d("scores", scores, n)
        q = check_1d("qid", qid, n)
        if n == 0:
            raise ValueError("no documents: y_true, scores and qid are empty")
        if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
            raise ValueError(f"y_true must be numeric, got dtype {y.dtype}")
        if not np.issubdtype(s.dtype, np.number) or np.iscomplexobj(s):
            raise ValueError(f"scores must be real numbers, got dtype {s.dtype}")
        y = y.astype(np.float64)
        s = s.astype(np.float64)
        bad = ~np.isfinite(y) | (y < 0) | (y != np.round(y))
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(
                f"y_true must hold non-negative integer labels; row {i} has {y[i]!r} "
                f"({int(bad.sum())} bad rows)"
            )
        if np.issubdtype(q.dtype, np.floating) and np.isnan(q).any():
            raise ValueError(f"qid contains NaN (first at row {_first_bad(np.isnan(q))})")
        nan = np.isnan(s)
        if nan.any():
            raise ValueError(
                f"scores contain NaN (first at row {_first_bad(nan)}, {int(nan.sum())} rows)"
            )
        top = float(y.max())
        if top > _MAX_LABEL:
            raise ValueError(
                f"labels above {_MAX_LABEL} are not supported (the gain 2^rel - 1 "
                f"overflows); y_true has {top:g} at row {int(np.argmax(y))}"
            )
        if max_label is None:
            g_max = top
        else:
            if (
                isinstance(max_label, bool)
                or not isinstance(max_label, Real)
                or not 0 <= float(max_label) <= _MAX_LABEL
            ):
                raise ValueError(
                    f"max_label must be a number in [0, {_MAX_LABEL}], got {max_label!r}"
                )
            if max_label < top:
                raise ValueError(
                    f"max_label={max_label} is below the largest label {top:g} "
                    "in y_true; ERR needs max_label >= every label"
                )
            g_max = float(max_label)

        # Query block of each row, numbered by first appearance.
        change = np.r_[True, q[1:] != q[:-1]]
        starts = np.flatnonzero(change)
        heads = q[starts]
        if np.unique(heads).size == heads.size:  # contiguous: no grouping sort
            n_queries = heads.size
            block = np.cumsum(change) - 1
        else:
            _, first, inverse = np.unique(q, return_index=True, return_inverse=True)
            order_of_first = np.empty(first.size, dtype=np.int64)
            order_of_first[np.argsort(first)] = np.arange(first.size)
            block = order_of_first[inverse.reshape(-1)]
            n_queries = first.size
        block = block.astype(np.int64)

        # One sort by (block, -score). A global argsort of -score then an integer sort of
        # block*n + score_rank is several times faster than np.lexsort on float keys; equal
        # scores stay adjacent within a block, their order does not matter (ties averaged).
        by_score = np.argsort(-s)
        score_rank = np.empty(n, dtype=np.int64)
        score_rank[by_score] = np.arange(n)
        order = np.argsort(block * n + score_rank)
        ys, ss = y[order], s[order]
        qsize = np.bincount(block, minlength=n_queries)
        qstart = np.r_[0, np.cumsum(qsize)[:-1]].astype(np.int64)
        qof = np.repeat(np.arange(n_queries), qsize)  # query of each sorted position
        rank = np.arange(n) - qstart[qof] + 1

        # Ideal order: labels descending within each block (stable integer sort).
        top_i = int(top)
        ideal = np.argsort(block * (top_i + 1) + (top_i - y.astype(np.int64)), kind="stable")
        ideal_label = y[ideal]

        new_group = np.r_[True, (qof[1:] != qof[:-1]) | (ss[1:] != ss[:-1])]
        gstart = np.flatnonzero(new_group)
        gsize = np.diff(np.r_[gstart, n])
        gid = np.cumsum(new_group) - 1
        gquery = qof[gstart]
        rel = (ys >= 1).astype(np.int64)
        g_rel = np.add.reduceat(rel, gstart)
        cum_rel = np.r_[0, np.cumsum(rel)]  # cum_rel[p] = relevant before p
        g_rel_before = cum_rel[gstart] - cum_rel[qstart[gquery]]
        n_rel = np.add.reduceat(rel, qstart)
        return cls(
            n_queries=n_queries,
            qstart=qstart,
            qsize=qsize,
            rank=rank,
            label=ys,
            ideal_label=ideal_label,
            gstart=gstart,
            gsize=gsize,
            gid=gid,
            gquery=gquery,
            g_before=rank[gstart] - 1,
            g_rel=g_rel,
            g_rel_before=g_rel_before,
            n_rel=n_rel,
            empty=n_rel == 0,
            max_label=g_max,
        )

    # ---- shared pieces, computed on first use ---------------------------------------
    def _cached(self, key: str, make: Callable[[], np.ndarray]) -> np.ndarray:
        cache: dict[str, np.ndarray] = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def _discount(self) -> np.ndarray:
        return self._cached("disc", lambda: 1.0 / np.log2(self.rank + 1.0))

    def _top_k_sum(self, values: np.ndarray, k: int | None) -> np.ndarray:
        """Per-query sum of ``values`` over positions of rank <= k (all ranks if None)."""
        if k is not None:
            values = np.where(self.rank <= k, values, 0.0)
        return _segment_sum(values, self.qstart)

    # ---- metrics: each returns (Q,) raw values; evaluate applies empty_query ---------
    def ndcg(self, k: int) -> np.ndarray:
        """NDCG@k = DCG@k / IDCG@k.

        DCG@k = sum_{rank <= k} (2^rel - 1) / log2(rank + 1). With ties, the expected DCG
        over orderings of a tie group is its mean gain times the sum of the discounts of
        the ranks it occupies (sklearn's tie-averaged DCG); ranks beyond k count 0, so a
        group straddling k contributes its mean gain on the ranks inside k. IDCG@k is the
        DCG@k of the labels sorted descending (no ties matter there). A one-document query
        scores 1 if relevant. IDCG = 0 exactly when no label is >= 1 (empty query).
        """

        def dcg_terms() -> np.ndarray:
            gain = np.exp2(self.label) - 1.0
            mean_gain = _segment_sum(gain, self.gstart) / self.gsize
            return np.asarray(mean_gain[self.gid] * self._discount())

        def idcg_terms() -> np.ndarray:
            return np.asarray((np.exp2(self.ideal_label) - 1.0) * self._discount())

        dcg = self._top_k_sum(self._cached("dcg_terms", dcg_terms), k)
        idcg = self._top_k_sum(self._cached("idcg_terms", idcg_terms), k)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)

    def _hits(self, k: int) -> np.ndarray:
        """Expected relevant documents among ranks 1..k, per query.

        A tie group with r relevant of m documents puts r/m expected relevant documents on
        each rank it occupies (exact: the count is linear in the ranking).
        """
        frac = self._cached("rel_frac", lambda: (self.g_rel / self.gsize)[self.gid])
        return self._top_k_sum(frac, k)

    def precision(self, k: int) -> np.ndarray:
        """P@k = (number of documents with label >= 1 among ranks 1..k) / k.

        Ties as in :meth:`_hits`. A query with fewer than k documents still divides by k
        (trec_eval, ranx; XGBoost's ``pre@k`` divides by min(k, n_docs)). An empty query
        scores 0 (not ``empty_query``).
        """
        return self._hits(k) / k

    def recall(self, k: int) -> np.ndarray:
        """Recall@k = (number of documents with label >= 1 among ranks 1..k) / R.

        R = relevant documents of the query (trec_eval ``recall_k``, ranx). Ties as in
        :meth:`_hits`. A query with at most k documents scores 1. R = 0 is an empty query
        (raw value 0 here; :func:`evaluate` applies ``empty_query``).
        """
        return np.asarray(self._hits(k) / np.maximum(self.n_rel, 1))

    def map(self, k: int | None) -> np.ndarray:
        """AP@k = (1/R) sum over relevant documents d at rank(d) <= k of P@rank(d).

        R = all relevant documents of the query (trec_eval ``map_cut``, ranx), so AP@k < 1
        when R > k (XGBoost's ``map@k`` divides by min(k, R) instead, and its ``map``
        without a cutoff is ``map@32``, so it differs from ours on queries of more than 32
        documents; tests/baselines/test_library_metrics.py). ``map`` (no k) uses the whole
        list. Ties: for a
        relevant document in a group (s, m, r, c) placed uniformly at the group's j-th
        rank, the other relevant documents of the group ahead of it number
        (j-1)(r-1)/(m-1) in expectation, so by
        linearity the group adds (r/m) sum_{j: s+j <= k} (c + 1 + (j-1)(r-1)/(m-1)) / (s+j)
        (exact; the (r-1)/(m-1) term is 0 when m = 1). R = 0 is an empty query.
        """

        def terms() -> np.ndarray:
            m, r, c = self.gsize, self.g_rel, self.g_rel_before
            slope = np.where(m > 1, (r - 1) / np.maximum(m - 1, 1), 0.0)
            j = self.rank - self.g_before[self.gid]  # 1-based rank within group
            g = self.gid
            return np.asarray((r / m)[g] * (c[g] + 1 + (j - 1) * slope[g]) / self.rank)

        ap_sum = self._top_k_sum(self._cached("ap_terms", terms), k)
        return np.asarray(ap_sum / np.maximum(self.n_rel, 1))

    def mrr(self, k: int | None) -> np.ndarray:
        """RR@k = 1 / rank of the first relevant document if that rank <= k, else 0.

        Ties: only the first group holding a relevant document matters (s, m, r, c = 0).
        Its first relevant document sits at the group's j-th rank with probability
        P(J > j-1) - P(J > j), where P(J > j) = C(m-j, r) / C(m, r)
        = prod_{i<j} (m-r-i)/(m-i) (hypergeometric: the first j ranks hold no relevant
        document); E[RR@k] = sum_{j: s+j <= k} (P(J > j-1) - P(J > j)) / (s + j). Exact.
        No relevant document is an empty query.
        """
        first = (self.g_rel > 0) & (self.g_rel_before == 0)  # one group per query
        groups = np.flatnonzero(first)
        m, r = self.gsize[groups], self.g_rel[groups]
        s, q = self.g_before[groups], self.gquery[groups]
        if k is not None:  # ranks beyond k add nothing: only the first k - s group ranks
            keep = s < k
            groups, m, r, s, q = groups[keep], m[keep], r[keep], s[keep], q[keep]
        if groups.size == 0:
            return np.zeros(self.n_queries)
        # Expand each group into its ranks j = 1 .. m - r + 1 (beyond that P(J=j) = 0).
        span = m - r + 1
        if k is not None:
            span = np.minimum(span, k - s)
        seg = np.repeat(np.arange(groups.size), span)
        seg_start = np.r_[0, np.cumsum(span)[:-1]]
        j = np.arange(seg.size) - seg_start[seg] + 1
        mg, rg = m[seg], r[seg]
        # log P(J > j) as a within-segment cumulative sum of log((m-r-i)/(m-i)), i = j-1;
        # the factor is 0 at j = m - r + 1 and handled separately (no log 0).
        positive = j <= mg - rg
        ratio = np.where(positive, (mg - rg - j + 1) / (mg - j + 1), 1.0)
        log_f = np.log(ratio)  # 0 where not positive
        csum = np.cumsum(log_f)
        base = csum[seg_start] - log_f[seg_start]
        surv = np.where(positive, np.exp(csum - base[seg]), 0.0)  # P(J > j)
        surv_prev = np.r_[1.0, surv[:-1]]
        surv_prev[seg_start] = 1.0  # P(J > 0) = 1
        terms = (surv_prev - surv) / (s[seg] + j)
        return np.bincount(q[seg], weights=terms, minlength=self.n_queries)

    def err(self, k: int) -> np.ndarray:
        """ERR@k = sum_{rank <= k} (1/rank) R_rank prod_{i < rank} (1 - R_i).

        R = (2^g - 1) / 2^g_max with g_max = ``max_label`` (Chapelle et al. 2009). Ties:
        the survival before a group (s, m) is the product of (1 - R) over earlier ranks,
        whatever their order. Inside the group, with x = 1 - R of its members, let E_t be
        the mean over all t-subsets of the product of their x (E_0 = 1, E_m = prod x): the
        user survives the group's first t ranks with probability E_t under a random
        ordering, so the group adds survival * sum_{j: s+j <= k} (E_{j-1} - E_j) / (s+j).
        E_t comes from the recurrence E^(i)_t = ((i-t)/i) E^(i-1)_t + (t/i) x_i E^(i-1)_{t-1}
        over the group's members i (a convex combination: stable). Exact. The loop runs
        over members of the largest tie group reaching the top k, vectorised over groups.
        A query with no label >= 1 has ERR 0 and is an empty query.
        """
        R = (np.exp2(self.label) - 1.0) / np.exp2(self.max_label)
        x = 1.0 - R
        n_q = self.n_queries
        # Survival before each of the first k ranks: padded (Q, k) cumulative product.
        width = int(min(k, self.qsize.max()))
        cols = np.arange(width)
        inside = cols[None, :] < self.qsize[:, None]
        pos = np.where(inside, self.qstart[:, None] + cols[None, :], 0)
        x_top = np.where(inside, x[pos], 1.0)
        survive = np.cumprod(x_top, axis=1)  # survive[q, t]: past ranks 1..t+1
        survive = np.hstack([np.ones((n_q, 1)), survive])  # survive[q, t]: past ranks 1..t

        active = np.flatnonzero(self.g_before < k)  # groups that reach the top k
        s = self.g_before[active]
        m = self.gsize[active]
        q = self.gquery[active]
        before = survive[q, s]

        out = np.zeros(n_q)
        single = m == 1
        if single.any():
            pos1 = self.gstart[active[single]]
            np.add.at(out, q[single], before[single] * R[pos1] / (s[single] + 1))
        tied = np.flatnonzero(~single)
        if tied.size:
            # Largest groups first, so the groups still consuming members are a prefix.
            tied = tied[np.argsort(-m[tied], kind="stable")]
            tm, ts, tq = m[tied], s[tied], q[tied]
            tstart = self.gstart[active[tied]]
            n_t = np.minimum(tm, k - ts)  # group ranks inside the top k
            T = int(n_t.max())
            t = np.arange(1, T + 1, dtype=np.float64)
            E = np.zeros((tied.size, T + 1))
            E[:, 0] = 1.0
            counts = np.bincount(tm)  # how many groups have size >= i
            still = tied.size - np.r_[0, np.cumsum(counts)]
            for i in range(1, int(tm[0]) + 1):
                a = still[i]  # groups with m >= i
                xi = x[tstart[:a] + i - 1][:, None]
                E[:a, 1:] = ((i - t) / i) * E[:a, 1:] + (t / i) * xi * E[:a, :-1]
            j = np.arange(1, T + 1)
            w = np.where(j[None, :] <= n_t[:, None], 1.0 / (ts[:, None] + j[None, :]), 0.0)
            contrib = before[tied] * (w * (E[:, :-1] - E[:, 1:])).sum(axis=1)
            np.add.at(out, tq, contrib)
        return out
