"""Geometric Mean Metric Learning (GMML), Zadeh, Hosseini & Sra (ICML 2016).

The L-GMML paper's Algorithm 1 / Eq. 4-9. With similar pairs ``S`` and dissimilar pairs
``D``::

    S = lambda*I + sum_{(i,j) similar}    (p_i - p_j)(p_i - p_j)^T        (Eq. 4)
    D = lambda*I + sum_{(i,k) dissimilar} (p_i - p_k)(p_i - p_k)^T        (Eq. 5)
    M = S^-1 #_t D = S^-1/2 (S^1/2 D S^1/2)^t S^-1/2                      (Eq. 9 at t = 1/2)

``M`` is the point at ``t`` on the affine-invariant geodesic from ``S^-1`` (t = 0) to ``D``
(t = 1); at t = 1/2 it is the unique SPD solution of the Riccati equation ``M S M = D``
(Eq. 8). We compute it with two symmetric eigendecompositions (the paper uses Cholesky-Schur;
both give the same matrix, eigh is simpler and exposes ``t``).

Low-rank structure (docs/decisions.md#gmml-low-rank): ``S - lambda*I`` and ``D - lambda*I``
live in ``span`` of the pair differences, of dimension ``k <= n_docs - 1`` where ``n_docs``
is the number of distinct documents the pairs use. On the orthogonal complement both are
``lambda*I``, so ``M = lambda^(2t-1) * I`` there and::

    M = c*I + U (M_k - c*I_k) U^T,      c = lambda^(2t - 1),

with ``U`` (d x k) an orthonormal basis of the span and ``M_k`` the GMML solution of the
k x k problem ``U^T S U``, ``U^T D U``. This is exact, not an approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "LowRankQuadratic",
    "geometric_mean",
    "gmml",
    "gmml_lowrank",
    "pair_scatter",
]


def _sym_power(A: np.ndarray, power: float) -> np.ndarray:
    """A^power for a symmetric positive definite A, via eigh."""
    w, V = np.linalg.eigh((A + A.T) * 0.5)
    if w[0] <= 0:
        raise np.linalg.LinAlgError("matrix is not positive definite")
    return (V * w**power) @ V.T


def geometric_mean(S: np.ndarray, D: np.ndarray, t: float = 0.5) -> np.ndarray:
    """``S^-1 #_t D = S^-1/2 (S^1/2 D S^1/2)^t S^-1/2`` for SPD ``S`` and ``D`` (d x d).

    t = 0 gives ``S^-1``, t = 1 gives ``D``, t = 1/2 solves ``M S M = D``. The result is
    symmetrised (it is symmetric in exact arithmetic) and is SPD.
    """
    S = np.asarray(S, dtype=np.float64)
    D = np.asarray(D, dtype=np.float64)
    w, V = np.linalg.eigh((S + S.T) * 0.5)
    if w[0] <= 0:
        raise np.linalg.LinAlgError("S is not positive definite (is reg_lambda > 0?)")
    sq = np.sqrt(w)
    S_half = (V * sq) @ V.T
    S_mhalf = (V / sq) @ V.T
    C = S_half @ D @ S_half
    M = S_mhalf @ _sym_power(C, t) @ S_mhalf
    return (M + M.T) * 0.5


def pair_scatter(diffs: np.ndarray) -> np.ndarray:
    """``sum_i diffs[i] diffs[i]^T`` = ``diffs^T diffs`` for a (n_pairs, d) array."""
    diffs = np.asarray(diffs, dtype=np.float64)
    return diffs.T @ diffs


def gmml(
    similar_diffs: np.ndarray,
    dissimilar_diffs: np.ndarray,
    *,
    d: int | None = None,
    reg_lambda: float = 0.1,
    t: float = 0.5,
) -> np.ndarray:
    """Full-matrix GMML (Algorithm 1) from pair differences.

    similar_diffs: (n_s, d) rows ``p_i - p_j`` of similar pairs; dissimilar_diffs: (n_d, d).
    Either may have zero rows (then that scatter is ``lambda*I``). Returns M (d x d), SPD.
    """
    if d is None:
        d = np.asarray(similar_diffs).shape[1]
    eye = np.eye(d)
    S = reg_lambda * eye + pair_scatter(np.reshape(similar_diffs, (-1, d)))
    D = reg_lambda * eye + pair_scatter(np.reshape(dissimilar_diffs, (-1, d)))
    return geometric_mean(S, D, t)


@dataclass
class LowRankQuadratic:
    """A quadratic form ``Q = alpha*I + V diag(g) V^T`` (d x d, never formed).

    ``x^T Q x = alpha*||x||^2 + sum_j g_j (v_j . x)^2``. ``V`` is (d, k) with orthonormal
    columns (k may be 0). With ``distance="mahalanobis"`` Q = M, so ``x^T Q x`` is the squared
    Mahalanobis distance ``x^T M x``; with ``distance="paper"`` Q = M^2, so ``x^T Q x`` is
    ``||M x||^2 = tr(M x x^T M)``, the squared norm of Eq. 12.
    """

    alpha: float
    V: np.ndarray
    g: np.ndarray
    #: the absolute lambda the metric was fitted with (after ``reg_scale="relative"``)
    reg_lambda: float = float("nan")

    def dense(self) -> np.ndarray:
        d = self.V.shape[0]
        return self.alpha * np.eye(d) + (self.V * self.g) @ self.V.T

    def eig_ratio(self) -> float:
        """max / min eigenvalue of Q over all d dimensions (1 = Euclidean up to a factor):
        the eigenvalues are ``alpha + g_j`` in the span of ``V`` and ``alpha`` outside it."""
        d, k = self.V.shape
        eig = self.alpha + self.g
        if k < d:
            eig = np.r_[eig, self.alpha]
        lo = float(np.min(eig))
        return float(np.max(eig)) / lo if lo > 0 else float("inf")

    def quad(self, X: np.ndarray) -> np.ndarray:
        """``x^T Q x`` for every row of X (n, d)."""
        Z = X @ self.V
        return self.alpha * np.einsum("ij,ij->i", X, X) + (Z * Z) @ self.g


def _orthonormal_span(rows: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis (d, k) of the row space of ``rows`` (n, d), via SVD."""
    d = rows.shape[1]
    if rows.shape[0] == 0:
        return np.zeros((d, 0))
    _, s, Vt = np.linalg.svd(rows, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        return np.zeros((d, 0))
    k = int(np.count_nonzero(s > rtol * s[0]))
    return Vt[:k].T.copy()


def _all_pairs_scatter(Z: np.ndarray) -> np.ndarray:
    """``sum_{i<j} (z_i - z_j)(z_i - z_j)^T = n Z^T Z - s s^T`` with ``s = sum_i z_i``."""
    n = Z.shape[0]
    s = Z.sum(axis=0)
    return n * (Z.T @ Z) - np.outer(s, s)


def _cross_pairs_scatter(P: np.ndarray, N: np.ndarray) -> np.ndarray:
    """``sum_{i,k} (p_i - n_k)(p_i - n_k)^T`` over all (positive, negative) pairs."""
    if P.shape[0] == 0 or N.shape[0] == 0:
        return np.zeros((P.shape[1], P.shape[1]))
    sp, sn = P.sum(axis=0), N.sum(axis=0)
    return N.shape[0] * (P.T @ P) + P.shape[0] * (N.T @ N) - np.outer(sp, sn) - np.outer(sn, sp)


def gmml_lowrank(
    groups,
    *,
    reg_lambda: float = 0.1,
    t: float = 0.5,
    distance: str = "paper",
    reg_scale: str = "absolute",
) -> LowRankQuadratic:
    """GMML (Algorithm 1) with pairs formed inside each group, in exact low-rank form.

    ``groups``: sequence of ``(X_pos, X_neg)`` (arrays (n_pos, d), (n_neg, d)), one per
    sampled query. Similar pairs: all ``n_pos (n_pos - 1) / 2`` pairs of distinct positive
    documents of a group; dissimilar pairs: all ``n_pos * n_neg`` positive-negative pairs of a
    group (pairs never cross queries, Section 3.4). Returns the quadratic form of the chosen
    ``distance`` (``"paper"``: Q = M^2, Eq. 12; ``"mahalanobis"``: Q = M) in the exact
    low-rank representation described in the module docstring.

    ``reg_scale``: ``"absolute"`` uses ``lambda = reg_lambda`` as given (Eq. 4-5);
    ``"relative"`` uses ``lambda = reg_lambda * (tr A + tr B) / (2 d)`` with ``A``, ``B`` the
    unregularised similar / dissimilar scatter sums: ``reg_lambda`` is then a fraction of the
    mean scatter eigenvalue per dimension, and the metric does not change when every feature
    is multiplied by the same constant (``S`` and ``D`` scale together and
    ``(sS)^-1 #_t (sD) = s^(2t-1) S^-1 #_t D``; at t = 1/2 it is unchanged). Without this the
    same lambda swamps the scatter of l2-scaled features (each column has unit norm over all
    training documents, so pair differences are tiny) and is negligible for raw ones. If the
    scatter is zero (all sampled documents equal), ``reg_lambda`` is used as is.
    """
    if distance not in ("paper", "mahalanobis"):
        raise ValueError(f"distance must be 'paper' or 'mahalanobis', got {distance!r}")
    if reg_scale not in ("absolute", "relative"):
        raise ValueError(f"reg_scale must be 'absolute' or 'relative', got {reg_scale!r}")
    prepared = []
    for X_pos, X_neg in groups:
        X_pos = np.asarray(X_pos, dtype=np.float64)
        X_neg = np.asarray(X_neg, dtype=np.float64).reshape(-1, X_pos.shape[1])
        prepared.append((X_pos, X_neg))
    d = prepared[0][0].shape[1]
    # Pair differences are translation invariant: express each group relative to its first
    # positive document; the span of all these rows contains every pair difference.
    rel = [(P - P[0], N - P[0]) for P, N in prepared if P.shape[0] > 0]
    rows = [r for P, N in rel for r in (P[1:], N)]
    U = _orthonormal_span(np.vstack(rows) if rows else np.zeros((0, d)))
    k = U.shape[1]
    if k == 0:
        c = reg_lambda ** (2.0 * t - 1.0)
        return LowRankQuadratic(
            float(c * c if distance == "paper" else c),
            np.zeros((d, 0)),
            np.zeros(0),
            float(reg_lambda),
        )
    A = np.zeros((k, k))
    B = np.zeros((k, k))
    for P, N in rel:
        Zp, Zn = P @ U, N @ U
        A += _all_pairs_scatter(Zp)
        B += _cross_pairs_scatter(Zp, Zn)
    if reg_scale == "relative":
        # U is orthonormal, so the k x k traces equal the d x d ones
        per_dim = (np.trace(A) + np.trace(B)) / (2.0 * d)
        if per_dim > 0:
            reg_lambda = reg_lambda * per_dim
    c = reg_lambda ** (2.0 * t - 1.0)
    eye = np.eye(k)
    M_k = geometric_mean(reg_lambda * eye + A, reg_lambda * eye + B, t)
    if distance == "paper":
        alpha, G = c * c, M_k @ M_k - (c * c) * eye
    else:
        alpha, G = c, M_k - c * eye
    g, L = np.linalg.eigh((G + G.T) * 0.5)
    return LowRankQuadratic(float(alpha), U @ L, g, float(reg_lambda))
