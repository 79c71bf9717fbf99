"""Hyper-parameter tuning with an equal budget, on validation data only (``ltr-bench tune``).

Protocol, per (ranker configuration, dataset, fold, seed) -- "per fold":

1. **Search space.** The ranker declares one (:func:`search_space_of`: a ``SEARCH_SPACE``
   class attribute, or a ``search_space()`` classmethod returning the same dict); a plan may
   override or extend it per ranker (``[tuning.LABEL]`` tables, :func:`resolve_space`).
   Parameters the user fixed with ``--param`` / the plan are not searched. These live in
   :mod:`ltr_bench.tune.search_space` and are re-exported here.
2. **Tuning data.** With a validation split: trials fit on the training split (validation
   split as ``eval_set``, e.g. for early stopping, as in the final fit) and are scored on the
   validation split. Without one: the training queries are split once,
   :data:`HOLDOUT_FRACTION` (20 %) of them held out, by
   ``sklearn.model_selection.GroupShuffleSplit(test_size=0.2, random_state=seed)``;
   trials fit on the other 80 % (held-out part as ``eval_set``) and are scored on the
   held-out part (:func:`tuning_split`). The test split is not read by anything here.
3. **Search.** Optuna's TPE sampler maximises the objective (``ndcg@10`` by default, empty
   queries = 1) on the tuning data. Each trial is suggested by a fresh ``TPESampler`` seeded
   from (run seed, number of finished trials in the study) (:func:`trial_sampler`), so a
   trial's parameters depend only on the seed and the study's history. Every ranker gets the same
   :class:`Budget`: a number of finished trials and/or a wall-time limit in seconds.
   Finished trials are COMPLETE, PRUNED or FAIL ones (a failing configuration uses budget);
   the wall-time limit counts the durations of finished trials, so it survives resumption.
4. **Pruning.** A ranker may report intermediate validation values while it fits by calling
   :func:`ltr_bench.progress.report_intermediate` ``(step, value)`` (e.g. per boosting
   round); outside tuning the call does nothing. Inside a trial, Optuna's
   ``MedianPruner(n_startup_trials=5, n_warmup_steps=10)`` decides (at every
   :data:`REPORT_EVERY`-th step), and a pruned trial stops
   by raising ``optuna.TrialPruned`` out of ``fit``.
5. **Final evaluation.** The best trial's parameters are refit on the training split and
   evaluated once on test by :func:`ltr_bench.run.harness.run_cell`
   (:mod:`ltr_bench.tune.cell`) -- an ordinary record with
   the label ``<label>[tuned,trials=N]`` (the budget is in the label and in
   ``record.config["tuning"]``).

Resume: the studies live in an Optuna storage (default: the journal file
``mlflow_runs/optuna.journal`` beside the results folder, :mod:`ltr_bench.tune.storage`), one
study per tuned cell key (ranker, fixed parameters, search space, budget, objective, dataset, fold,
seed). Re-running the same command loads the study, keeps its finished trials, discards trials
left RUNNING by an interruption and runs only the rest of the budget. A finished tuned cell is
skipped like any other result. One process per study at a time. A resume does not change the
numbers: the trial an interruption cut short is not counted, so it is redone with the seed
and history it had, and every later trial follows as in an uninterrupted run (same
parameters, same values; docs/decisions.md, ``run-tuning-resume``).

Unit of work (:mod:`ltr_bench.tune.cell`): ``tune_cell`` (study, final fit, test evaluation
-> ``TunedCell``) is what ``ltr-bench tune`` runs in process (one loaded fold shared by a
fold's rankers) and on Dask (``TuneJob``, one task per tuned cell: one worker per study at a
time). Workers write only the Optuna storage, so all must open the same one: on one machine
the default journal file (an absolute path); on a cluster a journal file on the shared
filesystem or an RDB URL (``--optuna-storage``). Records and trials return to the client,
which saves, notifies and logs them. A cancelled task (Ctrl-C) stops its study before the
next trial.

Overhead: each trial records ``fit_seconds`` and ``score_seconds`` as Optuna user
attributes; ``benchmarks/bench_tuning.py`` compares them with the trials' wall times.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_bench.errors import UsageError
from ltr_bench.folds import Split
from ltr_bench.progress import intermediate_handler
from ltr_bench.results import jsonable
from ltr_bench.run.cells import Cell, build_ranker, ranker_tags
from ltr_bench.run.unit import click_keywords
from ltr_bench.timing import thread_limit

# SearchSpaceError, resolve_space, search_space_of and parse_spec are also re-exported
# (__all__): tests, plugins and older docs import them from ltr_bench.tune.study
from ltr_bench.tune.search_space import (
    SearchSpaceError,
    parse_spec,
    resolve_space,
    search_space_of,
    suggest,
)
from ltr_bench.tune.storage import counted_trials, open_storage

__all__ = [
    "Budget",
    "HOLDOUT_FRACTION",
    "SearchSpaceError",
    "TuningCancelled",
    "TuningResult",
    "open_storage",
    "parse_spec",
    "trial_reporter",
    "resolve_space",
    "search_space_of",
    "study_name",
    "trial_sampler",
    "tune",
    "tuning_split",
]

#: share of training queries held out for tuning when a dataset has no validation split
HOLDOUT_FRACTION = 0.2
#: only every REPORT_EVERY-th intermediate value reaches the study: each report is a write
#: to the Optuna storage, and pruning decisions need no finer resolution
REPORT_EVERY = 10


class TuningCancelled(Exception):
    """``tune``'s ``should_stop()`` said so (the Dask task was cancelled): the study stops
    before its next trial. Not a failure of the cell: nobody waits for its result."""


# ------------------------------------------------------------------------------- budget


@dataclass(frozen=True)
class Budget:
    """What every ranker gets: at most ``n_trials`` finished trials and/or ``timeout``
    seconds of finished trials' wall time (either may be None, not both)."""

    n_trials: int | None = None
    timeout: float | None = None

    def __post_init__(self):
        if self.n_trials is None and self.timeout is None:
            raise UsageError("give a tuning budget: --trials N and/or --timeout SECONDS")
        if self.n_trials is not None and self.n_trials < 1:
            raise UsageError(f"--trials must be >= 1, got {self.n_trials}")
        if self.timeout is not None and not 0 < self.timeout < float("inf"):
            raise UsageError(  # inf: a study that never ends
                f"--timeout must be a finite number of seconds > 0, got {self.timeout}"
            )

    @property
    def text(self) -> str:
        """``trials=30``, ``timeout=600s`` or both, comma-separated (used in row labels)."""
        parts = []
        if self.n_trials is not None:
            parts.append(f"trials={self.n_trials}")
        if self.timeout is not None:
            parts.append(f"timeout={self.timeout:g}s")
        return ",".join(parts)


# --------------------------------------------------------------------------- tuning data


def _subset(split: Split, idx: np.ndarray, name: str) -> Split:
    extras = {k: v[idx] for k, v in split.extras.items()}  # click positions go along
    return Split(name, split.X[idx], split.y[idx], split.qid[idx], extras=extras)


def tuning_split(fold, seed: int) -> tuple[Split, Split, str]:
    """(fit on, score on, description) for the trials of one fold; never the test split.

    The fold's validation split when it has one; otherwise a query-grouped hold-out of
    :data:`HOLDOUT_FRACTION` of the training queries (``GroupShuffleSplit`` seeded with
    ``seed``; rows keep their order, so queries stay contiguous).
    """
    if fold.vali is not None:
        return fold.train, fold.vali, "validation split"
    from sklearn.model_selection import GroupShuffleSplit

    train = fold.train
    if train.n_queries < 2:
        raise ValueError("cannot tune without a validation split on fewer than 2 training queries")
    gss = GroupShuffleSplit(n_splits=1, test_size=HOLDOUT_FRACTION, random_state=seed)
    fit_idx, eval_idx = next(gss.split(train.X, train.y, groups=train.qid))
    return (
        _subset(train, np.sort(fit_idx), "tune-train"),
        _subset(train, np.sort(eval_idx), "tune-holdout"),
        f"{HOLDOUT_FRACTION:.0%} of training queries held out (GroupShuffleSplit, seed {seed})",
    )


# ------------------------------------------------------------------------------ pruning


def trial_reporter(trial):
    """The :func:`ltr_bench.progress.report_intermediate` handler of one trial: every
    :data:`REPORT_EVERY`-th value goes to the trial and, when the pruner says so,
    ``optuna.TrialPruned`` is raised inside the ranker's ``fit``."""

    def report(step: int, value: float) -> None:
        if step % REPORT_EVERY:
            return
        trial.report(value, step)
        if trial.should_prune():
            import optuna

            raise optuna.TrialPruned(f"pruned at step {step}")

    return report


# ------------------------------------------------------------------------------- studies


@dataclass
class TuningResult:
    """What a study found. ``n_finished`` counts COMPLETE + PRUNED + FAIL trials (the budget
    used); ``seconds`` their summed wall time; ``split`` the tuning data's description."""

    study_name: str
    best_params: dict[str, Any]
    best_value: float
    best_trial: int
    n_finished: int
    n_complete: int
    n_pruned: int
    n_failed: int
    seconds: float
    split: str
    trials: list = dataclasses.field(default_factory=list, repr=False)

    def summary(self, budget: Budget, objective: str) -> dict[str, Any]:
        """JSON-able, stored as ``record.config["tuning"]``."""
        return {
            "budget": dataclasses.asdict(budget),
            "objective": objective,
            "objective_data": self.split,
            "sampler": "TPE, seeded per trial",
            "study": self.study_name,
            "best_params": jsonable(self.best_params),
            "best_value": self.best_value,
            "best_trial": self.best_trial,
            "trials_finished": self.n_finished,
            "trials_complete": self.n_complete,
            "trials_pruned": self.n_pruned,
            "trials_failed": self.n_failed,
            "tuning_seconds": self.seconds,
        }


def _discard_stale(study) -> None:
    """Trials left RUNNING by an interrupted process: mark them FAIL and not counted."""
    from optuna.trial import TrialState

    storage = study._storage  # noqa: SLF001 - Optuna has no public API for this
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        try:
            storage.set_trial_user_attr(t._trial_id, "interrupted", True)  # noqa: SLF001
            storage.set_trial_state_values(t._trial_id, TrialState.FAIL)  # noqa: SLF001
        except Exception:  # noqa: BLE001 - finished meanwhile by someone else
            pass


def study_name(tcell: Cell) -> str:
    """The Optuna study of tuned cell ``tcell``: ``label|dataset|foldF|seedS|<key[:16]>``."""
    return f"{tcell.label}|{tcell.dataset}|fold{tcell.fold}|seed{tcell.seed}|{tcell.key[:16]}"


def trial_sampler(seed: int, n_finished: int):
    """The sampler that suggests a study's next trial: ``TPESampler(seed=s)`` with
    ``s = numpy.random.SeedSequence([seed, n_finished]).generate_state(1)[0]`` (a uint32).

    ``n_finished`` is the number of trials that used budget (COMPLETE, PRUNED or FAIL, not
    ones an interruption cut short), not Optuna's trial number: a trial redone after an
    interruption is asked with the same ``n_finished`` as in an uninterrupted run, so it
    gets the same seed. A fresh sampler per trial is what makes a resume reproducible: a
    ``TPESampler``'s only state between trials is its random streams (its own and its
    start-up ``RandomSampler``'s, both seeded here) and a search-space cache it rebuilds from
    the study; the rest (the Parzen estimators, the start-up count, the constant liar) is
    recomputed from the study's trials at every ask, and FAIL trials (hence interrupted
    ones) are not among the trials it models.
    """
    import optuna

    derived = int(np.random.SeedSequence([int(seed), int(n_finished)]).generate_state(1)[0])
    return optuna.samplers.TPESampler(seed=derived)


def tune(
    tcell: Cell,
    fold,
    *,
    space: Mapping[str, Any],
    budget: Budget,
    storage: str,
    objective: str = "ndcg@10",
    on_trial: Callable[[Any, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TuningResult:
    """Run (or resume) the study of tuned cell ``tcell`` on ``fold`` (see the module).

    ``space``: ``{parameter: spec}`` (:func:`resolve_space`); ``storage``: an Optuna storage
    URL or file (:func:`open_storage`); ``on_trial(frozen_trial, n_finished)`` hears of each
    finished trial; ``should_stop()`` is asked before each trial and True raises
    :class:`TuningCancelled`. The fold's test split is never read. Raises ``RuntimeError``
    when no trial completed.
    """
    import optuna
    from optuna.trial import TrialState

    from ltr_bench.evaluation.metrics import evaluate

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {n: parse_spec(n, s, where=f"tuning.{tcell.label}") for n, s in space.items()}
    fit_split, eval_split, how = tuning_split(fold, tcell.seed)
    max_label = int(tcell.max_label if tcell.max_label is not None else fold.max_label)
    if "position" in eval_split.extras:  # click data: validation labels are click counts
        max_label = max(max_label, int(eval_split.y.max(initial=0)))
    eval_set = (eval_split.X, eval_split.y, eval_split.qid)
    name = study_name(tcell)
    study = optuna.create_study(
        study_name=name,
        storage=open_storage(storage) if isinstance(storage, str) else storage,
        direction="maximize",
        load_if_exists=True,
        sampler=trial_sampler(tcell.seed, 0),  # replaced before every ask, see below
        pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=10),
    )
    _discard_stale(study)

    def run_trial(trial) -> float:
        params = {n: suggest(trial, n, d) for n, d in dists.items()}
        ranker = build_ranker(
            tcell.ranker,
            {**tcell.user_params, **params},
            seed=tcell.seed,
            threads=tcell.threads,
            query_dim=fold.query_dim,
            click_labels=bool(tcell.dataset_identity.get("clicks")),
        )
        t0 = time.perf_counter()
        try:
            with (
                intermediate_handler(trial_reporter(trial)),
                thread_limit(tcell.threads),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")  # the final fit records the ranker's warnings
                ranker.fit(
                    fit_split.X,
                    fit_split.y,
                    qid=fit_split.qid,
                    eval_set=eval_set,
                    **click_keywords(fit_split, ranker_tags(ranker)),
                )
                t1 = time.perf_counter()
                scores = np.asarray(
                    ranker.predict(eval_split.X, qid=eval_split.qid), dtype=np.float64
                )
                t2 = time.perf_counter()
        except optuna.TrialPruned:
            # a pruned fit is still fitting time (not loop overhead): record it
            trial.set_user_attr("fit_seconds", time.perf_counter() - t0)
            raise
        except KeyboardInterrupt:
            # Optuna records the trial as FAIL; this mark keeps it out of the used budget,
            # so the resumed study redoes it
            trial.set_user_attr("interrupted", True)
            raise
        trial.set_user_attr("fit_seconds", t1 - t0)
        trial.set_user_attr("score_seconds", t2 - t1)
        if not np.isfinite(scores).all():
            raise ValueError("non-finite validation scores")
        return float(
            evaluate(eval_split.y, scores, eval_split.qid, (objective,), max_label=max_label)[
                objective
            ]
        )

    counted0 = counted_trials(study)
    done = len(counted0)
    spent = sum(t.duration.total_seconds() for t in counted0 if t.duration)
    while True:
        if budget.n_trials is not None and done >= budget.n_trials:
            break
        if budget.timeout is not None and spent >= budget.timeout:
            break
        if should_stop is not None and should_stop():
            raise TuningCancelled(f"{name}: stopped after {done} finished trial(s)")
        # ask / tell rather than study.optimize: no per-call set-up, and the budget check
        # above counts every finished trial, including those of earlier sessions. A new
        # sampler per trial, seeded from (seed, trials done): the suggestion depends on the
        # seed and the study's history only, never on how many sessions came before
        study.sampler = trial_sampler(tcell.seed, done)
        trial = study.ask()
        t0 = time.perf_counter()
        try:
            value = run_trial(trial)
        except optuna.TrialPruned:
            study.tell(trial, state=TrialState.PRUNED)
        except KeyboardInterrupt:
            study.tell(trial, state=TrialState.FAIL)
            raise
        except Exception as exc:  # noqa: BLE001 - a failing configuration uses budget
            trial.set_user_attr("error", f"{type(exc).__name__}: {exc}"[:500])
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, value)
        done += 1
        spent += time.perf_counter() - t0
        if on_trial is not None:
            on_trial(study.get_trials(deepcopy=False)[-1], done)

    counted = counted_trials(study)
    complete = [t for t in counted if t.state == TrialState.COMPLETE]
    if not complete:
        errors = {t.user_attrs.get("error", "") for t in counted} - {""}
        raise RuntimeError(
            f"tuning {tcell.label} on {tcell.dataset} fold {tcell.fold}: no "
            f"trial completed ({len(counted)} failed or pruned)"
            + (f"; e.g. {sorted(errors)[0][:300]}" if errors else "")
        )
    best = max(complete, key=lambda t: (t.value, -t.number))
    return TuningResult(
        study_name=name,
        best_params=dict(best.params),
        best_value=float(best.value),
        best_trial=best.number,
        n_finished=len(counted),
        n_complete=len(complete),
        n_pruned=sum(t.state == TrialState.PRUNED for t in counted),
        n_failed=sum(t.state == TrialState.FAIL for t in counted),
        seconds=sum(t.duration.total_seconds() for t in counted if t.duration),
        split=how,
        trials=counted,
    )
