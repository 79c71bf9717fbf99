"""A simulated click log carries its own estimated examination curve (result randomisation
and regression EM), made once with the log, cached with it and copied into every record."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench import data
from ltr_bench.clicks import simulate
from ltr_bench.clicks.estimation import compare_to_truth
from ltr_bench.clicks.options import resolve_click_options
from ltr_bench.data import cache

OPTIONS = {"n_queries": 600, "docs_per_query": 30, "n_features": 10, "n_informative": 6}


@pytest.fixture(scope="module")
def fold(tmp_path_factory):
    where = tmp_path_factory.mktemp("cache")
    return data.load_fold("synthetic", 1, seed=0, options=OPTIONS, cache_dir=where), where


def _simulate(fold, where, **options):
    config = resolve_click_options({"clicks": "pbm", **options}, kind="generated")
    return simulate.simulate_clicks(fold, config, seed=0, cache_dir=where)


def test_both_estimates_recover_the_position_based_curve(fold):
    source, where = fold
    est = _simulate(source, where, eta=1, sessions=20).info["click_log"]["propensity_estimates"]
    true = (1.0 / np.arange(1, 11)) ** 1.0
    assert est["ranks"] == 10 and "unavailable" not in est
    # 360 training queries, 10 shuffled sessions each; the log's own 3,600 rows for EM
    assert compare_to_truth(est["randomisation"], true)["mae"] < 0.05
    assert compare_to_truth(est["regression_em"], true)["mae"] < 0.08


def test_the_estimates_are_cached_with_the_log_and_the_same_when_read_back(fold, monkeypatch):
    source, where = fold
    first = _simulate(source, where, eta=2, top_k=5).info["click_log"]
    calls = []
    real = simulate._estimates
    monkeypatch.setattr(simulate, "_estimates", lambda *a: calls.append(1) or real(*a))
    again = _simulate(source, where, eta=2, top_k=5).info["click_log"]
    assert again == first and calls == []  # read with the log, not estimated again
    assert first["propensity_estimates"]["ranks"] == 5
    assert first["logging_queries"] == 10


def test_a_log_cached_before_the_estimates_were_kept_gets_them_when_read(fold, monkeypatch):
    source, where = fold
    real = cache.write_entry

    def without(cache_dir, namespace, key, build):  # as older code wrote the entry
        return real(cache_dir, namespace, key, lambda w: {
            k: v for k, v in build(w).items() if k != "propensity_estimates"})  # fmt: skip

    monkeypatch.setattr(simulate, "write_entry", without)
    _simulate(source, where, eta=1, sessions=7)
    monkeypatch.undo()
    est = _simulate(source, where, eta=1, sessions=7).info["click_log"]["propensity_estimates"]
    assert len(est["randomisation"]) == len(est["regression_em"]) == 10


def test_a_run_keeps_the_estimates_and_what_fit_was_given_in_every_click_record(tmp_path):
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice
    from ltr_bench.run.unit import run_cell

    plan = Plan(
        rankers=[RankerChoice("lightgbm", {"unbiased": True}), RankerChoice("ridge")],
        datasets=[DatasetChoice("synthetic", {"clicks": "pbm", "n_queries": 60})],
        folds=[1],
        cache_dir=str(tmp_path),
    )
    unbiased, ridge = (run_cell(c) for c in expand_plan(plan).cells)
    assert unbiased.ok and ridge.ok, (unbiased.error, ridge.error)
    assert unbiased.config["fit_keywords"] == ["position", "propensity"]
    assert ridge.config["fit_keywords"] == []
    assert unbiased.click_log == ridge.click_log  # one log per fold
    assert len(ridge.click_log["propensity_estimates"]["randomisation"]) == 10
