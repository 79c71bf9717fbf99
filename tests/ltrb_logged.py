"""Kept models of a tiny synthetic run, logged to an MLflow store as ``ltr-bench run`` logs
them (the harness in this process, then :class:`~ltr_bench.tracking.Tracker`), for the tests
of what a user does with them: list, load, register, serve."""

from __future__ import annotations

from pathlib import Path

TINY = {"n_queries": 30, "docs_per_query": 8, "n_features": 5, "n_informative": 3}
GBDT = {"n_estimators": 10, "num_leaves": 7, "min_data_in_leaf": 2}


def run_and_log(base: Path, rankers: dict[str, dict], folds: list[int]):
    """Run ``rankers`` (name -> parameters) on ``TINY`` synthetic ``folds`` (seed 0, one
    thread) keeping every model under ``base/results``, and log each record to the SQLite
    store ``base/mlflow.db``. Returns ``(uri, root, report, run_ids)``: ``run_ids`` maps a
    record's key to its fold run."""
    from ltr_bench.results import ResultStore
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.harness import run_plan
    from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice
    from ltr_bench.tracking import Tracker

    uri = f"sqlite:///{base / 'mlflow.db'}"
    plan = Plan(
        rankers=[RankerChoice(name, dict(params)) for name, params in rankers.items()],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=folds,
        seed=0,
        threads=1,
    )
    root = base / "results"
    report = run_plan(expand_plan(plan, score_repeats=1, keep_models=root), ResultStore(root))
    assert not report.failed, [r.error for r in report.failed]
    for rec in report.records:
        assert rec.model_dir, rec.warnings
    tracker = Tracker(uri)
    tracker.check()
    run_ids = {rec.key: tracker.log_record(rec) for rec in report.records}
    tracker.finish()
    assert not tracker.notes, tracker.notes
    return uri, root, report, run_ids
