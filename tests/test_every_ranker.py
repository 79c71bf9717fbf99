"""Every registered ranker runs through the harness: a new baseline or plugin without a test of
its own is still exercised end to end (registry -> tags -> fit -> predict -> metrics).

The rankers are discovered from the ``ltr_bench.rankers`` entry points at collection time, so
installing a plugin adds its tests. Each runs on tiny generated LETOR-style data (2 folds,
with a validation split) and on one fold of query-by-example ``wine`` (rows
``[query, document]``, where the tags' ``query_dim_param`` must receive the block width).
"""

from __future__ import annotations

import math

import pytest
from ltrb_processes import close_dask_rankers_clusters

from ltr_bench.ranker import tags_of
from ltr_bench.registry import list_rankers, make_ranker
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

SEED = 3
TINY = {"n_queries": 30, "docs_per_query": 8, "n_features": 5, "n_informative": 3}
WINE_WIDTH = 13  # wine rows: [query (13 features), document (13 features)]

# Parameters that make the slow rankers fast on this data (only speed, and leaf sizes the
# tiny data can split). A ranker not listed here runs with its defaults.
SPEED_PARAMS: dict[str, dict] = {
    "lightgbm": {
        "n_estimators": 20,
        "num_leaves": 7,
        "min_sum_hessian_in_leaf": 1e-3,
        "min_data_in_leaf": 2,
    },
    "xgboost-gbrt": {"n_estimators": 20, "max_leaves": 7, "min_child_weight": 1.0},
    "xgboost-lambdamart": {"n_estimators": 20, "max_leaves": 7, "min_child_weight": 1e-3},
    # one worker process: a second cost about 14 s of CPU (measured); training across two
    # workers is tested in tests/baselines/test_dask_gbdt.py
    "lightgbm-dask": {
        "n_estimators": 20,
        "num_leaves": 7,
        "min_sum_hessian_in_leaf": 1e-3,
        "min_data_in_leaf": 2,
        "n_workers": 1,
    },
    "xgboost-dask": {
        "n_estimators": 20,
        "max_leaves": 7,
        "min_child_weight": 1e-3,
        "n_workers": 1,
    },
    "catboost": {"n_estimators": 20, "depth": 3},
    "mlr": {"max_iter": 10, "admm_max_iter": 100},
    "rmlr": {"max_iter": 10, "admm_max_iter": 100},
    "coordinate-ascent": {"restarts": 1},
    "rankboost": {"rounds": 40},
    "ranksvm": {"max_iter": 200, "max_pairs": 20_000},
    "lgmml": {"n_metrics": 8, "n_iter": 200},
    # six C values, each a dual L1-hinge solve to max_iter over all of wine's
    # crucial pairs, took ~100 s; two C values on 20,000 pairs still exercise the choice
    "ranksvm-letor": {"C_grid": [1e-3, 1e-1], "max_iter": 200, "max_pairs": 20_000},
}

RANKERS = [entry.name for entry in list_rankers()]
DASK = [n for n in RANKERS if n.endswith("-dask")]
# a Dask ranker starts a local cluster in the test's process (5-15 s): the Dask cases of the
# two tests below run one after another (the LETOR-style test's last, the query-by-example
# test's first) on one cluster, closed after the last of them (an idle worker takes CPU)
LETOR_ORDER = [n for n in RANKERS if n not in DASK] + DASK
QBE_ORDER = DASK + [n for n in RANKERS if n not in DASK]


def _cases(names: list[str]) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in DASK else n for n in names]


@pytest.fixture
def _dask_cluster_closed_after_its_last_case(name):
    yield
    if DASK and name == QBE_ORDER[len(DASK) - 1]:
        close_dask_rankers_clusters()


def _run(name: str, dataset: DatasetChoice, folds: list[int], tmp_path):
    plan = Plan(
        rankers=[RankerChoice(name, dict(SPEED_PARAMS.get(name, {})))],
        datasets=[dataset],
        folds=folds,
        seed=SEED,
        threads=1,
    )
    return run_plan(expand_plan(plan, score_repeats=1), ResultStore(tmp_path / "results"))


def _assert_ok(report, name: str, n_folds: int):
    failures = [f"fold {r.fold} ({r.error_stage}): {r.error}" for r in report.failed]
    assert not failures, f"{name} failed in the harness: {failures}"
    assert len(report.records) == n_folds
    for rec in report.records:
        assert rec.status == "ok"
        assert rec.metrics, f"{name} fold {rec.fold}: no metrics"
        bad = {k: v for k, v in rec.metrics.items() if not math.isfinite(v)}
        assert not bad, f"{name} fold {rec.fold}: non-finite metrics {bad}"


def test_rankers_are_registered():
    # the discovery below is only meaningful if it finds the built-in baselines
    assert {"lightgbm", "xgboost-gbrt", "xgboost-lambdamart", "mlr", "rmlr"} <= set(RANKERS)


def test_speed_params_name_registered_rankers():
    # a renamed ranker would silently fall back to its (slow) defaults
    assert set(SPEED_PARAMS) <= set(RANKERS) | {"lgmml"}


@pytest.mark.parametrize("name", _cases(LETOR_ORDER))
def test_registered_ranker_runs_through_the_harness_on_letor_style_data(name, tmp_path):
    report = _run(name, DatasetChoice("synthetic", dict(TINY)), [1, 2], tmp_path)
    _assert_ok(report, name, 2)
    tags = tags_of(make_ranker(name, {}))
    for rec in report.records:
        if tags.seed_param:  # the run's seed reached the declared parameter
            assert rec.params[tags.seed_param] == SEED
        if tags.query_dim_param:  # no query block in LETOR-style rows
            assert rec.params[tags.query_dim_param] is None


@pytest.mark.parametrize("name", _cases(QBE_ORDER))
@pytest.mark.usefixtures("_dask_cluster_closed_after_its_last_case")
def test_registered_ranker_runs_through_the_harness_on_query_by_example_data(name, tmp_path):
    report = _run(name, DatasetChoice("wine", {}), [1], tmp_path)
    _assert_ok(report, name, 1)
    tags = tags_of(make_ranker(name, {}))
    rec = report.records[0]
    if tags.query_dim_param:
        assert rec.params[tags.query_dim_param] == WINE_WIDTH
    assert math.isfinite(rec.extra_metrics["knn_error"])
