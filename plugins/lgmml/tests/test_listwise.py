"""ListNet on the local-metric weights (our extension): objective, gradient, constraint."""

import numpy as np
from scipy.optimize import check_grad

from ltr_bench_lgmml.listwise import listnet_objective, train_listnet


def _problem(seed=0, n_queries=6, n_docs=9, m=4):
    rng = np.random.default_rng(seed)
    H = rng.uniform(0, 0.4, size=(n_queries * n_docs, m))
    y = rng.integers(0, 3, size=n_queries * n_docs)
    bounds = np.arange(0, n_queries * n_docs + 1, n_docs)
    return H, y, bounds


def test_gradient_matches_finite_differences():
    H, y, bounds = _problem()
    starts = bounds[:-1]
    seg = np.repeat(np.arange(starts.size), np.diff(bounds))
    tgt = np.exp(y - 0.0)
    tgt = tgt / np.add.reduceat(tgt, starts)[seg]
    for sign in (1.0, -1.0):
        err = check_grad(
            lambda p: listnet_objective(p, H, tgt, starts, seg, sign, 1e-2)[0],
            lambda p: listnet_objective(p, H, tgt, starts, seg, sign, 1e-2)[1],
            np.array([0.5, 1.0, 2.0, 0.1]),
        )
        assert err < 1e-6


def test_weights_are_nonnegative_and_favour_the_feature_that_carries_the_labels():
    H, y, bounds = _problem(seed=1, n_queries=20, n_docs=15)
    H[:, 2] = 0.1 * y + 0.01 * np.random.default_rng(2).normal(size=y.size)
    phi, info = train_listnet(
        rng=np.random.default_rng(0),
        y=y,
        bounds=bounds,
        features=lambda rows: H[rows],
        n_metrics=4,
        initial_weight=1.0,
        sign=1.0,
        cache_bytes=1 << 20,
    )
    assert np.all(phi >= 0) and info["converged"] and info["n_queries"] == 20
    assert np.argmax(phi) == 2
    # with sign -1 (closer-first forms) a larger h lowers the score: the label feature
    # can only get weight 0 under Phi >= 0
    phi_neg, _ = train_listnet(
        rng=np.random.default_rng(0),
        y=y,
        bounds=bounds,
        features=lambda rows: H[rows],
        n_metrics=4,
        initial_weight=1.0,
        sign=-1.0,
        cache_bytes=1 << 20,
    )
    assert phi_neg[2] == 0.0


def test_queries_with_one_label_are_skipped_and_the_memory_cap_subsamples_queries():
    H, y, bounds = _problem(seed=3, n_queries=10, n_docs=8)
    y[:8] = 1  # query 0: every label equal
    _, info = train_listnet(
        rng=np.random.default_rng(0),
        y=y,
        bounds=bounds,
        features=lambda rows: H[rows],
        n_metrics=4,
        initial_weight=1.0,
        sign=1.0,
        cache_bytes=1 << 20,
    )
    assert info["n_queries"] == 9 and not info["subsampled"]
    _, info = train_listnet(
        rng=np.random.default_rng(0),
        y=y,
        bounds=bounds,
        features=lambda rows: H[rows],
        n_metrics=4,
        initial_weight=1.0,
        sign=1.0,
        cache_bytes=8 * 4 * 8 * 3,
    )
    assert info["subsampled"] and info["n_queries"] == 3
