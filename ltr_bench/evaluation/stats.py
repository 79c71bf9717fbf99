"""Paired significance tests and multiple-comparison correction for the report.

Pure numpy/scipy; see :mod:`ltr_bench.report.tables` for how pairs are formed.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["holm", "paired_pvalues"]


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order.

    With the m finite p-values sorted ascending, ``p_(1) <= ... <= p_(m)``:
    ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``. Rejecting ``adj < alpha``
    controls the family-wise error rate at ``alpha``. NaN entries stay NaN and do not count
    in ``m``. Example: ``[0.01, 0.04, 0.03]`` -> ``[0.03, 0.06, 0.06]``.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def paired_pvalues(candidate: ArrayLike, baseline: ArrayLike) -> tuple[float, float]:
    """Two-sided ``(p_ttest, p_wilcoxon)`` for paired samples (see the module docstring for
    the degenerate cases). NaN when fewer than two pairs."""
    from scipy import stats

    x = np.asarray(candidate, dtype=np.float64)
    y = np.asarray(baseline, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.shape} vs {y.shape}")
    if x.size < 2:
        return float("nan"), float("nan")
    d = x - y
    if not np.any(d):
        return 1.0, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if np.ptp(d) == 0:
            p_t = 0.0  # constant non-zero difference: zero variance, t infinite
        else:
            p_t = float(stats.ttest_rel(x, y).pvalue)
        p_w = float(stats.wilcoxon(x, y).pvalue)
    return p_t, p_w
