"""ltr_bench.tune.study and `ltr-bench tune`: validation-only tuning, equal budget, resume,
search-space checks; sweeps (ltr_bench.run.plan)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.folds import fingerprint_arrays
from ltr_bench.progress import intermediate_handler, report_intermediate
from ltr_bench.ranker import BaseRanker, check_ranking_input
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.plan import DatasetChoice, Plan, PlanError, RankerChoice, plan_from_dict
from ltr_bench.run.plan_options import CommandLine, build_plan
from ltr_bench.run.unit import load_fold as _load_fold
from ltr_bench.tune.cell import tuned_cell
from ltr_bench.tune.search_space import resolve_space
from ltr_bench.tune.study import Budget, trial_reporter, tune, tuning_split

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SYNTH = {"n_queries": 30, "docs_per_query": 10, "n_features": 5, "n_informative": 3}

#: every fit / predict of RecordingRanker: (what, fingerprint of the rows it was given)
CALLS: list[tuple[str, str]] = []
#: raise KeyboardInterrupt in the fit with this (1-based) number
INTERRUPT_AT: list[int] = []


class RecordingRanker(BaseRanker):
    """Ridge-like linear scorer that records the fingerprint of every array it is given."""

    SEARCH_SPACE = {"alpha": {"low": 0.01, "high": 100.0, "log": True}}

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y, *, qid, eval_set=None):
        X, y, qid = check_ranking_input(X, y, qid)
        CALLS.append(("fit", fingerprint_arrays(X, y, qid)))
        if eval_set is not None:
            CALLS.append(("eval_set", fingerprint_arrays(*eval_set)))
        n_fits = sum(1 for c in CALLS if c[0] == "fit")
        if INTERRUPT_AT and n_fits == INTERRUPT_AT[0]:
            raise KeyboardInterrupt
        A = X.T @ X + self.alpha * np.eye(X.shape[1])
        self.coef_ = np.linalg.solve(A, X.T @ y)
        return self

    def predict(self, X, *, qid=None):
        self._check_fitted("coef_")
        CALLS.append(("predict", fingerprint_arrays(X, np.zeros(len(X)), np.zeros(len(X)))))
        return np.asarray(X, dtype=np.float64) @ self.coef_


RECORDING = f"{__name__}:RecordingRanker"


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    INTERRUPT_AT.clear()
    yield
    CALLS.clear()
    INTERRUPT_AT.clear()


def _predict_fp(split) -> str:
    return fingerprint_arrays(split.X, np.zeros(split.n_docs), np.zeros(split.n_docs))


def _cell(dataset="synthetic", options=SYNTH, ranker=RECORDING):
    plan = Plan(
        rankers=[RankerChoice(ranker)], datasets=[DatasetChoice(dataset, dict(options))], folds=[1]
    )
    cell = expand_plan(plan).cells[0]
    return cell, _load_fold(cell)


def _tune_cli(tmp_path, *args):
    return CliRunner().invoke(
        main,
        [
            "tune",
            "--no-mlflow",
            "--results-dir",
            str(tmp_path / "results"),
            "--optuna-storage",
            f"sqlite:///{tmp_path / 'optuna.db'}",
            "--folds",
            "1",
            *args,
        ],
        catch_exceptions=False,
    )


# ------------------------------------------------------------------ validation data only


def test_tuning_never_touches_the_test_split_before_the_final_evaluation(tmp_path):
    res = _tune_cli(
        tmp_path,
        "--ranker",
        RECORDING,
        "--dataset",
        "synthetic",
        *[f"--dataset-option={k}={v}" for k, v in SYNTH.items()],
        "--trials",
        "4",
    )
    assert res.exit_code == 0, res.output
    cell, fold = _cell()
    test_fp = {fold.test.fingerprint, _predict_fp(fold.test)}
    fits = [i for i, c in enumerate(CALLS) if c[0] == "fit"]
    assert len(fits) == 5  # 4 trials + the final refit
    tuning_calls, final_calls = CALLS[: fits[-1]], CALLS[fits[-1] :]
    assert not test_fp & {fp for _, fp in tuning_calls}
    assert {fp for what, fp in tuning_calls if what == "predict"} == {_predict_fp(fold.vali)}
    assert {fp for what, fp in tuning_calls if what == "fit"} == {fold.train.fingerprint}
    assert final_calls[0] == ("fit", fold.train.fingerprint)
    assert ("predict", _predict_fp(fold.test)) in final_calls


def test_without_a_validation_split_trials_use_a_seeded_holdout_of_training_queries():
    cell, fold = _cell("lightgbm-example", {})
    assert fold.vali is None
    fit_on, score_on, how = tuning_split(fold, seed=0)
    again = tuning_split(fold, seed=0)
    assert (fit_on.fingerprint, score_on.fingerprint) == (
        again[0].fingerprint,
        again[1].fingerprint,
    )
    train_q, fit_q, eval_q = (set(np.unique(s.qid)) for s in (fold.train, fit_on, score_on))
    assert fit_q | eval_q == train_q and not fit_q & eval_q
    assert round(len(eval_q) / len(train_q), 1) == 0.2
    assert fold.test.fingerprint not in (fit_on.fingerprint, score_on.fingerprint)
    assert "20%" in how
    other = tuning_split(fold, seed=1)[1]
    assert other.fingerprint != score_on.fingerprint


# --------------------------------------------------------------------- budget and resume


def test_every_ranker_gets_the_same_number_of_trials_and_the_label_states_it(tmp_path):
    res = _tune_cli(
        tmp_path,
        "--ranker",
        f"ridge,{RECORDING}",
        "--dataset",
        "synthetic",
        *[f"--dataset-option={k}={v}" for k, v in SYNTH.items()],
        "--trials",
        "3",
    )
    assert res.exit_code == 0, res.output
    recs = [
        json.loads(p.read_text())
        for p in (tmp_path / "results").rglob("*.json")
        if p.name != "failures.log"
    ]
    recs = [r for r in recs if "config" in r]
    assert len(recs) == 2
    for r in recs:
        assert r["label"].endswith("[tuned,trials=3]")
        assert r["config"]["tuning"]["trials_finished"] == 3
        assert r["config"]["tuning"]["budget"] == {"n_trials": 3, "timeout": None}
        assert r["config"]["tuning"]["objective_data"] == "validation split"


def _counted(storage, name):
    import optuna

    study = optuna.load_study(study_name=name, storage=storage)
    return [
        t for t in study.trials if t.state.is_finished() and not t.user_attrs.get("interrupted")
    ]


def test_an_interrupted_study_resumes_without_redoing_finished_trials(tmp_path):
    cell, fold = _cell()
    space = resolve_space("r", RecordingRanker())
    budget = Budget(n_trials=5)
    tcell = tuned_cell(cell, space=space, budget=budget, objective="ndcg@10")
    storage = f"sqlite:///{tmp_path / 'o.db'}"
    INTERRUPT_AT.append(3)  # Ctrl-C inside the third trial's fit
    with pytest.raises(KeyboardInterrupt):
        tune(tcell, fold, space=space, budget=budget, storage=storage)
    INTERRUPT_AT.clear()
    fits_before = sum(c[0] == "fit" for c in CALLS)
    assert fits_before == 3
    result = tune(tcell, fold, space=space, budget=budget, storage=storage)
    assert sum(c[0] == "fit" for c in CALLS) - fits_before == 3  # trials 3 (redone), 4, 5
    assert result.n_finished == result.n_complete == 5
    assert len(_counted(storage, result.study_name)) == 5
    # a third call finds the budget spent and fits nothing
    n = len(CALLS)
    again = tune(tcell, fold, space=space, budget=budget, storage=storage)
    assert len(CALLS) == n and again.best_params == result.best_params


def _trials_by_number(storage, name):
    return [(t.params, t.value, t.state.name) for t in _counted(storage, name)]


@pytest.mark.parametrize(
    "n_trials, interrupt_at",
    [
        (6, 4),  # redone trial in TPE's random start-up phase (10 trials)
        (13, 12),  # redone trial in the model-based phase
    ],
)
def test_a_resumed_study_suggests_and_scores_exactly_what_an_uninterrupted_one_does(
    tmp_path, n_trials, interrupt_at
):
    cell, fold = _cell()
    space = resolve_space("r", RecordingRanker())
    budget = Budget(n_trials=n_trials)
    tcell = tuned_cell(cell, space=space, budget=budget, objective="ndcg@10")
    straight = f"sqlite:///{tmp_path / 'straight.db'}"
    result = tune(tcell, fold, space=space, budget=budget, storage=straight)
    CALLS.clear()

    resumed = f"sqlite:///{tmp_path / 'resumed.db'}"
    INTERRUPT_AT.append(interrupt_at)  # Ctrl-C inside this trial's fit
    with pytest.raises(KeyboardInterrupt):
        tune(tcell, fold, space=space, budget=budget, storage=resumed)
    INTERRUPT_AT.clear()
    # a fresh process: nothing of the first session's sampler survives but the storage
    again = tune(tcell, fold, space=space, budget=budget, storage=resumed)

    expected = _trials_by_number(straight, result.study_name)
    assert len(expected) == n_trials and len({str(p) for p, _, _ in expected}) == n_trials
    assert _trials_by_number(resumed, again.study_name) == expected
    assert (again.best_params, again.best_value) == (result.best_params, result.best_value)


def test_the_final_result_of_a_finished_tuned_cell_is_not_recomputed(tmp_path):
    args = [
        "--ranker",
        RECORDING,
        "--dataset",
        "synthetic",
        *[f"--dataset-option={k}={v}" for k, v in SYNTH.items()],
        "--trials",
        "2",
    ]
    assert _tune_cli(tmp_path, *args).exit_code == 0
    CALLS.clear()
    res = _tune_cli(tmp_path, *args)
    assert res.exit_code == 0 and "skipped" in res.output
    assert CALLS == []


def test_a_wall_time_budget_stops_the_study():
    cell, fold = _cell()
    space = resolve_space("r", RecordingRanker())
    tcell = tuned_cell(cell, space=space, budget=Budget(timeout=1e-9), objective="ndcg@10")
    result = tune(
        tcell, fold, space=space, budget=Budget(timeout=1e-9), storage="sqlite:///:memory:"
    )
    assert result.n_finished == 1  # one trial uses up any budget above 0


# -------------------------------------------------------------------------------- pruning


def test_report_intermediate_does_nothing_outside_a_trial_and_prunes_inside():
    import optuna

    report_intermediate(1, 0.5)  # no trial: no effect, no error
    study = optuna.create_study(
        direction="maximize", pruner=optuna.pruners.ThresholdPruner(lower=0.9)
    )
    trial = study.ask()
    with intermediate_handler(trial_reporter(trial)), pytest.raises(optuna.TrialPruned):
        report_intermediate(10, 0.1)


# ------------------------------------------ search spaces in the command (the specs
# themselves: test_search_space_specs.py)


def test_a_tuning_table_for_a_ranker_not_in_the_run_is_a_usage_error(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'rankers = ["ridge"]\ndatasets = ["synthetic"]\n'
        "[tuning.lightgbm]\nnum_leaves = {low = 7, high = 15}\n"
    )
    res = _tune_cli(tmp_path, "--config", str(plan), "--trials", "1")
    assert res.exit_code == 2
    assert "tuning.lightgbm: not a ranker of this run" in res.output


def test_tune_without_a_budget_is_a_usage_error(tmp_path):
    res = _tune_cli(tmp_path, "--ranker", "ridge", "--dataset", "synthetic")
    assert res.exit_code == 2 and "--trials N and/or --timeout" in res.output


# -------------------------------------------------------------------------------- sweeps


def test_sweeps_expand_to_one_labelled_configuration_per_grid_point():
    plan = build_plan(
        CommandLine(
            rankers=("lightgbm,ridge",),
            datasets=("synthetic",),
            params=("lightgbm.learning_rate=0.2",),
            sweeps=("lightgbm.num_leaves=7,31", "lightgbm.min_data_in_leaf=5,20"),
        )
    )
    # every parameter the user set is in the label, the --param one first (order given)
    labels = [r.row_label for r in plan.rankers]
    assert labels == [
        "lightgbm[learning_rate=0.2,num_leaves=7,min_data_in_leaf=5]",
        "lightgbm[learning_rate=0.2,num_leaves=7,min_data_in_leaf=20]",
        "lightgbm[learning_rate=0.2,num_leaves=31,min_data_in_leaf=5]",
        "lightgbm[learning_rate=0.2,num_leaves=31,min_data_in_leaf=20]",
        "ridge",
    ]
    assert plan.rankers[1].params == {"learning_rate": 0.2, "num_leaves": 7, "min_data_in_leaf": 20}
    assert {r.name for r in plan.rankers} == {"lightgbm", "ridge"}
    cells = expand_plan(plan).cells
    assert len({c.plan_key for c in cells if c.fold == 1}) == 5  # own MLflow parent each


def test_a_sweep_of_list_valued_parameters_and_from_a_toml_plan():
    plan = build_plan(
        CommandLine(
            rankers=("lightgbm",), datasets=("synthetic",), sweeps=("lightgbm.eval_at=[5,10],[10]",)
        )
    )
    assert [r.params["eval_at"] for r in plan.rankers] == [[5, 10], [10]]
    doc = {
        "rankers": ["lightgbm"],
        "datasets": ["synthetic"],
        "sweep": {"lightgbm": {"num_leaves": [7, 31, 127]}},
    }
    p = plan_from_dict(doc, source="plan.toml")
    from ltr_bench.run.sweeps import expand_sweeps

    assert [r.row_label for r in expand_sweeps(p).rankers] == [
        "lightgbm[num_leaves=7]",
        "lightgbm[num_leaves=31]",
        "lightgbm[num_leaves=127]",
    ]


def test_bad_sweeps_are_usage_errors_naming_the_problem():
    with pytest.raises(PlanError, match="not part of this run"):
        build_plan(
            CommandLine(
                rankers=("ridge",), datasets=("synthetic",), sweeps=("lightgbm.num_leaves=7,31",)
            )
        )
    with pytest.raises(PlanError, match="listed twice"):
        build_plan(
            CommandLine(
                rankers=("lightgbm",), datasets=("synthetic",), sweeps=("lightgbm.num_leaves=7,7",)
            )
        )
    with pytest.raises(PlanError, match="plan.toml: key 'sweep.lightgbm.num_leaves'"):
        plan_from_dict(
            {
                "rankers": ["lightgbm"],
                "datasets": ["synthetic"],
                "sweep": {"lightgbm": {"num_leaves": 7}},
            },
            source="plan.toml",
        )


# ------------------------------------------------------------ plans keep their tuning tables


def test_a_plan_written_out_and_read_back_keeps_its_tuning_tables(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(
        'rankers = ["lightgbm", "ridge"]\ndatasets = ["synthetic"]\n'
        "[tuning.lightgbm]\nnum_leaves = {low = 7, high = 63, log = true}\n"
        "n_estimators = false\n"
        "[tuning.ridge]\nalpha = {choices = [0.1, 1.0, 10.0]}\n"
    )
    plan = plan_from_dict(tomllib.loads(path.read_text()), source=str(path))
    doc = plan.to_dict()
    assert doc["tuning"] == {
        "lightgbm": {"num_leaves": {"low": 7, "high": 63, "log": True}, "n_estimators": False},
        "ridge": {"alpha": {"choices": [0.1, 1.0, 10.0]}},
    }
    # as stored with the runs (JSON), then read back: the same plan, search spaces included
    stored = json.loads(json.dumps(doc))
    again = plan_from_dict(
        {k: v for k, v in stored.items() if k != "source" and v is not None}, source=str(path)
    )
    assert again == plan and again.tuning == plan.tuning
    doc["tuning"]["lightgbm"]["num_leaves"]["high"] = 255  # a copy: the plan is unchanged
    assert plan.tuning["lightgbm"]["num_leaves"]["high"] == 63
    # a sweep not yet expanded round-trips too; a plan without either has no such keys
    swept = plan_from_dict(
        {
            "rankers": ["lightgbm"],
            "datasets": ["synthetic"],
            "sweep": {"lightgbm": {"num_leaves": [7, 31]}},
        }
    )
    assert plan_from_dict({k: v for k, v in swept.to_dict().items() if v is not None}) == swept
    bare = plan_from_dict({"rankers": ["ridge"], "datasets": ["synthetic"]}).to_dict()
    assert "tuning" not in bare and "sweep" not in bare


# ------------------------------------------------------- the unit of work, and tune on Dask


class FailingRanker(RecordingRanker):
    """Every fit raises: a study in which no trial completes."""

    def fit(self, X, y, *, qid, eval_set=None):
        raise ArithmeticError("this configuration never fits")


def test_tune_cell_turns_a_load_error_and_a_study_without_a_completed_trial_into_failed_records(
    tmp_path, monkeypatch
):
    from ltr_bench.run import unit
    from ltr_bench.tune.cell import TunedCell, tune_cell

    cell, fold = _cell()
    space = resolve_space("r", RecordingRanker())
    budget = Budget(n_trials=2)
    tcell = tuned_cell(cell, space=space, budget=budget, objective="ndcg@10")
    storage = str(tmp_path / "optuna.journal")

    def unreadable(cell, progress=None):
        raise OSError("the data home is not mounted")

    monkeypatch.setattr(unit, "load_fold", unreadable)  # fold=None: tune_cell loads
    lost = tune_cell(tcell, space=space, budget=budget, storage=storage)
    assert isinstance(lost, TunedCell) and lost.result is None
    assert (lost.record.status, lost.record.error_stage) == ("failed", "load")
    assert "not mounted" in lost.record.error and lost.record.key == tcell.key

    failing = tuned_cell(
        _cell(ranker=f"{__name__}:FailingRanker")[0],
        space=space,
        budget=budget,
        objective="ndcg@10",
    )
    none = tune_cell(failing, space=space, budget=budget, storage=storage, fold=fold)
    assert none.result is None and none.record.error_stage == "tune"
    assert "no trial completed" in none.record.error and "never fits" in none.record.error

    finals = []
    ok = tune_cell(
        tcell, space=space, budget=budget, storage=storage, fold=fold, on_final=finals.append
    )
    assert ok.record.ok and ok.result.n_complete == 2
    assert ok.record.config["tuning"]["best_params"] == ok.result.best_params
    assert [f.user_params for f in finals] == [ok.result.best_params]  # before the final fit


def test_a_tune_job_survives_pickling_and_runs_the_same_unit(tmp_path):
    import pickle

    from ltr_bench.tune.cell import TuneJob, tune_cell

    cell, fold = _cell()
    space = resolve_space("r", RecordingRanker())
    budget = Budget(n_trials=2)
    tcell = tuned_cell(cell, space=space, budget=budget, objective="ndcg@10")
    job = pickle.loads(
        pickle.dumps(
            TuneJob(spaces={tcell.key: space}, budget=budget, storage=str(tmp_path / "a.journal"))
        )
    )
    by_job = job(tcell)  # loads the fold itself, as on a worker
    direct = tune_cell(
        tcell, space=space, budget=budget, storage=str(tmp_path / "b.journal"), fold=fold
    )
    assert by_job.result.best_params == direct.result.best_params
    assert by_job.record.metrics == direct.record.metrics
    restored = pickle.loads(pickle.dumps(by_job))  # what a worker sends back
    assert [t.value for t in restored.result.trials] == [t.value for t in by_job.result.trials]


def test_tune_refuses_workers_and_scheduler_together_before_writing_anything(tmp_path):
    res = CliRunner().invoke(
        main,
        [
            "tune",
            "--ranker",
            "ridge",
            "--dataset",
            "synthetic",
            "--trials",
            "1",
            "--workers",
            "2",
            "--scheduler",
            "tcp://127.0.0.1:1",
            "--no-mlflow",
            "--results-dir",
            str(tmp_path / "results"),
        ],
    )
    assert res.exit_code == 2 and "not both" in res.output
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_tune_with_workers_runs_on_a_local_cluster_and_a_rerun_skips_without_one(tmp_path):
    pytest.importorskip("distributed")
    args = [
        "tune",
        "--no-mlflow",
        "--results-dir",
        str(tmp_path / "results"),
        "--folds",
        "1",
        "--ranker",
        "ridge,lightgbm",
        "--param",
        "lightgbm.n_estimators=10",
        "--dataset",
        "synthetic",
        *[f"--dataset-option={k}={v}" for k, v in SYNTH.items()],
        "--trials",
        "2",
        "--workers",
        "1",  # one worker process: the cluster, not the spread over workers, is tested
    ]
    res = CliRunner().invoke(main, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "local Dask cluster of 1 worker" in res.output
    recs = [json.loads(p.read_text()) for p in (tmp_path / "results").glob("*.json")]
    # the parameter the user fixed is in the label, then the tuning
    assert sorted(r["label"] for r in recs) == [
        "lightgbm[n_estimators=10][tuned,trials=2]",
        "ridge[tuned,trials=2]",
    ]
    assert all(r["status"] == "ok" and r["config"]["tuning"]["trials_finished"] == 2 for r in recs)
    assert (tmp_path / "optuna.journal").stat().st_size > 0  # the default, beside results
    again = CliRunner().invoke(main, args, catch_exceptions=False)
    assert again.exit_code == 0 and again.output.count("skipped") == 2
    assert "Dask" not in again.output  # nothing left to tune: no cluster was started


SIGTERM_SYNTH = {"n_queries": 30, "docs_per_query": 10, "n_features": 5, "n_informative": 3}


@pytest.mark.slow  # a real tune process and a signal
def test_sigterm_stops_tune_with_exit_130_and_keeps_finished_cells(tmp_path):
    (tmp_path / "slowmod.py").write_text(
        textwrap.dedent('''
        import pathlib, time
        import numpy as np
        from ltr_bench.ranker import BaseRanker

        class SlowRanker(BaseRanker):
            """Announces its first fit in a file, then sleeps: SIGTERM lands mid-study."""
            SEARCH_SPACE = {"alpha": {"low": 0.1, "high": 10.0}}

            def __init__(self, alpha=1.0):
                self.alpha = alpha

            def fit(self, X, y, *, qid, eval_set=None):
                pathlib.Path(__file__).with_name("fitting").touch()
                time.sleep(60)
                self.coef_ = np.zeros(X.shape[1])
                return self

            def predict(self, X, *, qid=None):
                return np.asarray(X) @ self.coef_
    ''')
    )
    results = tmp_path / "results"
    cmd = [
        sys.executable,
        "-c",
        "from ltr_bench.cli import main; main()",
        "tune",
        "--no-mlflow",
        "--results-dir",
        str(results),
        "--optuna-storage",
        str(tmp_path / "o.journal"),
        "--folds",
        "1",
        "--ranker",
        "ridge,slowmod:SlowRanker",
        "--dataset",
        "synthetic",
        *[f"--dataset-option={k}={v}" for k, v in SIGTERM_SYNTH.items()],
        "--trials",
        "2",
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "fitting").exists():  # ridge is done; SlowRanker is fitting
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "SlowRanker never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err)
    assert "interrupted" in err
    saved = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert [r["label"] for r in saved] == ["ridge[tuned,trials=2]"]


class ChattyRanker(RecordingRanker):
    """Reports two boosting-like rounds from every fit."""

    def fit(self, X, y, *, qid, eval_set=None):
        from ltr_bench.progress import report_progress

        for r in (1, 2):
            report_progress(r, 2, "boosting round")
        return super().fit(X, y, qid=qid, eval_set=eval_set)


def test_a_tune_job_reports_each_finished_trial_to_the_installed_handler_not_the_fits(tmp_path):
    import re

    from ltr_bench.progress import progress_handler
    from ltr_bench.tune.cell import TuneJob

    cell, _ = _cell(ranker=f"{__name__}:ChattyRanker")
    space = resolve_space("r", RecordingRanker())
    budget = Budget(n_trials=3)
    tcell = tuned_cell(cell, space=space, budget=budget, objective="ndcg@10")
    job = TuneJob(spaces={tcell.key: space}, budget=budget, storage=str(tmp_path / "a.journal"))
    heard = []
    with progress_handler(lambda done, total, msg: heard.append((done, total, msg))):
        out = job(tcell)
    assert out.record.ok
    # exactly one report per trial, in order, in the in-process console's words; the
    # rankers' "boosting round" reports (trials and final fit) stay on the worker
    assert [h[:2] for h in heard] == [(1, 3), (2, 3), (3, 3)]
    values = [t.value for t in out.result.trials]
    assert [h[2] for h in heard] == [
        f"trial {n}/3 complete {v:.4f}" for n, v in enumerate(values, 1)
    ]
    assert all(re.fullmatch(r"trial \d/3 complete \d\.\d{4}", h[2]) for h in heard)
    assert job(tcell).record.ok  # no handler installed: nothing to report, still runs
