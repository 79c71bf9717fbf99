"""Published numbers beside ours: which published rows a report shows, and our value for each.

A published row (:class:`~ltr_bench.report.published.table.PublishedRow`) is shown under a
report when

1. its dataset is the report's dataset;
2. its convention is one the results recorded: ``default`` always (every run records
   ltr-bench's own metrics), a profile such as ``letor3`` when every run of the report holds
   metrics under it (``ltr-bench run --convention letor3``); ``unstated`` never;
3. its metric is one of the report's metrics under any convention (``ndcg@10`` in the
   report shows the published NDCG@10 rows of every recorded convention), and
4. it was measured on test splits (published validation or training numbers have no
   counterpart in our records).

Rows left out by 2-4 are counted in the section's notes, with what to do to see them.

Rows trained on simulated clicks (:mod:`ltr_bench.clicks`) have no published counterpart:
they get no value beside a published row, and a report of click rows only has no published
section at all.

*Ours* for a published row is the mean, over the published row's folds, of our per-fold value
(each fold's value averaged over its seeds) of the same metric under the published row's
convention, for each report row whose ranker is the published model's counterpart
(:data:`MODEL_MAP`). It is left empty, with a note, when our results lack one of those folds:
a 5-fold mean is never set beside a mean over fewer folds. *Difference* = ours - published.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ltr_bench.report.click_rows import clicks_of
from ltr_bench.report.published.table import PublishedRow, load_published

__all__ = ["MODEL_MAP", "ModelMap", "PublishedLine", "PublishedSection", "published_section"]


@dataclass(frozen=True)
class ModelMap:
    """The ltr-bench counterpart of a published model: ``ranker`` (registered name),
    ``params`` the parameters that make the model (a row must have them, equal ignoring case)
    and ``if_present`` parameters that must be equal only when the ranker has them at all
    (e.g. an objective a later version may add). ``also``: other registered rankers that are
    the same published model in another setting (``ranksvm-letor``, RankSVM as LETOR ran it,
    beside our default ``ranksvm``); each of their rows is shown beside the published one."""

    ranker: str
    params: tuple[tuple[str, str], ...] = ()
    if_present: tuple[tuple[str, str], ...] = ()
    also: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """``adarank[metric=map]``: the counterpart for people (``ranksvm, ranksvm-letor``)."""
        ps = ",".join(f"{k}={v}" for k, v in self.params)
        return ", ".join(name + (f"[{ps}]" if ps else "") for name in (self.ranker, *self.also))

    def matches(self, ranker: str, params: dict) -> bool:
        if ranker != self.ranker and ranker not in self.also:
            return False

        def same(key: str, value: str) -> bool:
            return str(params.get(key)).strip().lower() == value.lower()

        return all(k in params and same(k, v) for k, v in self.params) and all(
            same(k, v) for k, v in self.if_present if k in params
        )


def _cat(loss: str) -> ModelMap:
    return ModelMap("catboost", (("loss", loss),))


#: Published model name (as the table writes it) -> its counterpart in ltr-bench. Models
#: without an entry (a paper's own kernel RankSVM, neural reimplementations, LightGBM's and
#: XGBoost's regression objectives in CatBoost's benchmark) are listed but have no "ours".
MODEL_MAP: dict[str, ModelMap] = {
    # LETOR 3.0 / 4.0 baseline tables
    "RankSVM": ModelMap("ranksvm", also=("ranksvm-letor",)),
    "RankBoost": ModelMap("rankboost"),
    "ListNet": ModelMap("listnet"),
    "ListNet (LETOR4.0 official baseline, as quoted)": ModelMap("listnet"),
    "AdaRank-MAP": ModelMap("adarank", (("metric", "map"),)),
    "AdaRank-NDCG": ModelMap("adarank", (("metric", "ndcg@10"),)),
    "Coordinate Ascent": ModelMap("coordinate-ascent"),
    # CatBoost's ranking benchmark (catboost/benchmarks, ranking/eval_params.py names them)
    "cat-rmse": _cat("RMSE"),
    "cat-query-rmse": _cat("QueryRMSE"),
    "cat-pair-logit": _cat("PairLogit"),
    "cat-pair-logit-pairwise": _cat("PairLogitPairwise"),
    "cat-yeti-rank": _cat("YetiRank"),
    "cat-yeti-rank-pairwise": _cat("YetiRankPairwise"),
    "lgb-pairwise": ModelMap("lightgbm", if_present=(("objective", "lambdarank"),)),
    "xgb-lambdamart-ndcg": ModelMap("xgboost-lambdamart"),
    "xgb-rmse": ModelMap("xgboost-gbrt"),  # reg:linear, today's reg:squarederror
    "LambdaMART": ModelMap("lightgbm", if_present=(("objective", "lambdarank"),)),
    # LightGBM's comparison experiment (docs/Experiments.rst; objectives from
    # guolinke/boosting_tree_benchmarks test_accuracy.sh)
    "LightGBM (lambdarank)": ModelMap("lightgbm", if_present=(("objective", "lambdarank"),)),
    "xgboost (rank:ndcg, exact)": ModelMap("xgboost-lambdamart"),
    "xgboost_hist (rank:ndcg)": ModelMap("xgboost-lambdamart"),
}


@dataclass
class PublishedLine:
    """A published row and our value beside it (``label`` None: no counterpart among the
    report's rows; ``ours`` NaN: none, or our results lack one of its folds)."""

    published: PublishedRow
    label: str | None = None
    ours: float = float("nan")
    missing_folds: tuple[int, ...] = ()

    @property
    def difference(self) -> float:
        """ours - published (NaN without ours)."""
        return self.ours - self.published.value


@dataclass
class PublishedSection:
    dataset: str
    lines: list[PublishedLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    conventions: list[str] = field(default_factory=list)  # recorded by every report row


def _recorded_conventions(report) -> list[str]:
    """``default`` plus every profile all runs of the report hold metrics under."""
    from ltr_bench.evaluation.metric_keys import MetricKey

    per_run = []
    for row in report.rows:
        for run in row.runs.values():
            profiles = set()
            for key in run.metrics:
                try:
                    profiles.add(MetricKey.parse(key).profile)
                except ValueError:
                    continue
            per_run.append(profiles - {""})
    common = set.intersection(*per_run) if per_run else set()
    return ["default", *sorted(common)]


def _report_bases(report) -> list[str]:
    from ltr_bench.evaluation.metric_keys import MetricKey

    out = []
    for m in report.metrics:
        try:
            key = MetricKey.parse(m)
        except ValueError:
            continue
        if key.base not in out:
            out.append(key.base)
    return out


def _metric_order(key: str) -> tuple:
    """``ndcg@2`` before ``ndcg@10``, then ``p@k``, then ``map``."""
    from ltr_bench.evaluation.metric_keys import MetricKey

    parsed = MetricKey.parse(key)
    return (parsed.name, parsed.k or 0)


def _ours(row, metric_key: str, folds: tuple[int, ...]) -> tuple[float, tuple[int, ...]]:
    """Mean over ``folds`` of the row's per-fold (seed-averaged) value; the folds it lacks."""
    by_fold: dict[int, list[float]] = {}
    for (fold, _), run in row.runs.items():
        v = run.all_metrics().get(metric_key)
        if v is not None and not math.isnan(float(v)):
            by_fold.setdefault(int(fold), []).append(float(v))
    missing = tuple(f for f in folds if f not in by_fold)
    if missing:
        return float("nan"), missing
    return float(np.mean([np.mean(by_fold[f]) for f in folds])), ()


def published_section(report, table: list[PublishedRow] | None = None) -> PublishedSection:
    """The published rows a :class:`~ltr_bench.report.tables.Report` shows, each beside our
    row(s) for the same model, and notes on the rows left out (module docstring)."""
    table = load_published() if table is None else table
    section = PublishedSection(dataset=report.dataset)
    mine = [r for r in table if r.dataset == report.dataset]
    # published numbers are of rankers trained on the true labels: a row trained on
    # simulated clicks has no published counterpart, and a report of click rows only
    # has no published section
    on_labels = [row for row in report.rows if not any(clicks_of(r) for r in row.runs.values())]
    if not mine or not on_labels:  # nothing published for this dataset: the report says nothing
        return section
    recorded = _recorded_conventions(report)
    section.conventions = recorded
    bases = _report_bases(report)
    unstated = [r for r in mine if r.convention == "unstated"]
    other_conv = Counter(
        r.convention for r in mine if r.convention not in recorded and r.convention != "unstated"
    )
    usable = [r for r in mine if r.convention in recorded]
    not_test = [r for r in usable if r.split != "test"]
    other_metric = [r for r in usable if r.split == "test" and r.base_key not in bases]
    shown = [r for r in usable if r.split == "test" and r.base_key in bases]
    order = {b: i for i, b in enumerate(bases)}
    models: dict[str, int] = {}
    for r in mine:
        models.setdefault(r.model, len(models))
    shown.sort(key=lambda r: (models[r.model], order[r.base_key], r.convention, r.folds))
    for pub in shown:
        counterpart = MODEL_MAP.get(pub.model)
        rows = (
            [row for row in on_labels if counterpart.matches(row.ranker, row.params)]
            if counterpart
            else []
        )
        if not rows:
            section.lines.append(PublishedLine(pub))
            continue
        assert pub.metric_key is not None  # only 'unstated' rows lack one; none is shown
        for row in rows:
            ours, missing = _ours(row, pub.metric_key, pub.folds)
            section.lines.append(PublishedLine(pub, row.label, ours, missing))
    lacking = sorted({(ln.label, ln.missing_folds) for ln in section.lines if ln.missing_folds})
    for label, folds in lacking:
        section.notes.append(
            f"{label}: no result on fold(s) {', '.join(map(str, folds))}, so no value beside "
            "the published numbers that average over them."
        )
    for conv, n in sorted(other_conv.items()):
        section.notes.append(
            f"{n} published row(s) for {report.dataset} use the {conv} convention, which these "
            f"results did not record: not shown (run with --convention {conv} to compare)."
        )
    if unstated:
        section.notes.append(
            f"{len(unstated)} published row(s) for {report.dataset} do not state their "
            "convention: never shown beside ours (ltr-bench published lists them)."
        )
    if not_test:
        section.notes.append(
            f"{len(not_test)} published row(s) were measured on validation or training splits: "
            "not shown."
        )
    if other_metric:
        names = sorted({r.base_key for r in other_metric}, key=_metric_order)
        section.notes.append(
            f"{len(other_metric)} published row(s) are for metrics this report does not show "
            f"({', '.join(names[:8])}{' ...' if len(names) > 8 else ''}): add them with --metric."
        )
    if any(ln.published.selection == "test" for ln in section.lines):
        section.notes.append(
            "Published rows marked 'test-selected' chose hyper-parameters or the number of "
            "iterations on the test split (optimistic); ltr-bench selects on validation data."
        )
    if section.lines and not any(ln.label for ln in section.lines):
        section.notes.append(
            "None of the report's rankers is the counterpart of a published model "
            "(see docs/results/published.md for the mapping)."
        )
    return section
