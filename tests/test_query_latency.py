"""What one query costs, on record: the harness times the test split one query per predict
call after the bulk timing, and the record, MLflow's values and the report carry it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import ltr_bench.timing as timing
from ltr_bench.results import ResultRecord, ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice
from ltr_bench.run.unit import _time_queries
from ltr_bench.tracking.layout import record_values

TINY = {"n_queries": 30, "docs_per_query": 6, "n_features": 5, "n_informative": 3}


def _run(tmp_path, ranker="ridge"):
    plan = Plan(
        rankers=[RankerChoice(ranker, {})],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=[1],
        seed=0,
        threads=1,
    )
    store = ResultStore(tmp_path / "r")
    return run_plan(expand_plan(plan), store), store


def test_a_cells_record_holds_positive_finite_per_query_latency(tmp_path):
    report, store = _run(tmp_path)
    (rec,) = report.records
    assert rec.status == "ok"
    assert rec.query_latency_queries == rec.n_test_queries > 0  # all of them: fewer than 200
    assert math.isfinite(rec.query_ms_p50) and rec.query_ms_p50 > 0
    assert math.isfinite(rec.query_ms_p99) and rec.query_ms_p99 >= rec.query_ms_p50
    # the stored record (the file the report and MLflow read) carries them too
    (stored,) = store.records()
    assert stored.query_ms_p50 == rec.query_ms_p50
    assert stored.query_ms_p99 == rec.query_ms_p99
    assert stored.query_latency_queries == rec.query_latency_queries
    values = record_values(stored)
    assert values["query_ms_p50"] == rec.query_ms_p50
    assert values["query_ms_p99"] == rec.query_ms_p99


def test_a_record_written_before_the_latency_existed_loads_with_it_missing(tmp_path):
    report, store = _run(tmp_path)
    (rec,) = report.records
    doc = json.loads(json.dumps(rec.to_dict()))
    for name in ("query_ms_p50", "query_ms_p99", "query_latency_queries"):
        doc.pop(name)
    old = ResultRecord.checked(doc, "old.json")
    assert math.isnan(old.query_ms_p50) and math.isnan(old.query_ms_p99)
    assert old.query_latency_queries == 0
    assert "query_ms_p50" not in record_values(old)  # not logged as a number it never had

    from ltr_bench.report.tables import build_report
    from ltr_bench.report.text import format_report

    built = build_report([old], dataset=old.dataset)
    (row,) = built.rows
    assert row.cells["query_ms_p50"].n == 0  # missing, not a number
    assert "query p50 (ms)" in format_report(built, "md")


def test_time_queries_times_at_most_max_queries_spread_over_the_split():
    bounds = np.arange(0, 1001, 10)  # 100 queries of 10 rows
    calls = []
    lat = timing.time_queries(lambda a, b: calls.append((a, b)), bounds, max_queries=5)
    assert calls == [(0, 10), (250, 260), (500, 510), (740, 750), (990, 1000)]
    assert lat.n_queries == 5 and lat.p99_ms >= lat.p50_ms >= 0


def test_time_queries_stops_at_its_time_cap_after_one_call():
    calls = []
    lat = timing.time_queries(
        lambda a, b: calls.append(a), np.arange(0, 101, 10), max_queries=10, max_seconds=0.0
    )
    assert len(calls) == lat.n_queries == 1


def test_a_failing_one_query_call_leaves_the_latency_missing_with_a_warning(tmp_path):
    from ltr_bench.data import load_fold

    test = load_fold("synthetic", 1, seed=0, options=dict(TINY)).test

    class Bulk:
        def predict(self, X, *, qid=None):
            if X.shape[0] < test.n_docs:
                raise ValueError("needs the whole split")
            return np.zeros(X.shape[0])

    lat, text = _time_queries(Bulk(), test)
    assert lat.n_queries == 0 and math.isnan(lat.p50_ms)
    assert "needs the whole split" in text


def test_a_thread_limit_inside_the_same_limit_touches_no_pool(monkeypatch):
    made = []
    real = timing._controller

    def counting():
        made.append(1)
        return real()

    monkeypatch.setattr(timing, "_controller", counting)
    with timing.thread_limit(1):
        for _ in range(3):
            with timing.thread_limit(1):
                pass
        assert len(made) == 1
        with timing.thread_limit(2):  # a different limit is set (and restored)
            pass
        assert len(made) == 2
    with timing.thread_limit(1):  # outside every block: set again
        pass
    assert len(made) == 3


@pytest.mark.parametrize("name", ["xgboost-lambdamart"])
def test_a_tree_ranker_cell_records_the_latency_too(tmp_path, name):
    pytest.importorskip("xgboost")
    report, _ = _run(tmp_path, name)
    (rec,) = report.records
    assert rec.status == "ok", rec.error
    assert rec.query_latency_queries == rec.n_test_queries
    assert math.isfinite(rec.query_ms_p99) and rec.query_ms_p99 > 0


def test_the_pareto_plot_can_put_one_querys_latency_on_its_cost_axis(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from ltr_bench.report import plots
    from ltr_bench.report.tables import build_report

    report, _ = _run(tmp_path)
    (rec,) = report.records
    labels = []

    def keep(fig):
        ax = fig.axes[0]
        labels.append(ax.get_xlabel())
        labels.append([float(x) for line in ax.get_lines() for x in line.get_xdata()])
        return b"png"

    monkeypatch.setattr(plots, "_png", keep)
    built = build_report([rec], dataset=rec.dataset)
    plots.write_pareto_plots(built, tmp_path / "p", score_time_key="query_ms_p99")
    assert "p99" in labels[0] and labels[1] == [rec.query_ms_p99]
