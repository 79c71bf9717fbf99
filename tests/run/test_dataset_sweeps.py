"""Sweeping a dataset option like a ranker parameter, and one dataset as two variants (true
labels and clicks) of one plan."""

from __future__ import annotations

import pytest

from ltr_bench.run.cells import expand_plan
from ltr_bench.run.plan import PlanError, plan_from_dict
from ltr_bench.run.plan_options import CommandLine, build_plan


def _curve_plan(**extra) -> dict:
    return {
        "folds": [1],
        "rankers": {"lightgbm": {}, "lightgbm unbiased": {"ranker": "lightgbm", "unbiased": True}},
        "datasets": {
            "synthetic": {"n_queries": 30},
            "clicks": {"dataset": "synthetic", "n_queries": 30, "clicks": "pbm"},
        },
        "sweep": {"clicks": {"sessions": [5, 50]}},
        **extra,
    }


def test_dataset_sweep_makes_one_variant_per_value_each_with_its_own_identity_and_keys():
    from ltr_bench.run.sweeps import expand_sweeps

    expanded = expand_plan(expand_sweeps(plan_from_dict(_curve_plan())))
    clicked = [c for c in expanded.cells if c.dataset_identity.get("clicks")]
    by_sessions = {}
    for c in clicked:
        by_sessions.setdefault(c.dataset_identity["clicks"]["sessions"], []).append(c)
    assert sorted(by_sessions) == [5, 50]
    assert len({c.key for c in expanded.cells}) == len(expanded.cells)
    # each point is a variant of its own: its options hold the swept value
    assert {c.dataset_options["sessions"] for c in clicked} == {5, 50}
    assert all(c.dataset == "synthetic" for c in expanded.cells)


def test_a_position_learner_runs_on_the_click_variants_and_skips_the_true_labels_with_a_note():
    from ltr_bench.run.sweeps import expand_sweeps

    expanded = expand_plan(expand_sweeps(plan_from_dict(_curve_plan())))
    unbiased = [c for c in expanded.cells if c.label == "lightgbm unbiased"]
    assert unbiased and all(c.dataset_identity.get("clicks") for c in unbiased)
    skyline = [c for c in expanded.cells if not c.dataset_identity.get("clicks")]
    assert [c.label for c in skyline] == ["lightgbm"]
    assert any("'lightgbm unbiased' does not run on synthetic" in n for n in expanded.notes)


def test_command_line_sweep_of_a_dataset_option_is_the_ranker_sweep_syntax():
    plan = build_plan(
        CommandLine(
            rankers=("lightgbm",),
            datasets=("synthetic",),
            dataset_options=("n_queries=30", "clicks=pbm"),
            sweeps=("synthetic.sessions=5,50",),
            folds="1",
        )
    )
    assert [(d.label, d.options["sessions"]) for d in plan.datasets] == [
        ("synthetic[sessions=5]", 5),
        ("synthetic[sessions=50]", 50),
    ]
    assert len(expand_plan(plan).cells) == 2


def test_labelled_dataset_variant_takes_its_options_from_the_command_line_by_label():
    plan = build_plan(
        CommandLine(
            config=None,
            rankers=("lightgbm",),
            datasets=("synthetic",),
            dataset_options=("synthetic.n_queries=30",),
        )
    )
    assert plan.datasets[0].options == {"n_queries": 30}


def test_a_sweep_naming_both_a_ranker_and_a_dataset_is_refused():
    from ltr_bench.run.sweeps import expand_sweeps

    doc = _curve_plan()
    doc["rankers"]["clicks"] = {"ranker": "lightgbm", "num_leaves": 7}
    with pytest.raises(PlanError, match="both a ranker configuration and a dataset"):
        expand_sweeps(plan_from_dict(doc))


def test_a_sweep_of_an_unknown_name_lists_rankers_and_datasets():
    from ltr_bench.run.sweeps import expand_sweeps

    doc = _curve_plan(sweep={"clics": {"sessions": [5, 50]}})
    with pytest.raises(PlanError, match="neither a ranker nor a dataset.*datasets: synthetic"):
        expand_sweeps(plan_from_dict(doc))


def test_the_same_data_with_the_same_options_twice_is_refused():
    doc = _curve_plan()
    doc["datasets"]["again"] = {"dataset": "synthetic", "n_queries": 30}
    del doc["sweep"]
    with pytest.raises(PlanError, match="'synthetic' and 'again' are the same data"):
        expand_plan(plan_from_dict(doc))


def test_plan_with_labelled_variants_round_trips_through_its_dict():
    from ltr_bench.run.sweeps import expand_sweeps

    plan = expand_sweeps(plan_from_dict(_curve_plan()))
    again = plan_from_dict({k: v for k, v in plan.to_dict().items() if v is not None})
    assert [(d.name, d.label, d.options) for d in again.datasets] == [
        (d.name, d.label, d.options) for d in plan.datasets
    ]


def test_a_labelled_dataset_table_needs_a_dataset_name():
    doc = _curve_plan()
    doc["datasets"]["clicks"]["dataset"] = ""
    with pytest.raises(PlanError, match="datasets.clicks.dataset"):
        plan_from_dict(doc)
