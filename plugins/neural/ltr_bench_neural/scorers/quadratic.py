"""The quadratic rank functional of Eq. 4, f3(x) = a0 + w'x + x'Cx, with C restricted to the
second-order products that pass the paper's Pearson pre-filter.

Selection (on the training split, features already standardised): every product
p_ab = x_a x_b with a <= b (squares included) is kept when |Pearson(p_ab, r)| >= rho, r the
relevance labels; products that are constant on the training split are dropped. The sums
Pearson needs are three d x d matrices, accumulated over row chunks with BLAS:
sum_n x_na x_nb, sum_n x_na^2 x_nb^2 and sum_n x_na x_nb (r_n - mean r), so selection costs
O(n d^2) time and O(chunk d + d^2) memory whatever the number of products.
Kept products are standardised with their training mean and standard deviation (the paper
z-scores its inputs), so x'Cx = sum_k c_k (p_k - mu_k) / sd_k over the kept pairs k.
When rho keeps no product, x'Cx = 0 and the scorer is the linear one, f(x) = a0 + w'x: it is
fitted as such with a ``UserWarning`` (the run's note on that row) and
``n_second_order_features`` = 0, so a sweep over rho has every row.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import nn


def select_products(X: np.ndarray, y: np.ndarray, rho: float, *, chunk_rows: int = 65536):
    """``(ia, ib, mean, sd, corr)`` of the kept products p = X[:, ia] * X[:, ib] (ia <= ib),
    ordered by (ia, ib). ``corr`` is every candidate's |Pearson| as a (d, d) upper-triangle
    array (NaN for constant products), for diagnostics."""
    n, d = X.shape
    yc = np.asarray(y, dtype=np.float64) - float(np.mean(y))
    s1 = np.zeros((d, d))
    s2 = np.zeros((d, d))
    sy = np.zeros((d, d))
    for start in range(0, n, chunk_rows):
        Xc = np.asarray(X[start : start + chunk_rows], dtype=np.float64)
        sq = Xc * Xc
        s1 += Xc.T @ Xc
        s2 += sq.T @ sq
        sy += Xc.T @ (Xc * yc[start : start + chunk_rows, None])
    mean = s1 / n
    var = np.maximum(s2 / n - mean * mean, 0.0)
    var_y = float(np.mean(yc * yc))
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.abs(sy / n) / np.sqrt(var * var_y)
    constant = var <= 1e-12 * np.maximum(1.0, mean * mean)
    corr[constant] = np.nan
    corr[np.tril_indices(d, -1)] = np.nan
    keep = np.isfinite(corr) & (corr >= rho)
    ia, ib = np.nonzero(keep)
    return ia, ib, mean[ia, ib], np.sqrt(var[ia, ib]), corr


class QuadraticScorer(nn.Module):
    """scores = a0 + X w + sum_k c_k (X[..., ia_k] X[..., ib_k] - mu_k) / sd_k.

    The products are formed per batch in ``forward`` (B x L x P floats), never for the whole
    training set. ``n_products`` is Table 5's "No. feats"."""

    def __init__(self, n_features, ia, ib, mean, sd, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_features, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros((), dtype=dtype))
        self.quad = nn.Parameter(torch.zeros(len(ia), dtype=dtype))
        self.register_buffer("ia", torch.as_tensor(ia, dtype=torch.long))
        self.register_buffer("ib", torch.as_tensor(ib, dtype=torch.long))
        self.register_buffer("mu", torch.as_tensor(mean, dtype=dtype))
        self.register_buffer("inv_sd", torch.as_tensor(1.0 / np.asarray(sd), dtype=dtype))
        self.n_products = len(ia)

    def forward(self, X, mask):
        products = (X[..., self.ia] * X[..., self.ib] - self.mu) * self.inv_sd
        return X @ self.weight + products @ self.quad + self.bias


def build(ctx) -> nn.Module:
    ia, ib, mean, sd, corr = select_products(ctx.X_train, ctx.y_train, ctx.rho)
    if len(ia) == 0:
        best = np.nanmax(corr) if np.isfinite(corr).any() else float("nan")
        warnings.warn(
            f"quadratic scorer: rho={ctx.rho} keeps no second-order product (the largest "
            f"|Pearson correlation| of a product with the labels on the training split is "
            f"{best:.4f}): 0 products kept, the linear scorer a0 + w'x was fitted",
            UserWarning,
            stacklevel=2,
        )
    return QuadraticScorer(ctx.n_features, ia, ib, mean, sd, ctx.dtype)
