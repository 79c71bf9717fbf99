"""The unit of work of ``ltr-bench tune``: a tuned cell (its keys and label), its study, its
final fit and test evaluation (:func:`tune_cell` -> :class:`TunedCell`), and the same as a
picklable Dask job (:class:`TuneJob`). The protocol is in :mod:`ltr_bench.tune.study`.

Workers write only the Optuna storage; records and trials return to the client, which saves,
notifies and logs them. A cancelled task (Ctrl-C) stops its study before the next trial.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ltr_bench.progress import current_handler, progress_handler
from ltr_bench.results import jsonable
from ltr_bench.run.cells import Cell, build_ranker
from ltr_bench.run.plan import canonical_json
from ltr_bench.tune.storage import StudyBusyError, study_lock
from ltr_bench.tune.study import Budget, TuningResult, study_name, tune

__all__ = [
    "TuneJob",
    "TunedCell",
    "finalize_cell",
    "trial_text",
    "tune_cell",
    "tuned_cell",
]


def _sha256(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def tuned_cell(cell: Cell, *, space: Mapping[str, Any], budget: Budget, objective: str) -> Cell:
    """The cell of ``cell``'s configuration tuned with ``budget``: label
    ``<label>[tuned,<budget>]``, keys from what decides the tuning (ranker, fixed
    parameters, space, budget, objective, dataset, metrics), not from the parameters it will
    choose -- so every fold's tuned result is one configuration (one report row), and a
    finished one is found before tuning again. ``params`` are filled by
    :func:`finalize_cell`."""
    ident = {
        "ranker": cell.ranker,
        "fixed": jsonable(cell.user_params),
        "space": jsonable(dict(space)),
        "budget": dataclasses.asdict(budget),
        "objective": objective,
        "metrics": list(cell.metrics),
        "conventions": list(cell.conventions),
        "dataset": {k: v for k, v in cell.dataset_identity.items() if k != "seed"},
        "tuning": "per-fold/v2",
    }
    if cell.param_files:  # files named by fixed parameters, by content
        ident["files"] = dict(cell.param_files)
    config_key = _sha256(ident)
    plan_key = _sha256({**ident, "dataset": cell.dataset_identity, "seed": cell.seed})
    key = _sha256({**ident, "dataset": cell.dataset_identity, "seed": cell.seed, "fold": cell.fold})
    return dataclasses.replace(
        cell,
        key=key,
        plan_key=plan_key,
        config_key=config_key,
        label=f"{cell.label or cell.ranker}[tuned,{budget.text}]",
    )


def finalize_cell(tcell: Cell, best_params: Mapping[str, Any]) -> Cell:
    """``tcell`` with the chosen parameters added to the user's and resolved."""
    user = {**tcell.user_params, **best_params}
    ranker = build_ranker(
        tcell.ranker,
        user,
        seed=tcell.seed,
        threads=tcell.threads,
        click_labels=bool(tcell.dataset_identity.get("clicks")),
    )
    return dataclasses.replace(
        tcell, user_params=user, params=jsonable(ranker.get_params(deep=False))
    )


# ------------------------------------------------------------------------ unit of work


@dataclass
class TunedCell:
    """What one tuned cell gives back (picklable: it travels from a Dask worker). ``record``:
    the final record (``config["tuning"]`` holds :meth:`TuningResult.summary`), or a failed
    one; ``result``: the study's result with its trials, None when tuning failed.
    ``reused``: another process finished this tuned cell while this one waited for its study
    (``record`` is that process's record); ``busy``: another process kept the study for
    longer than the wait (no record; the words say which process)."""

    record: Any  # ResultRecord; Any keeps this module free of the results import cycle
    result: TuningResult | None = None
    reused: bool = False
    busy: str | None = None

    @classmethod
    def failed(cls, tcell: Cell, exc: BaseException, stage: str) -> TunedCell:
        """A failed record for ``tcell`` (the signature of ``map_cells``' ``on_failure``)."""
        from ltr_bench.run.harness import failed_record

        return cls(failed_record(tcell, exc, stage))


def tune_cell(
    tcell: Cell,
    *,
    space: Mapping[str, Any],
    budget: Budget,
    storage: str,
    objective: str = "ndcg@10",
    fold=None,
    on_trial: Callable[[Any, int], None] | None = None,
    on_final: Callable[[Cell], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_wait: Callable[[str], None] | None = None,
    existing: Callable[[], Any] | None = None,
    then: Callable[[TunedCell], None] | None = None,
) -> TunedCell:
    """Tune one cell and evaluate its choice: :func:`tune`, then :func:`finalize_cell` and
    :func:`ltr_bench.run.unit.run_cell` on the same fold, the study's summary put in
    ``record.config["tuning"]``.

    ``fold``: the loaded fold when the caller has it (shared by rankers); else it is loaded
    from ``tcell``, and a load error gives a failed record (stage ``"load"``). A study with
    no completed trial (or unusable tuning data) gives a failed record (stage ``"tune"``).
    ``on_final(final_cell)`` is called before the final fit; ``on_trial`` and
    ``should_stop`` go to :func:`tune`. Writes only to the Optuna ``storage``.

    One process per study (:func:`ltr_bench.tune.storage.study_lock`): while another holds
    it, ``on_wait(message)`` hears its pid and this one waits; once it has the study,
    ``existing()`` (when given) may return the record the other process saved meanwhile,
    which is then reused rather than computed again. ``then(tuned)`` runs while the study
    is still held (the caller saves the record there, before any waiting process looks).
    """
    from ltr_bench.run import unit

    if fold is None:
        try:
            fold = unit.load_fold(tcell)
        except Exception as exc:  # noqa: BLE001 - a failed record, like run_cell's
            return TunedCell.failed(tcell, exc, "load")
    try:
        with study_lock(storage, study_name(tcell), on_wait=on_wait):
            previous = existing() if existing is not None else None
            if previous is not None:
                tuned = TunedCell(previous, reused=True)
            else:
                tuned = _tune_and_test(
                    tcell,
                    fold,
                    unit.run_cell,
                    space=space,
                    budget=budget,
                    storage=storage,
                    objective=objective,
                    on_trial=on_trial,
                    on_final=on_final,
                    should_stop=should_stop,
                )
            if then is not None:
                then(tuned)
            return tuned
    except StudyBusyError as exc:
        tuned = TunedCell(None, busy=str(exc))
        if then is not None:
            then(tuned)
        return tuned


def _tune_and_test(tcell, fold, run_cell, *, budget, objective, on_final, **kwargs) -> TunedCell:
    try:
        result = tune(tcell, fold, budget=budget, objective=objective, **kwargs)
    except (RuntimeError, ValueError) as exc:
        return TunedCell.failed(tcell, exc, "tune")
    final = finalize_cell(tcell, result.best_params)
    if on_final is not None:
        on_final(final)
    record = run_cell(final, fold=fold)
    record.config["tuning"] = result.summary(budget, objective)
    return TunedCell(record, result)


@dataclass(frozen=True)
class TuneJob:
    """:func:`tune_cell` as a picklable function of the tuned cell alone, for
    ``Executor.map_cells(tcells, fn=TuneJob(...))``. ``spaces``: each tuned cell's search
    space by ``tcell.key``. On a Dask worker the study stops before its next trial once the
    client has cancelled the task (:func:`_task_cancelled`).

    Progress: each finished trial is reported to the installed progress handler (on Dask,
    the executor's relay to the client) as ``(n_finished, n_trials or 0,`` :func:`trial_text`
    ``)``; the trial fits' own reports (boosting rounds) are silenced, as in process."""

    spaces: Mapping[str, Mapping[str, Any]]
    budget: Budget
    storage: str
    objective: str = "ndcg@10"

    def __call__(self, tcell: Cell) -> TunedCell:
        report = current_handler()
        n_trials = self.budget.n_trials

        def on_trial(trial, n: int) -> None:
            if report is not None:
                report(n, n_trials or 0, trial_text(trial, n, n_trials))

        with progress_handler(None):
            return tune_cell(
                tcell,
                space=self.spaces[tcell.key],
                budget=self.budget,
                storage=self.storage,
                objective=self.objective,
                on_trial=on_trial,
                should_stop=_task_cancelled,
                on_wait=None if report is None else (lambda m: report(0, n_trials or 0, m)),
            )


def trial_text(trial, n_finished: int, n_trials: int | None) -> str:
    """The console's words for a finished trial: ``"trial 3/30 complete 0.4781"`` (``"trial
    3 pruned -"`` without a trial budget or a value)."""
    value = "-" if trial.value is None else f"{trial.value:.4f}"
    return (
        f"trial {n_finished}"
        + (f"/{n_trials}" if n_trials else "")
        + f" {trial.state.name.lower()} {value}"
    )


def _task_cancelled() -> bool:
    """True inside a Dask task the client cancelled (Dask cannot stop the thread, it marks
    the task); False outside a worker. The worker's task state is not a documented API:
    any surprise reads as False."""
    try:
        from distributed import get_worker
        from distributed.worker import thread_state

        worker = get_worker()
    except (ImportError, ValueError):  # ValueError: not running on a worker
        return False
    try:
        key = getattr(thread_state, "key", None)
        if key is None:
            return False
        task = worker.state.tasks.get(key)
        return task is None or task.state == "cancelled"
    except Exception:  # noqa: BLE001 - an internal API; never stop a study by mistake
        return False
