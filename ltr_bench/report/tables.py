"""Comparison tables and paired significance tests from finished results (no retraining).

Pure: the input is :class:`~ltr_bench.results.ResultRecord` objects, read from the local
results store (:class:`~ltr_bench.results.ResultStore`) or from MLflow
(:func:`ltr_bench.tracking.fetch_fold_results`); both give the same report. Nothing here
fits, predicts or touches MLflow. Rendering is in :mod:`ltr_bench.report.text`.

Rows
    One row per configuration (``ResultRecord.config_key``: ranker, parameters, dataset
    options; the seed and thread count are not part of it), named by its plain name: the
    plan's label for it and the data variant it was trained on in words
    (``lightgbm · clicks pbm eta=1 x10``); configurations that share a name are told apart
    in words (:mod:`ltr_bench.report.names`, which also picks the baseline). Rows are in
    natural order of their names (:func:`ltr_bench.results.labels.label_sort_key`:
    ``lgmml[n_metrics=2]`` before ``lgmml[n_metrics=10]``), the
    baseline first. Lists of names and labels (``--ranker a,b``) are split by
    :func:`ltr_bench.results.labels.split_names`, which keeps the commas inside ``[...]``.

Units
    A row's values are per *unit* = (fold, seed). Only units that every selected row has are
    used (a note names the ones left out), so all rows are averaged over the same splits and
    seeds. Rows are compared only when they saw the same data: the train / vali / test
    fingerprints of every unit agree. Rows run on other data are left out, and a note says
    which and why (the baseline's data decides). Rows trained on simulated clicks
    (:mod:`ltr_bench.clicks`) and rows on the true labels (or on other click settings) of the
    same folds are compared when their test fingerprints agree (:func:`same_data`; the test
    labels are the true relevance in both; :mod:`ltr_bench.report.click_rows`), and a note
    says so.

Cells
    mean and sample standard deviation (``ddof=1``; none with one unit) over those units of
    the unit-level metric (the mean over the test queries), of ``fit_seconds``, of
    ``score_us_per_doc`` and of the per-query latency ``query_ms_p50`` / ``query_ms_p99``
    (a record without it, from before it was measured, is left out of those two: shown as
    missing). ``Stat.seed_std`` is the standard deviation over seeds of the
    per-seed means (NaN with one seed): the variance due to the seed alone.

Significance
    For each non-baseline row and metric, per-query values are paired with the baseline's
    by ``(fold, seed, qid)`` and pooled (``n`` pairs). Paired t-test
    (``scipy.stats.ttest_rel``, two-sided) and Wilcoxon signed-rank
    (``scipy.stats.wilcoxon``, two-sided, zero differences dropped) give ``p_t`` and
    ``p_w``. Each family (all t-test p-values over rows x metrics; all Wilcoxon p-values)
    gets Holm's step-down correction (:func:`ltr_bench.evaluation.stats.holm`). A cell is marked a
    *win* (``▲``) or *loss* (``▼``) when the mean difference is positive / negative and the
    Holm-adjusted p-value of the chosen test is below ``alpha``; with ``test="both"``
    (default) both adjusted p-values must be. All-zero differences give p = 1; a non-zero
    constant difference gives ``p_t = 0`` (t is infinite).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import ltr_bench.report.click_pivot as click_pivot
import ltr_bench.report.click_rows as click_rows
import ltr_bench.report.names as names
from ltr_bench.report.click_rows import click_comparison_note, clicks_of, same_data
from ltr_bench.report.pairing import (
    Comparison,
    ReportError,
    Unit,
    compare_rows,
    correct_and_mark,
)
from ltr_bench.results import ResultRecord, group_flags
from ltr_bench.results.labels import label_sort_key

__all__ = ["Comparison", "Report", "ReportError", "Row", "Stat", "build_report", "normalise_metric"]

WIN, LOSS = "\u25b2", "\u25bc"  # ▲ ▼
TESTS = ("both", "ttest", "wilcoxon")
TIMING_KEYS = ("fit_seconds", "score_us_per_doc", "query_ms_p50", "query_ms_p99")
TIMING_LABELS = {
    "fit_seconds": "fit time (s)",
    "score_us_per_doc": "scoring (µs/doc)",
    "query_ms_p50": "query p50 (ms)",
    "query_ms_p99": "query p99 (ms)",
}


def normalise_metric(name: str) -> str:
    """Any spelling of a metric (``NDCG@10``, ``ndcg_at_10``, its empty-query-0 form) -> the
    record's key (:class:`ltr_bench.evaluation.metrics.MetricKey`); other names (``knn_error``) are
    returned lower-cased."""
    from ltr_bench.evaluation.metrics import metric_key_or_none

    key = metric_key_or_none(name)
    return key.text if key is not None else name.strip().lower()


@dataclass
class Stat:
    """mean and sample std (ddof=1, NaN for one value) of ``n`` unit values; ``seed_std``:
    std over seeds of the per-seed means (NaN with one seed)."""

    mean: float
    std: float
    n: int
    seed_std: float = float("nan")

    @classmethod
    def of(cls, values: dict[Unit, float] | Iterable[float]) -> Stat:
        by_seed: dict[int, list[float]] = {}
        if isinstance(values, dict):
            for (_, seed), v in values.items():
                if v is not None and not math.isnan(v):
                    by_seed.setdefault(seed, []).append(v)
            flat = [v for vs in by_seed.values() for v in vs]
        else:
            flat = [v for v in values if v is not None and not math.isnan(v)]
        arr = np.asarray(flat, dtype=np.float64)
        if arr.size == 0:
            return cls(float("nan"), float("nan"), 0)
        std = float(np.std(arr, ddof=1)) if arr.size > 1 else float("nan")
        seed_std = float("nan")
        if len(by_seed) > 1:
            seed_std = float(np.std([np.mean(v) for v in by_seed.values()], ddof=1))
        return cls(float(np.mean(arr)), std, int(arr.size), seed_std)


@dataclass
class Row:
    label: str
    ranker: str
    config_key: str
    params: dict[str, Any]
    runs: dict[Unit, ResultRecord]  # the used units only
    cells: dict[str, Stat]  # metric -> over units; also the TIMING_KEYS
    is_baseline: bool = False

    @property
    def parent_run_ids(self) -> list[str]:
        ids = {(r.mlflow or {}).get("parent_run_id") for r in self.runs.values()}
        return sorted(i for i in ids if i is not None)

    def fold_values(self, metric: str) -> dict[int, float]:
        """fold -> the metric, averaged over the seeds of that fold."""
        by_fold: dict[int, list[float]] = {}
        for (fold, _), r in sorted(self.runs.items()):
            by_fold.setdefault(fold, []).append(_value(r, metric))
        return {f: float(np.mean(v)) for f, v in by_fold.items()}


@dataclass
class Report:
    dataset: str
    metrics: list[str]
    baseline: str
    alpha: float
    test: str
    units: list[Unit]
    rows: list[Row]
    comparisons: dict[tuple[str, str], Comparison]
    notes: list[str] = field(default_factory=list)
    #: dataset options every row shares (said once, left out of the row names)
    data_options: dict[str, Any] = field(default_factory=dict)
    #: which row was taken as the baseline and why, when that was not the only reading
    baseline_note: str | None = None
    #: click rows like with like: each learner's skyline, naive and debiased rows
    #: (:mod:`ltr_bench.report.click_pivot`)
    pivots: list = field(default_factory=list)

    @property
    def folds(self) -> list[int]:
        return sorted({f for f, _ in self.units})

    @property
    def seeds(self) -> list[int]:
        return sorted({s for _, s in self.units})

    def row(self, label: str) -> Row:
        for r in self.rows:
            if r.label == label:
                return r
        raise KeyError(label)


def _value(run: ResultRecord, key: str) -> float:
    if key in TIMING_KEYS:  # None: a record read back with the value unset (or older)
        v = getattr(run, key, None)
        return float("nan") if v is None else float(v)
    v = run.all_metrics().get(key)
    return float("nan") if v is None else float(v)


def build_report(
    records: Iterable[ResultRecord],
    *,
    dataset: str,
    metrics: Sequence[str] | None = None,
    baseline: str | None = None,
    rankers: Sequence[str] | None = None,
    alpha: float = 0.05,
    test: str = "both",
    set_aside: Sequence[str] = (),
) -> Report:
    """Rows x metrics table and paired tests against ``baseline`` (see the module docstring).

    ``metrics``: names like ``ndcg@10`` (default: every metric of the default list that
    all rows have, plain convention; plus ``knn_error`` where recorded). ``baseline``: a
    ranker name or row label (default: LightGBM's default configuration when present, else
    the first ranker's default configuration, else the first row).
    ``rankers``: restrict to these names or labels. ``set_aside``: notes on records left
    out as damaged (they lead the report's notes, so a missing unit is blamed on the ranker
    whose record was damaged). Raises :class:`ReportError`.
    """
    from ltr_bench.evaluation.metrics import DEFAULT_METRICS

    if test not in TESTS:
        raise ReportError(f"--test must be one of {', '.join(TESTS)}, not {test!r}", usage=True)
    if not 0 < alpha < 1:
        raise ReportError(f"--alpha must be between 0 and 1, not {alpha}", usage=True)
    runs = [r for r in records if r.ok and r.dataset == dataset]
    if not runs:
        raise ReportError(f"no finished results for dataset {dataset!r}")
    groups: dict[str, list[ResultRecord]] = {}
    for r in runs:
        groups.setdefault(r.config_key or r.plan_key, []).append(r)
    named = names.row_names(groups)
    labels = named.names
    try:
        chosen = names.select_rows(groups, labels, rankers)
    except names.RowNameError as exc:
        raise ReportError(str(exc), usage=True) from None
    notes: list[str] = [*set_aside, *named.notes]

    by_unit: dict[str, dict[Unit, ResultRecord]] = {}
    for ck in chosen:
        d: dict[Unit, ResultRecord] = {}
        for r in groups[ck]:
            unit = (int(r.fold), int(r.seed))
            if unit in d:
                raise ReportError(
                    f"{labels[ck]} has two finished results for fold {r.fold} "
                    f"seed {r.seed} (keys {d[unit].key[:12]}, {r.key[:12]})"
                )
            d[unit] = r
        by_unit[ck] = d
    try:
        base_ck, why = names.pick_baseline(chosen, labels, groups, baseline)
    except names.RowNameError as exc:
        raise ReportError(str(exc), usage=True) from None
    notes += [why] if why else []

    # same data: a unit's fingerprints must agree with the baseline's (only the test split's
    # across click configurations, see same_data)
    base_units = by_unit[base_ck]
    for ck in list(chosen):
        if ck == base_ck:
            continue
        mine = by_unit[ck]
        shared = set(mine) & set(base_units)
        clash = [u for u in shared if not same_data(mine[u], base_units[u])]
        if not clash and any(clicks_of(mine[u]) != clicks_of(base_units[u]) for u in shared):
            notes.append(click_comparison_note(labels[ck], mine, labels[base_ck], base_units))
        if clash:
            u = sorted(clash)[0]
            notes.append(
                f"{labels[ck]} left out: it was run on other data than "
                f"{labels[base_ck]} (fold {u[0]} seed {u[1]} fingerprints differ)"
            )
            chosen.remove(ck)
    notes += click_rows.same_clicks_notes(chosen, by_unit, labels, base_ck)

    unit_sets = {ck: set(by_unit[ck]) for ck in chosen}
    units = sorted(set.intersection(*unit_sets.values()))
    if not units:
        raise ReportError(
            "the selected rankers share no fold and seed: "
            + "; ".join(
                f"{labels[ck]}: " + ",".join(f"{f}/{s}" for f, s in sorted(us))
                for ck, us in unit_sets.items()
            )
            + " (fold/seed). Pick rankers with --ranker."
        )
    for u in sorted(set.union(*unit_sets.values()) - set(units)):
        lacking = [labels[ck] for ck, us in unit_sets.items() if u not in us]
        notes.append(
            f"fold/seed {u[0]}/{u[1]} left out: no result of "
            + ", ".join(lacking)
            + " for it (the other rows have one)"
        )

    # metrics
    def have(m: str) -> bool:
        return all(m in by_unit[ck][u].all_metrics() for ck in chosen for u in units)

    common = sorted(
        set.intersection(*(set(by_unit[ck][u].all_metrics()) for ck in chosen for u in units))
    )
    if metrics:
        wanted = [normalise_metric(m) for m in metrics]
        missing = [m for m in wanted if not have(m)]
        if missing:
            raise ReportError(
                f"--metric {', '.join(missing)}: not recorded for every selected "
                f"run; available: {', '.join(common) or 'none'}",
                usage=True,
            )
    else:
        wanted = [m for m in (*DEFAULT_METRICS, "knn_error") if have(m)] or common[:6]
    if len(set(wanted)) != len(wanted):
        raise ReportError(f"--metric: a metric is listed twice: {', '.join(wanted)}", usage=True)

    rows: list[Row] = []
    for ck in chosen:
        used = {u: by_unit[ck][u] for u in units}
        cells = {
            m: Stat.of({u: _value(r, m) for u, r in used.items()}) for m in [*wanted, *TIMING_KEYS]
        }
        first = used[units[0]]
        rows.append(
            Row(
                label=labels[ck],
                ranker=first.ranker,
                config_key=ck,
                params=dict(first.params),
                runs=used,
                cells=cells,
                is_baseline=ck == base_ck,
            )
        )
    rows.sort(key=lambda r: (not r.is_baseline, label_sort_key(r.label)))
    for row in rows:
        for m in wanted:  # a NaN (or missing) value is not a unit of that cell's mean
            stat = row.cells[m]
            if stat.n < len(units):
                gaps = [u for u in units if math.isnan(_value(row.runs[u], m))]
                notes.append(
                    f"{row.label}: {m} is NaN in fold/seed "
                    + ",".join(f"{f}/{sd}" for f, sd in gaps)
                    + f"; its mean is over {stat.n} of {len(units)} units"
                )
        notes += [f"{row.label}: {flag}" for flag in group_flags(row.runs.values())]
        said: dict[str, int] = {}
        for run in row.runs.values():  # the ranker's own warnings, once each with a count
            for w in run.warnings:
                said[w] = said.get(w, 0) + 1
        notes += [
            f"{row.label}: warning in {n}/{len(row.runs)} unit(s): {w[:300]}"
            for w, n in said.items()
            if not w.startswith("all test scores are equal")
        ]
    comparisons, no_pq = _compare(rows, wanted, units)
    if no_pq:
        notes.append(
            f"no per-query values to test for {', '.join(sorted(no_pq))} (or for the "
            f"baseline): those cells are not tested"
        )
    correct_and_mark(list(comparisons.values()), alpha, test)
    pivots, pivot_notes = click_pivot.build_pivots(
        rows, wanted, units, alpha, test, leave_out=named.data_options
    )
    notes += pivot_notes
    return Report(
        dataset=dataset,
        metrics=list(wanted),
        baseline=rows[0].label,
        alpha=alpha,
        test=test,
        units=units,
        rows=rows,
        comparisons=comparisons,
        notes=notes,
        data_options=named.data_options,
        baseline_note=why,
        pivots=pivots,
    )


def _compare(rows: list[Row], wanted: list[str], units: list[Unit]):
    base_row = rows[0]
    comparisons: dict[tuple[str, str], Comparison] = {}
    no_pq: set[str] = set()
    for row in rows[1:]:
        for m in wanted:
            c = compare_rows(row.runs, base_row.runs, m, units, row.label, base_row.label)
            comparisons[(row.label, m)] = c
            if c.n_pairs == 0:
                no_pq.add(row.label)
    return comparisons, no_pq
