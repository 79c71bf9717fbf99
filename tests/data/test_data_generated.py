"""Generated data: the synthetic LETOR-like generator and the Gaussian class data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from ltr_bench.data import generated, get_spec, load_fold
from ltr_bench.data.generated import (
    gauss_points,
    synthetic_informative_features,
    synthetic_query_sizes,
)
from ltr_bench.ranker import query_boundaries

SMALL = {"n_queries": 60, "docs_per_query": 12, "n_features": 8, "n_informative": 3}


def _opts(**kw):
    return {**get_spec("synthetic").options, **SMALL, **kw}


def test_synthetic_is_deterministic_from_the_seed():
    a = load_fold("synthetic", 2, seed=7, options=SMALL)
    b = load_fold("synthetic", 2, seed=7, options=SMALL)
    c = load_fold("synthetic", 2, seed=8, options=SMALL)
    assert a.fingerprints() == b.fingerprints()
    assert a.train.fingerprint != c.train.fingerprint


def test_synthetic_folds_follow_the_letor_rotation():
    folds = {k: load_fold("synthetic", k, options=SMALL) for k in range(1, 6)}
    for k in range(1, 6):
        nxt = folds[k % 5 + 1]
        assert folds[k].test.fingerprint == nxt.vali.fingerprint  # T_k is vali of fold k+1
        f = folds[k]
        sets = [set(np.unique(s.qid)) for s in (f.train, f.vali, f.test)]
        assert sets[0].isdisjoint(sets[1]) and sets[0].isdisjoint(sets[2])
        assert set.union(*sets) == set(range(1, 61))
        for s in (f.train, f.vali, f.test):
            query_boundaries(s.qid)
        assert f.max_label == 4 and f.train.X.shape[1] == 8
    # parts are contiguous query ranges of 12 queries: test of fold 1 is queries 1..12
    assert sorted(np.unique(folds[1].test.qid)) == list(range(1, 13))


def test_synthetic_sizes_follow_the_options():
    opts = _opts(n_queries=300, docs_per_query=40)
    sizes = synthetic_query_sizes(opts, 0)
    assert sizes.shape == (300,) and sizes.min() >= 1
    # Gamma(2, 1/2) x 40 has sd 28.3; the mean of 300 has sd 1.6
    assert abs(sizes.mean() - 40) < 8
    fold = load_fold("synthetic", 1, options={"n_queries": 300, "docs_per_query": 40})
    total = fold.train.n_docs + fold.vali.n_docs + fold.test.n_docs
    assert total == sizes.sum()
    assert fold.train.n_queries == 180 and fold.test.n_queries == 60


def test_synthetic_default_is_small_and_has_graded_labels():
    fold = load_fold("synthetic", 1)
    spec = get_spec("synthetic")
    assert fold.train.X.shape[1] == spec.n_features == spec.options["n_features"]
    n = fold.train.n_docs + fold.vali.n_docs + fold.test.n_docs
    assert n < 50_000  # every ranker finishes in seconds
    counts = np.bincount(fold.train.y, minlength=5)
    assert counts.size == 5 and (counts > 0).all()
    assert 0.4 < counts[0] / counts.sum() < 0.65  # MSLR-like: about half irrelevant


@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_labels_depend_on_informative_features_only(seed):
    # A model on the informative columns predicts test labels as well as one on all columns;
    # a model on the noise columns predicts nothing.
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    opts = _opts(n_queries=150, docs_per_query=40, n_features=20, n_informative=5, label_noise=0.3)
    fold = load_fold("synthetic", 1, options=opts, seed=seed)
    inf = synthetic_informative_features(opts, seed)
    noise = np.setdiff1d(np.arange(20), inf)

    def r2(cols):
        m = HistGradientBoostingRegressor(max_iter=50, random_state=0)
        with threadpool_limits(1):
            m.fit(fold.train.X[:, cols], fold.train.y)
            return m.score(fold.test.X[:, cols], fold.test.y)

    r_all, r_inf, r_noise = r2(np.arange(20)), r2(inf), r2(noise)
    assert r_inf > 0.2
    assert r_inf >= r_all - 0.02
    assert r_noise < 0.05


def test_large_synthetic_is_generated_into_the_cache_and_reloaded(monkeypatch, tmp_path):
    in_memory = load_fold("synthetic", 3, options=SMALL)
    monkeypatch.setattr(generated, "CACHE_MIN_CELLS", 0)
    seen = []
    cached = load_fold(
        "synthetic",
        3,
        options=SMALL,
        cache_dir=tmp_path,
        progress=lambda d, t, m: seen.append((d, t)),
    )
    assert cached.fingerprints() == in_memory.fingerprints()
    assert seen and seen[-1][0] == seen[-1][1]
    assert not cached.train.X.flags.writeable  # a read-only memory map
    monkeypatch.setattr(generated, "_fill_part", None)  # generating again would crash
    again = load_fold("synthetic", 3, options=SMALL, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.train.X, in_memory.train.X)


def test_synthetic_rejects_impossible_options():
    from ltr_bench.data import DataError

    with pytest.raises(DataError, match="n_informative=9 must be between 1 and"):
        load_fold("synthetic", 1, options={"n_features": 8, "n_informative": 9})


@pytest.mark.parametrize("name,n_classes", [("gauss-10", 10), ("gauss-50", 50), ("gauss-100", 100)])
def test_gauss_datasets_have_their_number_of_classes(name, n_classes):
    fold = load_fold(name, 1)
    spec = get_spec(name)
    classes = np.unique(np.r_[fold.train.extras["doc_class"], fold.test.extras["query_class"]])
    assert classes.tolist() == list(range(n_classes))
    d = spec.options["n_features"]
    assert fold.query_dim == d and fold.train.X.shape[1] == 2 * d == spec.n_features
    np.testing.assert_array_equal(
        fold.test.y, fold.test.extras["query_class"] == fold.test.extras["doc_class"]
    )


def test_gauss_clusters_have_the_95_percent_radius_of_half_the_closest_centers():
    opts = {**get_spec("gauss-10").options, "n_per_class": 3000}
    X, cls = gauss_points(opts, seed=0)
    means = np.stack([X[cls == c].mean(axis=0) for c in range(10)])
    dist = np.linalg.norm(X - means[cls], axis=1)
    r95 = np.quantile(dist, 0.95)
    assert r95 == pytest.approx(pdist(means).min() / 2, rel=0.05)
    assert np.bincount(cls).tolist() == [3000] * 10
