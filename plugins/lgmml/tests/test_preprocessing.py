"""Feature scaling fitted on the training split."""

import numpy as np
import pytest

from ltr_bench_lgmml.preprocessing import FeatureScaler


def test_l2_scaling_gives_unit_column_norms_on_the_training_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4)) * [1, 10, 100, 0]
    Z = FeatureScaler.fit(X, "l2", chunk_rows=7).transform(X)
    assert np.allclose(np.linalg.norm(Z[:, :3], axis=0), 1.0)
    assert np.all(Z[:, 3] == 0)  # zero column: scale 1, stays finite


def test_zscore_scaling_gives_zero_mean_unit_std_and_reuses_training_statistics():
    rng = np.random.default_rng(1)
    X = rng.normal(5, 3, size=(200, 3))
    sc = FeatureScaler.fit(X, "zscore", chunk_rows=13)
    Z = sc.transform(X)
    assert np.allclose(Z.mean(0), 0, atol=1e-12) and np.allclose(Z.std(0), 1)
    X_test = rng.normal(50, 1, size=(10, 3))
    assert np.allclose(sc.transform(X_test), (X_test - X.mean(0)) / X.std(0))


def test_transform_never_modifies_its_input_and_none_is_identity():
    X = np.arange(12.0).reshape(4, 3)
    keep = X.copy()
    FeatureScaler.fit(X, "zscore").transform(X)
    assert np.array_equal(X, keep)
    assert np.array_equal(FeatureScaler.fit(X, "none").transform(X), X)


def test_unknown_scaling_names_the_allowed_values():
    with pytest.raises(ValueError, match="l2.*zscore.*none"):
        FeatureScaler.fit(np.ones((2, 2)), "minmax")
