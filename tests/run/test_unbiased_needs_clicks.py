"""A ranker that learns from click positions, on data without clicks: refused before any work."""

from __future__ import annotations

import pytest

from ltr_bench.run.cells import expand_plan
from ltr_bench.run.plan import PlanError, plan_from_dict


@pytest.mark.parametrize(
    "ranker, params",
    [
        ("lightgbm", {"unbiased": True}),
        ("xgboost-lambdamart", {"unbiased": True}),
        ("neural", {"unbiased": "ips"}),
    ],
)
def test_unbiased_ranker_on_true_label_data_is_refused_at_expansion(ranker, params):
    plan = plan_from_dict(
        {"rankers": {ranker: params}, "datasets": {"synthetic": {"n_queries": 20}}}
    )
    with pytest.raises(PlanError, match="no click options: add clicks=<model>"):
        expand_plan(plan)


def test_unbiased_ranker_on_click_data_expands():
    plan = plan_from_dict(
        {
            "rankers": {"lightgbm": {"unbiased": True}},
            "datasets": {"synthetic": {"n_queries": 20, "clicks": "pbm", "eta": 1}},
        }
    )
    assert expand_plan(plan).cells


def test_naive_rankers_need_no_clicks():
    plan = plan_from_dict(
        {"rankers": {"neural": {"unbiased": "naive"}}, "datasets": {"synthetic": {"n_queries": 20}}}
    )
    assert expand_plan(plan).cells


@pytest.mark.parametrize(
    "ranker, params",
    [
        ("lightgbm", {"unbiased": True}),
        ("lightgbm", {"unbiased": "ips"}),
        ("xgboost-lambdamart", {"unbiased": "ips"}),
        ("neural", {"unbiased": "ips"}),
        ("neural", {"unbiased": "ips", "propensity": "em"}),
        ("neural", {"unbiased": "dla"}),
    ],
)
def test_position_correction_on_clicked_at_least_once_over_several_sessions_is_refused(
    ranker, params
):
    """1[count > 0] has expectation 1 - (1 - theta alpha)^S, not proportional to theta."""
    plan = plan_from_dict(
        {
            "rankers": {ranker: params},
            "datasets": {
                "synthetic": {"n_queries": 20, "clicks": "pbm", "aggregate": "any", "sessions": 5}
            },
        }
    )
    with pytest.raises(PlanError, match=r"aggregate=any over sessions=5.*aggregate=count"):
        expand_plan(plan)


def test_clicked_at_least_once_of_one_session_is_the_count_and_expands():
    plan = plan_from_dict(
        {
            "rankers": {"lightgbm": {"unbiased": "ips"}},
            "datasets": {
                "synthetic": {"n_queries": 20, "clicks": "pbm", "aggregate": "any", "sessions": 1}
            },
        }
    )
    assert expand_plan(plan).cells


def test_naive_learners_may_train_on_clicked_at_least_once():
    plan = plan_from_dict(
        {
            "rankers": {"lightgbm": {}},
            "datasets": {
                "synthetic": {"n_queries": 20, "clicks": "pbm", "aggregate": "any", "sessions": 5}
            },
        }
    )
    assert expand_plan(plan).cells
