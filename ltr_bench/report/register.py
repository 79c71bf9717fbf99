"""What ``ltr-bench report --register NAME`` registers: the best configuration of a report,
the registered model's description and, for each of its fold runs, the text of its model
version's description.

The best configuration is the report's row with the highest mean of the ranking metric
(``metric``, default :func:`headline`: NDCG@10 when reported, else the first metric), over
the units (fold, seed) every row has. Each version's description says the fold's own
metrics, the configuration's mean ± std over its folds, the configurations it was chosen
from with their means, and the paired comparison against the baseline (mean per-query
difference, Holm-corrected p-values, win / loss / no significant difference) as the report
computed them; a click-trained skyline or debiased row also against its learner's own naive
row (:mod:`ltr_bench.report.click_pivot`). Rows are named as the report names them (label and
data variant in words), and the baseline is the report's. The registered model's own
description (:func:`model_description`) says all but the fold's metrics. Registering itself is
:func:`ltr_bench.tracking.models.register_models` (this module never touches MLflow).
"""

from __future__ import annotations

import math

from ltr_bench.report.tables import Report, ReportError, Row

__all__ = ["best_row", "choose_best", "headline", "model_description", "version_descriptions"]


def headline(report: Report) -> str:
    """The metric a configuration is chosen by: ``ndcg@10`` when the report has it (the
    run's summary line shows it too), else the report's first metric."""
    return "ndcg@10" if "ndcg@10" in report.metrics else report.metrics[0]


def best_row(report: Report, metric: str | None = None) -> Row:
    """The row with the highest mean ``metric`` (ties: the first in the report's order)."""
    metric = metric or headline(report)
    scored = [(r.cells[metric].mean, i, r) for i, r in enumerate(report.rows) if metric in r.cells]
    scored = [s for s in scored if not math.isnan(s[0])]
    if not scored:
        raise ReportError(f"--register: no configuration has a value of {metric}")
    return max(scored, key=lambda s: (s[0], -s[1]))[2]


def choose_best(records, dataset: str, *, metric: str | None = None, rankers=None):
    """``(report, row)``: the report ``ltr-bench report --dataset DATASET [--metric METRIC]
    [--ranker RANKERS] --register`` builds from ``records`` (default baseline, alpha and
    test: they do not change the means) and the row it registers (:func:`best_row`).
    ``ltr-bench models --best`` calls this, so both pick the same configuration."""
    from ltr_bench.report.tables import build_report

    report = build_report(
        records, dataset=dataset, metrics=[metric] if metric else None, rankers=rankers
    )
    return report, best_row(report)


def _fmt(v: float) -> str:
    return "nan" if v != v else f"{v:.4f}"


def _against(what: str, c, metric: str, report: Report) -> str:
    verdict = {"win": "a significant win", "loss": "a significant loss"}.get(
        c.mark, "no significant difference"
    )
    return (
        f"Against {what} on {metric}: mean per-query difference "
        f"{c.mean_diff:+.4f} over {c.n_pairs} paired queries, paired t-test p = "
        f"{c.p_ttest_holm:.3g}, Wilcoxon p = {c.p_wilcoxon_holm:.3g} (Holm-corrected, "
        f"alpha {report.alpha}, test {report.test}): {verdict}."
    )


def _comparison(report: Report, row: Row, metric: str) -> str:
    from ltr_bench.report.click_pivot import versus_naive

    found = versus_naive(report, row.label, metric)  # a click row: also its own naive row
    naive = (
        ""
        if found is None
        else " " + _against(f"its own naive row {found[0]}", found[1], metric, report)
    )
    if row.label == report.baseline:
        return f"It is the report's baseline ({report.baseline}).{naive}"
    c = report.comparisons.get((row.label, metric))
    if c is None:
        return f"No paired comparison against {report.baseline} on {metric}.{naive}"
    return _against(f"the baseline {report.baseline}", c, metric, report) + naive


def model_description(report: Report, row: Row, metric: str | None = None) -> str:
    """The registered model's description: ``row``'s mean ± std, the configurations it was
    chosen from, and its paired comparison against the baseline (see the module)."""
    metric = metric or headline(report)
    stat = row.cells[metric]
    others = ", ".join(
        f"{r.label} {_fmt(r.cells[metric].mean)}"
        for r in sorted(report.rows, key=lambda r: -r.cells[metric].mean)
        if r is not row and metric in r.cells
    )
    chosen = (
        f"Best of {len(report.rows)} configuration(s) on {report.dataset} by mean {metric}: "
        f"{row.label} {_fmt(stat.mean)}"
        + ("" if math.isnan(stat.std) else f" ± {_fmt(stat.std)}")  # one fold: no spread
        + f" over {stat.n} fold run(s)"
        + (f" (the others: {others})." if others else ".")
    )
    return f"ltr-bench: {chosen} {_comparison(report, row, metric)}"


def version_descriptions(report: Report, row: Row, metric: str | None = None) -> list[tuple]:
    """``(record, description)`` for each fold run of ``row``: the fold's own metrics, then
    :func:`model_description` (see the module)."""
    metric = metric or headline(report)
    common = model_description(report, row, metric).removeprefix("ltr-bench: ")
    out = []
    for (fold, seed), rec in sorted(row.runs.items()):
        shown = [m for m in report.metrics if m in rec.metrics]
        values = ", ".join(f"{m} {_fmt(rec.metrics[m])}" for m in shown)
        seed_text = f" seed {seed}" if seed else ""
        out.append(
            (
                rec,
                f"ltr-bench {row.label} on {report.dataset} fold {fold}{seed_text}: {values}. "
                f"{common}",
            )
        )
    return out
