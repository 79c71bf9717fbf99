"""Executors: cells on a Dask ``LocalCluster`` of two worker processes give the in-process
records, survive a worker dying mid-cell, and resume after the client is interrupted.

One cluster serves the module (starting worker processes takes seconds). The fake rankers
below are reached by import path (``test_executors:ExitOnceRanker``): the workers are forked
from a forkserver (or spawned) with this process's ``sys.path``, so they import this module.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import pytest

from ltr_bench.errors import UsageError
from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.dask_executor import DaskExecutor
from ltr_bench.run.executor_choice import make_executor
from ltr_bench.run.executors import InProcessExecutor
from ltr_bench.run.harness import HarnessInterrupted, run_plan
from ltr_bench.run.listener import Listener
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

pytest.importorskip("distributed")

TINY = {"n_queries": 30, "docs_per_query": 6, "n_features": 5, "n_informative": 3}
#: two real rankers, small enough to fit in well under a second per fold
REAL = (RankerChoice("lightgbm", {"n_estimators": 20}), RankerChoice("ridge", {}))


class ExitOnceRanker(BaseRanker):
    """Kills its worker process in its first fit (the marker file does not exist yet), then
    behaves as a fixed linear scorer: a worker dying mid-cell, once."""

    def __init__(self, marker="", random_state=0):
        self.marker = marker
        self.random_state = random_state

    def ranker_tags(self) -> RankerTags:
        return RankerTags(seed_param="random_state")

    def fit(self, X, y, *, qid, eval_set=None):
        X, y, qid = check_ranking_input(X, y, qid)
        marker = Path(self.marker)
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)  # no cleanup, no exception: the process is gone, as after a SIGKILL
        self.w_ = np.arange(1.0, X.shape[1] + 1.0)
        return self

    def predict(self, X, *, qid=None):
        self._check_fitted("w_")
        return np.asarray(X, dtype=np.float64) @ self.w_

    def fitted_info(self):
        return {"pid": os.getpid()}  # which process computed the cell


class AlwaysExitRanker(ExitOnceRanker):
    """Kills every worker that fits it (a cell that keeps killing workers)."""

    def fit(self, X, y, *, qid, eval_set=None):
        with open(self.marker, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        os._exit(1)


class InterruptAfter(Listener):
    """Ctrl-C on the client right after the ``n``-th computed cell was saved."""

    def __init__(self, n: int):
        self.n, self.finished = n, 0

    def cell_finished(self, record, index, total, *, skipped):
        if not skipped:
            self.finished += 1
            if self.finished == self.n:
                raise KeyboardInterrupt


def _plan(rankers, folds=(1, 2)) -> Plan:
    return Plan(
        rankers=list(rankers),
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=list(folds),
        seed=0,
        threads=1,
    )


def _comparable(record) -> dict:
    """What must not depend on where a cell ran (timings, host and dates may)."""
    return {
        "key": record.key,
        "status": record.status,
        "metrics": record.metrics,
        "per_query": record.per_query,
        "fingerprints": record.fingerprints,
        "params": record.params,
        "model_info": record.model_info,
        "n_test_docs": record.n_test_docs,
    }


def _without_per_query(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if k != "per_query"}


@pytest.fixture(scope="module")
def dask_executor():
    # retries=1: a cell may kill one worker and is rerun; the second death fails it
    with DaskExecutor(workers=2, threads=1, retries=1) as executor:
        # as `ltr-bench run` does: the cluster starts at once, on a thread, its forkserver
        # importing the rankers' modules before forking the workers
        executor.start([r.name for r in REAL])
        executor.client()
        yield executor


@contextlib.contextmanager
def _own_cluster(workers: int = 2):
    """A local cluster of this test's own, as one command has: a test that cancels tasks
    under way (a force-cancel, a Ctrl-C) leaves the scheduler's resource accounting to
    Dask's cancel races (dask/distributed#2106, #8373), which must not reach the next test."""
    with DaskExecutor(workers=workers, threads=1, retries=1) as executor:
        executor.start([r.name for r in REAL])
        executor.client()
        yield executor


@pytest.fixture(scope="module")
def in_process_records(tmp_path_factory):
    store = ResultStore(tmp_path_factory.mktemp("in_process") / "results")
    report = run_plan(expand_plan(_plan(REAL)), store)
    assert report.n_run == 4 and not report.failed
    return [_comparable(r) for r in report.records]


@pytest.mark.slow
def test_local_cluster_records_equal_the_in_process_records_to_the_last_digit(
    dask_executor, in_process_records, tmp_path
):
    store = ResultStore(tmp_path / "results")
    report = run_plan(expand_plan(_plan(REAL)), store, executor=dask_executor)
    assert report.n_run == 4 and not report.failed
    assert [_comparable(r) for r in report.records] == in_process_records
    # the client saved them: read back from disk, equal (per-query values live in a CSV
    # beside the JSON and are not part of the reloaded record)
    assert [
        _without_per_query(_comparable(store.reload(r["key"]))) for r in in_process_records
    ] == [_without_per_query(r) for r in in_process_records]


@pytest.mark.slow
def test_a_worker_killed_mid_cell_costs_only_that_cell_which_is_rerun(dask_executor, tmp_path):
    marker = tmp_path / "killed_once"
    killer = RankerChoice("test_executors:ExitOnceRanker", {"marker": str(marker)})
    rankers = (killer, RankerChoice("ridge", {}))
    report = run_plan(
        expand_plan(_plan(rankers, folds=(1,))), ResultStore(tmp_path / "r"), executor=dask_executor
    )
    assert marker.exists()  # a worker did die in fit
    assert not report.failed and report.n_run == 2
    assert {r.ranker for r in report.records} == {"test_executors:ExitOnceRanker", "ridge"}
    rerun = next(r for r in report.records if r.ranker.endswith("ExitOnceRanker"))
    # rerun in another worker process than the one that died, and not in this one
    assert rerun.model_info["pid"] not in (int(marker.read_text()), os.getpid())


@pytest.mark.slow
def test_a_cell_that_keeps_killing_workers_is_recorded_as_failed_with_the_reason(
    dask_executor, tmp_path
):
    deaths = tmp_path / "deaths"
    rankers = (
        RankerChoice("test_executors:AlwaysExitRanker", {"marker": str(deaths)}),
        RankerChoice("ridge", {}),
    )
    store = ResultStore(tmp_path / "r")
    report = run_plan(expand_plan(_plan(rankers, folds=(1,))), store, executor=dask_executor)
    assert [r.ranker for r in report.records] == ["ridge"]
    [failed] = report.failed
    assert failed.error_stage == "worker" and "died" in failed.error
    assert "allowed-failures" in failed.error
    # tried once, rerun once (retries=1), then given up
    assert len(deaths.read_text().split()) == 2
    assert failed.key in store.failure_log.read_text(encoding="utf-8")
    assert store.get(failed.key) is None  # not finished: a re-run retries it


@pytest.mark.slow
def test_client_interrupted_keeps_finished_cells_and_the_rerun_resumes_identically(
    dask_executor, in_process_records, tmp_path
):
    plan = _plan(REAL)
    with pytest.raises(HarnessInterrupted) as info:
        run_plan(
            expand_plan(plan),
            ResultStore(tmp_path / "r"),
            listener=InterruptAfter(1),
            executor=dask_executor,
        )
    [kept] = info.value.report.records
    assert [p.stem for p in (tmp_path / "r").glob("*.json")] == [kept.key]
    # the cancelled cells left no claim behind: the resumed run computes them at once
    report = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"), executor=dask_executor)
    assert report.n_skipped == 1 and report.n_run == 3 and not report.failed
    # (a skipped cell's record is read from disk, without its per-query values)
    assert [_without_per_query(_comparable(r)) for r in report.records] == [
        _without_per_query(r) for r in in_process_records
    ]


def test_make_executor_chooses_in_process_a_local_cluster_or_a_scheduler():
    assert isinstance(make_executor(), InProcessExecutor)
    local = make_executor(workers=3, threads=2)
    assert isinstance(local, DaskExecutor) and (local.workers, local.threads) == (3, 2)
    remote = make_executor(scheduler=" tcp://host:8786 ")
    assert remote.scheduler == "tcp://host:8786"
    with pytest.raises(UsageError, match="not both"):
        make_executor(workers=2, scheduler="tcp://host:8786")
    with pytest.raises(UsageError, match="workers must be at least 1"):
        DaskExecutor(workers=0)


def test_the_in_process_executor_runs_cells_in_order_and_reports_each_start(tmp_path):
    cells = expand_plan(_plan((RankerChoice("ridge", {}),))).cells
    started = []
    out = list(InProcessExecutor().map_cells(cells, started=started.append))
    assert started == [0, 1] and [i for i, _ in out] == [0, 1]
    assert all(r.ok and r.key == c.key for (_, r), c in zip(out, cells))


def test_cli_refuses_workers_and_scheduler_together_before_loading_anything(tmp_path):
    from click.testing import CliRunner

    from ltr_bench.cli import main

    result = CliRunner().invoke(
        main,
        [
            "run",
            "--ranker",
            "ridge",
            "--dataset",
            "synthetic",
            "--workers",
            "2",
            "--scheduler",
            "tcp://127.0.0.1:1",
            "--no-mlflow",
            "--results-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2
    assert "not both" in result.output
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_dask_announces_each_cell_once_and_never_more_running_than_slots(dask_executor):
    # 6 cells on 2 one-thread slots: at most 2 are announced and unfinished at any moment,
    # and every cell is announced before it finishes
    cells = expand_plan(_plan(REAL, folds=(1, 2, 3))).cells
    announced: list[int] = []
    unfinished: set[int] = set()
    most = 0

    def started(i):
        nonlocal most
        announced.append(i)
        unfinished.add(i)
        most = max(most, len(unfinished))

    finished = []
    for i, record in dask_executor.map_cells(cells, started=started):
        assert i in unfinished, f"cell {i} finished before it was announced"
        unfinished.discard(i)
        finished.append(i)
        assert record.status == "ok"
    assert sorted(announced) == sorted(finished) == list(range(len(cells)))
    assert most <= 2


def _mark_started(folder: str, cell) -> str:
    """A cell's function that leaves a file in ``folder`` as it starts (on its worker)."""
    (Path(folder) / cell.key).write_text("", encoding="utf-8")
    return cell.key


def _until(predicate, timeout: float = 120.0) -> bool:
    """Wait (polling) until ``predicate()``; False after ``timeout`` seconds: a generous bound
    that only a broken executor reaches, whatever the load."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.slow
def test_a_freed_slot_gets_its_next_cell_while_the_caller_handles_the_record(
    dask_executor, tmp_path
):
    # 4 cells on 2 slots: while the caller still handles its k-th record (saving, logging to
    # MLflow), 2 + k cells have started on the workers: the slots freed by the records
    # handed over got their next cells first. Told by the cells themselves (a file each as
    # it starts), never by comparing clocks.
    import functools

    dask_executor.client().wait_for_workers(2, timeout=120)  # one killed earlier is back
    cells = expand_plan(_plan(REAL, folds=(1, 2))).cells
    started = lambda: len(list(tmp_path.iterdir()))  # noqa: E731
    handled = []
    for k, (_, key) in enumerate(
        dask_executor.map_cells(cells, fn=functools.partial(_mark_started, str(tmp_path))),
        start=1,
    ):
        want = min(len(cells), 2 + k)
        assert _until(lambda: started() >= want), (k, started())
        handled.append(key)
    assert sorted(handled) == sorted(c.key for c in cells)


def _loaded(modules) -> list[str]:
    import sys

    return sorted(m for m in modules if m in sys.modules)


@pytest.mark.slow
def test_warm_up_imports_the_rankers_modules_on_every_worker_and_on_one_that_joins_later(
    dask_executor,
):
    client = dask_executor.client()
    client.wait_for_workers(2, timeout=120)  # a worker an earlier test killed is back
    expected = ["ltr_bench.run.unit", "ltr_bench_baselines.lightgbm", "ltr_bench_baselines.linear"]
    dask_executor.warm_up(expand_plan(_plan(REAL)).cells)
    loaded = client.run(_loaded, expected)
    assert len(loaded) == 2 and all(mods == expected for mods in loaded.values()), loaded
    # a worker that joins after the warm-up: restarted, a spawned process that imported none
    # of them (not forked from the forkserver that preloaded them); it has them before it
    # takes a cell
    restarted = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
    assert client.restart_workers([restarted], timeout=120) == {restarted: "OK"}
    client.wait_for_workers(2, timeout=120)
    loaded = client.run(_loaded, expected)
    assert len(loaded) == 2 and all(mods == expected for mods in loaded.values()), loaded


class _LostFuture:
    """A future yielded as done whose result was then lost with its worker (a nanny closed):
    Dask computes it again; ``exception()`` waits for that (``recomputed``) or, for a status
    Dask did not have, returns None and changes nothing."""

    def __init__(self, recomputed: bool):
        self.status, self.recomputed = "pending", recomputed

    def exception(self):
        if self.recomputed:
            self.status = "finished"
        return None

    def result(self):
        return "the record"


def test_a_result_lost_with_its_worker_is_waited_for_and_never_a_failure_without_a_reason():
    cell = expand_plan(_plan((RankerChoice("ridge", {}),), folds=(1,))).cells[0]
    executor = DaskExecutor(workers=1)
    failed = lambda cell, exc, stage: (type(exc).__name__, stage)  # noqa: E731
    assert executor._result(_LostFuture(True), cell, failed, False) == "the record"
    assert executor._result(_LostFuture(False), cell, failed, False) == ("WorkerDied", "executor")


def test_a_local_cluster_keeps_a_worker_its_nanny_restarts_slowly(dask_executor):
    import dask
    from dask.utils import parse_timedelta

    # Dask closes the nanny of a worker not back within this (15 s by default) for good
    timeout = dask.config.get("distributed.deploy.lost-worker-timeout")
    assert parse_timedelta(timeout) >= 600


def _worker_state() -> dict:
    import sys

    return {
        "ppid": os.getppid(),
        "preloaded": "ltr_bench.run.worker_preload" in sys.modules,
        "unit": "ltr_bench.run.unit" in sys.modules,
        "omp": os.environ.get("OMP_NUM_THREADS"),
    }


def test_local_workers_are_forked_from_a_forkserver_that_imported_the_cells_modules():
    import multiprocessing

    from ltr_bench.run import dask_workers

    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver on this platform: workers are spawned")
    if dask_workers._forkserver_threads not in ([], [1]):
        pytest.skip("an earlier test started the forkserver for another thread count")
    # its own cluster: the module's has workers restarted after deaths, which are spawned
    with DaskExecutor(workers=1, threads=1) as executor:
        states = executor.client().run(_worker_state)
    assert len(states) == 1
    (state,) = states.values()
    # forked by the forkserver (not by this process), the unit of work already imported
    # there, thread pools sized for one-thread cells
    assert state["ppid"] != os.getpid()
    assert state["preloaded"] and state["unit"]
    assert state["omp"] == "1"


def test_the_forkserver_preload_skips_a_module_that_fails_whatever_it_raises(tmp_path):
    from ltr_bench.run.dask_workers import import_modules

    (tmp_path / "raises_oserror_on_import.py").write_text("raise OSError('no libgomp')\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        import_modules(["raises_oserror_on_import", "no_such_module_here", "json"])
    finally:
        sys.path.remove(str(tmp_path))
    assert "json" in sys.modules and "raises_oserror_on_import" not in sys.modules


# --------------------------------------------------------------------------------- tuning
# `ltr-bench tune` on Dask: TuneJob (a whole study and the final fit) as the function of
# map_cells; records and trials come back; the workers write only the Optuna journal.

TUNE_BUDGET_TRIALS = 3


class SlowRidge(BaseRanker):
    """A linear scorer whose fit takes ``delay`` seconds: trials slow enough to cancel a
    study between two of them."""

    SEARCH_SPACE = {"alpha": {"low": 0.01, "high": 100.0, "log": True}}

    def __init__(self, alpha=1.0, delay=0.3):
        self.alpha = alpha
        self.delay = delay

    def fit(self, X, y, *, qid, eval_set=None):
        import time

        X, y, qid = check_ranking_input(X, y, qid)
        time.sleep(self.delay)
        self.coef_ = np.linalg.solve(X.T @ X + self.alpha * np.eye(X.shape[1]), X.T @ y)
        return self

    def predict(self, X, *, qid=None):
        self._check_fitted("coef_")
        return np.asarray(X, dtype=np.float64) @ self.coef_


def _tuned(rankers, storage, folds=(1,), n_trials=TUNE_BUDGET_TRIALS):
    """(tuned cells, the TuneJob for them) of ``rankers`` on TINY data, seeded TPE."""
    from ltr_bench.registry import make_ranker
    from ltr_bench.tune.cell import TuneJob, tuned_cell
    from ltr_bench.tune.study import Budget, resolve_space

    budget = Budget(n_trials=n_trials)
    cells = expand_plan(_plan(rankers, folds=folds)).cells
    spaces = {
        r.row_label: resolve_space(r.display, make_ranker(r.name, r.params), fixed=r.params)
        for r in rankers
    }
    tcells = [
        tuned_cell(c, space=spaces[c.label or c.ranker], budget=budget, objective="ndcg@10")
        for c in cells
    ]
    job = TuneJob(
        spaces={t.key: spaces[c.label or c.ranker] for t, c in zip(tcells, cells)},
        budget=budget,
        storage=str(storage),
        objective="ndcg@10",
    )
    return tcells, job


def _tuning_outcome(tc) -> dict:
    """What tuning on a cluster must reproduce exactly: the trials, the choice, the test."""
    summary = {
        k: v for k, v in tc.record.config["tuning"].items() if k not in ("tuning_seconds", "study")
    }
    return {
        "record": _comparable(tc.record),
        "summary": summary,
        "trials": [(t.number, t.state.name, t.params, t.value) for t in tc.result.trials],
    }


@pytest.mark.slow
def test_tuning_on_a_local_cluster_chooses_and_scores_exactly_as_in_process(
    dask_executor, tmp_path
):
    tcells, job = _tuned(REAL, tmp_path / "here" / "optuna.journal")
    here = [job(t) for t in tcells]  # in this process: the same unit of work
    assert all(tc.record.ok and tc.result.n_complete == TUNE_BUDGET_TRIALS for tc in here)
    _, remote_job = _tuned(REAL, tmp_path / "there" / "optuna.journal")
    out = dict(dask_executor.map_cells(tcells, fn=remote_job))
    there = [out[k] for k in range(len(tcells))]
    assert [_tuning_outcome(tc) for tc in there] == [_tuning_outcome(tc) for tc in here]
    # the workers wrote the studies: the journal holds every trial, read back here
    import optuna

    from ltr_bench.tune.storage import open_storage

    storage = open_storage(remote_job.storage)
    for tc in there:
        study = optuna.load_study(study_name=tc.result.study_name, storage=storage)
        assert [t.value for t in study.trials] == [t.value for t in tc.result.trials]


def _describe_or_die(cell):
    """map_cells' ``fn`` in the test below: a plain tuple, or the worker dies."""
    if cell.ranker.endswith("AlwaysExitRanker"):
        os._exit(1)
    return ("ran", cell.key, os.getpid())


@pytest.mark.slow
def test_map_cells_passes_a_functions_results_through_and_on_failure_makes_a_death_an_item(
    dask_executor, tmp_path
):
    rankers = (
        RankerChoice("test_executors:AlwaysExitRanker", {"marker": str(tmp_path / "deaths")}),
        RankerChoice("ridge", {}),
    )
    cells = expand_plan(_plan(rankers, folds=(1,))).cells
    out = dict(
        dask_executor.map_cells(
            cells,
            fn=_describe_or_die,
            on_failure=lambda cell, exc, stage: ("failed", cell.key, type(exc).__name__, stage),
        )
    )
    dying, ridge = (0, 1) if cells[0].ranker.endswith("AlwaysExitRanker") else (1, 0)
    assert out[dying] == ("failed", cells[dying].key, "WorkerDied", "worker")
    assert out[ridge][:2] == ("ran", cells[ridge].key) and out[ridge][2] != os.getpid()


def test_the_in_process_executor_takes_the_same_fn_and_on_failure():
    cells = expand_plan(_plan((RankerChoice("ridge", {}),))).cells

    def fn(cell):
        if cell.fold == 2:
            raise ValueError("no fold 2 today")
        return cell.fold

    out = list(
        InProcessExecutor().map_cells(
            cells, fn=fn, on_failure=lambda cell, exc, stage: (stage, str(exc))
        )
    )
    assert out == [(0, 1), (1, ("executor", "no fold 2 today"))]


@pytest.mark.slow
def test_a_cancelled_tuning_task_stops_its_study_before_the_next_trial(tmp_path):
    tcells, job = _tuned(
        (RankerChoice("test_executors:SlowRidge", {}),), tmp_path / "optuna.journal", n_trials=40
    )
    with _own_cluster(workers=1) as executor:  # one task: one worker
        _cancel_a_tuning_task(executor.client(), job, tcells[0])


def _cancel_a_tuning_task(client, job, tcell) -> None:
    import time

    import optuna

    from ltr_bench.tune.storage import open_storage

    future = client.submit(job, tcell, pure=False)

    def trials() -> tuple[int, int]:
        """(finished, all) trials of the study."""
        try:
            study = optuna.load_study(study_name=None, storage=open_storage(job.storage))
        except Exception:  # noqa: BLE001 - not created yet
            return 0, 0
        return sum(t.state.is_finished() for t in study.trials), len(study.trials)

    deadline = time.monotonic() + 60
    while trials()[0] < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert trials()[0] >= 2
    client.cancel([future], force=True)
    # the trial under way (0.3 s) ends: waited for as it happens (none left running)
    deadline = time.monotonic() + 60
    while len(set(trials())) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped_at, n = trials()
    assert stopped_at == n  # none running; the study must not start another
    time.sleep(1.5)  # about 5 more trials if it went on
    assert trials() == (stopped_at, stopped_at) and stopped_at < 40


@pytest.mark.slow
def test_tune_on_dask_interrupted_keeps_finished_cells_and_the_rerun_resumes(
    dask_executor, tmp_path, monkeypatch
):
    from ltr_bench.cli.tune import _tune
    from ltr_bench.errors import EXIT_INTERRUPTED, EXIT_OK
    from ltr_bench.tune.study import Budget

    plan = _plan(REAL)
    kwargs = dict(
        budget=Budget(n_trials=2),
        objective="ndcg@10",
        tracking_uri=None,
        no_mlflow=True,
        results_dir=str(tmp_path / "results"),
        optuna_storage=str(tmp_path / "optuna.journal"),
        force=False,
        score_repeats=1,
    )
    save = ResultStore.save

    def save_then_interrupt(self, record):
        save(self, record)
        raise KeyboardInterrupt  # Ctrl-C on the client right after the first save

    monkeypatch.setattr(ResultStore, "save", save_then_interrupt)
    # the interrupted command's own cluster (it cancels), of one worker: what is tested is
    # what the client keeps and resumes, not how the cells spread over workers
    with _own_cluster(workers=1) as executor:
        assert _tune(plan, executor=executor, **kwargs) == EXIT_INTERRUPTED
    monkeypatch.setattr(ResultStore, "save", save)
    saved = {p.stem for p in (tmp_path / "results").glob("*.json")}
    assert len(saved) == 1
    # the re-run on the module's cluster, whose workers never saw this study: what it resumes
    # from is on disk only (the results and the Optuna journal), as for a new command
    assert _tune(plan, executor=dask_executor, **kwargs) == EXIT_OK
    store = ResultStore(tmp_path / "results")
    records = [r for r in store.records() if "tuning" in r.config]
    assert len(records) == 4 and saved < {r.key for r in records}
    assert all(r.config["tuning"]["trials_finished"] == 2 for r in records)


# ------------------------------------------------------------------ progress from the workers


class ReportingRanker(ExitOnceRanker):
    """Reports ``steps`` steps of ``total`` (0: unknown) from ``fit``, each after a pause of
    ``pause`` seconds, then behaves as the fixed linear scorer."""

    def __init__(self, steps=5, total=5, pause=0.0, random_state=0):
        self.steps, self.total, self.pause = steps, total, pause
        self.random_state = random_state

    def fit(self, X, y, *, qid, eval_set=None):
        import time

        from ltr_bench.progress import report_progress

        X, y, qid = check_ranking_input(X, y, qid)
        for step in range(1, self.steps + 1):
            time.sleep(self.pause)  # also after the fold's own reports (generating it)
            report_progress(step, self.total, f"step {step}")
        self.w_ = np.arange(1.0, X.shape[1] + 1.0)
        return self


class ProgressLog(Listener):
    """Every cell_progress and cell_finished, in the order heard, with the calling thread."""

    def __init__(self):
        self.heard: list[tuple] = []

    def cell_progress(self, cell, done, total, message):
        import threading

        self.heard.append(("progress", cell.key, done, total, message, threading.get_ident()))

    def cell_finished(self, record, index, total, *, skipped):
        self.heard.append(("finished", record.key))


@pytest.mark.slow
def test_a_rankers_progress_on_a_worker_reaches_the_listener_in_order_before_its_record(
    dask_executor, tmp_path
):
    import threading

    # pause 0.6 s > PROGRESS_INTERVAL: the throttle lets every one of the 3 reports through
    # (three are enough to show their order; each one costs the cell 0.6 s)
    ranker = RankerChoice("test_executors:ReportingRanker", {"steps": 3, "total": 3, "pause": 0.6})
    expanded = expand_plan(_plan((ranker,)))
    log = ProgressLog()
    report = run_plan(
        expanded, ResultStore(tmp_path / "results"), listener=log, executor=dask_executor
    )
    assert report.n_run == 2 and not report.failed
    assert all(r.model_info["pid"] != os.getpid() for r in report.records)  # on a worker
    for cell in expanded.cells:
        mine = [h for h in log.heard if h[1] == cell.key]
        steps = [h[2:5] for h in mine if h[0] == "progress" and h[4].startswith("step")]
        assert steps == [(k, 3, f"step {k}") for k in range(1, 4)]
        assert mine[-1] == ("finished", cell.key)  # nothing after the record
        assert {h[5] for h in mine if h[0] == "progress"} == {threading.get_ident()}


@pytest.mark.slow
def test_map_cells_progress_is_throttled_per_cell_and_always_ends_with_the_last_report(
    dask_executor,
):
    # 300 reports in no time: a handful of events, the last one always among them, both when
    # done reaches a known total and when the total is unknown (0: held back, then flushed)
    rankers = (
        RankerChoice("test_executors:ReportingRanker", {"steps": 300, "total": 300}, label="known"),
        RankerChoice("test_executors:ReportingRanker", {"steps": 300, "total": 0}, label="unknown"),
    )
    cells = expand_plan(_plan(rankers, folds=(1,))).cells
    heard: dict[int, list] = {0: [], 1: []}
    out = dict(
        dask_executor.map_cells(
            cells, progress=lambda k, done, total, msg: heard[k].append((done, total, msg))
        )
    )
    assert all(out[k].ok for k in (0, 1))
    for k, cell in enumerate(cells):
        steps = [h for h in heard[k] if h[2].startswith("step")]
        total = cell.user_params["total"]
        assert 1 <= len(steps) <= 5
        assert steps[-1] == (300, total, "step 300")
        assert [d for d, _, _ in steps] == sorted(d for d, _, _ in steps)


def test_the_in_process_executor_hands_progress_with_the_cells_position():
    rankers = (RankerChoice("test_executors:ReportingRanker", {"steps": 3, "total": 3}),)
    cells = expand_plan(_plan(rankers)).cells
    heard = []
    out = list(
        InProcessExecutor().map_cells(
            cells, progress=lambda k, done, total, msg: heard.append((k, done, total, msg))
        )
    )
    assert all(r.ok for _, r in out)
    steps = [h for h in heard if h[3].startswith("step")]  # the fold's generation reports too
    assert steps == [(k, d, 3, f"step {d}") for k in (0, 1) for d in (1, 2, 3)]


@pytest.mark.slow
def test_tuning_on_dask_reports_each_cells_trials_to_the_clients_status_line(
    dask_executor, tmp_path
):
    import re

    from ltr_bench.tune.runner import tune_remote

    # SlowRidge (0.3 s a fit): trials often far enough apart to pass the throttle one by one
    tcells, job = _tuned(
        (RankerChoice("test_executors:SlowRidge", {}),), tmp_path / "optuna.journal", folds=(1, 2)
    )
    lines, finished = [], []
    pending = [(i, t) for i, t in enumerate(tcells, 1)]
    tune_remote(
        dask_executor,
        pending,
        job,
        [],
        lambda tc, i: finished.append(i),
        len(tcells),
        status=lines.append,
    )
    assert sorted(finished) == [1, 2]
    n = TUNE_BUDGET_TRIALS
    for i, t in enumerate(tcells, 1):
        head = f"[{i}/2] {t.row_name} on {t.dataset} fold {t.fold}: trial "
        mine = [
            int(re.match(r"(\d+)/", s[len(head) :]).group(1)) for s in lines if s.startswith(head)
        ]
        assert mine and mine == sorted(mine) and mine[-1] == n
        last = [s for s in lines if s.startswith(head)][-1]
        assert re.fullmatch(re.escape(head) + rf"{n}/{n} complete \d\.\d{{4}}", last)


@pytest.mark.slow
def test_dask_starts_the_cells_with_the_longest_estimate_first(dask_executor):
    cells = expand_plan(_plan((RankerChoice("ridge", {}),), folds=(1, 2, 3, 4))).cells
    estimate = {c.key: s for c, s in zip(cells, (1.0, 5.0, 3.0, 9.0))}
    order = []
    results = dask_executor.map_cells(
        cells, started=order.append, cost=lambda cell: estimate[cell.key]
    )
    assert len(list(results)) == 4
    # two slots: folds 4 and 2 (9 s, 5 s) start first, then 3, then 1
    assert order == [3, 1, 2, 0]
