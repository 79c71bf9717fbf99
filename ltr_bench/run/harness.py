"""Running a plan: cell after cell, each claimed, saved locally, then announced.

Data flow: :func:`ltr_bench.run.cells.expand_plan` (validates everything, one
:class:`~ltr_bench.run.cells.Cell` per dataset x fold x ranker configuration x seed) ->
:func:`ltr_bench.run.unit.run_cell` (pure: a cell and, when the caller has it, the loaded
fold, in; a :class:`~ltr_bench.results.ResultRecord` out) ->
:class:`~ltr_bench.results.ResultStore` (saved before anyone else hears of it) -> a
:class:`~ltr_bench.run.listener.Listener` (the CLI prints; the MLflow listener of
:mod:`ltr_bench.tracking` logs). This module never imports MLflow.

Guarantees
----------
* Identical splits: each fold is loaded once per invocation and every ranker runs on that
  same :class:`~ltr_bench.folds.Fold` object, frozen read-only; each record carries the
  train / vali / test fingerprints, so "same data" is checkable after the fact.
* One seed: the dataset (generation, query-grouped folds) gets ``seed``; every ranker gets
  it through the parameter its tags declare (:attr:`RankerTags.seed_param`). The folds
  differ in their data, so the same ranker seed in each is not a correlation risk, and a
  cell run on its own reproduces the same number.
* Resume: a finished ``Cell.key`` found in the store is reused unless ``force`` (see
  :mod:`ltr_bench.run.cells` for what the key covers), and only if its recorded split
  fingerprints equal those of the fold loaded now, or, for a fold whose cells are all
  finished, those noted with the fold's unchanged inputs (:mod:`.fold_proof`: then the
  fold is not loaded): changed data is recomputed, never reported with old numbers.
* One cell, one computation, one log: a cell is claimed (a lock file per key in the
  results folder, :mod:`ltr_bench.results.claims`) while it is computed and until every
  listener is done with its record (MLflow has the run: :meth:`Listener.hold_claim`);
  after taking a claim the store is read again, so a cell another process finished
  meanwhile is reused, not computed twice. Concurrent runs of overlapping plans wait for
  each other's cells, saying for which process; a holder stopped (Ctrl-Z) for longer than
  ``LTR_BENCH_STOPPED_WAIT`` seconds (60) is given up on: the cell is recorded as failed
  (stage ``"claim"``) with a message naming the process, and the run goes on.
* Full disk: a result that cannot be saved stops the run (:class:`HarnessWriteError`,
  carrying the report of what was saved); nothing saved before is touched.
* Local results first: a record is on disk before a listener logs it anywhere. Ctrl-C
  loses only the cell that was running (:class:`HarnessInterrupted` carries the report).
* Failures: an exception in ``fit``/``predict``/evaluation makes a ``status="failed"``
  record (message and traceback, appended to ``<results>/failures.log``); the other cells
  still run. Failed cells are not saved as finished, so a re-run retries them.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

from ltr_bench.errors import LtrBenchError
from ltr_bench.results import (
    ClaimWaitError,
    ResultRecord,
    ResultStore,
    ResultsWriteError,
    UnwritableRecordError,
    now,
)
from ltr_bench.run.cells import Cell, ExpandedPlan
from ltr_bench.run.cost import CellCosts
from ltr_bench.run.fold_proof import fold_inputs_of, proven_same, remember
from ltr_bench.run.listener import Listener, Listeners
from ltr_bench.run.plan import canonical_json
from ltr_bench.run.unit import (
    KNN_K,
    failed_record,
    freeze_fold,
    load_fold,
    new_record,
    run_cell,
)

# names of the unit of work and the listeners, importable from here for earlier callers

__all__ = [
    "KNN_K",
    "HarnessInterrupted",
    "HarnessWriteError",
    "Listener",
    "Listeners",
    "RunReport",
    "failed_record",
    "freeze_fold",
    "load_fold",
    "new_record",
    "run_cell",
    "run_plan",
]


@dataclass
class RunReport:
    """What :func:`run_plan` did. ``records``: ok records of the plan's cells in plan order
    (computed now or found finished); ``failed``: failed records; ``n_run``/``n_skipped``:
    cells computed now / found finished."""

    records: list[ResultRecord] = field(default_factory=list)
    failed: list[ResultRecord] = field(default_factory=list)
    n_run: int = 0
    n_skipped: int = 0
    n_cells: int = 0

    @property
    def n_saved(self) -> int:
        return len(self.records)


class HarnessWriteError(LtrBenchError):
    """A result could not be written (full disk, permissions): the run stopped cleanly.
    ``report`` holds what was finished and saved; ``str(err)`` names the file and why."""

    def __init__(self, message: str, report: RunReport):
        super().__init__(message)
        self.report = report


class HarnessInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_plan`. ``report`` holds what was finished and saved."""

    def __init__(self, report: RunReport):
        super().__init__("interrupted")
        self.report = report


def _fold_of(cell: Cell) -> tuple:
    """Cells with equal values see the same loaded fold."""
    return (cell.dataset_source, cell.fold, cell.seed, canonical_json(cell.dataset_options))


def _group_by_fold(cells: list[Cell]) -> Iterator[list[Cell]]:
    group: list[Cell] = []
    for c in cells:
        if group and _fold_of(c) != _fold_of(group[0]):
            yield group
            group = []
        group.append(c)
    if group:
        yield group


def _same_data(previous: ResultRecord, fold) -> bool:
    return bool(previous.fingerprints) and previous.fingerprints == dict(fold.fingerprints())


def run_plan(
    expanded: ExpandedPlan,
    store: ResultStore,
    *,
    force: bool = False,
    listener: Listener | None = None,
    warn: Callable[[str], None] | None = None,
    executor=None,
) -> RunReport:
    """Run every cell not yet finished (all with ``force``), fold by fold.

    ``executor`` (:mod:`ltr_bench.run.executors`; default: in this process): when it is not an
    in-process one, the pending cells go to it instead of being run here (see
    :func:`_run_on_executor`); resume checks, claims, saving and listeners are the same.

    Each fold is loaded once and shared by all rankers. A finished record is reused only
    when its split fingerprints equal those of the fold as loaded now (a fold whose cells
    are all finished is not loaded when its note proves the data unchanged:
    :mod:`.fold_proof`); otherwise the cell is recomputed and ``warn`` says why. Each cell
    is claimed (:meth:`ResultStore.claim`) before it is computed: a cell another process is
    computing is left to it and picked up as finished when its claim is released (or
    computed here if that process died). Each ok record is saved to ``store`` before
    ``listener`` hears of it. Ctrl-C raises :class:`HarnessInterrupted` with the report so
    far; a result that cannot be written (full disk) raises :class:`HarnessWriteError` with
    the report of what was saved.
    """
    listener = listener or Listener()
    warn = warn or (lambda message: None)
    cells = expanded.cells
    report = RunReport(n_cells=len(cells))
    since = now()
    index = 0
    remote = executor is not None and not getattr(executor, "in_process", True)
    to_ship: list[tuple[int, Cell]] = []  # cells for the executor, in plan order
    try:
        for group in _group_by_fold(cells):
            entries: list[tuple[int, Cell, ResultRecord | None]] = []
            for cell in group:
                index += 1
                entries.append((index, cell, None if force else store.get(cell.key)))
            first = group[0]
            if remote and all(previous is None for _, _, previous in entries):
                to_ship.extend((i, cell) for i, cell, _ in entries)  # workers load the fold
                continue
            if not force and proven_same(store.root, first, [p for _, _, p in entries]):
                for i, _, previous in entries:  # finished on data proven unchanged, unloaded
                    _reuse(report, store, listener, cast(ResultRecord, previous), i, len(cells))
                continue
            inputs = fold_inputs_of(first)  # read before the load: see fold_proof.remember
            listener.fold_loading(first.dataset, first.fold)
            fold = None
            load_error: Exception | None = None
            with warnings.catch_warnings(record=True) as caught:
                # the data layer's warnings (a damaged cache entry, regrouped queries) are
                # said once per fold through ``warn``, not as Python warning text
                warnings.simplefilter("always")
                try:
                    fold = load_fold(
                        first,
                        estimates=tuple(
                            dict.fromkeys(
                                c.propensity_estimate for c in group if c.propensity_estimate
                            )
                        ),
                        progress=functools.partial(
                            listener.fold_progress, first.dataset, first.fold
                        ),
                    )
                except Exception as exc:  # noqa: BLE001 - reported per cell below
                    load_error = exc
            for text in dict.fromkeys(str(w.message) for w in caught):
                warn(text)
            if fold is not None:
                remember(store.root, first, inputs, fold)
            pending: list[tuple[int, Cell]] = []
            for i, cell, previous in entries:
                if previous is not None and fold is not None and _same_data(previous, fold):
                    _reuse(report, store, listener, previous, i, len(cells))
                    continue
                if previous is not None and fold is not None:
                    warn(
                        f"{previous.summary_line()}: the data differs from the data of the "
                        "saved result (split fingerprints changed); recomputing it"
                    )
                pending.append((i, cell))
            if remote:
                to_ship.extend(pending)
                continue
            deferred: list[tuple[int, Cell]] = []
            for i, cell in pending:
                claim = store.claim(cell.key)
                if claim is None:
                    deferred.append((i, cell))
                    continue
                run = functools.partial(_run_claimed, report, store, listener, cell, i, len(cells))
                _holding(claim, run, fold, load_error, force=force, since=since)
            for i, cell in deferred:
                claim = _wait_for(report, store, listener, cell, i, len(cells), warn)
                if claim is not None:
                    run = functools.partial(
                        _run_claimed, report, store, listener, cell, i, len(cells)
                    )
                    _holding(claim, run, fold, load_error, force=force, since=since)
        if to_ship:
            _run_on_executor(
                executor,
                to_ship,
                report,
                store,
                listener,
                len(cells),
                force=force,
                since=since,
                warn=warn,
            )
    except KeyboardInterrupt:
        _plan_order(report, cells)
        raise HarnessInterrupted(report) from None
    except ResultsWriteError as exc:
        _plan_order(report, cells)
        raise HarnessWriteError(str(exc), report) from None
    _plan_order(report, cells)
    return report


def _reuse(
    report: RunReport,
    store: ResultStore,
    listener: Listener,
    previous: ResultRecord,
    index: int,
    total: int,
) -> None:
    store.tidy_models(previous)  # a model a killed --force run left beside this record
    report.records.append(previous)
    report.n_skipped += 1
    listener.cell_finished(previous, index, total, skipped=True)


def _holding(claim, run, *args, **kwargs) -> None:
    """``run(*args, claim, **kwargs)``; the claim is released on an exception (otherwise the
    listeners release it through :meth:`Listener.hold_claim` when done with the record)."""
    try:
        run(*args, claim, **kwargs)
    except BaseException:
        claim.release()
        raise


def _what(cell: Cell) -> str:
    seed = f" seed {cell.seed}" if cell.seed else ""
    return f"{cell.row_name} / {cell.dataset} fold {cell.fold}{seed}"


def _wait_for(
    report: RunReport,
    store: ResultStore,
    listener: Listener,
    cell: Cell,
    index: int,
    total: int,
    warn: Callable[[str], None],
):
    """The claim of a cell another process holds, once it is free; None when the wait was
    given up (the holder is stopped: :class:`ClaimWaitError`), after recording the cell as
    failed with stage ``"claim"`` and the reason."""
    try:
        return store.wait_claim(cell.key, _what(cell), say=warn)
    except ClaimWaitError as exc:
        rec = failed_record(cell, exc, "claim")
        _keep(report, store, rec)
        listener.cell_finished(rec, index, total, skipped=False)
        return None


def _announce(listener: Listener, rec: ResultRecord, claim, index: int, total: int, *, skipped):
    """Tell the listeners of a record of a claimed cell; the claim stays held until every
    listener released it (:meth:`Listener.hold_claim`; a listener object without that method
    is done when :meth:`Listener.cell_finished` returns)."""
    hold = getattr(listener, "hold_claim", None)
    if hold is None:
        try:
            listener.cell_finished(rec, index, total, skipped=skipped)
        finally:
            claim.release()
        return
    hold(rec, claim.release)
    listener.cell_finished(rec, index, total, skipped=skipped)


def _run_claimed(
    report: RunReport,
    store: ResultStore,
    listener: Listener,
    cell: Cell,
    index: int,
    total: int,
    fold,
    load_error,
    claim,
    *,
    force: bool,
    since: str,
) -> None:
    """Compute a claimed cell, unless another process finished it on the same data while
    this one waited or before it claimed it (then reuse that record; with ``force`` only a
    record finished after ``since``, the start of this run)."""
    if fold is not None:
        fresh = store.reload(cell.key)
        if fresh is not None and _same_data(fresh, fold) and (not force or fresh.finished >= since):
            store.drop_other_models(fresh)  # the claim is held
            report.records.append(fresh)
            report.n_skipped += 1
            _announce(listener, fresh, claim, index, total, skipped=True)
            return
    listener.cell_started(cell, index, total)
    if load_error is not None:
        rec = failed_record(cell, load_error, "load")
    else:
        rec = run_cell(cell, fold=fold, progress=_progress_for(listener, cell))
    _keep(report, store, rec)
    _announce(listener, rec, claim, index, total, skipped=False)


def _keep(report: RunReport, store: ResultStore, rec: ResultRecord) -> None:
    """Save a computed record (ok: as finished; failed: in the failure log) and count it;
    always before any listener hears of it."""
    report.n_run += 1
    save_or_fail(store, rec)
    if rec.ok:
        report.records.append(rec)
    else:
        report.failed.append(rec)
        store.log_failure(rec)


def save_or_fail(store: ResultStore, rec: ResultRecord) -> None:
    """Save an ok record; one holding a value its files could not give back
    (:class:`~ltr_bench.results.UnwritableRecordError`, e.g. a metric that is not a number)
    becomes a failed record of stage ``"save"`` naming the value, and nothing is written."""
    if not rec.ok:
        return
    try:
        store.save(rec)
    except UnwritableRecordError as exc:
        rec.status, rec.error_stage, rec.error = "failed", "save", f"UnwritableRecordError: {exc}"
        rec.traceback = f"{rec.error} (nothing of this record was written)\n"


def _plan_order(report: RunReport, cells: list[Cell]) -> None:
    position = {c.key: i for i, c in enumerate(cells)}
    report.records.sort(key=lambda r: position.get(r.key, len(position)))
    report.failed.sort(key=lambda r: position.get(r.key, len(position)))


def _progress_for(listener: Listener, cell: Cell):
    def report(done: int, total: int, message: str) -> None:
        listener.cell_progress(cell, done, total, message)

    return report


def _run_on_executor(
    executor,
    todo: list[tuple[int, Cell]],
    report: RunReport,
    store: ResultStore,
    listener: Listener,
    total: int,
    *,
    force: bool,
    since: str,
    warn: Callable[[str], None],
) -> None:
    """Run ``todo`` ((plan index, cell) pairs) on ``executor``; this process stays the only
    writer: each returned record is saved (or its failure logged) before ``listener`` hears
    of it, as in :func:`_run_claimed`. Every cell is claimed while it is out and until the
    listeners are done with its record. A cell found finished once claimed (another process
    finished it since this run started; it loaded the data at that time) is reused; a cell
    another process is computing is waited for after the others, then reused or run here."""
    claims = {}
    deferred: list[tuple[int, Cell]] = []
    try:
        ready = []
        for i, cell in todo:
            claim = store.claim(cell.key)
            if claim is None:
                deferred.append((i, cell))
            elif not _reused(report, store, listener, cell, claim, i, total, force, since):
                claims[cell.key] = claim
                ready.append((i, cell))
        _ship(executor, ready, claims, report, store, listener, total)
        for i, cell in deferred:
            claim = _wait_for(report, store, listener, cell, i, total, warn)
            if claim is None or _reused(
                report, store, listener, cell, claim, i, total, force, since
            ):
                continue
            claims[cell.key] = claim
            _ship(executor, [(i, cell)], claims, report, store, listener, total)
    finally:
        for claim in claims.values():
            claim.release()


def _reused(report, store, listener, cell: Cell, claim, index: int, total: int, force, since):
    """After taking a cell's claim: reuse the record another process finished meanwhile
    (with ``force``, only one finished after ``since``) and hand the claim to the listeners;
    False when the cell is still to be computed."""
    fresh = store.reload(cell.key)
    if fresh is None or (force and fresh.finished < since):
        return False
    store.drop_other_models(fresh)  # the claim is held
    report.records.append(fresh)
    report.n_skipped += 1
    try:
        _announce(listener, fresh, claim, index, total, skipped=True)
    except BaseException:
        claim.release()
        raise
    return True


def _ship(
    executor,
    batch: list[tuple[int, Cell]],
    claims: dict,
    report: RunReport,
    store: ResultStore,
    listener: Listener,
    total: int,
) -> None:
    if not batch:
        return
    cells = [cell for _, cell in batch]
    costs = CellCosts(store.records())  # the longest cells first, from earlier runs and this
    results = executor.map_cells(
        cells,
        started=lambda k: listener.cell_started(cells[k], batch[k][0], total),
        # the rankers' reports from the workers, as _progress_for passes them in process
        progress=lambda k, done, n, message: listener.cell_progress(cells[k], done, n, message),
        cost=costs,
    )
    try:
        for k, rec in results:
            costs.add(rec)
            _keep(report, store, rec)
            claim = claims.pop(cells[k].key)
            try:
                _announce(listener, rec, claim, batch[k][0], total, skipped=False)
            except BaseException:
                claim.release()
                raise
    finally:
        results.close()  # an exception here (Ctrl-C, full disk) cancels the cells still out
