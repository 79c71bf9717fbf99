"""The in-process logger (:data:`ltr_bench.cli.mlflow_process.ON_A_THREAD`, on for the whole
suite by the root ``conftest.py``): once a run's logging ends, none of its threads is left,
so the run does not wait on them and a long-lived process does not gather them."""

from __future__ import annotations

import threading

from ltr_bench.cli import mlflow_process


def _logging_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ltr-bench-mlflow")]


def _left_behind() -> list[threading.Thread]:
    """The logging threads still alive once each was given 30 s to end: a thread woken by
    the pipe's end may still be returning when ``close`` does; a blocked one never ends."""
    for thread in _logging_threads():
        thread.join(timeout=30)
    return _logging_threads()


def test_close_leaves_no_logging_thread_behind_not_even_a_pipe_reader(tmp_path):
    assert mlflow_process.ON_A_THREAD and not _left_behind()
    process = mlflow_process.MlflowProcess(f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path)
    process.open(plan=None, plan_toml=None)
    process.close()
    assert process.error is None
    # the pipe's two readers (the run's, and the logger's inbox) were blocked on a pipe
    # nobody shut: each join in close() then ran out its timeout and left them for good
    assert _left_behind() == []


def test_close_now_before_anything_was_logged_leaves_no_logging_thread(tmp_path):
    process = mlflow_process.MlflowProcess(f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path)
    process.close_now()
    assert _left_behind() == []
