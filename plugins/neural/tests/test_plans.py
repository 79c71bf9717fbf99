"""The design-paper plans (experiments/design_table4..9.toml): every row is a valid neural
configuration, and every plan runs through the harness (on tiny data, few iterations)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from ltr_bench.registry import make_ranker
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, load_plan

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"
PLANS = {n: EXPERIMENTS / f"design_table{n}.toml" for n in range(4, 10)}
ROWS = {4: 6, 5: 8, 6: 5, 7: 5, 8: 18, 9: 32}


def test_there_is_one_plan_per_table_of_the_paper():
    assert all(p.is_file() for p in PLANS.values())


@pytest.mark.parametrize("table", sorted(PLANS))
def test_every_row_is_a_valid_neural_configuration(table):
    plan = load_plan(PLANS[table])
    assert len(plan.rankers) == ROWS[table]
    for choice in plan.rankers:
        assert choice.name == "neural"
        make_ranker("neural", choice.params).validate_params()


@pytest.mark.parametrize("table", sorted(PLANS))
def test_plan_runs_through_the_harness_on_tiny_data(table, tmp_path):
    plan = load_plan(PLANS[table])
    plan.rankers = [replace(r, params={**r.params, "epochs": 4}) for r in plan.rankers]
    if table == 4:  # query-by-example data, as wine, but small
        plan.datasets = [DatasetChoice("gauss-10", {"n_classes": 3, "n_per_class": 8})]
    else:
        opts = {"n_queries": 30, "docs_per_query": 10, "n_features": 6, "n_informative": 3}
        plan.datasets = [DatasetChoice("synthetic", opts)]
    plan.folds = [1]
    report = run_plan(expand_plan(plan, score_repeats=1), ResultStore(tmp_path / "r"))
    # on tiny data a high rho of Table 5 may keep no product: that row is the linear
    # scorer and its warning says so (no row fails)
    assert not report.failed, [(r.label, r.error) for r in report.failed]
    assert len(report.records) == ROWS[table]
    for rec in report.records:
        assert all(math.isfinite(v) for v in rec.metrics.values()), rec.label
