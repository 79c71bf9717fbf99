"""Distances to all anchors under all local metrics, and the score of Eq. 13, batched.

For m local metrics ``Q_r = alpha_r I + V_r diag(g_r) V_r^T`` (see
:class:`~ltr_bench_lgmml.gmml.LowRankQuadratic`) and anchors ``a_r``, the squared distance of
a document ``p`` is::

    delta_r(p)^2 = alpha_r ||p - a_r||^2 + sum_j g_rj (v_rj . p - v_rj . a_r)^2

The first term for all anchors at once is ``||p||^2 - 2 P A^T + ||a||^2`` (one n x d x m
product); the second is one ``P @ V_all`` product with ``V_all = [V_1 ... V_m]`` (d x K,
K = sum of the ranks) followed by a segmented sum. Cost per document: O(d (m + K)), exact
(docs/decisions.md#gmml-low-rank), against O(m d^2) for the dense form. Memory: rows are
processed in chunks so at most ``chunk x (K + m)`` numbers exist at a time; no n x m x d array
is ever formed.
In practice the product is ``[p, 1] @ W`` with ``W``'s columns ``sqrt|g_j| [v_j; -v_j . a_r]``
(see ``MetricBank._prepared``): the GEMM is then ~70% of the scoring time (profiled at
m = 100, K = 2900, one thread), and ``max_rank`` (fewer columns) is what makes it cheaper.

In query-dependent mode (Section 4.4) every anchor is the row's own query point ``q``:
``delta_r(p)^2 = x^T Q_r x`` with ``x = p - q``.

Score (Eq. 13): ``f(p) = sign * sum_r Phi_r * h_r(p)`` with ``h_r = g(delta_r)``,
``g(d) = d exp(-d)``. ``score_form``:

- ``"eq13"``: sign = -1, h_r = g(delta_r): Eq. 13 literally.
- ``"rising"``: sign = -1, h_r = g(min(delta_r / s_r, 1)) with s_r a quantile of delta_r over
  training documents, so distances sit on g's rising side [0, 1] where -g decreases with
  distance: closer documents always score higher (docs/decisions.md#lgmml-score-direction).
- ``"positive"``: sign = +1, h_r = g(delta_r): what the authors' code effectively ranks by.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .gmml import LowRankQuadratic

__all__ = ["MetricBank", "SCORE_CHUNK_ROWS", "SCORE_FORMS", "g_of", "map_row_chunks", "score_rows"]

SCORE_FORMS = ("rising", "eq13", "positive")
#: largest share of extra (zero) columns the padded scoring layout may add to K
_PAD_SLACK = 0.25


def g_of(delta: np.ndarray) -> np.ndarray:
    """``g(d) = d * exp(-d)``: rises on [0, 1], peaks at 1/e, falls after."""
    return delta * np.exp(-delta)


@dataclass
class MetricBank:
    """m local metrics stacked for batched scoring.

    alpha: (m,) isotropic parts; V: (d, K) low-rank directions of all metrics side by side;
    g: (K,) their coefficients; seg: (m,) start column of each metric's block in V (every
    block non-empty: a rank-0 metric gets one zero column); anchors: (m, d) or None
    (query-dependent mode). score_form / sign as in the module docstring; dist_scale: (m,)
    the s_r of ``"rising"`` (ones otherwise).
    """

    alpha: np.ndarray
    V: np.ndarray
    g: np.ndarray
    seg: np.ndarray
    anchors: np.ndarray | None
    score_form: str = "rising"
    dist_scale: np.ndarray | None = None

    @classmethod
    def from_metrics(
        cls,
        metrics: list[LowRankQuadratic],
        anchors: np.ndarray | None,
        score_form: str,
        max_rank: int | None = None,
    ) -> MetricBank:
        """Stack ``metrics``. ``max_rank``: keep only each metric's ``max_rank`` low-rank
        components of largest |g| (an approximation; None = exact)."""
        d = metrics[0].V.shape[0]
        Vs, gs, seg, pos = [], [], [], 0
        for q in metrics:
            V, g = q.V, q.g
            if max_rank is not None and g.size > max_rank:
                keep = np.sort(np.argsort(-np.abs(g), kind="stable")[:max_rank])
                V, g = V[:, keep], g[keep]
            if V.shape[1] == 0:
                V, g = np.zeros((d, 1)), np.zeros(1)
            seg.append(pos)
            pos += V.shape[1]
            Vs.append(V)
            gs.append(g)
        return cls(
            alpha=np.array([q.alpha for q in metrics], dtype=np.float64),
            V=np.ascontiguousarray(np.hstack(Vs)),
            g=np.concatenate(gs),
            seg=np.asarray(seg, dtype=np.int64),
            anchors=None if anchors is None else np.ascontiguousarray(anchors, np.float64),
            score_form=score_form,
            dist_scale=np.ones(len(metrics)),
        )

    def truncated(self, max_rank: int) -> MetricBank:
        """A copy keeping, per metric, only the ``max_rank`` low-rank components of largest
        |g| (the same rule as ``from_metrics(..., max_rank)``; ``dist_scale`` is copied, not
        refitted). Scoring cost per document falls from O(d (m + K)) to
        O(d m (1 + max_rank)); the distances change, so the NDCG effect must be measured."""
        if (
            isinstance(max_rank, bool)
            or not isinstance(max_rank, (int, np.integer))
            or max_rank < 1
        ):
            raise ValueError(f"max_rank must be an integer >= 1, got {max_rank!r}")
        ends = np.r_[self.seg[1:], self.V.shape[1]]
        cols, seg, pos = [], [], 0
        for a, b in zip(self.seg, ends):
            g = self.g[a:b]
            keep = np.arange(a, b)
            if g.size > max_rank:
                keep = a + np.sort(np.argsort(-np.abs(g), kind="stable")[:max_rank])
            seg.append(pos)
            pos += keep.size
            cols.append(keep)
        kept = np.concatenate(cols)
        return MetricBank(
            alpha=self.alpha.copy(),
            V=np.ascontiguousarray(self.V[:, kept]),
            g=self.g[kept].copy(),
            seg=np.asarray(seg, dtype=np.int64),
            anchors=None if self.anchors is None else self.anchors.copy(),
            score_form=self.score_form,
            dist_scale=None if self.dist_scale is None else self.dist_scale.copy(),
        )

    @property
    def n_metrics(self) -> int:
        return int(self.alpha.size)

    @property
    def sign(self) -> float:
        return 1.0 if self.score_form == "positive" else -1.0

    def _prepared(self, dtype):
        """Scoring layout, cached per dtype.

        The low-rank term of metric r is ``sum_j g_j (v_j . x - o_j)^2`` (``o_j = v_j . a_r``,
        0 in query-dependent mode). Each column is scaled by ``sqrt|g_j|`` and the offset is
        folded into the product as an extra input row, so that one GEMM
        ``[x, 1] @ W`` gives ``sqrt|g_j| (v_j . x - o_j)``; it is squared in place, summed
        over runs of columns of equal sign (``reduceat``), and the runs are combined with
        their signs per metric. Within each metric the columns are reordered positive-g
        first, so a metric has at most two runs. This touches the (chunk x K) block twice
        (square, sum) instead of four times (offset, square, scale, sum).

        Padded layout (used when every metric has rank <= k_max and padding each metric to
        k_max columns adds at most ``_PAD_SLACK`` of K): metric r owns columns
        ``r*k_max .. (r+1)*k_max - 1`` (zero columns pad it), and the signed sum over a
        metric's columns is one ``einsum("nmk,mk->nm")`` with the signs of g (0 for pads).
        Same numbers, about half the time of the two ``reduceat`` passes (measured at
        m = 500, rank 9, one thread). ``padded`` in the result is k_max, or 0 for the
        run layout.
        """
        key = np.dtype(dtype).str
        cache = self.__dict__.setdefault("_prep", {})
        if key not in cache:
            K = self.V.shape[1]
            ends = np.r_[self.seg[1:], K]
            perm, run_starts, run_sign, metric_runs = [], [], [], []
            pos = 0
            for a, b in zip(self.seg, ends):
                cols = np.arange(a, b)
                neg = self.g[a:b] < 0
                metric_runs.append(len(run_starts))
                for part, sgn in ((cols[~neg], 1.0), (cols[neg], -1.0)):
                    if part.size:
                        run_starts.append(pos)
                        run_sign.append(sgn)
                        perm.append(part)
                        pos += part.size
            perm = np.concatenate(perm)
            V = self.V[:, perm]
            root = np.sqrt(np.abs(self.g[perm]))
            W = np.empty((V.shape[0] + 1, K), dtype=np.float64)
            W[:-1] = V * root
            if self.anchors is not None:
                col_metric = np.repeat(np.arange(self.n_metrics), np.diff(np.r_[self.seg, K]))
                # Column j's offset: its own metric's anchor projected on v_j.
                off = np.einsum("jd,dj->j", self.anchors[col_metric[perm]], V)
                W[-1] = -off * root
                aa = np.einsum("ij,ij->i", self.anchors, self.anchors)
            else:
                W[-1] = 0.0
                aa = None
            ranks = np.diff(np.r_[self.seg, K])
            kmax = int(ranks.max())
            padded = 0
            if self.n_metrics * kmax <= (1.0 + _PAD_SLACK) * K:
                # perm keeps each metric's columns together and in metric order, so column
                # j of W belongs to metric owner[j], at slot j - (start of that metric)
                Wp = np.zeros((W.shape[0], self.n_metrics * kmax))
                signs = np.zeros((self.n_metrics, kmax))
                owner = np.repeat(np.arange(self.n_metrics), ranks)
                slot = np.arange(K) - np.repeat(self.seg, ranks)
                Wp[:, owner * kmax + slot] = W
                signs[owner, slot] = np.where(self.g[perm] < 0, -1.0, 1.0) * (root > 0)
                W, run_sign, padded = Wp, signs, kmax
            cache[key] = (
                np.ascontiguousarray(W.astype(dtype)),
                np.asarray(run_starts, dtype=np.int64),
                np.asarray(run_sign, dtype=dtype if padded else np.float64),
                np.asarray(metric_runs, dtype=np.int64),
                aa,
                padded,
            )
        return cache[key]

    def sq_distances(
        self, Xs: np.ndarray, Q: np.ndarray | None = None, *, dtype=np.float32
    ) -> np.ndarray:
        """Squared local distances (n, m) float64 of scaled documents ``Xs`` (n, d).

        Query-independent mode: to the anchors. Query-dependent (``anchors is None``): to the
        rows' query points ``Q`` (n, d). The low-rank term runs in ``dtype`` (float32 halves
        memory traffic and doubles BLAS speed; the isotropic term stays float64).
        """
        W, run_starts, run_sign, metric_runs, aa, padded = self._prepared(dtype)
        n, d = Xs.shape[0], W.shape[0] - 1
        Xa = np.empty((n, d + 1), dtype=dtype)  # [x, 1]: the 1 picks up the offsets
        Xa[:, d] = 1.0
        if self.anchors is None:
            if Q is None:
                raise ValueError("query-dependent scoring needs the query points Q")
            Xd = np.asarray(Xs, dtype=np.float64) - Q
            iso = np.einsum("ij,ij->i", Xd, Xd)[:, None] * self.alpha[None, :]
            Xa[:, :d] = Xd
        else:
            X64 = np.asarray(Xs, dtype=np.float64)
            xx = np.einsum("ij,ij->i", X64, X64)
            iso = X64 @ (-2.0 * self.anchors.T)
            iso += xx[:, None]
            iso += aa[None, :]
            np.maximum(iso, 0.0, out=iso)  # rounding can push ||p - a||^2 below 0
            iso *= self.alpha[None, :]
            Xa[:, :d] = X64
        Y = Xa @ W
        np.square(Y, out=Y)
        if padded:
            runs = np.einsum("nmk,mk->nm", Y.reshape(n, self.n_metrics, padded), run_sign)
            runs = runs.astype(np.float64, copy=False)
            del Y
        else:
            runs = np.add.reduceat(Y, run_starts, axis=1).astype(np.float64, copy=False)
            del Y
            if run_starts.size != metric_runs.size:  # some metric has negative-g columns
                runs *= run_sign
                runs = np.add.reduceat(runs, metric_runs, axis=1)
        iso += runs
        np.maximum(iso, 0.0, out=iso)
        return iso

    def features(
        self, Xs: np.ndarray, Q: np.ndarray | None = None, *, dtype=np.float32
    ) -> np.ndarray:
        """``h_r(p)`` (n, m) float64 such that ``f(p) = sign * h(p) @ Phi``."""
        delta = np.sqrt(self.sq_distances(Xs, Q, dtype=dtype))
        if self.score_form == "rising":
            assert self.dist_scale is not None  # from_metrics sets it, fit_dist_scale refits it
            delta /= self.dist_scale[None, :]
            np.minimum(delta, 1.0, out=delta)
        return g_of(delta)

    def fit_dist_scale(
        self, Xs: np.ndarray, Q: np.ndarray | None, quantile: float, *, dtype=np.float32
    ) -> None:
        """Set s_r = the ``quantile`` of delta_r over the given (training) documents."""
        delta = np.sqrt(self.sq_distances(Xs, Q, dtype=dtype))
        s = np.quantile(delta, quantile, axis=0)
        self.dist_scale = np.where(s > 0, s, 1.0)

    def bytes_per_row(self) -> int:
        """Working memory per document while scoring (float64 upper bound)."""
        return 8 * (self.V.shape[1] + 4 * self.n_metrics + 2 * self.V.shape[0])


#: rows of one scoring chunk at most: a fixed number (never derived from the thread count),
#: large enough for BLAS-3 speed in ``[x, 1] @ W`` and small enough that two or more chunks
#: exist to share between threads on inputs of a few thousand documents
SCORE_CHUNK_ROWS = 4096


#: what ``score_rows`` applies to each chunk of h(p): (rows, m) -> the values to store
Reduce = Callable[[np.ndarray], np.ndarray]


def map_row_chunks(n_rows: int, step: int, fn: Callable[[slice], None], n_workers: int) -> None:
    """``fn(rows)`` for the consecutive row slices ``[a, a + step)`` of ``range(n_rows)``,
    spread over ``n_workers`` threads, with BLAS held at ONE thread throughout.

    Thread-count independence by construction: the slices depend on ``n_rows`` and ``step``
    only, each slice is computed by the same single-threaded kernels whichever thread runs
    it, and slices write disjoint rows; so every value is bit-identical for any
    ``n_workers`` on any CPU (a multi-threaded BLAS call may block its reduction by the
    number of threads, which changed scores in the last bits between 1 and 2 threads).
    NumPy's BLAS calls release the GIL, so the workers do run in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    from ltr_bench.timing import thread_limit

    starts = range(0, n_rows, step)
    workers = max(1, min(int(n_workers), len(starts)))
    with thread_limit(1):
        if workers == 1:
            for a in starts:
                fn(slice(a, a + step))
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lgmml-score") as pool:
            for _ in pool.map(lambda a: fn(slice(a, a + step)), starts):
                pass  # re-raises a chunk's error here


def score_rows(
    bank, scaler, Xq, Xd, out, reduce: Reduce, dtype, step: int, n_workers: int
) -> np.ndarray:
    """``out[rows] = reduce(bank.features(scaled Xd[rows], scaled Xq[rows]))`` for the row
    chunks of :func:`map_row_chunks` (``step`` rows each, ``n_workers`` threads, one-thread
    BLAS): the same numbers for any ``n_workers``. Returns ``out``."""

    def chunk(rows: slice) -> None:
        Q = scaler.transform(Xq[rows]) if Xq is not None else None
        out[rows] = reduce(bank.features(scaler.transform(Xd[rows]), Q, dtype=dtype))

    map_row_chunks(Xd.shape[0], step, chunk, n_workers)
    return out
