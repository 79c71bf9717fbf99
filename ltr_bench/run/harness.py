"""The unit of work and its orchestration: fit, score, evaluate; cell after cell.

Data flow: :func:`ltr_bench.run.cells.expand_plan` (validates everything, one
:class:`~ltr_bench.run.cells.Cell` per dataset x fold x ranker configuration x seed) ->
:func:`run_cell` (pure: a cell and, when the caller has it, the loaded fold, in; a
:class:`~ltr_bench.results.ResultRecord` out) -> :class:`~ltr_bench.results.ResultStore`
(saved before anyone else hears of it) -> a :class:`Listener` (the CLI prints; the MLflow
listener of :mod:`ltr_bench.tracking` logs). This module never imports MLflow.

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
  fingerprints equal those of the fold loaded now: changed data is recomputed, never
  reported with old numbers.
* One cell, one computation: a cell is claimed (a lock file per key in the results folder)
  while it is computed; concurrent runs of overlapping plans wait for each other's cells
  instead of computing them twice.
* Full disk: a result that cannot be saved stops the run (:class:`HarnessWriteError`,
  carrying the report of what was saved); nothing saved before is touched.
* Local results first: a record is on disk before a listener logs it anywhere. Ctrl-C
  loses only the cell that was running (:class:`HarnessInterrupted` carries the report).
* Failures: an exception in ``fit``/``predict``/evaluation makes a ``status="failed"``
  record (message and traceback, appended to ``<results>/failures.log``); the other cells
  still run. Failed cells are not saved as finished, so a re-run retries them.

Query-by-example data (``Split.extras`` has ``doc_class`` and ``query_class``): every record
also gets ``extra_metrics["knn_error"]``, the k-NN classification error (k = ``KNN_K`` = 3,
the MLR paper's demos' k) read off the ranker's test scores by :func:`metrics.knn_error`,
the one implementation used everywhere.
"""

from __future__ import annotations

import functools
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.environment import environment
from ltr_bench.errors import LtrBenchError
from ltr_bench.evaluation.conventions import evaluate_profile
from ltr_bench.evaluation.metrics import evaluate_conventions
from ltr_bench.progress import progress_handler
from ltr_bench.results import (
    ResultRecord,
    ResultStore,
    ResultsWriteError,
    jsonable,
    now,
    trec_run_text,
)
from ltr_bench.run.cells import Cell, ExpandedPlan, build_ranker, ranker_tags
from ltr_bench.run.plan import canonical_json
from ltr_bench.timing import PeakMemory, Stopwatch, load_average, thread_limit, time_scoring

__all__ = [
    "HarnessInterrupted",
    "HarnessWriteError",
    "Listener",
    "Listeners",
    "RunReport",
    "failed_record",
    "freeze_fold",
    "new_record",
    "run_cell",
    "run_plan",
]

KNN_K = 3


# --------------------------------------------------------------------------------------------
# the unit of work


def _data():
    from ltr_bench import data

    return data


def _load_fold(cell: Cell, progress=None):
    data = _data()
    source: Any = cell.dataset_source
    if cell.dataset_identity.get("kind") == "path":
        source = Path(source)
    with Stopwatch() as sw:
        fold = data.load_fold(
            source,
            cell.fold,
            data_dir=cell.data_dir,
            cache_dir=cell.cache_dir,
            seed=cell.seed,
            options=dict(cell.dataset_options) or None,
            progress=progress,
        )
    fold.load_seconds = sw.seconds
    return fold


def freeze_fold(fold) -> None:
    """Make every split's X, y, qid read-only, so that no ranker can change the data the
    next ranker sees (an in-place write raises ValueError and fails that cell only)."""
    for split in (fold.train, fold.vali, fold.test):
        if split is None:
            continue
        for arr in (split.X, split.y, split.qid):
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False


def _check_scores(scores: Any, n: int, ranker: str) -> np.ndarray:
    arr = np.asarray(scores)
    if arr.shape != (n,):
        raise ValueError(
            f"ranker {ranker!r} returned scores of shape {arr.shape}; expected "
            f"({n},), one score per test document"
        )
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(
            f"ranker {ranker!r} returned a non-finite score ({arr[bad]}) at test row {bad}"
        )
    return arr


def new_record(cell: Cell) -> ResultRecord:
    """A record for ``cell`` with everything known before running it (status "ok")."""
    return ResultRecord(
        key=cell.key,
        plan_key=cell.plan_key,
        config_key=cell.config_key,
        ranker=cell.ranker,
        label=cell.label or cell.ranker,
        dataset=cell.dataset,
        fold=cell.fold,
        seed=cell.seed,
        ranker_distribution=cell.ranker_distribution,
        ranker_version=cell.ranker_version,
        params=jsonable(cell.params),
        user_params=jsonable(cell.user_params),
        dataset_source=cell.dataset_source,
        dataset_options=jsonable(cell.dataset_options),
        dataset_identity=jsonable(cell.dataset_identity),
        metrics_requested=list(cell.metrics),
        n_threads=cell.threads,
        started=now(),
        environment=environment(),
        config=cell.config(),
    )


def failed_record(cell: Cell, exc: BaseException, stage: str) -> ResultRecord:
    """A ``status="failed"`` record for ``cell`` (e.g. its fold could not be loaded)."""
    rec = new_record(cell)
    rec.status = "failed"
    rec.error_stage = stage
    rec.error = f"{type(exc).__name__}: {exc}"
    rec.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    rec.finished = now()
    return rec


def _fitted_info(ranker) -> dict[str, Any]:
    """The ranker's ``fitted_info()`` (model size, diagnostics) as JSON-able scalars."""
    fn = getattr(ranker, "fitted_info", None)
    if not callable(fn):
        return {}
    info = fn()
    if not isinstance(info, dict):
        raise TypeError(f"fitted_info() must return a dict, got {type(info).__name__}")
    return {str(k): jsonable(v) for k, v in info.items()}


def _warning_text(w: warnings.WarningMessage) -> str:
    return f"{w.category.__name__}: {w.message}"


def run_cell(
    cell: Cell,
    *,
    fold=None,
    progress: Callable[[int, int, str], None] | None = None,
) -> ResultRecord:
    """Fit on train (validation split as ``eval_set``), score test, evaluate: one record.

    ``fold``: the loaded fold when the caller has it (the harness shares one per fold among
    all rankers); otherwise it is loaded from the cell. ``progress(done, total, message)``
    receives the ranker's own progress reports. Warnings the ranker raises (``warnings``
    module) are kept in ``record.warnings``. Exceptions from loading, the ranker or the
    evaluation give a ``status="failed"`` record; ``KeyboardInterrupt`` propagates.
    """
    rec = new_record(cell)
    rec.load_avg["start"] = load_average()
    stage = "load"
    try:
        if fold is None:
            fold = _load_fold(cell)
        if fold.load_seconds is not None:
            rec.stage_seconds["load"] = fold.load_seconds
        freeze_fold(fold)
        rec.fingerprints = dict(fold.fingerprints())
        train, test, vali = fold.train, fold.test, fold.vali
        rec.n_train_docs, rec.n_test_docs = train.n_docs, test.n_docs
        rec.n_test_queries = test.n_queries

        stage = "setup"
        with Stopwatch() as setup:
            ranker = build_ranker(
                cell.ranker,
                cell.user_params,
                seed=cell.seed,
                threads=cell.threads,
                query_dim=fold.query_dim,
            )
            rec.params = jsonable(ranker.get_params(deep=False))
            tags = ranker_tags(ranker)
        rec.stage_seconds["setup"] = setup.seconds
        if cell.threads is None and tags.thread_param:
            value = rec.params.get(tags.thread_param)
            rec.n_threads = value if isinstance(value, int) and value > 0 else None
        eval_set = None if vali is None else (vali.X, vali.y, vali.qid)
        max_label = cell.max_label if cell.max_label is not None else fold.max_label

        with (
            thread_limit(cell.threads),
            PeakMemory() as mem,
            progress_handler(progress),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always")
            stage = "fit"
            with Stopwatch() as sw:
                ranker.fit(train.X, train.y, qid=train.qid, eval_set=eval_set)
            stage = "predict"
            timing = time_scoring(
                lambda: ranker.predict(test.X, qid=test.qid),
                test.n_docs,
                repeats=cell.score_repeats,
            )
        for w in caught:
            text = _warning_text(w)
            if text not in rec.warnings:
                rec.warnings.append(text)
        rec.fit_seconds = rec.stage_seconds["fit"] = sw.seconds
        rec.stage_seconds["score"] = timing.warmup_seconds + sum(timing.seconds)
        rec.score_us_per_doc = timing.us_per_doc
        rec.score_repeats = timing.repeats
        rec.peak_rss_mb = mem.peak_mb
        rec.ranker_peak_mb = mem.above_entry_mb
        rec.peak_rss_method = mem.method
        stage = "fitted_info"
        rec.model_info = _fitted_info(ranker)

        scores = _check_scores(timing.scores, test.n_docs, cell.ranker)
        if scores.size > 1 and np.all(scores == scores[0]):
            rec.flags.append("constant_scores")
            rec.warnings.append(
                "all test scores are equal: the fitted model is constant, so every metric is "
                "the value of a random ranking (check the ranker's parameters, e.g. minimum "
                "leaf sizes or hessians on small data)"
            )
        stage = "evaluate"
        with Stopwatch() as evaluation:
            rec.metrics, rec.per_query = evaluate_conventions(
                test.y, scores, test.qid, cell.metrics, max_label=max_label
            )
            if cell.save_scores:
                rec.run_text = trec_run_text(test.qid, scores, tag=cell.label or cell.ranker)
            for profile in cell.conventions:  # the same scores as another tool scores them
                means, per_query = evaluate_profile(
                    test.y, scores, test.qid, cell.metrics, profile, max_label=max_label
                )
                rec.metrics.update(means)
                rec.per_query.update(per_query)
            extras = test.extras
            if "doc_class" in extras and "query_class" in extras:
                # query-by-example data: the MLR paper's measure
                from ltr_bench.evaluation.metrics import knn_error

                rec.extra_metrics["knn_error"] = knn_error(
                    scores, test.qid, extras["doc_class"], extras["query_class"], k=KNN_K
                )
        rec.stage_seconds["evaluate"] = evaluation.seconds
        rec.status = "ok"
    except Exception as exc:  # noqa: BLE001 - a failing ranker must not stop the benchmark
        rec.status = "failed"
        rec.error_stage = stage
        rec.error = f"{type(exc).__name__}: {exc}"
        rec.traceback = traceback.format_exc()
    rec.load_avg["end"] = load_average()
    busy = max((v for v in rec.load_avg.values() if v is not None), default=0.0)
    if busy > (cell.threads or 1) + 1:
        rec.flags.append("loaded_machine")
    rec.finished = now()
    return rec


# --------------------------------------------------------------------------------------------
# running a plan


class Listener:
    """Callbacks of :func:`run_plan` (all optional no-ops); the CLI prints and logs here."""

    def fold_loading(self, dataset: str, fold: int) -> None:
        """About to load (or generate) a fold."""

    def fold_progress(self, dataset: str, fold: int, done: int, total: int, message: str) -> None:
        """Progress of a long parse or generation (see :mod:`ltr_bench.progress`)."""

    def cell_started(self, cell: Cell, index: int, total: int) -> None:
        """``index`` is 1-based over all cells of the plan."""

    def cell_progress(self, cell: Cell, done: int, total: int, message: str) -> None:
        """The ranker reported progress (see :mod:`ltr_bench.progress`)."""

    def cell_finished(self, record: ResultRecord, index: int, total: int, *, skipped: bool) -> None:
        """A cell finished (ok: already saved locally; failed: logged) or was skipped."""


class Listeners(Listener):
    """Several listeners heard in order (e.g. the console, then MLflow)."""

    def __init__(self, *listeners):
        self.listeners = [x for x in listeners if x is not None]

    def __getattribute__(self, name: str):
        if name in (
            "fold_loading",
            "fold_progress",
            "cell_started",
            "cell_progress",
            "cell_finished",
        ):
            targets = object.__getattribute__(self, "listeners")

            def fan_out(*args, **kwargs):
                for target in targets:
                    getattr(target, name)(*args, **kwargs)

            return fan_out
        return object.__getattribute__(self, name)


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
    are all finished is still loaded, from the parsed-data cache, to check this); otherwise
    the cell is recomputed and ``warn`` says why. Each cell is claimed
    (:meth:`ResultStore.claim`) before it is computed: a cell another process is computing
    is left to it and picked up as finished when its claim is released (or computed here if
    that process died). Each ok record is saved to ``store`` before ``listener`` hears of
    it. Ctrl-C raises :class:`HarnessInterrupted` with the report so far; a result that
    cannot be written (full disk) raises :class:`HarnessWriteError` with the report of what
    was saved.
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
            listener.fold_loading(first.dataset, first.fold)
            fold = None
            load_error: Exception | None = None
            with warnings.catch_warnings(record=True) as caught:
                # the data layer's warnings (a damaged cache entry, regrouped queries) are
                # said once per fold through ``warn``, not as Python warning text
                warnings.simplefilter("always")
                try:
                    fold = _load_fold(
                        first,
                        progress=functools.partial(
                            listener.fold_progress, first.dataset, first.fold
                        ),
                    )
                except Exception as exc:  # noqa: BLE001 - reported per cell below
                    load_error = exc
            for text in dict.fromkeys(str(w.message) for w in caught):
                warn(text)
            pending: list[tuple[int, Cell]] = []
            for i, cell, previous in entries:
                if previous is not None and fold is not None and _same_data(previous, fold):
                    _reuse(report, listener, previous, i, len(cells))
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
                with claim:
                    _run_claimed(
                        report,
                        store,
                        listener,
                        cell,
                        i,
                        len(cells),
                        fold,
                        load_error,
                        force=force,
                        since=since,
                    )
            for i, cell in deferred:
                warn(
                    f"{cell.label or cell.ranker} / {cell.dataset} fold {cell.fold}: another "
                    "process is computing this cell; waiting for it"
                )
                with store.claim(cell.key, wait=True):
                    _run_claimed(
                        report,
                        store,
                        listener,
                        cell,
                        i,
                        len(cells),
                        fold,
                        load_error,
                        force=force,
                        since=since,
                    )
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
    report: RunReport, listener: Listener, previous: ResultRecord, index: int, total: int
) -> None:
    report.records.append(previous)
    report.n_skipped += 1
    listener.cell_finished(previous, index, total, skipped=True)


def _run_claimed(
    report: RunReport,
    store: ResultStore,
    listener: Listener,
    cell: Cell,
    index: int,
    total: int,
    fold,
    load_error,
    *,
    force: bool,
    since: str,
) -> None:
    """Compute a claimed cell, unless another process finished it on the same data while
    this one waited (then reuse that record; with ``force`` only a record finished after
    ``since``, the start of this run)."""
    if fold is not None:
        fresh = store.reload(cell.key)
        if fresh is not None and _same_data(fresh, fold) and (not force or fresh.finished >= since):
            _reuse(report, listener, fresh, index, total)
            return
    listener.cell_started(cell, index, total)
    if load_error is not None:
        rec = failed_record(cell, load_error, "load")
    else:
        rec = run_cell(cell, fold=fold, progress=_progress_for(listener, cell))
    _keep(report, store, rec)
    listener.cell_finished(rec, index, total, skipped=False)


def _keep(report: RunReport, store: ResultStore, rec: ResultRecord) -> None:
    """Save a computed record (ok: as finished; failed: in the failure log) and count it;
    always before any listener hears of it."""
    report.n_run += 1
    if rec.ok:
        store.save(rec)
        report.records.append(rec)
    else:
        report.failed.append(rec)
        store.log_failure(rec)


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
    of it, as in :func:`_run_claimed`. Every cell is claimed while it is out; a cell another
    process is computing is waited for after the others and reused when that process
    finished it (it loaded the data at that time), otherwise it is run here too."""
    claims = {}
    deferred: list[tuple[int, Cell]] = []
    try:
        ready = []
        for i, cell in todo:
            claim = store.claim(cell.key)
            if claim is None:
                deferred.append((i, cell))
            else:
                claims[cell.key] = claim
                ready.append((i, cell))
        _ship(executor, ready, claims, report, store, listener, total)
        for i, cell in deferred:
            warn(
                f"{cell.label or cell.ranker} / {cell.dataset} fold {cell.fold}: another "
                "process is computing this cell; waiting for it"
            )
            claims[cell.key] = store.claim(cell.key, wait=True)
            fresh = store.reload(cell.key)
            if fresh is not None and (not force or fresh.finished >= since):
                claims.pop(cell.key).release()
                _reuse(report, listener, fresh, i, total)
                continue
            _ship(executor, [(i, cell)], claims, report, store, listener, total)
    finally:
        for claim in claims.values():
            claim.release()


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
    results = executor.map_cells(
        cells,
        started=lambda k: listener.cell_started(cells[k], batch[k][0], total),
        # the rankers' reports from the workers, as _progress_for passes them in process
        progress=lambda k, done, n, message: listener.cell_progress(cells[k], done, n, message),
    )
    try:
        for k, rec in results:
            _keep(report, store, rec)
            claims.pop(cells[k].key).release()
            listener.cell_finished(rec, batch[k][0], total, skipped=False)
    finally:
        results.close()  # an exception here (Ctrl-C, full disk) cancels the cells still out
