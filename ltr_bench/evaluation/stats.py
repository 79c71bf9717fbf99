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
        p_w = _wilcoxon_pvalue(d)
    return p_t, p_w


#: SciPy's default ``n_resamples`` of a permutation test: up to ``2**13`` sign patterns it
#: enumerates them all (exact), which its Wilcoxon test does for n <= 13 with ties or zeros
_EXACT_SIGN_FLIPS = 13


def _wilcoxon_pvalue(d: np.ndarray) -> float:
    """``scipy.stats.wilcoxon(d).pvalue`` (two-sided, ``zero_method="wilcox"``,
    ``method="auto"``), computed faster where SciPy is slow.

    With ties or zeros among at most 13 differences SciPy runs an exact permutation test
    over all ``2**n`` sign flips of ``d`` with a statistic that is not vectorised (seconds
    per pair, most of a small report's time). The statistic is ``r_plus = sum of the ranks
    of |d| (average ranks for ties, zeros left out) over the positive differences``; a sign
    flip leaves ``|d|`` and so every rank unchanged, so ``r_plus`` of a flipped sample is
    ``sum((flipped > 0) * rank)`` with the ranks computed once. The same permutation test
    (the same null distribution, the same two-sided rule) is run with that vectorised
    statistic; the p-value is SciPy's. Every other case is SciPy's own call.
    """
    from scipy import stats

    nonzero = d[d != 0]
    ties = np.unique(np.abs(nonzero)).size < nonzero.size
    if d.size > _EXACT_SIGN_FLIPS or not (ties or nonzero.size < d.size):
        return float(stats.wilcoxon(d).pvalue)
    ranks = np.zeros(d.size)
    ranks[d != 0] = stats.rankdata(np.abs(nonzero))

    def r_plus(sample: np.ndarray, axis: int = -1) -> np.ndarray:
        total: np.ndarray = np.sum((sample > 0) * ranks, axis=axis)
        return total

    result = stats.permutation_test(
        (d,), r_plus, permutation_type="samples", vectorized=True, alternative="two-sided"
    )
    return float(result.pvalue)
