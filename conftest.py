"""Shared fixtures: where the real LETOR data beside the repository lives.

``../shared/data`` exists on developer machines and in CI but not in a user's checkout;
tests that need it take the ``shared_data`` fixture and are skipped cleanly without it.
Set ``LTR_BENCH_SHARED_DATA`` to point somewhere else.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent


def shared_data_dir() -> Path | None:
    env = os.environ.get("LTR_BENCH_SHARED_DATA")
    candidate = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("../shared/data is not present (it is not part of a user's checkout)")
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch, request):
    """Keep every test's parsed-data cache and MLflow store out of the user's folders."""
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    # one MLflow schema template for the whole session, also where a test sets a cache folder
    # of its own (ltr_bench/tracking/store_template.py): each would build it again (seconds)
    monkeypatch.setenv(
        "LTR_BENCH_MLFLOW_SCHEMA_DIR", str(tmp_path_factory.getbasetemp() / "mlflow-schema")
    )
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    if request.node.get_closest_marker("mlflow_process") is not None:
        monkeypatch.setattr("ltr_bench.cli.mlflow_process.ON_A_THREAD", False)


@pytest.fixture(scope="session", autouse=True)
def _mlflow_logging_on_a_thread(tmp_path_factory):
    """``ltr-bench run`` called in this process (click's CliRunner, module fixtures included)
    logs to MLflow on a thread (:data:`ltr_bench.cli.mlflow_process.ON_A_THREAD`): a logging
    process per run would import MLflow again (7-9 s of CPU a run, measured with MLflow's
    requirement check, since skipped), once most of the suite's time. A test of that
    process itself (signals, kills, the background wait) is marked ``mlflow_process``; a
    real ``ltr-bench`` subprocess always logs in its own process."""
    from ltr_bench.cli import mlflow_process

    # the schema template of _isolated_cache, for the module fixtures too (they come first)
    schema = os.environ.get("LTR_BENCH_MLFLOW_SCHEMA_DIR")
    os.environ["LTR_BENCH_MLFLOW_SCHEMA_DIR"] = str(
        tmp_path_factory.getbasetemp() / "mlflow-schema"
    )
    mlflow_process.ON_A_THREAD = True
    yield
    mlflow_process.ON_A_THREAD = False
    if schema is None:
        os.environ.pop("LTR_BENCH_MLFLOW_SCHEMA_DIR", None)
    else:
        os.environ["LTR_BENCH_MLFLOW_SCHEMA_DIR"] = schema
