"""The issue-23 plans: every row is a valid configuration (allRank config files included),
and each plan runs through the harness on tiny generated data with few epochs."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from ltr_bench.registry import make_ranker  # noqa: E402
from ltr_bench.results import ResultStore  # noqa: E402
from ltr_bench.run.cells import expand_plan  # noqa: E402
from ltr_bench.run.harness import run_plan  # noqa: E402
from ltr_bench.run.plan import DatasetChoice, load_plan  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
PLANS = {
    name: REPO / "experiments" / f"{name}.toml"
    for name in (
        "neural_vs_gbdt",
        "neural_vs_gbdt_tune",
        "allrank_neuralndcg_mslr30k",
        "allrank_context_aware_mslr30k",
    )
}


@pytest.fixture
def at_repo_root(monkeypatch):
    monkeypatch.chdir(REPO)  # the plans name their allRank configs from the repository root


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_row_is_a_valid_configuration(name, at_repo_root):
    plan = load_plan(PLANS[name])
    assert any(r.name == "lightgbm" for r in plan.rankers)
    for choice in plan.rankers:
        make_ranker(choice.name, choice.params).validate_params()


@pytest.mark.parametrize("name", sorted(PLANS))
def test_plan_runs_through_the_harness_on_tiny_data(name, at_repo_root, tmp_path):
    plan = load_plan(PLANS[name])
    small = {"epochs": 1, "batch_size": 8, "slate_length": 20}
    plan.rankers = [
        replace(r, params={**r.params, **small}) if r.name == "neural" else r for r in plan.rankers
    ]
    opts = {"n_queries": 25, "docs_per_query": 10, "n_features": 6, "n_informative": 3}
    plan.datasets = [DatasetChoice("synthetic", opts)]
    plan.folds = [1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the allRank configs' notices (data.path, ...)
        report = run_plan(expand_plan(plan, score_repeats=1), ResultStore(tmp_path / "r"))
    assert not report.failed, [(r.label, r.error) for r in report.failed]
