"""Query-by-example data (wine, wdbc): the MLR paper's 80/20 protocol as ranking rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from ltr_bench.data import load_fold
from ltr_bench.ranker import query_boundaries


def test_wine_rows_are_query_and_candidate_blocks():
    fold = load_fold("wine", 1)
    Xall, cls = load_wine(return_X_y=True)
    tr, te = fold.train, fold.test
    train_idx = np.unique(tr.extras["query_index"])
    test_idx = np.unique(te.extras["query_index"])
    n, m = train_idx.size, test_idx.size
    assert (n, m) == (142, 36) and np.intersect1d(train_idx, test_idx).size == 0
    assert tr.X.shape == (n * (n - 1), 26) and te.X.shape == (m * n, 26)
    assert fold.query_dim == 13 and fold.max_label == 1 and fold.vali is None
    # z-scored with the training statistics (independent reference: StandardScaler)
    Z = StandardScaler().fit(Xall[train_idx]).transform(Xall)
    np.testing.assert_allclose(te.X[:, :13], Z[te.extras["query_index"]], atol=1e-12)
    np.testing.assert_allclose(te.X[:, 13:], Z[te.extras["doc_index"]], atol=1e-12)
    np.testing.assert_allclose(tr.X[:, 13:], Z[tr.extras["doc_index"]], atol=1e-12)
    # relevance = same class
    np.testing.assert_array_equal(
        tr.y, cls[tr.extras["query_index"]] == cls[tr.extras["doc_index"]]
    )
    np.testing.assert_array_equal(te.extras["doc_class"], cls[te.extras["doc_index"]])
    # train: every training point ranks the other training points; test: all of them
    b = query_boundaries(tr.qid)
    assert b.size - 1 == n
    for i in range(0, n, 37):
        docs = tr.extras["doc_index"][b[i] : b[i + 1]]
        q = tr.extras["query_index"][b[i]]
        assert sorted(docs) == sorted(set(train_idx) - {q})
        assert (tr.qid[b[i] : b[i + 1]] == q + 1).all()
    bt = query_boundaries(te.qid)
    assert (np.diff(bt) == n).all()


def test_fold_k_is_the_split_drawn_with_seed_plus_k():
    a = load_fold("wine", 3, seed=0)
    b = load_fold("wine", 1, seed=2)
    c = load_fold("wine", 4, seed=0)
    assert a.test.fingerprint == b.test.fingerprint
    assert a.test.fingerprint != c.test.fingerprint
    assert load_fold("wine", 3, seed=0).fingerprints() == a.fingerprints()


def test_wdbc_shape_and_balance():
    fold = load_fold("wdbc", 1, options={"test_size": 0.5})
    n = np.unique(fold.train.qid).size
    assert n in (284, 285) and fold.query_dim == 30
    assert fold.train.X.shape == (n * (n - 1), 60)
    share = np.bincount(fold.train.extras["query_class"]) / fold.train.n_docs
    assert share == pytest.approx([212 / 569, 357 / 569], abs=0.01)  # stratified split


def test_noise_features_option_widens_both_blocks():
    fold = load_fold("wine", 1, options={"noise_features": 96})
    assert fold.query_dim == 109 and fold.train.X.shape[1] == 218
    plain = load_fold("wine", 1)
    # the real features keep the same values; noise columns are z-scored too
    np.testing.assert_allclose(fold.test.X[:, :13], plain.test.X[:, :13])
    assert abs(fold.train.X[:, 13:109].mean()) < 0.1
