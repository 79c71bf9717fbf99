"""Click labels get the linear gain (``RankerTags.gain_param``): declared, recorded in the
resolved parameters and keys, so the tree learners take any number of sessions."""

from __future__ import annotations

import pytest

from ltr_bench.ranker import apply_run_settings
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.plan import PlanError, plan_from_dict


def _plan(ranker: str, params: dict, **clicks) -> dict:
    return {
        "folds": [1],
        "rankers": {ranker: params},
        "datasets": {
            "synthetic": {"n_queries": 30},
            "clicks": {"dataset": "synthetic", "n_queries": 30, "clicks": "pbm", **clicks},
        },
    }


@pytest.mark.parametrize("ranker", ["lightgbm", "xgboost-lambdamart"])
def test_click_data_gets_the_linear_gain_and_true_labels_keep_the_exponential(ranker):
    cells = expand_plan(plan_from_dict(_plan(ranker, {}))).cells
    gains = {bool(c.dataset_identity.get("clicks")): c.params["gain"] for c in cells}
    assert gains == {True: "linear", False: "exp"}


@pytest.mark.parametrize("ranker", ["lightgbm", "xgboost-lambdamart"])
def test_a_gain_the_user_set_is_kept_on_click_data_and_changes_the_key(ranker):
    linear = expand_plan(plan_from_dict(_plan(ranker, {}))).cells
    exp = expand_plan(plan_from_dict(_plan(ranker, {"gain": "exp"}))).cells
    click = [c for c in exp if c.dataset_identity.get("clicks")]
    assert [c.params["gain"] for c in click] == ["exp"]
    assert {c.key for c in click}.isdisjoint({c.key for c in linear})


@pytest.mark.parametrize("ranker", ["lightgbm", "xgboost-lambdamart"])
def test_the_linear_gain_takes_click_counts_the_exponential_one_refuses(ranker):
    assert expand_plan(plan_from_dict(_plan(ranker, {}, sessions=1000))).cells
    with pytest.raises(PlanError, match=r"sessions=1000 .*labels up to 3[01]"):
        expand_plan(plan_from_dict(_plan(ranker, {"gain": "exp"}, sessions=1000)))


def test_a_label_gain_table_of_the_user_is_left_to_the_user():
    from ltr_bench_baselines.lightgbm import LightGBMRanker

    ranker = LightGBMRanker(extra_params={"label_gain": [0, 1, 3]})
    assert ranker.ranker_tags().gain_param is None
    assert apply_run_settings(ranker, seed=0, threads=1, query_dim=None, click_labels=True) == {
        "random_state": 0,
        "n_jobs": 1,
    }
    assert ranker.gain == "exp"


def test_linear_gain_and_a_label_gain_table_together_are_refused():
    from ltr_bench_baselines.lightgbm import LightGBMRanker

    with pytest.raises(ValueError, match="label_gain"):
        LightGBMRanker(gain="linear", extra_params={"label_gain": [0, 1]}).validate_params()


def test_lightgbm_linear_gain_is_the_label_itself():
    """LightGBM's NDCG with ``label_gain = [0, 1, ..., top]`` equals ltr-bench's NDCG@10 with
    the gain the label (computed here from its definition)."""
    import numpy as np

    from ltr_bench_baselines.lightgbm import LightGBMRanker

    rng = np.random.default_rng(0)
    X, qid = rng.random((60, 3)), np.repeat(np.arange(6), 10)
    y = rng.integers(0, 40, 60)
    ranker = LightGBMRanker(gain="linear", n_estimators=3, n_jobs=1, early_stopping_rounds=None)
    ranker.fit(X, y, qid=qid, eval_set=(X, y, qid))
    assert ranker.params_["label_gain"] == list(range(int(y.max()) + 1))
    scores = ranker.predict(X)
    values = []
    for q in range(6):
        s, g = scores[q * 10 : (q + 1) * 10], y[q * 10 : (q + 1) * 10].astype(float)
        disc = 1 / np.log2(np.arange(2, 12))
        values.append(g[np.argsort(-s, kind="stable")] @ disc / (np.sort(g)[::-1] @ disc))
    assert ranker.evals_result_["vali"]["ndcg@10"][-1] == pytest.approx(np.mean(values), abs=1e-6)
