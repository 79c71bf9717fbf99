"""stats: Holm's correction and the paired tests, against hand-worked values, brute force
and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ltr_bench.evaluation.stats import holm, paired_pvalues


def test_holm_matches_the_hand_worked_example():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, max(0.06, 1*0.04)
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])


def _holm_brute_force(p):
    """Adjusted p_i = smallest alpha at which Holm's step-down procedure rejects H_i:
    reject H_(1), H_(2), ... while p_(k) <= alpha / (m - k + 1)."""
    p = np.asarray(p, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")

    def rejected(alpha):
        out = set()
        for k, i in enumerate(order):
            if p[i] * (m - k) <= alpha:  # p <= alpha / (m - k), without rounding
                out.add(i)
            else:
                break
        return out

    candidates = sorted({min(1.0, (m - k) * p[i]) for k, i in enumerate(order)} | {1.0})
    # never rejected below 1: the adjusted value is clipped to 1
    return np.array(
        [min((a for a in candidates if i in rejected(a)), default=1.0) for i in range(m)]
    )


def test_holm_matches_a_brute_force_step_down_procedure():
    rng = np.random.default_rng(7)
    for m in (1, 2, 5, 9):
        for _ in range(20):
            p = rng.uniform(0, 0.2, size=m) ** rng.uniform(0.5, 3)
            np.testing.assert_allclose(holm(p), _holm_brute_force(p), rtol=1e-12)


def test_holm_leaves_nan_out_of_the_family():
    np.testing.assert_allclose(holm([0.01, np.nan, 0.04]), [0.02, np.nan, 0.04])


def test_paired_pvalues_match_scipy_and_hand_computed_values():
    rng = np.random.default_rng(3)
    x = rng.uniform(size=40)
    y = x - 0.05 + rng.normal(scale=0.1, size=40)
    p_t, p_w = paired_pvalues(x, y)
    d = x - y
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    assert p_t == pytest.approx(2 * stats.t.sf(abs(t), d.size - 1), rel=1e-10)
    assert p_t == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-12)
    assert p_w == pytest.approx(stats.wilcoxon(x, y).pvalue, rel=1e-12)
    # exact Wilcoxon, n = 5 distinct positive differences: W- = 0, P = 2 / 2^5
    _, p_w5 = paired_pvalues([1.1, 2.2, 3.3, 4.4, 5.5], [1.0, 2.0, 3.0, 4.0, 5.0])
    assert p_w5 == pytest.approx(2 / 32)


def test_identical_samples_give_p_one_and_one_pair_gives_nan():
    assert paired_pvalues([0.1, 0.5, 0.7], [0.1, 0.5, 0.7]) == (1.0, 1.0)
    assert all(np.isnan(paired_pvalues([0.3], [0.2])))


@pytest.mark.parametrize(
    "d",
    [
        [0.1, 0.1, -0.2, 0.3, 0.3, 0.3, -0.1, 0.2],  # ties
        [0.0, 0.5, -0.25, 0.125, 0.0, 1.0],  # zeros
        [0.0, 0.1, 0.1, -0.1, 0.2, 0.0, -0.3, 0.3, 0.4, -0.4, 0.5, 0.1, 0.2],  # both, n = 13
        [0.1, 0.1, 0.2, -0.3, 0.5, 0.0, 0.7, 0.1, -0.2, 0.3, 0.4, 0.6, 0.8, 0.9],  # n = 14
        [0.3, -0.1, 0.25, 0.5, 0.125],  # neither: SciPy's exact distribution
        [0.2, 0.2, 0.2],  # every difference tied and positive
    ],
)
def test_the_wilcoxon_pvalue_is_scipys_exactly_with_ties_zeros_and_neither(d):
    d = np.asarray(d)
    _, p_w = paired_pvalues(d, np.zeros_like(d))
    assert p_w == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-12, abs=1e-15)
