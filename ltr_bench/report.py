"""Comparison tables and paired significance tests from fold-level results (no retraining).

Pure: the input is one dict (or :class:`FoldRun`) per finished fold run, as
:func:`ltr_bench.tracking.fetch_fold_results` returns them from MLflow or
:func:`fold_runs_from_records` builds them from the local results; nothing here fits,
predicts or touches MLflow.

Rows
    One row per (ranker, parameters, dataset options, seed), i.e. per MLflow parent run
    (``plan_key``). A ranker present with several parameter sets gets a label naming the
    parameters that differ, e.g. ``lightgbm[num_leaves=31]`` (a short plan-key hash when
    nothing printable differs).

Folds
    Only folds that every selected row has are used (a note names the folds left out), so
    all rows are averaged over the same splits. Within a fold every row must have been run
    on the same data: the train / vali / test fingerprints must agree, else
    :class:`ReportError` names the disagreeing runs.

Cells
    mean and sample standard deviation (``ddof=1``; none with one fold) over those folds
    of the fold-level metric (the mean over the fold's test queries), of ``fit_seconds``
    (wall time of ``fit``) and of ``score_us_per_doc`` (median timed ``predict`` per test
    document, microseconds).

Significance
    For each non-baseline row and metric, per-query values are paired with the baseline's
    by ``(fold, qid)`` and pooled over the folds (``n`` pairs). Paired t-test
    (``scipy.stats.ttest_rel``, two-sided) and Wilcoxon signed-rank
    (``scipy.stats.wilcoxon``, two-sided, zero differences dropped) give ``p_t`` and
    ``p_w``. Each family (all t-test p-values over rows x metrics; all Wilcoxon p-values)
    gets Holm's step-down correction (:func:`holm`). A cell is marked a *win* (``▲``) or
    *loss* (``▼``) when the mean difference is positive / negative and the Holm-adjusted
    p-value of the chosen test is below ``alpha``; with ``test="both"`` (default) both
    adjusted p-values must be. Requiring both keeps each family's family-wise error rate at
    ``alpha``. All-zero differences give p = 1 (no evidence either way); a non-zero
    constant difference gives ``p_t = 0`` (t is infinite).
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "Comparison",
    "FoldRun",
    "Report",
    "ReportError",
    "Row",
    "Stat",
    "build_report",
    "fold_runs_from_records",
    "format_report",
    "holm",
    "normalise_metric",
    "paired_pvalues",
]

WIN, LOSS = "\u25b2", "\u25bc"  # ▲ ▼
TESTS = ("both", "ttest", "wilcoxon")
FORMATS = ("md", "csv", "html")
TIMING_KEYS = ("fit_seconds", "score_us_per_doc")
TIMING_LABELS = {"fit_seconds": "fit time (s)", "score_us_per_doc": "scoring (µs/doc)"}


class ReportError(Exception):
    """A report cannot be made as asked. ``usage`` is True for a bad request (unknown
    metric, ranker or baseline: the CLI exits 2) and False for a problem with the stored
    results (misaligned folds, missing values: exit 1)."""

    def __init__(self, message: str, *, usage: bool = False):
        super().__init__(message)
        self.usage = usage


# --------------------------------------------------------------------------------------------
# input


@dataclass
class FoldRun:
    """One finished fold of one (ranker, parameters) run; see
    :func:`ltr_bench.tracking.fetch_fold_results` for the fields."""

    ranker: str
    fold: int
    metrics: dict[str, float]
    plan_key: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    dataset_options: dict[str, Any] = field(default_factory=dict)
    seed: str = ""
    fit_seconds: float = float("nan")
    score_us_per_doc: float = float("nan")
    peak_rss_mb: float = float("nan")
    fingerprints: dict[str, str] = field(default_factory=dict)
    per_query: dict[str, list] | None = None
    run_id: str = ""
    parent_run_id: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FoldRun":
        known = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in d.items() if k in known}
        kw["fold"] = int(kw["fold"])
        kw["seed"] = str(kw.get("seed", ""))
        return cls(**kw)


def fold_runs_from_records(records: Iterable[Any], store: Any = None) -> list[FoldRun]:
    """:class:`FoldRun` objects from local :class:`~ltr_bench.harness.ResultRecord` objects
    (per-query values from the record or, when it has none, from ``store``)."""
    out = []
    for r in records:
        pq = r.per_query
        if pq is None and store is not None:
            pq = store.per_query(r)
        m = r.mlflow or {}
        out.append(FoldRun(
            ranker=r.ranker, fold=int(r.fold), metrics={**r.metrics, **r.extra_metrics},
            plan_key=r.plan_key, params={k: _param_text(v) for k, v in r.params.items()},
            dataset_options={k: _param_text(v) for k, v in r.dataset_options.items()},
            seed=str(r.seed), fit_seconds=r.fit_seconds, score_us_per_doc=r.score_us_per_doc,
            peak_rss_mb=r.peak_rss_mb, fingerprints=dict(r.fingerprints), per_query=pq,
            run_id=m.get("run_id", r.key), parent_run_id=m.get("parent_run_id")))
    return out


def _param_text(v: Any) -> str:
    # the text MLflow holds for a param (tracking._param_value), so labels agree
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=repr)


def normalise_metric(name: str) -> str:
    """``ndcg@10``, ``NDCG@10`` and ``ndcg_at_10`` -> ``ndcg@10`` (suffix ``_empty0`` kept)."""
    import re

    text = name.strip().lower()
    return re.sub(r"^([a-z]+)_at_(\d+)", r"\1@\2", text)


# --------------------------------------------------------------------------------------------
# statistics


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order.

    With the m finite p-values sorted ascending, ``p_(1) <= ... <= p_(m)``:
    ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``. Rejecting ``adj < alpha``
    controls the family-wise error rate at ``alpha``. NaN entries stay NaN and do not count
    in ``m``. Example: ``[0.01, 0.04, 0.03]`` -> ``[0.03, 0.06, 0.06]``.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def paired_pvalues(candidate: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """Two-sided ``(p_ttest, p_wilcoxon)`` for paired samples (see the module docstring for
    the degenerate cases). NaN when fewer than two pairs."""
    from scipy import stats

    x = np.asarray(candidate, dtype=np.float64)
    y = np.asarray(baseline, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.shape} vs {y.shape}")
    if x.size < 2:
        return float("nan"), float("nan")
    d = x - y
    if not np.any(d):
        return 1.0, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if np.ptp(d) == 0:
            p_t = 0.0  # constant non-zero difference: zero variance, t infinite
        else:
            p_t = float(stats.ttest_rel(x, y).pvalue)
        p_w = float(stats.wilcoxon(x, y).pvalue)
    return p_t, p_w


# --------------------------------------------------------------------------------------------
# the report


@dataclass
class Stat:
    """mean and sample std (ddof=1, NaN for one value) of ``n`` fold values."""

    mean: float
    std: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> "Stat":
        arr = np.asarray([v for v in values if v is not None and not math.isnan(v)],
                         dtype=np.float64)
        if arr.size == 0:
            return cls(float("nan"), float("nan"), 0)
        std = float(np.std(arr, ddof=1)) if arr.size > 1 else float("nan")
        return cls(float(np.mean(arr)), std, int(arr.size))


@dataclass
class Row:
    label: str
    ranker: str
    plan_key: str
    params: dict[str, Any]
    runs: dict[int, FoldRun]            # the used folds only
    cells: dict[str, Stat]              # metric -> over folds; also the TIMING_KEYS
    is_baseline: bool = False

    @property
    def parent_run_ids(self) -> list[str]:
        return sorted({r.parent_run_id for r in self.runs.values() if r.parent_run_id})

    def fold_values(self, metric: str) -> dict[int, float]:
        return {f: _value(r, metric) for f, r in sorted(self.runs.items())}


@dataclass
class Comparison:
    label: str
    metric: str
    n_pairs: int
    mean_diff: float                    # candidate - baseline, per query, pooled
    p_ttest: float
    p_wilcoxon: float
    p_ttest_holm: float = float("nan")
    p_wilcoxon_holm: float = float("nan")
    mark: str = ""                      # "win", "loss" or ""


@dataclass
class Report:
    dataset: str
    metrics: list[str]
    baseline: str
    alpha: float
    test: str
    folds: list[int]
    rows: list[Row]
    comparisons: dict[tuple[str, str], Comparison]
    notes: list[str] = field(default_factory=list)

    def row(self, label: str) -> Row:
        for r in self.rows:
            if r.label == label:
                return r
        raise KeyError(label)


def _value(run: FoldRun, key: str) -> float:
    if key in TIMING_KEYS:
        return float(getattr(run, key))
    v = run.metrics.get(key)
    return float("nan") if v is None else float(v)


def _labels(groups: dict[str, list[FoldRun]]) -> dict[str, str]:
    """plan_key -> row label: the ranker name, plus the differing parameters when the same
    ranker has several plan keys."""
    by_ranker: dict[str, list[str]] = {}
    for pk, runs in groups.items():
        by_ranker.setdefault(runs[0].ranker, []).append(pk)
    out = {}
    for ranker, pks in by_ranker.items():
        if len(pks) == 1:
            out[pks[0]] = ranker
            continue
        def settings(pk: str) -> dict[str, str]:
            r = groups[pk][0]
            s = {k: str(v) for k, v in r.params.items()}
            s.update({f"dataset_option.{k}": str(v) for k, v in r.dataset_options.items()})
            s["seed"] = r.seed
            return s
        all_s = {pk: settings(pk) for pk in pks}
        keys = sorted({k for s in all_s.values() for k in s})
        differing = [k for k in keys if len({s.get(k) for s in all_s.values()}) > 1]
        for pk in pks:
            text = ",".join(f"{k}={all_s[pk].get(k, '-')}" for k in differing)
            if not text or len(text) > 48:
                text = pk[:6]  # the plan key is already a sha256
            out[pk] = f"{ranker}[{text}]"
        if len(set(out[pk] for pk in pks)) < len(pks):  # still ambiguous: use the key
            for pk in pks:
                out[pk] = f"{ranker}[{pk[:8]}]"
    return out


def _select(groups: dict[str, list[FoldRun]], labels: dict[str, str],
            rankers: Sequence[str] | None) -> list[str]:
    if not rankers:
        return sorted(groups, key=lambda pk: labels[pk])
    chosen: list[str] = []
    for name in rankers:
        hits = [pk for pk in groups if labels[pk] == name or groups[pk][0].ranker == name]
        if not hits:
            known = ", ".join(sorted(labels.values()))
            raise ReportError(f"--ranker {name}: no results for it in this dataset; rankers "
                              f"with results: {known}", usage=True)
        chosen.extend(pk for pk in sorted(hits, key=lambda pk: labels[pk]) if pk not in chosen)
    return chosen


def _check_same_data(rows: list[tuple[str, dict[int, FoldRun]]], folds: list[int]) -> None:
    for fold in folds:
        ref_label, ref = rows[0][0], rows[0][1][fold]
        for label, runs in rows[1:]:
            run = runs[fold]
            for split in sorted(set(ref.fingerprints) | set(run.fingerprints)):
                a, b = ref.fingerprints.get(split), run.fingerprints.get(split)
                if a != b:
                    raise ReportError(
                        f"{ref_label} and {label} were not run on the same data: fold {fold} "
                        f"{split} fingerprint {str(a)[:12]} (run {ref.run_id}) vs "
                        f"{str(b)[:12]} (run {run.run_id}). Compare only runs on the same "
                        f"data: pick them with --ranker (names or labels as listed).")


def _pairs(cand: FoldRun, base: FoldRun, metric: str, c_label: str,
           b_label: str) -> tuple[np.ndarray, np.ndarray] | None:
    pc, pb = cand.per_query, base.per_query
    if not pc or not pb or metric not in pc or metric not in pb:
        return None
    bq = {q: i for i, q in enumerate(pb["qid"])}
    if len(bq) != len(pb["qid"]) or set(bq) != set(pc["qid"]) or len(pc["qid"]) != len(bq):
        raise ReportError(f"per-query results of {c_label} (run {cand.run_id}) and {b_label} "
                          f"(run {base.run_id}) on fold {cand.fold} do not cover the same "
                          f"query ids; cannot pair them")
    idx = np.array([bq[q] for q in pc["qid"]], dtype=np.int64)
    return (np.asarray(pc[metric], dtype=np.float64),
            np.asarray(pb[metric], dtype=np.float64)[idx])


def build_report(fold_runs: Iterable[FoldRun | Mapping[str, Any]], *, dataset: str,
                 metrics: Sequence[str] | None = None, baseline: str | None = None,
                 rankers: Sequence[str] | None = None, alpha: float = 0.05,
                 test: str = "both") -> Report:
    """Rows x metrics table and paired tests against ``baseline`` (see the module docstring).

    ``metrics``: names like ``ndcg@10`` (default: every metric of the default list that
    all rows have, plain convention). ``baseline``: a ranker name or row label (default
    ``lightgbm`` when present, else the first row). ``rankers``: restrict to these names or
    labels. Raises :class:`ReportError`.
    """
    from .metrics import DEFAULT_METRICS

    if test not in TESTS:
        raise ReportError(f"--test must be one of {', '.join(TESTS)}, not {test!r}", usage=True)
    if not 0 < alpha < 1:
        raise ReportError(f"--alpha must be between 0 and 1, not {alpha}", usage=True)
    runs = [r if isinstance(r, FoldRun) else FoldRun.from_dict(r) for r in fold_runs]
    if not runs:
        raise ReportError(f"no finished fold runs for dataset {dataset!r}")
    groups: dict[str, list[FoldRun]] = {}
    for r in runs:
        groups.setdefault(r.plan_key or f"{r.ranker}", []).append(r)
    labels = _labels(groups)
    chosen = _select(groups, labels, rankers)
    notes: list[str] = []

    by_fold: dict[str, dict[int, FoldRun]] = {}
    for pk in chosen:
        d: dict[int, FoldRun] = {}
        for r in groups[pk]:
            if r.fold in d:
                raise ReportError(f"{labels[pk]} has two finished runs for fold {r.fold} "
                                  f"({d[r.fold].run_id}, {r.run_id}); delete one in MLflow")
            d[r.fold] = r
        by_fold[pk] = d
    fold_sets = {pk: set(d) for pk, d in by_fold.items()}
    folds = sorted(set.intersection(*fold_sets.values()))
    if not folds:
        raise ReportError("the selected rankers share no fold: " + "; ".join(
            f"{labels[pk]}: folds {','.join(map(str, sorted(s)))}" for pk, s in
            fold_sets.items()) + ". Pick rankers with --ranker.")
    for pk, s in fold_sets.items():
        extra = sorted(s - set(folds))
        if extra:
            notes.append(f"{labels[pk]}: fold(s) {','.join(map(str, extra))} left out (not "
                         f"every ranker has them)")
    _check_same_data([(labels[pk], by_fold[pk]) for pk in chosen], folds)

    # metrics
    def have(m: str) -> bool:
        return all(m in by_fold[pk][f].metrics for pk in chosen for f in folds)

    if metrics:
        wanted = [normalise_metric(m) for m in metrics]
        missing = [m for m in wanted if not have(m)]
        if missing:
            avail = sorted(set.intersection(*(set(by_fold[pk][f].metrics) for pk in chosen
                                               for f in folds)))
            raise ReportError(f"--metric {', '.join(missing)}: not recorded for every selected "
                              f"run; available: {', '.join(avail) or 'none'}", usage=True)
    else:
        wanted = [m for m in DEFAULT_METRICS if have(m)]
        if not wanted:
            wanted = sorted(set.intersection(*(set(by_fold[pk][f].metrics) for pk in chosen
                                                for f in folds)))[:6]
    if len(set(wanted)) != len(wanted):
        raise ReportError(f"--metric: a metric is listed twice: {', '.join(wanted)}",
                          usage=True)

    # baseline
    if baseline is None:
        base_pk = next((pk for pk in chosen if labels[pk] == "lightgbm"), chosen[0])
    else:
        hits = [pk for pk in chosen if labels[pk] == baseline]
        if not hits:
            hits = [pk for pk in chosen if by_fold[pk][folds[0]].ranker == baseline]
        if len(hits) != 1:
            what = ("is ambiguous: pick one of " + ", ".join(labels[pk] for pk in hits)
                    if hits else "has no results among the selected rankers; choose one of "
                    + ", ".join(labels[pk] for pk in chosen))
            raise ReportError(f"--baseline {baseline} {what}", usage=True)
        base_pk = hits[0]

    rows: list[Row] = []
    for pk in chosen:
        used = {f: by_fold[pk][f] for f in folds}
        cells = {m: Stat.of(_value(r, m) for r in used.values()) for m in
                 [*wanted, *TIMING_KEYS]}
        first = used[folds[0]]
        rows.append(Row(label=labels[pk], ranker=first.ranker, plan_key=pk,
                        params=dict(first.params), runs=used, cells=cells,
                        is_baseline=pk == base_pk))
    rows.sort(key=lambda r: (not r.is_baseline, r.label))
    base_row = rows[0]

    comparisons: dict[tuple[str, str], Comparison] = {}
    no_pq: set[str] = set()
    for row in rows[1:]:
        for m in wanted:
            xs, ys = [], []
            complete = True
            for f in folds:
                pair = _pairs(row.runs[f], base_row.runs[f], m, row.label, base_row.label)
                if pair is None:
                    complete = False
                    break
                xs.append(pair[0])
                ys.append(pair[1])
            if not complete:
                no_pq.add(row.label)
                comparisons[(row.label, m)] = Comparison(row.label, m, 0, float("nan"),
                                                         float("nan"), float("nan"))
                continue
            x, y = np.concatenate(xs), np.concatenate(ys)
            p_t, p_w = paired_pvalues(x, y)
            comparisons[(row.label, m)] = Comparison(row.label, m, int(x.size),
                                                     float(np.mean(x - y)), p_t, p_w)
    if no_pq:
        notes.append(f"no per-query values to test for {', '.join(sorted(no_pq))} (or for the "
                     f"baseline): those cells are not tested")
    comps = list(comparisons.values())
    for attr in ("p_ttest", "p_wilcoxon"):
        adj = holm([getattr(c, attr) for c in comps])
        for c, a in zip(comps, adj):
            setattr(c, attr + "_holm", float(a))
    for c in comps:
        ps = {"both": (c.p_ttest_holm, c.p_wilcoxon_holm), "ttest": (c.p_ttest_holm,),
              "wilcoxon": (c.p_wilcoxon_holm,)}[test]
        if all(p < alpha for p in ps) and c.mean_diff != 0:  # NaN compares False
            c.mark = "win" if c.mean_diff > 0 else "loss"
    return Report(dataset=dataset, metrics=list(wanted), baseline=base_row.label, alpha=alpha,
                  test=test, folds=folds, rows=rows, comparisons=comparisons, notes=notes)


# --------------------------------------------------------------------------------------------
# formatting


def _num(v: float, digits: int = 4) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:.{digits}f}"


def _sig(v: float) -> str:
    """3 significant digits, no exponent for everyday magnitudes (timings)."""
    if v is None or math.isnan(v):
        return "-"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    return f"{v:.{max(0, 2 - mag)}f}" if -4 <= mag < 6 else f"{v:.2e}"


def _cell_text(stat: Stat, timing: bool) -> str:
    f = _sig if timing else _num
    if stat.n == 0:
        return "-"
    return f(stat.mean) + ("" if math.isnan(stat.std) else f" ± {f(stat.std)}")


def _p(v: float) -> str:
    if v is None or math.isnan(v):
        return "-"
    return "<1e-4" if v < 1e-4 else f"{v:.4f}"


def _table(report: Report) -> tuple[list[str], list[list[str]]]:
    header = ["ranker", "folds", *report.metrics, *(TIMING_LABELS[k] for k in TIMING_KEYS)]
    body = []
    for row in report.rows:
        cells = [row.label + (" (baseline)" if row.is_baseline else ""), str(len(row.runs))]
        for m in report.metrics:
            text = _cell_text(row.cells[m], False)
            c = report.comparisons.get((row.label, m))
            if c is not None and c.mark:
                text += " " + (WIN if c.mark == "win" else LOSS)
            cells.append(text)
        cells += [_cell_text(row.cells[k], True) for k in TIMING_KEYS]
        body.append(cells)
    return header, body


def _test_header(report: Report) -> list[str]:
    return ["ranker", "metric", "pairs", "mean diff", "p t-test", "p t-test (Holm)",
            "p Wilcoxon", "p Wilcoxon (Holm)", "result"]


def _test_rows(report: Report) -> list[list[str]]:
    out = []
    for (label, m), c in report.comparisons.items():
        out.append([label, m, str(c.n_pairs), _num(c.mean_diff, 4), _p(c.p_ttest),
                    _p(c.p_ttest_holm), _p(c.p_wilcoxon), _p(c.p_wilcoxon_holm),
                    {"win": f"{WIN} better", "loss": f"{LOSS} worse"}.get(c.mark, "n.s.")])
    return out


def legend(report: Report) -> list[str]:
    """Sentences explaining the table (printed under it in md/html)."""
    n_comp = len(report.comparisons)
    which = {"both": "both the paired t-test and the Wilcoxon signed-rank test",
             "ttest": "the paired t-test", "wilcoxon": "the Wilcoxon signed-rank test"}[
        report.test]
    folds = ",".join(map(str, report.folds))
    lines = [
        f"Dataset {report.dataset}, folds {folds}. Each cell: mean ± sample standard "
        f"deviation (ddof=1) over the folds of the fold's mean over its test queries.",
        f"{WIN} / {LOSS}: significantly better / worse than the baseline "
        f"{report.baseline}: per-query values paired by (fold, query id) and pooled over "
        f"the folds, {which} two-sided with Holm-adjusted p < {report.alpha:g} (Holm over the "
        f"{n_comp} comparisons of rankers x metrics, each test separately). No mark: not "
        f"significant.",
        "fit time: wall-clock seconds of fit (train split, validation split as eval_set). "
        "scoring: median wall time of predict on the test split after a warm-up, per "
        "document, in microseconds. Timings depend on the machine and its load.",
        "Metric conventions: NDCG gain 2^rel - 1, discount 1/log2(rank + 1); a query without "
        "relevant documents scores 1 (metrics ending in _empty0: 0); ties count as the "
        "expected value over their orderings.",
    ]
    multi = [r for r in report.rows if r.label != r.ranker]
    if multi:
        lines.append("Rows with [..]: the same ranker with different settings; the brackets "
                     "show what differs (or a short key of the MLflow parent run).")
    return lines + [f"Note: {n}" for n in report.notes]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|")
    lines = ["| " + " | ".join(map(esc, header)) + " |",
             "|" + "|".join("---" if i < 1 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
    return "\n".join(lines)


def to_markdown(report: Report) -> str:
    header, body = _table(report)
    parts = [f"## {report.dataset}: {len(report.rows)} ranker(s), baseline {report.baseline}",
             "", _md_table(header, body), ""]
    parts += [f"- {s}" for s in legend(report)]
    if report.comparisons:
        parts += ["", f"### Paired tests against {report.baseline}", "",
                  _md_table(_test_header(report), _test_rows(report))]
    return "\n".join(parts) + "\n"


def to_csv(report: Report) -> str:
    """Tidy CSV: one line per (ranker, quantity); quantities are the metrics and the timing
    keys; test columns are empty for the baseline and the timings."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["dataset", "ranker", "ranker_name", "baseline", "quantity", "mean", "std",
                "n_folds", "folds", "n_pairs", "mean_diff", "p_ttest", "p_ttest_holm",
                "p_wilcoxon", "p_wilcoxon_holm", "result", "alpha", "test", "parent_run_ids"])
    folds = ";".join(map(str, report.folds))
    for row in report.rows:
        for q in [*report.metrics, *TIMING_KEYS]:
            s = row.cells[q]
            c = report.comparisons.get((row.label, q))
            tests = ["", "", "", "", "", "", ""]
            if c is not None:
                tests = [c.n_pairs, repr(c.mean_diff), repr(c.p_ttest), repr(c.p_ttest_holm),
                         repr(c.p_wilcoxon), repr(c.p_wilcoxon_holm), c.mark or "ns"]
            w.writerow([report.dataset, row.label, row.ranker, int(row.is_baseline), q,
                        repr(s.mean), repr(s.std), s.n, folds, *tests, report.alpha,
                        report.test, ";".join(row.parent_run_ids)])
    return buf.getvalue()


def _html_table(header: list[str], rows: list[list[str]], cls: str) -> str:
    e = html.escape
    out = [f'<table class="{cls}">', "<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in header)
           + "</tr></thead>", "<tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def to_html(report: Report) -> str:
    e = html.escape
    header, body = _table(report)
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
             f"<title>ltr-bench report: {e(report.dataset)}</title>",
             "<style>table{border-collapse:collapse}td,th{border:1px solid #999;"
             "padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:left}"
             "</style></head><body>",
             f"<h2>{e(report.dataset)}: {len(report.rows)} ranker(s), baseline "
             f"{e(report.baseline)}</h2>",
             _html_table(header, body, "results"),
             "<ul>" + "".join(f"<li>{e(s)}</li>" for s in legend(report)) + "</ul>"]
    if report.comparisons:
        parts += [f"<h3>Paired tests against {e(report.baseline)}</h3>",
                  _html_table(_test_header(report), _test_rows(report), "tests")]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def format_report(report: Report, fmt: str = "md") -> str:
    """The report as ``md`` (Markdown), ``csv`` (tidy, one line per ranker and quantity)
    or ``html`` (a standalone page)."""
    try:
        return {"md": to_markdown, "csv": to_csv, "html": to_html}[fmt](report)
    except KeyError:
        raise ReportError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}",
                          usage=True) from None
