"""report.names: rows named plainly (label + data variant in words, never a hash), the
baseline the user ran first or named, and the same names in notes and registered versions."""

from __future__ import annotations

import numpy as np
import pytest
from ltrb_click_config import resolved_pbm

from ltr_bench.report.register import best_row, version_descriptions
from ltr_bench.report.tables import ReportError, build_report
from ltr_bench.report.text import format_report
from ltr_bench.results import ResultRecord

_clicks = resolved_pbm


def _records(
    label, ranker, shift, *, options=None, clicks=None, params=None, started="2025-06-01T10:00",
    ck=None, config=None, n_features=None,
):  # fmt: skip
    out = []
    identity = {"name": "synthetic"} | ({"clicks": clicks} if clicks else {})
    options = dict(options or {})
    if n_features is not None:
        options["n_features"] = n_features
    for f in (1, 2, 3):
        v = np.linspace(0.3, 0.7, 12) + shift + 0.01 * f
        out.append(
            ResultRecord(
                key=f"{ck or label}-{f}",
                plan_key=f"pk-{ck or label}",
                config_key=ck or f"ck-{label}-{shift}",
                ranker=ranker,
                label=label,
                params=dict(params or {}),
                user_params=dict(params or {}),
                dataset="synthetic",
                fold=f,
                seed=0,
                started=started,
                metrics={"ndcg@10": float(v.mean())},
                per_query={"qid": list(range(12)), "ndcg@10": v.tolist()},
                fit_seconds=1.0,
                score_us_per_doc=1.0,
                fingerprints={"train": f"{'c' if clicks else 't'}{f}", "test": f"te{f}"},
                dataset_identity=identity,
                dataset_options=options,
                config=dict(config or {}),
                mlflow={"run_id": f"run-{ck or label}-{f}"},
            )
        )
    return out


PBM_OPTIONS = {"clicks": "pbm", "eta": 1, "sessions": 10}


def _readme_step_6():
    """README's main command, then lightgbm again on clicks (step 6)."""
    return [
        *_records("lightgbm", "lightgbm", 0.10, started="2025-06-01T10:00"),
        *_records("xgboost-gbrt", "xgboost-gbrt", 0.09, started="2025-06-01T10:01"),
        *_records(
            "lightgbm", "lightgbm", 0.0, options=PBM_OPTIONS, clicks=_clicks(),
            started="2025-06-01T11:00",
        ),
    ]  # fmt: skip


def test_a_click_trained_row_says_so_in_words_and_the_baseline_stays_lightgbm():
    rep = build_report(_readme_step_6(), dataset="synthetic")
    assert [r.label for r in rep.rows] == [
        "lightgbm",
        "lightgbm · clicks pbm eta=1 x10",
        "xgboost-gbrt",
    ]
    assert rep.baseline == "lightgbm"
    # another reading was possible: the report says which row it took and why
    assert rep.baseline_note.startswith(
        "baseline lightgbm: LightGBM's default configuration on the dataset as it is; "
        "lightgbm · clicks pbm eta=1 x10 shares its label"
    )
    assert f"Note: {rep.baseline_note}" in format_report(rep, "md")


def test_the_registered_version_descriptions_use_the_same_names_and_baseline():
    rep = build_report(_readme_step_6(), dataset="synthetic")
    row = best_row(rep)
    assert row.label == "lightgbm"
    (_, text), *_ = version_descriptions(rep, row)
    assert "It is the report's baseline (lightgbm)." in text
    assert "lightgbm · clicks pbm eta=1 x10 0." in text  # among the others, by its plain name
    assert "[" not in text.split("(the others:")[1]  # no hash anywhere


def test_a_named_baseline_that_matches_two_rows_takes_the_one_on_the_dataset_as_it_is():
    rep = build_report(_readme_step_6(), dataset="synthetic", baseline="lightgbm")
    assert rep.baseline == "lightgbm" and rep.baseline_note is None  # its full name
    clicks = build_report(
        _readme_step_6(), dataset="synthetic", baseline="lightgbm · clicks pbm eta=1 x10"
    )
    assert clicks.baseline == "lightgbm · clicks pbm eta=1 x10"


def test_without_lightgbm_the_baseline_is_the_default_configuration_run_first():
    records = [
        *_records("ridge", "ridge", 0.0, started="2025-06-02T09:00"),
        *_records("xgboost-gbrt", "xgboost-gbrt", 0.05, started="2025-06-01T09:00"),
        *_records("catboost-big", "catboost", 0.1, params={"depth": 8}, started="2025-05-01T09:00"),
    ]
    rep = build_report(records, dataset="synthetic")
    assert rep.baseline == "xgboost-gbrt"
    assert "the default configuration of its ranker, run first of 2" in rep.baseline_note


def test_two_configurations_of_one_name_are_told_apart_by_what_differs_never_a_hash():
    records = [
        *_records("lgbm", "lightgbm", 0.0, params={"num_leaves": 7}, ck="a"),
        *_records("lgbm", "lightgbm", 0.1, params={"num_leaves": 63}, ck="b"),
        # the same parameters: an edited parameter file, run at another time
        *_records("cfg", "neural", 0.0, config={"param_files": {"config": "1" * 64}}, ck="c"),
        *_records(
            "cfg",
            "neural",
            0.1,
            config={"param_files": {"config": "2" * 64}},
            ck="d",
            started="2025-06-03T08:15:00.123",
        ),  # fmt: skip
    ]
    rep = build_report(records, dataset="synthetic", baseline="lgbm[num_leaves=7]")
    assert sorted(r.label for r in rep.rows) == [
        "cfg (parameter file changed, run 2025-06-01 10:00)",
        "cfg (parameter file changed, run 2025-06-03 08:15)",
        "lgbm[num_leaves=63]",
        "lgbm[num_leaves=7]",
    ]
    assert any("2 configurations share the name cfg: shown as" in n for n in rep.notes)


def test_data_options_every_row_shares_are_said_once_not_in_each_name():
    records = [
        *_records("lightgbm", "lightgbm", 0.1, n_features=5),
        *_records(
            "lightgbm", "lightgbm", 0.0, options={**PBM_OPTIONS}, clicks=_clicks(), n_features=5
        ),
    ]
    rep = build_report(records, dataset="synthetic")
    assert [r.label for r in rep.rows] == ["lightgbm", "lightgbm · clicks pbm eta=1 x10"]
    assert "Dataset synthetic with n_features=5 (every row)" in format_report(rep, "md")


def test_two_click_configurations_that_differ_in_one_option_get_different_names_and_notes():
    records = [*_records("lightgbm", "lightgbm", 0.1)]
    for fraction, aggregate, shift in ((0.01, "count", 0.0), (0.1, "any", 0.02)):
        options = {**PBM_OPTIONS, "logging_fraction": fraction, "aggregate": aggregate}
        clicks = _clicks(logging_fraction=fraction, aggregate=aggregate)
        records += _records("lightgbm", "lightgbm", shift, options=options, clicks=clicks)
    rep = build_report(records, dataset="synthetic")
    names = [r.label for r in rep.rows]
    assert names == [
        "lightgbm",
        # the options sorted by key, whatever order they were given in
        "lightgbm · clicks pbm eta=1 aggregate=any logging_fraction=0.1 x10",
        "lightgbm · clicks pbm eta=1 aggregate=count logging_fraction=0.01 x10",
    ]
    notes = [n for n in rep.notes if "was trained on clicks" in n]
    assert len(notes) == 2 and len(set(n.split(" was trained on ")[1] for n in notes)) == 2
    assert any("fitted on 10% of the training queries" in n for n in notes)
    assert any("clicked or not (aggregate=any)" in n for n in notes)


def test_between_two_click_baselines_the_note_names_each_option_that_differs():
    a = _records(
        "naive", "lightgbm", 0.0, options=PBM_OPTIONS, clicks=_clicks(), ck="a"
    )  # fmt: skip
    b = _records(
        "naive", "lightgbm", 0.0, options={**PBM_OPTIONS, "logging_fraction": 0.5},
        clicks=_clicks(logging_fraction=0.5), ck="b",
    )  # fmt: skip
    rep = build_report([*a, *b], dataset="synthetic", baseline="naive · clicks pbm eta=1 x10")
    (note,) = [n for n in rep.notes if "they differ in" in n]
    assert "they differ in logging_fraction 0.5 / 0.01" in note


def test_an_unknown_baseline_lists_the_rows_by_their_names():
    with pytest.raises(ReportError, match="lightgbm · clicks pbm eta=1 x10") as err:
        build_report(_readme_step_6(), dataset="synthetic", baseline="nope")
    assert err.value.exit_code == 2


def test_a_true_label_row_on_generated_data_options_is_still_on_the_dataset_as_it_is():
    records = [
        *_records("skyline", "lightgbm", 0.1, n_features=5, started="2025-06-02T10:00"),
        *_records(
            "naive",
            "lightgbm",
            0.0,
            options=PBM_OPTIONS,
            clicks=_clicks(),
            n_features=5,
            started="2025-06-01T10:00",
        ),  # fmt: skip
    ]
    rep = build_report(records, dataset="synthetic")
    assert rep.baseline == "skyline"  # run later, but the click row is not the dataset as it is


def test_two_configurations_of_one_name_run_in_one_minute_name_the_field_that_differs():
    records = [
        *_records("cfg", "neural", 0.0, config={"ranker_version": "1.0"}, ck="e"),
        *_records("cfg", "neural", 0.1, config={"ranker_version": "1.1"}, ck="f"),
    ]
    rep = build_report(records, dataset="synthetic")
    assert sorted(r.label for r in rep.rows) == [
        "cfg (ranker_version=1.0, run 2025-06-01 10:00)",
        "cfg (ranker_version=1.1, run 2025-06-01 10:00)",
    ]
