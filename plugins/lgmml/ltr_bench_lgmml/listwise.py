"""Listwise learning of the local-metric weights Phi: ListNet on the weights.

**Our extension, not the paper** (the paper learns Phi with WARP, :mod:`.warp`). The score is
linear in Phi, ``f(p) = sign * h(p) @ Phi``, so the ListNet top-one loss (Cao et al., ICML
2007) of the fixed local-metric features is a smooth convex function of Phi::

    L(Phi) = (1 / |Q|) sum_q  - sum_{i in q} P_q(i) log softmax_q(f)(i)  +  (l2 / 2) ||Phi||^2
    P_q = softmax_q(y)  (the labels' top-one distribution),
    dL/dPhi = (1 / |Q|) sum_q sign * H_q^T (softmax_q(f) - P_q)  +  l2 * Phi

minimised under ``Phi >= 0`` (the same projection WARP applies, so each local metric keeps
its direction: closer-first stays closer-first) with scipy's L-BFGS-B from
``Phi = initial_weight``. Queries whose documents all have the same label carry no ranking
information and are left out. Convex, so the result does not depend on the start beyond
L-BFGS-B's tolerance.

Memory: ``h`` of the training documents (n x m float64). When that exceeds ``cache_bytes``,
a uniform random subset of the usable queries that fits is used (stated in the result).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize

__all__ = ["train_listnet"]


def _segment_softmax_terms(f, starts, seg):
    """Per-row softmax within segments; returns (softmax (n,), log-softmax (n,))."""
    mx = np.maximum.reduceat(f, starts)
    z = f - mx[seg]
    e = np.exp(z)
    tot = np.add.reduceat(e, starts)
    return e / tot[seg], z - np.log(tot)[seg]


def listnet_objective(phi, H, target, starts, seg, sign, l2):
    """(loss, gradient) of the module docstring's L at ``phi`` (m,)."""
    f = sign * (H @ phi)
    soft, logsoft = _segment_softmax_terms(f, starts, seg)
    nq = starts.size
    loss = -float(target @ logsoft) / nq + 0.5 * l2 * float(phi @ phi)
    grad = sign * (H.T @ (soft - target)) / nq + l2 * phi
    return loss, grad


def train_listnet(
    *,
    rng: np.random.Generator,
    y: np.ndarray,
    bounds: np.ndarray,
    features: Callable[[np.ndarray], np.ndarray],
    n_metrics: int,
    initial_weight: float,
    sign: float,
    l2: float = 1e-3,
    cache_bytes: int,
    max_iter: int = 500,
) -> tuple[np.ndarray, dict]:
    """Fit Phi (m,) >= 0 by ListNet; returns ``(phi, info)`` with info keys ``n_queries``
    (queries used), ``subsampled`` (bool), ``n_iter`` (L-BFGS-B iterations), ``converged``.

    y: training labels; bounds: query boundaries (n_queries + 1,); features(rows) -> h of
    the given training rows (len(rows), m).
    """
    sizes = np.diff(bounds)
    usable = np.array(
        [
            q
            for q in range(sizes.size)
            if sizes[q] > 1
            and y[bounds[q] : bounds[q + 1]].min() < y[bounds[q] : bounds[q + 1]].max()
        ],
        dtype=np.int64,
    )
    phi0 = np.full(n_metrics, float(initial_weight))
    if usable.size == 0:
        return phi0, {"n_queries": 0, "subsampled": False, "n_iter": 0, "converged": True}
    row_bytes = 8 * n_metrics
    subsampled = bool(sizes[usable].sum() * row_bytes > cache_bytes)
    if subsampled:
        order = usable[rng.permutation(usable.size)]
        fit = np.cumsum(sizes[order]) * row_bytes <= cache_bytes
        usable = np.sort(order[fit] if fit.any() else order[:1])
    rows = np.concatenate([np.arange(bounds[q], bounds[q + 1]) for q in usable])
    H = features(rows)
    qs = sizes[usable]
    starts = np.r_[0, np.cumsum(qs)[:-1]].astype(np.int64)
    seg = np.repeat(np.arange(usable.size), qs)
    lab = y[rows].astype(np.float64)
    target, _ = _segment_softmax_terms(lab, starts, seg)
    res = minimize(
        listnet_objective,
        phi0,
        args=(H, target, starts, seg, sign, float(l2)),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * n_metrics,
        options={"maxiter": int(max_iter)},
    )
    return np.asarray(res.x, dtype=np.float64), {
        "n_queries": int(usable.size),
        "subsampled": subsampled,
        "n_iter": int(res.nit),
        "converged": bool(res.success),
    }
