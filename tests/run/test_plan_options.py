"""ltr_bench.run.plan_options: how --ranker and the other options combine with a TOML plan."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.run.plan_options import CommandLine, build_plan

PLAN = """\
[rankers."lgbm"]
ranker = "lightgbm"

[rankers.ridge]

[datasets.synthetic]

[tuning."lgbm"]
num_leaves = {low = 7, high = 15}

[tuning.ridge]
alpha = {low = 0.1, high = 10.0, log = true}
"""


def test_ranker_picking_some_of_a_plans_configurations_keeps_only_their_tuning_tables(tmp_path):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN)
    plan = build_plan(CommandLine(config=str(plan_file), rankers=("ridge",)))
    assert [r.display for r in plan.rankers] == ["ridge"]
    assert plan.tuning == {"ridge": {"alpha": {"low": 0.1, "high": 10.0, "log": True}}}
    whole = build_plan(CommandLine(config=str(plan_file)))
    assert set(whole.tuning) == {"lgbm", "ridge"}


def test_a_tuning_table_naming_no_configuration_of_the_plan_survives_ranker_selection(tmp_path):
    # a typo in the file must still reach tune's "not a ranker of this run" error
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN + "\n[tuning.ridgee]\nalpha = {low = 0.1, high = 1.0}\n")
    plan = build_plan(CommandLine(config=str(plan_file), rankers=("ridge",)))
    assert set(plan.tuning) == {"ridge", "ridgee"}


@pytest.mark.slow
def test_tune_runs_one_configuration_of_a_plan_whose_other_rows_have_tuning_tables(tmp_path):
    # before: "tuning.lgbm: not a ranker of this run", exit 2, for a plan the file itself runs
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN)
    res = CliRunner().invoke(
        main,
        [
            "tune",
            "--no-mlflow",
            "--results-dir",
            str(tmp_path / "results"),
            "--optuna-storage",
            f"sqlite:///{tmp_path / 'optuna.db'}",
            "--config",
            str(plan_file),
            "--ranker",
            "ridge",
            "--folds",
            "1",
            "--trials",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "ridge[tuned,trials=1]" in res.output and "lgbm" not in res.output
