"""Rendering a :class:`~ltr_bench.report.tables.Report`: Markdown, CSV and HTML, and the CLI's
summary table of a run. Nothing here computes a statistic."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from ltr_bench.report.click_pivot import pivot_markdown, versus_naive
from ltr_bench.report.legend import legend
from ltr_bench.report.tables import LOSS, TIMING_KEYS, TIMING_LABELS, WIN, Report, ReportError, Stat

__all__ = [
    "FORMATS",
    "format_report",
    "legend",
    "summary_table",
    "to_csv",
    "to_html",
    "to_markdown",
]

FORMATS = ("md", "csv", "html")


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
    text = f(stat.mean) + ("" if math.isnan(stat.std) else f" ± {f(stat.std)}")
    if not timing and not math.isnan(stat.seed_std):
        text += f" [s {f(stat.seed_std)}]"
    return text


def _p(v: float) -> str:
    if v is None or math.isnan(v):
        return "-"
    return "<1e-4" if v < 1e-4 else f"{v:.4f}"


def _table(report: Report) -> tuple[list[str], list[list[str]]]:
    header = ["ranker", "units", *report.metrics, *(TIMING_LABELS[k] for k in TIMING_KEYS)]
    body = []
    for row in report.rows:
        cells = [row.label + (" (baseline)" if row.is_baseline else ""), str(len(row.runs))]
        for m in report.metrics:
            text = _cell_text(row.cells[m], False)
            if 0 < row.cells[m].n < len(row.runs):  # NaN units left out: say over how many
                text += f" (n={row.cells[m].n})"
            c = report.comparisons.get((row.label, m))
            if c is not None and c.mark:
                text += " " + (WIN if c.mark == "win" else LOSS)
            cells.append(text)
        cells += [_cell_text(row.cells[k], True) for k in TIMING_KEYS]
        body.append(cells)
    return header, body


def _test_header(report: Report) -> list[str]:
    return [
        "ranker",
        "metric",
        "pairs",
        "mean diff",
        "p t-test",
        "p t-test (Holm)",
        "p Wilcoxon",
        "p Wilcoxon (Holm)",
        "result",
    ]


def _test_rows(report: Report) -> list[list[str]]:
    out = []
    for (label, m), c in report.comparisons.items():
        out.append(
            [
                label,
                m,
                str(c.n_pairs),
                _num(c.mean_diff, 4),
                _p(c.p_ttest),
                _p(c.p_ttest_holm),
                _p(c.p_wilcoxon),
                _p(c.p_wilcoxon_holm),
                {"win": f"{WIN} better", "loss": f"{LOSS} worse"}.get(c.mark, "n.s."),
            ]
        )
    return out


def _md_table(
    header: list[str], rows: list[list[str]], width: int | None = None, keep: int = 1
) -> str:
    from ltr_bench.report.fit import markdown_table

    return "\n".join(markdown_table(header, rows, keep=keep, width=width))


def to_markdown(report: Report, width: int | None = None) -> str:
    """The report as Markdown; ``width``: each table no wider (split into tables of the
    same rows where needed, :func:`ltr_bench.report.fit.markdown_table`), None: whole."""
    header, body = _table(report)
    parts = [
        f"## {report.dataset}: {len(report.rows)} ranker(s), baseline {report.baseline}",
        "",
        _md_table(header, body, width),
        "",
    ]
    parts += [f"- {s}" for s in legend(report)]
    pivots = pivot_markdown(report, width)
    if pivots:
        parts += ["", pivots.rstrip("\n")]
    published = _published_markdown(report, width)
    if published:
        parts += ["", published.rstrip("\n")]
    if report.comparisons:
        parts += [
            "",
            f"### Paired tests against {report.baseline}",
            "",
            _md_table(_test_header(report), _test_rows(report), width, keep=2),
        ]
    return "\n".join(parts) + "\n"


def _published_markdown(report: Report, width: int | None = None) -> str:
    """The published rows for the report's dataset beside ours (:mod:`.published`)."""
    from ltr_bench.report.published import published_section
    from ltr_bench.report.published.render import section_markdown

    return section_markdown(published_section(report), width)


def to_csv(report: Report) -> str:
    """Tidy CSV: one line per (ranker, quantity); quantities are the metrics and the timing
    keys; test columns are empty for the baseline and the timings. The ``naive_*`` columns:
    a click-trained skyline or debiased row against its learner's own naive row
    (:mod:`ltr_bench.report.click_pivot`), empty for other rows."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "dataset",
            "ranker",
            "ranker_name",
            "baseline",
            "quantity",
            "mean",
            "std",
            "n_folds",
            "folds",
            "n_pairs",
            "mean_diff",
            "p_ttest",
            "p_ttest_holm",
            "p_wilcoxon",
            "p_wilcoxon_holm",
            "result",
            "alpha",
            "test",
            "parent_run_ids",
            "its_naive",
            "naive_n_pairs",
            "naive_mean_diff",
            "naive_p_ttest_holm",
            "naive_p_wilcoxon_holm",
            "naive_result",
        ]
    )
    folds = ";".join(f"{f}/{sd}" for f, sd in report.units)
    for row in report.rows:
        for q in [*report.metrics, *TIMING_KEYS]:
            s = row.cells[q]
            c = report.comparisons.get((row.label, q))
            tests: list[Any] = ["", "", "", "", "", "", ""]
            if c is not None:
                tests = [
                    c.n_pairs,
                    repr(c.mean_diff),
                    repr(c.p_ttest),
                    repr(c.p_ttest_holm),
                    repr(c.p_wilcoxon),
                    repr(c.p_wilcoxon_holm),
                    c.mark or "ns",
                ]
            w.writerow(
                [
                    report.dataset,
                    row.label,
                    row.ranker,
                    int(row.is_baseline),
                    q,
                    repr(s.mean),
                    repr(s.std),
                    s.n,
                    folds,
                    *tests,
                    report.alpha,
                    report.test,
                    ";".join(row.parent_run_ids),
                    *_versus_naive(report, row.label, q),
                ]
            )
    return buf.getvalue()


def _versus_naive(report: Report, label: str, quantity: str) -> list[Any]:
    """The CSV columns of a skyline or debiased click row against its own naive row."""
    found = versus_naive(report, label, quantity)
    if found is None:
        return ["", "", "", "", "", ""]
    naive, c = found
    return [
        naive,
        c.n_pairs,
        repr(c.mean_diff),
        repr(c.p_ttest_holm),
        repr(c.p_wilcoxon_holm),
        c.mark or "ns",
    ]


def to_html(report: Report, *, plots=()) -> str:
    """A self-contained HTML page (:mod:`ltr_bench.report.html`)."""
    from ltr_bench.report.html import to_html as render

    return render(report, plots=plots)


def format_report(report: Report, fmt: str = "md", *, plots=(), width: int | None = None) -> str:
    """The report as ``md`` (Markdown; ``width``: see :func:`to_markdown`), ``csv`` (tidy,
    one line per ranker and quantity) or ``html`` (one self-contained page, ``plots``
    embedded)."""
    if fmt == "html":
        return to_html(report, plots=plots)
    if fmt == "md":
        return to_markdown(report, width)
    try:
        return {"md": to_markdown, "csv": to_csv, "html": to_html}[fmt](report)
    except KeyError:
        raise ReportError(
            f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}", usage=True
        ) from None


def summary_table(
    records, metrics, *, convention: str | None = None, width: int | None = None
) -> str:
    """The CLI's summary of a run: one line per (dataset, configuration), mean ± std over
    its folds and seeds of the main metrics (under ``convention``, a profile of
    :mod:`ltr_bench.evaluation.conventions`, when given), fit time and scoring time.

    ``width``: the table fits it (:func:`ltr_bench.report.fit.fit_table`; None: every
    column): the first metrics are left out first (the last two, ndcg@10 and map by
    default, stay), then the scoring time; a note names what was left out."""
    from ltr_bench.results import aggregate, group_flags

    wanted = [m for m in ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map") if m in metrics]
    if not wanted:
        wanted = list(metrics[:5])
    if convention:
        from ltr_bench.evaluation.conventions import profile_keys

        wanted = profile_keys(wanted, convention) or wanted
    from ltr_bench.results.labels import row_label, shared_data_options, value_text

    by_dataset: dict[str, list] = {}
    for r in records:
        by_dataset.setdefault(r.dataset, []).append(r)
    groups: dict[tuple[str, str], list] = {}
    notes = []
    for dataset, recs in by_dataset.items():
        # a row's plain name: its label and the data variant in words, less the data
        # options all of the dataset's rows share (said once, under the table)
        shared = shared_data_options((r.dataset_options, r.dataset_identity) for r in recs)
        if shared:
            said = " ".join(f"{k}={value_text(v)}" for k, v in sorted(shared.items()))
            notes.append(f"dataset options (every row of {dataset}): {said}")
        for r in recs:
            name = row_label(
                r.label or r.ranker, r.dataset_options, r.dataset_identity, leave_out=shared
            )
            groups.setdefault((dataset, name), []).append(r)
    header = ["dataset", "ranker", "folds"] + wanted + ["fit_s", "us/doc"]
    rows = [header]
    for (dataset, label), recs in groups.items():
        stats = aggregate(recs)

        def cell(key: str, digits: int) -> str:
            if key not in stats:
                return "-"
            mean, std, n = stats[key]
            return _num(mean, digits) + ("" if n < 2 else f" ± {_num(std, digits)}")

        units = sorted({(r.fold, r.seed) for r in recs})
        seeds = sorted({s for _, s in units})
        folds = ",".join(str(f) for f in sorted({f for f, _ in units}))
        if len(seeds) > 1:
            folds += f" x {len(seeds)} seeds"
        flags = group_flags(recs)
        rows.append(
            [dataset, label + (" (!)" if flags else ""), folds]
            + [cell(m, 4) for m in wanted]
            + [cell("fit_seconds", 2), cell("score_us_per_doc", 3)]
        )
        notes += [f"(!) {label} on {dataset}: {f}" for f in flags]
    from ltr_bench.report.fit import Column, fit_table, left_out_note

    metric_cols = header[3 : 3 + len(wanted)]
    ranks = {m: 2 + len(metric_cols) - k for k, m in enumerate(metric_cols[:-2])}
    ranks["us/doc"] = 1
    columns = [Column(h, right=i >= 3, drop=ranks.get(h, 0)) for i, h in enumerate(header)]
    fitted = fit_table(columns, rows[1:], width=width)
    note = left_out_note(fitted, width or 0, "`ltr-bench report`")
    return "\n".join([fitted.text, *([note] if note else []), *notes])


def tuning_table(records) -> str:
    """``ltr-bench tune``'s second table: one line per tuned cell, its trials, the
    parameters chosen on validation and their validation value."""
    lines = [
        "",
        "| configuration | dataset | fold | seed | trials (complete/pruned/failed) "
        "| validation | chosen parameters |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        t = r.config.get("tuning", {})
        chosen = ", ".join(f"{k}={_fmt(v)}" for k, v in sorted(t.get("best_params", {}).items()))
        lines.append(
            f"| {r.row_name} | {r.dataset} | {r.fold} | {r.seed} | "
            f"{t.get('trials_finished')} ({t.get('trials_complete')}/"
            f"{t.get('trials_pruned')}/{t.get('trials_failed')}) | "
            f"{t.get('best_value', float('nan')):.4f} | {chosen} |"
        )
    return "\n".join(lines) + "\n"


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
