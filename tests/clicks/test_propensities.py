"""Estimated propensities for inverse-propensity learners: computed from the click log (and a
randomised intervention) by the harness, cached, and handed to ``fit`` as ``propensity``."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.clicks import propensities, simulate_clicks
from ltr_bench.clicks.options import resolve_click_options
from ltr_bench.data import load_fold
from ltr_bench.ranker import RankerTags
from ltr_bench.run.unit import click_keywords


@pytest.fixture(scope="module")
def clicked(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    fold = load_fold("synthetic", 1, seed=0, options={"n_queries": 300})
    config = resolve_click_options({"clicks": "pbm", "eta": 1, "sessions": 100}, kind="generated")
    out = simulate_clicks(fold, config, seed=0, cache_dir=cache, estimates=propensities.ESTIMATORS)
    return fold, config, cache, out


@pytest.mark.parametrize("method", propensities.ESTIMATORS)
def test_estimates_ride_beside_the_log_and_recover_the_position_based_curve(clicked, method):
    _, _, _, out = clicked
    train = out.train
    est = train.extras[propensities.extra_name(method)]
    position = train.extras["position"]
    curve = np.array([est[position == k][0] for k in range(1, 11)])
    # one value per rank: the curve read at each row's position
    for k in range(1, 11):
        assert np.all(est[position == k] == curve[k - 1])
    truth = 1.0 / np.arange(1, 11)
    assert curve[0] == 1.0
    assert np.abs(curve - truth)[1:].mean() < 0.05


def test_the_estimate_is_read_back_from_the_cache(clicked, monkeypatch):
    fold, config, cache, out = clicked

    def fail(*args, **kwargs):
        raise AssertionError("estimated again instead of read from the cache")

    monkeypatch.setattr(propensities, "estimate_curve", fail)
    again = simulate_clicks(fold, config, seed=0, cache_dir=cache, estimates=("em",))
    name = propensities.extra_name("em")
    assert np.array_equal(again.train.extras[name], out.train.extras[name])


def test_another_seed_gives_another_estimate(clicked):
    fold, config, cache, out = clicked
    other = simulate_clicks(fold, config, seed=1, cache_dir=cache, estimates=("randomisation",))
    name = propensities.extra_name("randomisation")
    assert not np.array_equal(other.train.extras[name], out.train.extras[name])


def test_a_curve_without_clicks_at_some_rank_is_filled_and_floored():
    cleaned = propensities.clean_curve([1.0, 0.5, np.nan, 0.0, 0.001, 2.0])
    assert cleaned.tolist() == [1.0, 0.5, 0.5, 0.5, propensities.PROPENSITY_FLOOR, 1.0]


def test_rows_read_the_curve_at_their_rank_and_unshown_rows_have_none():
    curve = np.array([1.0, 0.5, 0.25])
    out = propensities.rows_propensity(curve, np.array([1, 3, 7, 0]))
    assert out[:3].tolist() == [1.0, 0.25, 0.25] and np.isnan(out[3])


def test_fit_gets_the_estimate_its_tags_ask_for_as_propensity(clicked):
    train = clicked[3].train
    tags = RankerTags(accepts_position=True, propensity_estimate="em")
    given = click_keywords(train, tags)
    assert given["propensity"] is train.extras["propensity_em"]
    true = click_keywords(train, RankerTags(accepts_position=True))
    assert true["propensity"] is train.extras["propensity"]


def test_cells_of_estimated_propensities_carry_the_estimator_in_their_key():
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.plan import plan_from_dict

    def cells(source):
        doc = {
            "folds": [1],
            "rankers": {"lightgbm": {"unbiased": "ips", "propensity": source}},
            "datasets": {"synthetic": {"n_queries": 30, "clicks": "pbm"}},
        }
        return expand_plan(plan_from_dict(doc)).cells

    em, true = cells("em")[0], cells("true")[0]
    assert em.propensity_estimate == "em" and true.propensity_estimate is None
    assert em.key != true.key


def test_estimated_propensities_work_where_the_click_model_has_none():
    """The cascade's true propensity is 0 below a top-grade document (refused for IPS with the
    truth); an estimate is a curve by rank, positive everywhere."""
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.plan import PlanError, plan_from_dict

    def plan(source):
        return plan_from_dict(
            {
                "rankers": {"lightgbm": {"unbiased": "ips", "propensity": source}},
                "datasets": {"synthetic": {"n_queries": 30, "clicks": "cascade"}},
            }
        )

    with pytest.raises(PlanError, match="true examination propensity"):
        expand_plan(plan("true"))
    assert expand_plan(plan("em")).cells
