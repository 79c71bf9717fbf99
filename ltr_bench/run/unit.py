"""The unit of work: one cell in, one :class:`~ltr_bench.results.ResultRecord` out.

:func:`run_cell` is a pure function of a :class:`~ltr_bench.run.cells.Cell` (and, when the
caller has it, the loaded fold): load, fit on train (validation split as ``eval_set``), score
test, evaluate. It writes nothing but the kept model (:mod:`ltr_bench.run.keep`), so an
executor can run it anywhere (in this process or on a Dask worker);
:mod:`ltr_bench.run.harness` saves and announces what it returns.

Guarantees
----------
* Identical splits: every split's arrays are frozen read-only (:func:`freeze_fold`) before
  the ranker sees them; the record carries the train / vali / test fingerprints.
* One seed: every ranker gets ``cell.seed`` through the parameter its tags declare
  (:attr:`RankerTags.seed_param`), so a cell run on its own reproduces the same number.
* Kept models: with ``cell.keep_models`` the fitted model is saved, after the evaluation,
  to a new folder beside the results by this process (:mod:`ltr_bench.run.keep`).
* Failures: an exception in loading, ``fit``/``predict``/evaluation makes a
  ``status="failed"`` record (message, stage and traceback); ``KeyboardInterrupt``
  propagates.

Query-by-example data (``Split.extras`` has ``doc_class`` and ``query_class``): every record
also gets ``extra_metrics["knn_error"]``, the k-NN classification error (k = ``KNN_K`` = 3,
the MLR paper's demos' k) read off the ranker's test scores by :func:`metrics.knn_error`,
the one implementation used everywhere.
"""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.clicks.options import data_options
from ltr_bench.environment import environment
from ltr_bench.evaluation.conventions import evaluate_profile
from ltr_bench.evaluation.metrics import evaluate_conventions
from ltr_bench.progress import progress_handler
from ltr_bench.results import ResultRecord, jsonable, now, trec_run_text
from ltr_bench.run.cells import Cell, build_ranker, ranker_tags
from ltr_bench.run.keep import keep_model
from ltr_bench.run.param_files import check_unchanged
from ltr_bench.timing import (
    PeakMemory,
    QueryLatency,
    Stopwatch,
    load_average,
    thread_limit,
    time_queries,
    time_scoring,
)

__all__ = [
    "KNN_K",
    "click_keywords",
    "failed_record",
    "freeze_fold",
    "load_fold",
    "new_record",
    "run_cell",
]

KNN_K = 3


def _data():
    from ltr_bench import data

    return data


def load_fold(cell: Cell, progress=None, estimates=None):
    """The fold a cell runs on, loaded (or generated) as the cell describes it; its
    ``load_seconds`` is set. ``progress(done, total, message)`` hears a long parse.
    ``estimates``: the propensity estimators the click data must carry (default: the
    cell's own, :attr:`Cell.propensity_estimate`; the harness passes those of every cell
    sharing the fold)."""
    if estimates is None:
        estimates = (cell.propensity_estimate,) if cell.propensity_estimate else ()
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
            options=data_options(cell.dataset_options) or None,
            progress=progress,
        )
        clicks = cell.dataset_identity.get("clicks")
        if clicks:  # simulated click logs: train / vali labels become clicks (test kept)
            from ltr_bench.clicks import simulate_clicks

            fold = simulate_clicks(
                fold, clicks, seed=cell.seed, cache_dir=cell.cache_dir, estimates=estimates
            )
    fold.load_seconds = sw.seconds
    return fold


def click_keywords(split, tags) -> dict[str, np.ndarray]:
    """The click keywords of ``fit`` for this ranker: ``{"position": ..., "propensity": ...}``
    from ``split.extras`` when the ranker declares ``RankerTags.accepts_position`` and the
    split is click data (:mod:`ltr_bench.clicks`); ``{}`` otherwise (declared, never sniffed).
    ``propensity`` is the true one, or the estimate ``RankerTags.propensity_estimate`` names
    (:mod:`ltr_bench.clicks.propensities`; a KeyError when the fold was loaded without it)."""
    if not getattr(tags, "accepts_position", False):
        return {}
    out = {k: split.extras[k] for k in ("position", "propensity") if k in split.extras}
    method = getattr(tags, "propensity_estimate", None)
    if method and "position" in split.extras:
        from ltr_bench.clicks.propensities import extra_name

        out["propensity"] = split.extras[extra_name(method)]
    return out


def freeze_fold(fold) -> None:
    """Make every split's X, y, qid read-only, so that no ranker can change the data the
    next ranker sees (an in-place write raises ValueError and fails that cell only)."""
    for split in (fold.train, fold.vali, fold.test):
        if split is None:
            continue
        for arr in (split.X, split.y, split.qid, *split.extras.values()):
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


def _learning_curves(ranker) -> dict[str, list[float]]:
    """The ranker's ``learning_curves()`` (if it has the method) as ``{str: [float, ...]}``."""
    fn = getattr(ranker, "learning_curves", None)
    if not callable(fn):
        return {}
    curves = fn()
    if not isinstance(curves, dict):
        raise TypeError(f"learning_curves() must return a dict, got {type(curves).__name__}")
    out: dict[str, list[float]] = {}
    for name, values in curves.items():
        try:
            out[str(name)] = [float(v) for v in values]
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"learning_curves()[{name!r}] must be a sequence of numbers ({exc})"
            ) from None
    return out


def _time_queries(ranker, split) -> tuple[QueryLatency, str]:
    """The split scored one query per ``predict`` call (:func:`ltr_bench.timing.time_queries`),
    and ``""`` -- or no latency and a warning's text when a one-query call failed: the bulk
    scores (the quality numbers) stand either way."""
    from ltr_bench.ranker import query_boundaries

    X, qid = split.X, split.qid
    try:
        return time_queries(
            lambda a, b: ranker.predict(X[a:b], qid=qid[a:b]), query_boundaries(qid)
        ), ""
    except Exception as exc:  # a ranker's error on one query must not lose the cell
        text = f"per-query latency not measured: predict on one query failed: {exc}"
        return QueryLatency([], float("nan"), float("nan")), text


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
            fold = load_fold(cell)
        if fold.load_seconds is not None:
            rec.stage_seconds["load"] = fold.load_seconds
        freeze_fold(fold)
        rec.fingerprints = dict(fold.fingerprints())
        rec.click_log = jsonable(fold.info.get("click_log", {}))
        train, test, vali = fold.train, fold.test, fold.vali
        rec.n_train_docs, rec.n_test_docs = train.n_docs, test.n_docs
        rec.n_test_queries = test.n_queries

        stage = "setup"
        check_unchanged(cell.param_files, cell.params, cell.ranker)  # edited since planning?
        with Stopwatch() as setup:
            ranker = build_ranker(
                cell.ranker,
                cell.user_params,
                seed=cell.seed,
                threads=cell.threads,
                query_dim=fold.query_dim,
                click_labels=bool(cell.dataset_identity.get("clicks")),
            )
            rec.params = jsonable(ranker.get_params(deep=False))
            tags = ranker_tags(ranker)
        rec.stage_seconds["setup"] = setup.seconds
        if cell.threads is None and tags.thread_param:
            value = rec.params.get(tags.thread_param)
            rec.n_threads = value if isinstance(value, int) and value > 0 else None
        eval_set = None if vali is None else (vali.X, vali.y, vali.qid)
        max_label = cell.max_label if cell.max_label is not None else fold.max_label
        keywords = click_keywords(train, tags)
        if cell.dataset_identity.get("clicks"):
            # what fit was given besides the clicks (by the ranker's tags): [] = trained
            # naively; the report pairs each debiased row with its naive one by it
            rec.config["fit_keywords"] = sorted(keywords)

        with (
            thread_limit(cell.threads),
            PeakMemory() as mem,
            progress_handler(progress),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always")
            stage = "fit"
            with Stopwatch() as sw:
                ranker.fit(
                    train.X,
                    train.y,
                    qid=train.qid,
                    eval_set=eval_set,
                    **keywords,
                )
            check_unchanged(cell.param_files, cell.params, cell.ranker)  # read during fit?
            stage = "predict"
            timing = time_scoring(
                lambda: ranker.predict(test.X, qid=test.qid),
                test.n_docs,
                repeats=cell.score_repeats,
            )
            stage = "query_latency"
            latency, latency_error = _time_queries(ranker, test)
        for w in caught:
            text = _warning_text(w)
            if text not in rec.warnings:
                rec.warnings.append(text)
        rec.fit_seconds = rec.stage_seconds["fit"] = sw.seconds
        rec.stage_seconds["score"] = timing.warmup_seconds + sum(timing.seconds)
        rec.score_us_per_doc = timing.us_per_doc
        rec.score_repeats = timing.repeats
        rec.stage_seconds["score"] += sum(latency.seconds)
        rec.query_ms_p50, rec.query_ms_p99 = latency.p50_ms, latency.p99_ms
        rec.query_latency_queries = latency.n_queries
        if latency_error:
            rec.warnings.append(latency_error)
        rec.peak_rss_mb = mem.peak_mb
        rec.ranker_peak_mb = mem.above_entry_mb
        rec.peak_rss_method = mem.method
        stage = "fitted_info"
        rec.model_info = _fitted_info(ranker)
        stage = "learning_curves"
        rec.learning_curves = _learning_curves(ranker)

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
            docid = test.extras.get("docid")  # the data file's own ids, when it has them
            if cell.save_scores:
                rec.run_text = trec_run_text(
                    test.qid, scores, tag=cell.label or cell.ranker, docid=docid
                )
            for profile in cell.conventions:  # the same scores as another tool scores them
                means, per_query = evaluate_profile(
                    test.y,
                    scores,
                    test.qid,
                    cell.metrics,
                    profile,
                    max_label=max_label,
                    docid=docid,
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
        keep_model(ranker, cell, fold, rec)  # beside the result, by this process (keep.py)
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
