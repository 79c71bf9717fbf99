"""The addresses ``ltr-bench ui`` prints: each experiment's runs table in MLflow's
model-training view, through ``/ltr-bench/`` (which sets the columns first), read off the
store without importing MLflow. The browser side is in ``tests/test_mlflow_links.py``."""

from __future__ import annotations

import sqlite3

from ltr_bench.cli.ui import address_lines
from ltr_bench.tracking.lookup import ltr_experiments
from ltr_bench.tracking.ui_app import BROWSER_SETTINGS, page_html, runs_link

BASE = "http://127.0.0.1:5000"


def test_one_experiment_prints_its_runs_table_and_several_a_line_each():
    (one,) = address_lines("sqlite:///x.db", BASE, [("ltr-bench/mq2008", "3")])
    assert f"open {BASE}/ltr-bench/#/experiments/3/runs (ltr-bench/mq2008;" in one
    lines = address_lines("sqlite:///x.db", BASE, [("ltr-bench/a", "1"), ("ltr-bench/bb", "2")])
    assert lines[1].split() == ["ltr-bench/a", runs_link(BASE, "1")]
    assert lines[2].split() == ["ltr-bench/bb", f"{BASE}/ltr-bench/#/experiments/2/runs"]
    assert lines[3].split()[-1] == f"{BASE}/ltr-bench/"
    (none,) = address_lines("sqlite:///x.db", BASE, [])
    assert none.endswith(f"open {BASE}/ltr-bench/ (Ctrl-C to stop)")


def test_the_store_s_ltr_bench_experiments_are_read_from_sqlite(tmp_path):
    db = tmp_path / "mlflow.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE experiments (experiment_id, name, lifecycle_stage)")
        conn.executemany(
            "INSERT INTO experiments VALUES (?, ?, ?)",
            [
                (0, "Default", "active"),
                (2, "ltr-bench/synthetic", "active"),
                (1, "ltr-bench/mq2008", "active"),
                (3, "ltr-bench/gone", "deleted"),
            ],
        )
    assert ltr_experiments(f"sqlite:///{db}") == [
        ("ltr-bench/mq2008", "1"),
        ("ltr-bench/synthetic", "2"),
    ]
    assert ltr_experiments(f"sqlite:///{tmp_path / 'missing.db'}") == []
    assert not (tmp_path / "missing.db").exists()  # read-only: nothing created


def test_the_page_switches_mlflow_to_its_model_training_view_and_follows_its_hash():
    page = page_html()
    assert '"mlflow.workflowType_v1": "machine_learning"' in page
    assert BROWSER_SETTINGS["mlflow.workflowType_v1"] == "machine_learning"
    assert 'params.set("workflowType", "machine_learning")' in page
    assert "location.hash" in page
