"""Running the tuned cells of ``ltr-bench tune``: in this process (:func:`tune_here`, one
fold in memory at a time) or on Dask (:func:`tune_remote`, one task per tuned cell). Either
way each finished :class:`~ltr_bench.tune.cell.TunedCell` goes to the caller's ``finish``,
which alone saves, notifies and logs."""

from __future__ import annotations

from ltr_bench.tune.cell import TunedCell, trial_text, tune_cell

__all__ = ["tune_here", "tune_remote"]


def tune_here(pending, job, listeners, console, finish, total: int, *, existing=None) -> None:
    """In this process, in plan order: one fold in memory at a time, shared by the rankers
    of that fold (a fold that failed to load fails its cells without a second attempt).
    ``finish`` runs while the cell's study is held; ``existing(tcell)``: the tuned record
    already saved (by a process this one waited for), or None."""
    from ltr_bench.run import unit
    from ltr_bench.run.harness import _fold_of

    folds_loaded: dict[tuple, object] = {}
    budget = job.budget
    for i, tcell in pending:
        fkey = _fold_of(tcell)
        if fkey not in folds_loaded:
            folds_loaded.clear()
            for x in listeners:
                x.fold_loading(tcell.dataset, tcell.fold)
            try:
                folds_loaded[fkey] = unit.load_fold(tcell)
            except Exception as exc:  # noqa: BLE001 - reported per cell
                folds_loaded[fkey] = exc
        fold = folds_loaded[fkey]
        if isinstance(fold, Exception):
            finish(TunedCell.failed(tcell, fold, "load"), i)
            continue

        def on_trial(t, n, _c=tcell, _i=i):
            console.status(
                f"[{_i}/{total}] {_c.row_name} on {_c.dataset} fold {_c.fold}: "
                + trial_text(t, n, budget.n_trials)
            )

        def on_final(final, _i=i):
            for x in listeners:
                x.cell_started(final, _i, total)

        def then(tuned, _i=i):
            finish(tuned, _i)

        def known(_c=tcell):
            return existing(_c)

        tune_cell(
            tcell,
            space=job.spaces[tcell.key],
            budget=budget,
            storage=job.storage,
            objective=job.objective,
            fold=fold,
            on_trial=on_trial,
            on_final=on_final,
            on_wait=lambda m: console.line(f"note: {m}"),
            existing=None if existing is None else known,
            then=then,
        )


def tune_remote(executor, pending, job, listeners, finish, total: int, *, status=None) -> None:
    """On ``executor`` (Dask): one task per tuned cell runs ``job`` on a worker, which loads
    its fold itself; each result is finished here as it returns. Leaving early (Ctrl-C)
    cancels the tasks still out. ``status(text)`` shows each finished trial as the in-process
    path does (``job`` reports them, the executor relays them here)."""
    tcells = [t for _, t in pending]

    def started(k: int) -> None:
        for x in listeners:
            x.cell_started(tcells[k], pending[k][0], total)

    def progress(k: int, done: int, n: int, message: str) -> None:
        c = tcells[k]
        status(f"[{pending[k][0]}/{total}] {c.row_name} on {c.dataset} fold {c.fold}: {message}")

    results = executor.map_cells(
        tcells,
        started=started,
        fn=job,
        on_failure=TunedCell.failed,
        progress=None if status is None else progress,
    )
    try:
        for k, tc in results:
            finish(tc, pending[k][0])
    finally:
        results.close()
