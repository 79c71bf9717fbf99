"""Click-trained rows compared like with like: one pivot per learner and click configuration.

A report holding rows trained on simulated clicks (:mod:`ltr_bench.clicks`) gets, beside its
table against one baseline, a pivot per *learner* (a ranker) and click configuration:

naive
    a click row whose ``fit`` got no click keywords (``record.config["fit_keywords"] ==
    []``: by its tags the ranker trained on the click counts as labels). Each naive row
    anchors a pivot.
debiased
    a click row whose ``fit`` got ``position`` / ``propensity`` (its tags declare
    ``accepts_position``: LightGBM's and XGBoost's unbiased modes, ``neural`` IPS and DLA).
    Its *own naive* row is the naive row of the same ranker on the same click configuration
    (every split's fingerprint equal) whose resolved parameters differ from its own in the
    fewest keys (a tie goes to the first in name order, and a note says so).
skyline
    the same ranker on the true labels of the same folds (test fingerprints equal in every
    unit), the one whose parameters differ least from the naive row's.

Every skyline and debiased row is tested against its own naive row, on the per-query values
of the same test queries (:func:`ltr_bench.report.pairing.compare_rows`: paired by fold, seed
and query id over the report's units); these comparisons are one Holm family of their own
(every pivot row x metric, each test separately), apart from the tests against the report's
baseline. A click row whose records predate ``fit_keywords`` is left out of the pivots with
a note (re-run it with ``--force`` to place it).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from ltr_bench.report.click_rows import click_text, clicks_of, same_data
from ltr_bench.report.pairing import Comparison, compare_rows, correct_and_mark
from ltr_bench.results.labels import label_sort_key, value_text, variant_text

__all__ = ["Pivot", "build_pivots", "pivot_html", "pivot_markdown", "versus_naive"]


@dataclass
class Pivot:
    """One learner on one click configuration: ``naive`` (the anchor), ``skyline`` (or
    None) and ``debiased`` rows by name; ``comparisons[(row, metric)]`` of the skyline and
    each debiased row against ``naive``."""

    ranker: str
    clicks: dict[str, Any]
    variant: str  # the click configuration in words, as the row names say it
    naive: str
    skyline: str | None = None
    debiased: list[str] = field(default_factory=list)
    comparisons: dict[tuple[str, str], Comparison] = field(default_factory=dict)

    @property
    def learner(self) -> str:
        return f"{self.ranker} on {self.variant}"


def _first(row):
    return next(iter(row.runs.values()))


def _role(row) -> str:
    first = _first(row)
    if not clicks_of(first):
        return "true"
    keywords = first.config.get("fit_keywords")
    if keywords is None:
        return "unknown"
    return "debiased" if keywords else "naive"


def _distance(a, b) -> int:
    """How many resolved parameters of rows ``a`` and ``b`` differ."""
    keys = set(a.params) | set(b.params)
    return sum(value_text(a.params.get(k)) != value_text(b.params.get(k)) for k in keys)


def _closest(row, candidates, what: str, notes: list[str]):
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda c: (_distance(row, c), label_sort_key(c.label)))
    best = ranked[0]
    tied = [c.label for c in ranked[1:] if _distance(row, c) == _distance(row, best)]
    if tied:
        notes.append(
            f"{row.label}: {what} could be {best.label} or {', '.join(tied)} (parameters "
            f"differ as much); took {best.label}, the first by name"
        )
    return best


def _same_units(a, b, units, *, test_only: bool) -> bool:
    for u in units:
        if test_only:
            fa, fb = a.runs[u].fingerprints, b.runs[u].fingerprints
            if fa.get("test") is None or fa.get("test") != fb.get("test"):
                return False
        elif not same_data(a.runs[u], b.runs[u]):
            return False
    return True


def build_pivots(
    rows, metrics: list[str], units, alpha: float, test: str, leave_out=()
) -> tuple[list[Pivot], list[str]]:
    """The pivots of a report's rows (module docstring) and the notes on click rows that
    have no place in one. ``leave_out``: data options the report says once (not in names)."""
    notes: list[str] = []
    roles = {row.label: _role(row) for row in rows}
    unknown = [row.label for row in rows if roles[row.label] == "unknown"]
    if unknown:
        notes.append(
            f"{', '.join(unknown)}: the records do not say whether fit took the click "
            "positions (recorded since this version); left out of the learners' pivots "
            "(re-run with --force to place them)"
        )
    pivots: dict[str, Pivot] = {}
    naive_rows = [row for row in rows if roles[row.label] == "naive"]
    for row in naive_rows:
        first = _first(row)
        skylines = [
            r
            for r in rows
            if roles[r.label] == "true"
            and r.ranker == row.ranker
            and _same_units(r, row, units, test_only=True)
        ]
        skyline = _closest(row, skylines, "its skyline", notes)
        pivots[row.label] = Pivot(
            ranker=row.ranker,
            clicks=clicks_of(first),
            variant=variant_text(
                first.dataset_options, first.dataset_identity, leave_out=leave_out
            ),
            naive=row.label,
            skyline=None if skyline is None else skyline.label,
        )
    for row in rows:
        if roles[row.label] != "debiased":
            continue
        mine = [
            n
            for n in naive_rows
            if n.ranker == row.ranker and _same_units(n, row, units, test_only=False)
        ]
        naive = _closest(row, mine, "its own naive row", notes)
        if naive is None:
            notes.append(
                f"{row.label} learns from the click positions, but no {row.ranker} row was "
                "trained naively on the same clicks: run it without debiasing on the same "
                "click options to see what debiasing changes"
            )
            continue
        pivots[naive.label].debiased.append(row.label)
    by_label = {row.label: row for row in rows}
    comps: list[Comparison] = []
    for pivot in pivots.values():
        naive = by_label[pivot.naive]
        for label in [pivot.skyline, *pivot.debiased]:
            if label is None:
                continue
            for m in metrics:
                c = compare_rows(by_label[label].runs, naive.runs, m, units, label, naive.label)
                pivot.comparisons[(label, m)] = c
                comps.append(c)
    correct_and_mark(comps, alpha, test)
    ordered = sorted(pivots.values(), key=lambda p: (label_sort_key(p.ranker), p.variant, p.naive))
    return ordered, notes


def versus_naive(report, label: str, metric: str) -> tuple[str, Comparison] | None:
    """``(its naive row, the comparison)`` of a skyline or debiased row, else None."""
    for pivot in report.pivots:
        c = pivot.comparisons.get((label, metric))
        if c is not None:
            return pivot.naive, c
    return None


# ------------------------------------------------------------------------------ rendering


def _num(v: float, digits: int = 4) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:.{digits}f}"


def _p(v: float) -> str:
    return "-" if v is None or math.isnan(v) else ("<1e-4" if v < 1e-4 else f"{v:.4f}")


def _cell(report, label: str, metric: str) -> str:
    s = report.row(label).cells[metric]
    if s.n == 0:
        return "-"
    return _num(s.mean) + ("" if math.isnan(s.std) else f" ± {_num(s.std)}")


def _verdict(c: Comparison) -> str:
    return {"win": "▲ better", "loss": "▼ worse"}.get(c.mark, "n.s.")


def _lines(report, metric: str) -> list[list[str]]:
    """One line per row of each pivot: learner, row, role, value, and against its naive."""
    out = []
    for pivot in report.pivots:
        roles = [(pivot.skyline, "skyline (true labels)"), (pivot.naive, "naive (clicks)")]
        roles += [(d, "debiased (clicks + positions)") for d in pivot.debiased]
        for i, (label, role) in enumerate((lb, rl) for lb, rl in roles if lb is not None):
            c = pivot.comparisons.get((label, metric))
            versus = ["", "", "", "", "its naive"]
            if c is not None:
                versus = [
                    ("+" if c.mean_diff > 0 else "") + _num(c.mean_diff),
                    str(c.n_pairs),
                    _p(c.p_ttest_holm),
                    _p(c.p_wilcoxon_holm),
                    _verdict(c),
                ]
            out.append(
                [pivot.learner if i == 0 else "", label, role, _cell(report, label, metric)]
                + versus
            )
    return out


def _header(metric: str) -> list[str]:
    return [
        "learner",
        "row",
        "trained on",
        metric,
        "− its naive",
        "pairs",
        "p t-test (Holm)",
        "p Wilcoxon (Holm)",
        "result",
    ]


def _pivot_metric(report) -> str:
    return "ndcg@10" if "ndcg@10" in report.metrics else report.metrics[0]


def _about(report) -> list[str]:
    configs = []
    for pivot in report.pivots:
        text = f"'{pivot.variant}' is {click_text(pivot.clicks)}"
        if text not in configs:
            configs.append(text)
    return [
        "Each learner on each click configuration: its skyline (the same ranker on the true "
        "labels of the same folds), its naive row (trained on the click counts as labels) and "
        "each debiased row (fit given the click positions), every one judged on the same test "
        "queries with their true labels. '− its naive': the mean per-query difference to the "
        "learner's own naive row, paired by (fold, seed, query id); p-values Holm-corrected over "
        f"these {sum(len(p.comparisons) for p in report.pivots)} comparisons (a family apart "
        f"from the tests against the baseline), alpha {report.alpha:g}, test {report.test}.",
        *configs,
    ]


def pivot_markdown(report, width: int | None = None) -> str:
    """The pivots as Markdown (the headline metric; every metric's tests below), or "";
    ``width``: each table no wider (:func:`ltr_bench.report.fit.markdown_table`)."""
    if not report.pivots:
        return ""
    from ltr_bench.report.fit import markdown_table

    metric = _pivot_metric(report)

    def table(header, body, keep) -> list[str]:  # split tables repeat what names a row
        return markdown_table(header, body, right_from=3, keep=keep, width=width)

    parts = [f"### Learning from clicks: each learner against its own naive row ({metric})", ""]
    parts += table(_header(metric), _lines(report, metric), 2)
    parts += [""] + [f"- {s}" for s in _about(report)]
    others = [m for m in report.metrics if m != metric]
    if others:
        body = [line for m in others for line in _tests(report, m)]
        parts += ["", "#### Every metric against its own naive row", ""]
        parts += table(["row", "its naive", "metric", *_header(metric)[4:]], body, 3)
    return "\n".join(parts) + "\n"


def _tests(report, metric: str) -> list[list[str]]:
    out = []
    for pivot in report.pivots:
        for label in [pivot.skyline, *pivot.debiased]:
            c = pivot.comparisons.get((label, metric)) if label else None
            if c is None:
                continue
            out.append(
                [
                    label,
                    pivot.naive,
                    metric,
                    ("+" if c.mean_diff > 0 else "") + _num(c.mean_diff),
                    str(c.n_pairs),
                    _p(c.p_ttest_holm),
                    _p(c.p_wilcoxon_holm),
                    _verdict(c),
                ]
            )
    return out


def pivot_html(report) -> str:
    """The pivots as an HTML section, or ""."""
    if not report.pivots:
        return ""
    metric = _pivot_metric(report)

    def table(header, body) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body
        )
        return (
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
        )

    about = "".join(f"<li>{html.escape(s)}</li>" for s in _about(report))
    body = [line for m in report.metrics for line in _tests(report, m)]
    return "\n".join(
        [
            "<h2>Learning from clicks: each learner against its own naive row "
            f"({html.escape(metric)})</h2>",
            table(_header(metric), _lines(report, metric)),
            f'<ul class="notes">{about}</ul>',
            "<details><summary>Every metric against its own naive row</summary>"
            + table(["row", "its naive", "metric", *_header(metric)[4:]], body)
            + "</details>",
        ]
    )
