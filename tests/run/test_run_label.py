"""``run --label NAME``: one CLI row named as a plan's table names it, without touching keys."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.run.plan import PlanError
from ltr_bench.run.plan_options import CommandLine, build_plan

TINY = ["--dataset-option", "n_queries=30", "--dataset-option", "docs_per_query=6"]
TINY += ["--dataset-option", "n_features=5", "--dataset-option", "n_informative=3"]


def test_label_names_the_one_configuration_as_a_plan_table_would(tmp_path):
    plan = build_plan(
        CommandLine(
            rankers=("ridge",), datasets=("synthetic",), params=("ridge.alpha=2",), label="wide"
        )
    )
    (r,) = plan.rankers
    assert (r.name, r.label, r.params, r.row_label) == ("ridge", "wide", {"alpha": 2}, "wide")
    toml = tmp_path / "plan.toml"
    toml.write_text('[rankers.wide]\nranker = "ridge"\nalpha = 2\n[datasets.synthetic]\n')
    assert build_plan(CommandLine(config=str(toml))).rankers == plan.rankers


def test_a_labelled_sweep_names_each_point_after_the_label():
    plan = build_plan(
        CommandLine(
            rankers=("ridge",),
            datasets=("synthetic",),
            sweeps=("ridge.alpha=1,10",),
            label="wide",
        )
    )
    assert [r.row_label for r in plan.rankers] == ["wide[alpha=1]", "wide[alpha=10]"]


@pytest.mark.parametrize(
    "rankers, label, match",
    [
        (("ridge", "lightgbm"), "x", "it names one configuration, this run has 2"),
        (("ridge",), "  ", "empty"),
        (("ridge",), "a,b", "comma outside"),
        (("ridge",), "a · b", "separates a row's label"),
        (("ridge",), "lightgbm", "name of another ranker"),
    ],
)
def test_a_label_that_cannot_name_one_row_plainly_is_refused(rankers, label, match):
    with pytest.raises(PlanError, match=match):
        build_plan(CommandLine(rankers=rankers, datasets=("synthetic",), label=label))


@pytest.fixture
def work(tmp_path, monkeypatch, fake_rankers):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*extra):
    args = ["run", "--ranker", "fake-linear", "--dataset", "synthetic", "--folds", "1"]
    return CliRunner().invoke(main, [*args, *TINY, *extra], catch_exceptions=False)


def test_a_label_names_the_row_in_summary_records_and_mlflow_and_keeps_the_result_key(work):
    labelled = _run("--label", "mine", "--dataset-option", "clicks=pbm")
    assert labelled.exit_code == 0, labelled.output
    # the data variant follows the label in words: the clicks, then the other options
    name = "mine · clicks pbm x10 docs_per_query=6 n_features=5 n_informative=3 n_queries=30"
    assert f"[1/1] {name} on synthetic fold 1" in labelled.stderr
    # the summary says the options every row shares once, under the table
    assert "synthetic  mine · clicks pbm x10 " in labelled.stdout
    assert "(every row of synthetic): docs_per_query=6 n_features=5" in labelled.stdout
    (rec,) = [json.loads(p.read_text()) for p in (work / "mlflow_runs/results").glob("*.json")]
    assert rec["label"] == "mine"
    import mlflow

    from ltr_bench.tracking import default_tracking_uri

    client = mlflow.MlflowClient(default_tracking_uri())
    (exp,) = [e for e in client.search_experiments() if e.name.endswith("synthetic")]
    names = sorted(r.info.run_name for r in client.search_runs([exp.experiment_id]))
    assert names == [f"{name} @ synthetic", f"{name} fold 1"]
    # the label names, it does not identify: the same cell unlabelled is the same result
    again = _run("--dataset-option", "clicks=pbm", "--no-mlflow")
    assert "finished earlier, skipped" in again.stderr
    assert len(list((work / "mlflow_runs/results").glob("*.json"))) == 1


def test_label_with_two_rankers_exits_2_naming_the_option(work):
    result = CliRunner().invoke(
        main,
        ["run", "--ranker", "fake-linear,fake-other", "--dataset", "synthetic", "--label", "x"],
    )
    assert result.exit_code == 2
    assert "--label x: it names one configuration" in result.output
