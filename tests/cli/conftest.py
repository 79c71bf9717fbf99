"""A results folder and an MLflow store with kept models, logged once for the tests of
``ltr-bench models`` and of ``--model`` references (the records' own ``mlflow`` field is left
empty, so the ids are found in the store)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

TINY = {"n_queries": 30, "docs_per_query": 8, "n_features": 5, "n_informative": 3}
GBDT = {"n_estimators": 10, "num_leaves": 7, "min_data_in_leaf": 2}


@dataclass
class Logged:
    """``root``: the results folder; ``uri``: the store; ``records``; ``run_ids``: record key
    -> its fold run, as the tracker logged it; ``parents``: fold run -> its parent run;
    ``model_ids``: fold run -> its logged model's id."""

    root: Path
    uri: str
    records: list
    run_ids: dict
    parents: dict
    model_ids: dict

    def data_args(self, fold: int) -> list[str]:
        """``predict`` options that load fold ``fold``'s test split as the run did."""
        args = ["--data", f"synthetic:{fold}:test", "--tracking-uri", self.uri]
        return args + [x for k, v in TINY.items() for x in ("--dataset-option", f"{k}={v}")]


@pytest.fixture(scope="session")
def logged_models(tmp_path_factory) -> Logged:
    import mlflow

    from ltr_bench.results import ResultStore
    from ltr_bench.run.cells import expand_plan
    from ltr_bench.run.harness import run_plan
    from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice
    from ltr_bench.tracking import Tracker

    base = tmp_path_factory.mktemp("logged")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    plan = Plan(
        rankers=[RankerChoice("lightgbm", GBDT), RankerChoice("ridge", {})],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=[1, 2],
        seed=0,
        threads=1,
    )
    root = base / "results"
    report = run_plan(expand_plan(plan, score_repeats=1, keep_models=root), ResultStore(root))
    assert not report.failed
    tracker = Tracker(uri)
    tracker.check()
    run_ids = {rec.key: tracker.log_record(rec) for rec in report.records}
    tracker.finish()
    client = mlflow.MlflowClient(uri)
    parents = {r: client.get_run(r).data.tags["mlflow.parentRunId"] for r in run_ids.values()}
    exp = client.get_run(next(iter(run_ids.values()))).info.experiment_id
    models = {m.source_run_id: m.model_id for m in client.search_logged_models([exp])}
    return Logged(root, uri, list(report.records), run_ids, parents, models)
