"""A results folder and an MLflow store with kept models, logged once for the tests of
``ltr-bench models`` and of ``--model`` references (the records' own ``mlflow`` field is left
empty, so the ids are found in the store)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from ltrb_logged import GBDT, TINY


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
    from ltrb_logged import run_and_log

    uri, root, report, run_ids = run_and_log(
        tmp_path_factory.mktemp("logged"), {"lightgbm": GBDT, "ridge": {}}, [1, 2]
    )
    client = mlflow.MlflowClient(uri)
    parents = {r: client.get_run(r).data.tags["mlflow.parentRunId"] for r in run_ids.values()}
    exp = client.get_run(next(iter(run_ids.values()))).info.experiment_id
    models = {m.source_run_id: m.model_id for m in client.search_logged_models([exp])}
    return Logged(root, uri, list(report.records), run_ids, parents, models)
