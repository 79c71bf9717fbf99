"""Cutting-plane training of MLR / R-MLR (1-slack margin rescaling) with an ADMM inner solver.

Written from McFee & Lanckriet (ICML 2010, Algorithm 1) and, for the group penalty, the R-MLR
objective of Lim, McFee & Lanckriet (ICML 2013) as summarised in
``docs/decisions.md#rmlr-group-penalty``; no reference code was read. Why ADMM:
``docs/decisions.md#mlr-solver``.

Problem (W symmetric d x d)::

    min_{W >= 0 (PSD), xi >= 0}   tr(W) + lam * sum_j ||W[:, j]||_2 + C * xi
    s.t. for every batch t in the working set:  <W, Psi_t>_F >= Delta_t - xi

with ``Psi_t = 1/n sum_q delta_psi(q, y*_q, y_q)`` and ``Delta_t = 1/n sum_q Delta(y*_q, y_q)``
over the ``n`` usable training queries (at least one relevant and one irrelevant candidate;
the others carry no constraint). ``lam = 0`` is MLR, ``lam > 0`` is R-MLR.

Rows are given as difference vectors ``D_r = q - x_r`` (query-by-example) or ``x_r - z``
(ideal candidate), so ``phi(q, r) = -D_r D_r^T`` and the score is ``s_r = -D_r^T W D_r``; and
``Psi_t = -1/n * D^T diag(coef) D`` (the factored form of paper Section 3.2: one d x d
product per batch, never n outer products).

Inner solver: ADMM (Boyd et al. 2011) rather than the paper's
projected subgradient. Reasons: the objective is non-smooth everywhere that matters (trace on
the PSD cone is linear, the hinge is piecewise linear, the l2,1 norm is non-smooth at zero), so
subgradient steps converge at O(1/sqrt(k)) and need a hand-tuned step schedule, and they
never produce exact zero columns for R-MLR. ADMM splits the objective into three terms with
cheap exact proximal steps, needs no step size (only rho, adapted automatically), converges
reliably, warm-starts across cutting-plane iterations, and yields the R-MLR zero columns
exactly.

ADMM form (scaled, over-relaxed with 1.6): the margins ``m = A(W)`` (``m_t = <W, Psi_t>``,
rows of A scaled to unit norm), ``X_p = W`` and, for R-MLR, ``X_g = W`` are separate blocks
with exact proximal steps, and W itself is a least-squares consensus variable::

    m   = argmin C max(0, max_t (Delta_t - m_t)) + rho/2 ||m - (A W - u)||^2
          (exact: a 1-D root for the slack xi found by sorting, O(T log T))
    X_p = Pi_PSD(sym(W - U_p) - I / rho)             (eigenvalue shift and clip: trace + PSD)
    X_g = column soft-threshold(W - U_g, lam / rho)   (R-MLR only: group soft-threshold)
    W   = (b I + A^T A)^-1 [sum_i (X_i + U_i) + A^T (m + u)]   (Woodbury, T x T inverse)
    u += m - A W;  U_i += X_i - W
    rho doubled / halved when the primal and dual residuals, each divided by its tolerance,
    differ by more than 10x.

One iteration costs one symmetric eigendecomposition (d^3) and a few (T x d^2) products; no
iterative sub-solver. A dual-feasible bound (tests) confirms the inner optimum.

The returned W is the PSD block X_p (exactly PSD); for R-MLR the rows and columns whose group
block X_g is exactly zero are zeroed as well (a principal submatrix of a PSD matrix stays PSD).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ltr_bench.progress import report_progress

from .mlr_oracles import separation_oracle

__all__ = ["MLRFitResult", "psd_factor", "row_scores", "train_mlr"]

_CHUNK = 1 << 16  # rows per block when forming scores and Psi (bounded temporaries)


@dataclass
class MLRFitResult:
    """W: (d, d) PSD metric. xi: slack at W over the working set. objective: the primal
    objective at W. n_iter: cutting-plane iterations. converged: the stopping rule fired (not
    the iteration cap). history: one dict per iteration (violation, xi, objective, admm_iter)."""

    W: np.ndarray
    xi: float
    objective: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)


def psd_factor(W: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """L (d, r) with L L^T = W restricted to eigenvalues > tol (W symmetric PSD)."""
    w, V = np.linalg.eigh((W + W.T) / 2.0)
    keep = w > tol * max(1.0, float(w.max(initial=0.0)))
    return V[:, keep] * np.sqrt(w[keep])


def row_scores(D: np.ndarray, L: np.ndarray) -> np.ndarray:
    """s_r = -D_r^T W D_r = -||D_r L||^2 for W = L L^T, chunked over rows."""
    out = np.empty(D.shape[0])
    if L.shape[1] == 0:
        out[:] = 0.0
        return out
    for start in range(0, D.shape[0], _CHUNK):
        P = D[start : start + _CHUNK] @ L
        out[start : start + _CHUNK] = -np.einsum("ij,ij->i", P, P)
    return out


def folded_row_scores(X: np.ndarray, A: np.ndarray, c: np.ndarray) -> np.ndarray:
    """s_r = -||X_r A - c||^2, chunked over rows: :func:`row_scores` of ``D = (X - m) / s - z``
    with the standardisation and ``z`` folded into ``A = L / s`` (per row of ``L``) and
    ``c = (m / s + z) L``, so no standardised copy of ``X`` is made."""
    out = np.empty(X.shape[0])
    if A.shape[1] == 0:
        out[:] = 0.0
        return out
    for start in range(0, X.shape[0], _CHUNK):
        P = X[start : start + _CHUNK] @ A
        P -= c
        out[start : start + _CHUNK] = -np.einsum("ij,ij->i", P, P)
    return out


def _weighted_gram(D: np.ndarray, w: np.ndarray) -> np.ndarray:
    """D^T diag(w) D, chunked, symmetrised."""
    d = D.shape[1]
    out = np.zeros((d, d))
    for start in range(0, D.shape[0], _CHUNK):
        Dc = D[start : start + _CHUNK]
        out += (Dc.T * w[start : start + _CHUNK]) @ Dc
    return (out + out.T) / 2.0


def _hinge_prox(
    v: np.ndarray, Delta: np.ndarray, c: np.ndarray, C: float, rho: float
) -> np.ndarray:
    """argmin_m C max(0, max_t (Delta_t - m_t) / c_t) + rho/2 ||m - v||^2, exactly.

    (Constraint rows are scaled to unit norm, so row t is the original divided by
    n_t = 1 / c_t and its violation is (Delta_t - m_t) / c_t.) For a fixed slack xi the best m
    is max(v, Delta - c xi); xi minimises C xi + rho/2 sum_t (e_t - c_t xi)_+^2 with
    e = Delta - v: xi = 0 when sum_t c_t (e_t)_+ <= C / rho, else the root of
    sum_t c_t (e_t - c_t xi)_+ = C / rho, found by sorting the breakpoints e_t / c_t.
    """
    e = Delta - v
    budget = C / rho
    if (c * np.maximum(e, 0.0)).sum() <= budget:
        xi = 0.0
    else:
        beta = e / c
        order = np.argsort(-beta, kind="stable")
        ce = np.cumsum((c * e)[order])
        cc = np.cumsum((c * c)[order])
        cand = (ce - budget) / cc  # xi if the first j breakpoints are active
        r = np.flatnonzero(beta[order] > cand)[-1]
        xi = max(float(cand[r]), 0.0)
    return np.maximum(v, Delta - c * xi)


class _ADMM:
    """Warm-startable ADMM for the working-set problem (module docstring).

    Blocks: m = A(W) (the T margins <W, Psi_t>, hinge term), X_p = W (trace + PSD),
    X_g = W (l2,1, R-MLR only); W itself carries no cost and is updated by least squares,
    (b I + A^T A) W = sum_i (X_i + U_i) + A^T (m + u), solved with the Woodbury identity
    through the T x T Gram matrix G = A A^T (no inner iterations anywhere).
    """

    def __init__(self, d: int, lam: float, rho: float = 1.0, relax: float = 1.6):
        self.d = d
        self.lam = lam
        self.relax = relax
        self.b = 2 if lam > 0 else 1
        self.W = np.zeros((d, d))
        self.U = np.zeros((self.b, d, d))
        self.u = np.zeros(0)
        self.rho = rho

    def solve(
        self,
        Psi_flat: np.ndarray,
        Delta: np.ndarray,
        G: np.ndarray,
        C: float,
        max_iter: int,
        tol: float,
    ):
        d, b = self.d, self.b
        T = Delta.size
        # unit-norm constraint rows balance the margin block against the matrix blocks
        nrm = np.sqrt(np.maximum(np.diag(G), 1e-300))
        c = 1.0 / nrm
        Psi_flat = Psi_flat * c[:, None]
        Delta = Delta * c
        G = G * np.outer(c, c)
        if self.u.size < T:
            self.u = np.r_[self.u, np.zeros(T - self.u.size)]
        K = np.linalg.inv(b * np.eye(T) + G)  # Woodbury core, T x T
        eye = np.eye(d)
        X = np.zeros((b, d, d))
        Xg_zero = np.zeros(d, dtype=bool)
        AW = Psi_flat @ self.W.ravel()
        it = 0
        for it in range(1, max_iter + 1):  # noqa: B007 (returned after the loop)
            rho = self.rho
            m = _hinge_prox(AW - self.u, Delta, c, C, rho)
            V = self.W - self.U[0]
            w, Q = np.linalg.eigh((V + V.T) / 2.0 - eye / rho)
            X[0] = (Q * np.maximum(w, 0.0)) @ Q.T
            if b == 2:
                V = self.W - self.U[1]
                norms = np.linalg.norm(V, axis=0)
                shrink = np.maximum(0.0, 1.0 - (self.lam / rho) / np.maximum(norms, 1e-300))
                Xg_zero = shrink == 0.0
                X[1] = V * shrink[None, :]
            # over-relaxation (Boyd et al. 2011, section 3.4.3)
            mh = self.relax * m + (1.0 - self.relax) * AW
            Xh = self.relax * X + (1.0 - self.relax) * self.W
            R = (Xh + self.U).sum(axis=0).ravel() + (mh + self.u) @ Psi_flat
            W_new = ((R - (K @ (Psi_flat @ R)) @ Psi_flat) / b).reshape(d, d)
            AW_new = Psi_flat @ W_new.ravel()
            dW = W_new - self.W
            dAW = AW_new - AW
            self.W, AW = W_new, AW_new
            self.u += mh - AW
            self.U += Xh - self.W
            r = np.sqrt(((m - AW) ** 2).sum() + ((X - self.W) ** 2).sum())
            s = rho * np.sqrt((dAW**2).sum() + b * (dW**2).sum())
            eps_pri = 1e-9 * d + tol * max(
                np.sqrt((AW**2).sum() + b * (self.W**2).sum()), np.sqrt((m**2).sum() + (X**2).sum())
            )
            eps_dual = 1e-9 * d + tol * rho * np.sqrt((self.u**2).sum() + (self.U**2).sum())
            if r <= eps_pri and s <= eps_dual:
                break
            # balance the residuals relative to their tolerances (as OSQP does), so the
            # adaptation is independent of the problem's scale
            r_n, s_n = r / eps_pri, s / eps_dual
            if r_n > 10.0 * s_n:
                self.rho *= 2.0
                self.u /= 2.0
                self.U /= 2.0
            elif s_n > 10.0 * r_n:
                self.rho /= 2.0
                self.u *= 2.0
                self.U *= 2.0
        W = (X[0] + X[0].T) / 2.0
        if b == 2 and Xg_zero.any():
            W[Xg_zero, :] = 0.0
            W[:, Xg_zero] = 0.0
        return W, it


def train_mlr(
    D: np.ndarray,
    relevant: np.ndarray,
    bounds: np.ndarray,
    *,
    loss: str,
    k: int,
    C: float,
    lam: float = 0.0,
    epsilon: float = 1e-3,
    max_iter: int = 200,
    admm_max_iter: int = 500,
    admm_tol: float = 1e-4,
    name: str = "MLR",
) -> MLRFitResult:
    """Algorithm 1 of the MLR paper (1-slack margin rescaling, cutting planes).

    D: (n_rows, d) difference vectors (see module docstring). relevant: (n_rows,) bool.
    bounds: (n_queries + 1,) query start offsets. Stops when the new batch's violation
    ``Delta_t - <W, Psi_t>`` is at most ``xi + epsilon`` or after ``max_iter`` batches.
    Progress: one :func:`report_progress` call per cutting-plane iteration.
    """
    D = np.ascontiguousarray(D, dtype=np.float64)
    d = D.shape[1]
    W = np.zeros((d, d))
    admm = _ADMM(d, lam)
    Psis: list[np.ndarray] = []
    Deltas: list[float] = []
    G = np.zeros((0, 0))
    xi = 0.0
    history = []
    converged = False
    n_iter = 0

    def objective(W, xi):
        return float(np.trace(W) + lam * np.linalg.norm(W, axis=0).sum() + C * xi)

    for n_iter in range(1, max_iter + 1):
        s = row_scores(D, psd_factor(W))
        res = separation_oracle(s, relevant, bounds, loss, k)
        n_use = int(res.usable.sum())
        if n_use == 0:  # no query has both relevant and irrelevant rows: W = 0 is optimal
            converged = True
            break
        Delta_t = float(res.delta.sum() / n_use)
        Psi_t = -_weighted_gram(D, res.coef) / n_use
        violation = Delta_t - float(res.coef @ s) / n_use  # Delta_t - <W, Psi_t>
        history.append({"violation": violation, "xi": xi, "objective": objective(W, xi)})
        if violation <= xi + epsilon:
            converged = True
            break
        Psis.append(Psi_t)
        Deltas.append(Delta_t)
        P = np.stack(Psis)
        Pf = P.reshape(len(Psis), -1)
        g_new = Pf @ Psi_t.ravel()
        T = len(Psis)
        G2 = np.empty((T, T))
        G2[: T - 1, : T - 1] = G
        G2[-1, :] = g_new
        G2[:, -1] = g_new
        G = G2
        Dl = np.asarray(Deltas)
        W, n_admm = admm.solve(Pf, Dl, G, C, admm_max_iter, admm_tol)
        xi = max(0.0, float((Dl - Pf @ W.ravel()).max()))
        history[-1]["admm_iter"] = n_admm
        report_progress(
            n_iter,
            max_iter,
            f"{name} cutting plane {n_iter}: violation {violation:.4g}, "
            f"xi {xi:.4g}, tr(W) {np.trace(W):.4g}",
        )
    return MLRFitResult(
        W=W, xi=xi, objective=objective(W, xi), n_iter=n_iter, converged=converged, history=history
    )
