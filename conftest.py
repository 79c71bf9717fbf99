"""Shared fixtures: where the real LETOR data beside the repository lives.

``../shared/data`` exists on developer machines and in CI but not in a user's checkout;
tests that need it take the ``shared_data`` fixture and are skipped cleanly without it.
Set ``LTR_BENCH_SHARED_DATA`` to point somewhere else.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent

# One thread per OpenMP/BLAS pool (torch's too) in the test processes and the processes they
# start: the suite's workers share the cores (-n auto), and pools sized for the whole machine
# in each worker had threads waiting on each other (a third less CPU time for the ranker
# tests with one). A test of threads sets its count itself; a developer's own setting stays.
for _pool in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")


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


#: coverage's start-up variables for the processes a test starts (``patch = ["subprocess"]``
#: in pyproject.toml), taken out of the environment for the session: see below
_SUBPROCESS_COVERAGE: dict[str, str] = {}


@pytest.fixture(scope="session", autouse=True)
def _subprocesses_untraced():
    """Coverage traces the processes a test starts only in the tests marked
    ``subprocess_coverage`` (a module's ``pytestmark``, or one test's mark), those whose
    subject is code that runs only in a process of its own: signal handlers, the MLflow
    logging process, the UI server (and, always, the Dask workers' forkserver: below).
    Elsewhere a process runs what in-process tests measure already, and tracing it cost 58%
    more CPU (Python 3.11's tracing slows every instruction: a one-fold ``ltr-bench run``
    took 9.4 s of CPU untraced, 14.9 s traced, measured with /usr/bin/time)."""
    for key in [k for k in os.environ if k.startswith("COVERAGE_PROCESS_")]:
        _SUBPROCESS_COVERAGE[key] = os.environ.pop(key)
    yield
    os.environ.update(_SUBPROCESS_COVERAGE)


def _trace_subprocesses_while(node) -> contextlib.AbstractContextManager:
    """Coverage's variables back in the environment while ``node`` (a module or a test)
    marked ``subprocess_coverage`` runs; nothing otherwise."""
    if node.get_closest_marker("subprocess_coverage") is None or not _SUBPROCESS_COVERAGE:
        return contextlib.nullcontext()
    return _environment(_SUBPROCESS_COVERAGE)


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session", autouse=True)
def _forkserver_traced(_subprocesses_untraced):
    """The forkserver that a local Dask cluster's workers are forked from
    (:mod:`ltr_bench.run.dask_workers`) is one per test process, started by whichever test
    needs it first and keeping the environment of that moment: it gets coverage's variables
    whoever starts it, so the code its workers run (cells, the warm-up, the preload) is
    measured alike in every order of the tests."""
    from ltr_bench.run import dask_executor

    start = dask_executor.start_forkserver

    def start_traced(threads: int, env: dict[str, str]) -> bool:
        with _environment(_SUBPROCESS_COVERAGE):
            return start(threads, env)

    dask_executor.start_forkserver = start_traced
    yield
    dask_executor.start_forkserver = start


@pytest.fixture(scope="module", autouse=True)
def _module_subprocess_coverage(request, _subprocesses_untraced):
    """A marked module's fixtures (a server, a cluster) start traced processes too."""
    with _trace_subprocesses_while(request.node):
        yield


@pytest.fixture(autouse=True)
def _test_subprocess_coverage(request, _subprocesses_untraced):
    with _trace_subprocesses_while(request.node):
        yield


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


def pytest_collection_modifyitems(config, items):
    """Files with a test marked ``slow`` come first. pytest-xdist deals out whole files in
    this order (``--dist loadfile --no-loadscope-reorder``; by default it would sort them by
    their number of tests, a two-test end-to-end file last), so a long file dealt last would
    keep one worker busy while the others had nothing left; dealt first, the short files fill
    in around it (the longest-first rule of thumb for scheduling). The order within a file is
    kept."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)
