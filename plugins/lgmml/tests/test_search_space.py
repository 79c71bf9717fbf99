"""LGMMLRanker.SEARCH_SPACE: parses, and every choice / bound fits on tiny data."""

import itertools

import numpy as np
import pytest

from ltr_bench.tune.study import parse_spec
from ltr_bench_lgmml import LGMMLRanker

SPACE = LGMMLRanker.SEARCH_SPACE


def _data(seed=0, n_queries=6, n_docs=12, d=4):
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 3, size=(n_queries, n_docs))
    X = rng.normal(size=(n_queries * n_docs, d))
    X[:, 0] += lab.ravel()
    return X, lab.ravel(), np.repeat(np.arange(n_queries), n_docs)


def test_search_space_parses_and_names_only_ranker_parameters():
    params = LGMMLRanker().get_params()
    for name, spec in SPACE.items():
        assert name in params
        parse_spec(name, spec, where="LGMMLRanker.SEARCH_SPACE")


def test_search_space_keeps_its_keys_and_adds_reg_lambda_and_weight_method():
    assert {
        "score_form",
        "weight_strategy",
        "scaling",
        "n_metrics",
        "step_size",
        "reg_lambda",
        "weight_method",
    } <= set(SPACE)
    assert SPACE["reg_lambda"]["log"] and SPACE["reg_lambda"]["low"] > 0
    assert "reg_scale" not in SPACE  # relative only: see the comment on SEARCH_SPACE


def _values(spec):
    if "choices" in spec:
        return list(spec["choices"])
    return [spec["low"], spec["high"]]


@pytest.mark.parametrize("name,value", [(n, v) for n, s in SPACE.items() for v in _values(s)])
def test_every_choice_and_bound_of_the_space_fits_on_tiny_data(name, value):
    X, y, qid = _data()
    kw = {"n_metrics": 6, "n_iter": 60, "random_state": 0, name: value}
    r = LGMMLRanker(**kw).fit(X, y, qid=qid)
    assert np.all(np.isfinite(r.predict(X)))


def test_every_weight_method_and_strategy_combination_of_the_space_is_valid():
    # tune samples parameters independently: no pair of choices may be rejected
    X, y, qid = _data()
    for method, strategy in itertools.product(
        SPACE["weight_method"]["choices"], SPACE["weight_strategy"]["choices"]
    ):
        r = LGMMLRanker(
            n_metrics=5, n_iter=40, random_state=1, weight_method=method, weight_strategy=strategy
        )
        r.validate_params()
        r.fit(X, y, qid=qid)
