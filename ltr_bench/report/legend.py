"""The sentences printed under a report's table (markdown and HTML): what each number and
mark means, which test decided the marks, and the metric conventions."""

from __future__ import annotations

from ltr_bench.report.tables import LOSS, WIN, Report
from ltr_bench.results.labels import value_text


def legend(report: Report) -> list[str]:
    """Sentences explaining the table (printed under it in md/html)."""
    n_comp = len(report.comparisons)
    which = {
        "both": "both the paired t-test and the Wilcoxon signed-rank test",
        "ttest": "the paired t-test",
        "wilcoxon": "the Wilcoxon signed-rank test",
    }[report.test]
    folds = ",".join(map(str, report.folds))
    seeds = ",".join(map(str, report.seeds))
    options = " ".join(f"{k}={value_text(v)}" for k, v in sorted(report.data_options.items()))
    lines = [
        f"Dataset {report.dataset}"
        + (f" with {options} (every row)" if options else "")
        + f", folds {folds}, seeds {seeds} ({len(report.units)} units "
        f"= fold x seed). Each cell: mean ± sample standard deviation (ddof=1) over the units "
        f"of the unit's mean over its test queries"
        + (
            "; [s ...]: standard deviation over seeds of the per-seed means."
            if len(report.seeds) > 1
            else "."
        ),
        f"{WIN} / {LOSS}: significantly better / worse than the baseline "
        f"{report.baseline}: per-query values paired by (fold, seed, query id) and pooled "
        f"over the units, {which} two-sided with Holm-adjusted p < {report.alpha:g} (Holm over the "
        f"{n_comp} comparisons of rankers x metrics, each test separately). No mark: not "
        f"significant.",
        "fit time: wall-clock seconds of fit (train split, validation split as eval_set). "
        "scoring: median wall time of predict on the test split after a warm-up, per "
        "document, in microseconds. Timings depend on the machine and its load.",
        "Metric conventions: NDCG gain 2^rel - 1, discount 1/log2(rank + 1); a query without "
        "relevant documents scores 1 (metrics marked 'empty query = 0': 0); ties count as the "
        "expected value over their orderings.",
    ]
    if any(" · " in r.label for r in report.rows):
        lines.append(
            "A row's name is its configuration's label and, after ' · ', the data it was "
            "trained on in words (clicks: click model and arguments, other protocol options, "
            "x sessions per query); a name without it: the dataset as it is."
        )
    return lines + [f"Note: {n}" for n in report.notes]
