"""ltr_bench_lgmml.diagnostics: the formulas behind fitted_info's diagnostic entries."""

import numpy as np
import pytest

from ltr_bench.ranker import query_boundaries
from ltr_bench_lgmml import LGMMLRanker
from ltr_bench_lgmml.diagnostics import (
    metric_spectra,
    model_summary,
    score_structure,
    validation_diagnostics,
)
from ltr_bench_lgmml.gmml import LowRankQuadratic


def _data(seed=0, n_queries=10, n_docs=20, d=5):
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 3, size=(n_queries, n_docs))
    X = rng.normal(size=(n_queries * n_docs, d))
    X[:, 0] += 1.5 * lab.ravel()
    return X, lab.ravel(), np.repeat(np.arange(n_queries), n_docs)


@pytest.fixture(scope="module")
def fitted():
    X, y, qid = _data()
    return LGMMLRanker(n_metrics=6, random_state=0).fit(X, y, qid=qid), X, qid


def test_metric_spectra_square_roots_the_ratio_of_the_paper_quadratic_form():
    # Q = 2 I + V diag(g) V^T in d = 3: eigenvalues 2 + 6 = 8, 2 + 0 = 2 (in V's span) and 2
    V = np.eye(3)[:, :2]
    q = LowRankQuadratic(alpha=2.0, V=V, g=np.array([6.0, 0.0]), reg_lambda=0.25)
    ratio, lam = metric_spectra([q, q], "mahalanobis")
    assert np.allclose(ratio, [4.0, 4.0]) and np.array_equal(lam, [0.25, 0.25])
    ratio, _ = metric_spectra([q], "paper")  # Q = M^2, so M's ratio is sqrt(4)
    assert np.allclose(ratio, [2.0])
    with pytest.raises(ValueError, match="distance"):
        metric_spectra([q], "euclid")


def test_score_structure_explains_everything_when_one_metric_carries_all_the_weight(fitted):
    r, X, qid = fitted
    saved = r.weights_
    try:
        r.weights_ = np.zeros_like(saved)
        r.weights_[2] = 1.0  # f = c_2 exactly
        out = score_structure(r, X, query_boundaries(qid))
    finally:
        r.weights_ = saved
    assert out["top_anchor_r2"] == pytest.approx(1.0, abs=1e-12)
    assert out["top5_anchor_r2"] == pytest.approx(1.0, abs=1e-12)


def test_score_structure_is_empty_when_the_score_is_constant_within_queries(fitted):
    r, X, qid = fitted
    saved = r.weights_
    try:
        r.weights_ = np.zeros_like(saved)  # f = 0 everywhere: no variance to share out
        assert score_structure(r, X, query_boundaries(qid)) == {}
    finally:
        r.weights_ = saved


def test_validation_diagnostics_without_eval_set_report_only_the_structure(fitted):
    r, X, qid = fitted
    out = validation_diagnostics(r, None, X, query_boundaries(qid))
    assert set(out) == {"top_anchor_r2", "top5_anchor_r2"}
    assert out == r.diagnostics_  # what fit stored (no eval_set there either)


def test_model_summary_calls_uniform_weights_uniform_whatever_weight_method_says():
    X, y, qid = _data()
    r = LGMMLRanker(
        n_metrics=4, weight_strategy="uniform", weight_method="listnet", random_state=0
    ).fit(X, y, qid=qid)
    s = model_summary(r)
    assert s["weight_method"] == "uniform" and s["n_nonzero_weights"] == 4
    assert s["total_rank"] == r.metric_bank_.V.shape[1]
    assert s["mean_rank"] == pytest.approx(s["total_rank"] / 4)
