"""extra_params of the GBDT baselines: keys checked against LightGBM's and XGBoost's own
parameter lists (ltr_bench_baselines.library_params), before any data."""

from __future__ import annotations

import pytest

from ltr_bench.registry import make_ranker
from ltr_bench_baselines.library_params import known_parameters


@pytest.mark.parametrize(
    "ranker, key, suggestion",
    [
        ("lightgbm", "num_leave", "num_leaves"),
        ("lightgbm", "lamda_l1", "lambda_l1"),
        ("xgboost-lambdamart", "min_child_weigth", "min_child_weight"),
        ("xgboost-gbrt", "colsample_bytre", "colsample_bytree"),
    ],
)
def test_a_misspelt_extra_param_is_refused_with_its_close_match(ranker, key, suggestion):
    model = make_ranker(ranker, params={"extra_params": {key: 1}})
    with pytest.raises(ValueError, match=f"no parameter '{key}' \\(did you mean '{suggestion}'"):
        model.validate_params()


@pytest.mark.parametrize(
    "ranker, params",
    [
        ("lightgbm", {"lambda_l1": 0.1, "reg_alpha": 0.1, "feature_fraction": 0.8}),
        ("lightgbm", {"max_bin": 63, "bagging_freq": 1, "lambdarank_truncation_level": 20}),
        ("xgboost-lambdamart", {"gamma": 0.1, "max_bin": 64, "lambdarank_pair_method": "topk"}),
        ("xgboost-gbrt", {"subsample": 0.8, "colsample_bynode": 0.5, "grow_policy": "lossguide"}),
    ],
)
def test_real_parameters_and_aliases_of_the_libraries_are_accepted(ranker, params):
    make_ranker(ranker, params={"extra_params": params}).validate_params()


def test_the_lists_come_from_the_libraries():
    import lightgbm

    lgb = known_parameters("lightgbm")
    # every key of LightGBM's own alias table (the C library's) and its aliases
    table = lightgbm.basic._ConfigAliases._get_all_param_aliases()
    assert set(table) <= lgb and "num_leaf" in lgb
    xgb = known_parameters("xgboost")
    assert {"max_depth", "eta", "lambdarank_num_pair_per_sample", "verbosity"} <= xgb
    assert "num_leaves" not in xgb  # a LightGBM name
