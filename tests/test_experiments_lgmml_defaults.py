"""experiments/lgmml_defaults.py: the label-free reference ranker and the validation-only data
of the L-GMML defaults search."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.lgmml_defaults import NormReferenceRanker, load_validation_sets
from ltr_bench.testing import parametrize_with_checks


@parametrize_with_checks([NormReferenceRanker("far"), NormReferenceRanker("near")])
def test_norm_reference_follows_the_ranker_contract(ranker, check):
    check(ranker)


def test_norm_reference_scores_are_plus_and_minus_the_squared_l2_scaled_norm():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3)) * [1.0, 10.0, 100.0]
    y, qid = rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4)
    far = NormReferenceRanker("far").fit(X, y, qid=qid).predict(X)
    Z = X / np.linalg.norm(X, axis=0)
    assert np.allclose(far, (Z * Z).sum(1))
    assert np.allclose(NormReferenceRanker("near").fit(X, y, qid=qid).predict(X), -far)
    with pytest.raises(ValueError, match="direction"):
        NormReferenceRanker("up").fit(X, y, qid=qid)


def test_lightgbm_example_validation_is_a_seeded_query_split_of_training_only(shared_data):
    root = shared_data / "LightGBM-lambdarank-example"
    a = load_validation_sets("lgbm-example", ohsumed=None, lgbm_example=root)
    b = load_validation_sets("lgbm-example", ohsumed=None, lgbm_example=root)
    ((_, tr, va),) = a
    assert not set(tr[2]) & set(va[2])
    assert np.array_equal(va[2], b[0][2][2])  # deterministic
    assert len(set(va[2])) == len(set(tr[2]) | set(va[2])) // 4
