"""Distances to all anchors under all local metrics, and the score of Eq. 13, batched.

For m local metrics ``Q_r = alpha_r I + V_r diag(g_r) V_r^T`` (see
:class:`~ltr_bench_lgmml.gmml.LowRankQuadratic`) and anchors ``a_r``, the squared distance of
a document ``p`` is::

    delta_r(p)^2 = alpha_r ||p - a_r||^2 + sum_j g_rj (v_rj . p - v_rj . a_r)^2

The first term for all anchors at once is ``||p||^2 - 2 P A^T + ||a||^2`` (one n x d x m
product); the second is one ``P @ V_all`` product with ``V_all = [V_1 ... V_m]`` (d x K,
K = sum of the ranks) followed by a segmented sum. Cost per document: O(d (m + K)), exact
(ALGORITHMS.md 2.8), against O(m d^2) for the dense form. Memory: rows are processed in chunks
so at most ``chunk x (K + m)`` numbers exist at a time; no n x m x d array is ever formed.

In query-dependent mode (Section 4.4) every anchor is the row's own query point ``q``:
``delta_r(p)^2 = x^T Q_r x`` with ``x = p - q``.

Score (Eq. 13): ``f(p) = sign * sum_r Phi_r * h_r(p)`` with ``h_r = g(delta_r)``,
``g(d) = d exp(-d)``. ``score_form``:

- ``"eq13"``: sign = -1, h_r = g(delta_r): Eq. 13 literally.
- ``"rising"``: sign = -1, h_r = g(min(delta_r / s_r, 1)) with s_r a quantile of delta_r over
  training documents, so distances sit on g's rising side [0, 1] where -g decreases with
  distance: closer documents always score higher (ALGORITHMS.md 2.9a).
- ``"positive"``: sign = +1, h_r = g(delta_r): what the authors' code effectively ranks by.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .gmml import LowRankQuadratic

__all__ = ["MetricBank", "SCORE_FORMS", "g_of"]

SCORE_FORMS = ("rising", "eq13", "positive")


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
    def from_metrics(cls, metrics: list[LowRankQuadratic], anchors: np.ndarray | None,
                     score_form: str, max_rank: int | None = None) -> "MetricBank":
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

    @property
    def n_metrics(self) -> int:
        return int(self.alpha.size)

    @property
    def sign(self) -> float:
        return 1.0 if self.score_form == "positive" else -1.0

    def _prepared(self, dtype):
        key = np.dtype(dtype).str
        cache = self.__dict__.setdefault("_prep", {})
        if key not in cache:
            V = self.V.astype(dtype)
            g = self.g.astype(dtype)
            if self.anchors is not None:
                col_metric = np.repeat(np.arange(self.n_metrics),
                                       np.diff(np.r_[self.seg, self.V.shape[1]]))
                # Column j's offset: its own metric's anchor projected on v_j.
                off = np.einsum("jd,dj->j", self.anchors[col_metric], self.V).astype(dtype)
                aa = np.einsum("ij,ij->i", self.anchors, self.anchors)
            else:
                off, aa = None, None
            cache[key] = (V, g, off, aa)
        return cache[key]

    def sq_distances(self, Xs: np.ndarray, Q: np.ndarray | None = None, *,
                     dtype=np.float32) -> np.ndarray:
        """Squared local distances (n, m) float64 of scaled documents ``Xs`` (n, d).

        Query-independent mode: to the anchors. Query-dependent (``anchors is None``): to the
        rows' query points ``Q`` (n, d). The low-rank term runs in ``dtype`` (float32 halves
        memory traffic and doubles BLAS speed; the isotropic term stays float64).
        """
        V, g, off, aa = self._prepared(dtype)
        if self.anchors is None:
            if Q is None:
                raise ValueError("query-dependent scoring needs the query points Q")
            Xd = np.asarray(Xs, dtype=np.float64) - Q
            iso = np.einsum("ij,ij->i", Xd, Xd)[:, None] * self.alpha[None, :]
            Y = Xd.astype(dtype, copy=False) @ V
        else:
            X64 = np.asarray(Xs, dtype=np.float64)
            xx = np.einsum("ij,ij->i", X64, X64)
            iso = X64 @ (-2.0 * self.anchors.T)
            iso += xx[:, None]
            iso += aa[None, :]
            np.maximum(iso, 0.0, out=iso)  # rounding can push ||p - a||^2 below 0
            iso *= self.alpha[None, :]
            Y = X64.astype(dtype, copy=False) @ V
            Y -= off
        Y *= Y
        Y *= g
        low = np.add.reduceat(Y, self.seg, axis=1)
        iso += low
        np.maximum(iso, 0.0, out=iso)
        return iso

    def features(self, Xs: np.ndarray, Q: np.ndarray | None = None, *,
                 dtype=np.float32) -> np.ndarray:
        """``h_r(p)`` (n, m) float64 such that ``f(p) = sign * h(p) @ Phi``."""
        delta = np.sqrt(self.sq_distances(Xs, Q, dtype=dtype))
        if self.score_form == "rising":
            delta /= self.dist_scale[None, :]
            np.minimum(delta, 1.0, out=delta)
        return g_of(delta)

    def fit_dist_scale(self, Xs: np.ndarray, Q: np.ndarray | None, quantile: float, *,
                       dtype=np.float32) -> None:
        """Set s_r = the ``quantile`` of delta_r over the given (training) documents."""
        delta = np.sqrt(self.sq_distances(Xs, Q, dtype=dtype))
        s = np.quantile(delta, quantile, axis=0)
        self.dist_scale = np.where(s > 0, s, 1.0)

    def bytes_per_row(self) -> int:
        """Working memory per document while scoring (float64 upper bound)."""
        return 8 * (self.V.shape[1] + 4 * self.n_metrics + 2 * self.V.shape[0])
