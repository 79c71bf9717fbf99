"""synthetic's feature_distribution option: log-normal features over the same labels."""

import numpy as np
import pytest

from ltr_bench.data import load_fold
from ltr_bench.data.errors import DataError


def test_lognormal_features_are_exp_of_the_normal_ones_with_identical_labels():
    opts = {"n_queries": 20, "docs_per_query": 10}
    a = load_fold("synthetic", 2, seed=3, options=opts)
    b = load_fold("synthetic", 2, seed=3, options={**opts, "feature_distribution": "lognormal"})
    for s in ("train", "vali", "test"):
        sa, sb = getattr(a, s), getattr(b, s)
        assert np.array_equal(sa.y, sb.y) and np.array_equal(sa.qid, sb.qid)
        assert np.allclose(sb.X, np.exp(sa.X))


def test_default_distribution_is_normal_and_a_bad_value_names_the_option():
    opts = {"n_queries": 20, "docs_per_query": 10}
    a = load_fold("synthetic", 1, seed=0, options=opts)
    b = load_fold("synthetic", 1, seed=0, options={**opts, "feature_distribution": "normal"})
    assert np.array_equal(a.train.X, b.train.X) and (a.train.X < 0).any()
    with pytest.raises(DataError, match="feature_distribution"):
        load_fold("synthetic", 1, options={**opts, "feature_distribution": "cauchy"})
