"""One self-contained HTML page for a :class:`~ltr_bench.report.tables.Report`: worth sharing.

Everything is inside the file (CSS inline, plots as base64 PNG data URIs), so it can be
mailed or attached to an MLflow run and opens anywhere. Sections: the comparison table
(best mean per column marked, significant wins and losses coloured), flags and notes, the
figures, the paired tests, and provenance: the commands that produced the results, package
versions, the metric conventions, and the split fingerprints of every fold.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
from collections.abc import Iterable
from pathlib import Path

from ltr_bench.report.legend import legend
from ltr_bench.report.tables import LOSS, TIMING_KEYS, TIMING_LABELS, WIN, Report

__all__ = ["to_html"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;
 max-width:1180px;margin:24px auto;padding:0 20px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid
 #dde2ea;padding-bottom:4px}.sub{color:#5a6475;margin:0 0 16px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid #e6e9ef;text-align:right;white-space:nowrap}
th{background:#f4f6f9;font-weight:600;border-bottom:2px solid #cfd5df}
td:first-child,th:first-child{text-align:left}tr:hover td{background:#fafbfd}
td.best{font-weight:700;background:#eef7ee}.win{color:#137333}.loss{color:#b3261e}
.baseline{color:#5a6475;font-size:12px}.flag{color:#a05a00}
ul.notes li{margin:2px 0}figure{margin:12px 0;display:inline-block;vertical-align:top}
figure img{max-width:100%;border:1px solid #e6e9ef}figcaption{color:#5a6475;font-size:12px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f4f6f9;
 border-radius:3px}pre{padding:8px;overflow-x:auto}code{padding:1px 3px}
details{margin:8px 0}.scroll{overflow-x:auto;max-width:100%}summary{cursor:pointer;font-weight:600}
"""


def _e(text) -> str:
    return html.escape(str(text))


def _num(v: float, digits: int = 4) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _sig(v: float) -> str:
    if v is None or math.isnan(v):
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def _lower_is_better(metric: str) -> bool:
    return metric in TIMING_KEYS or metric == "knn_error"


def _best(report: Report, metric: str) -> float | None:
    means = [r.cells[metric].mean for r in report.rows if r.cells[metric].n]
    means = [m for m in means if not math.isnan(m)]
    if len(means) < 2:
        return None
    return min(means) if _lower_is_better(metric) else max(means)


def _results_table(report: Report) -> str:
    quantities = [*report.metrics, *TIMING_KEYS]
    head = "".join(f"<th>{_e(TIMING_LABELS.get(q, q))}</th>" for q in quantities)
    out = [
        '<div class="scroll">',
        f'<table class="results"><thead><tr><th>ranker</th><th>units</th>{head}</tr>'
        "</thead><tbody>",
    ]
    best = {q: _best(report, q) for q in quantities}
    for row in report.rows:
        cells = [
            f"<td>{_e(row.label)}"
            + (' <span class="baseline">(baseline)</span>' if row.is_baseline else "")
            + f"</td><td>{len(row.runs)}</td>"
        ]
        for q in quantities:
            s = row.cells[q]
            fmt = _sig if q in TIMING_KEYS else _num
            text = (
                "-" if s.n == 0 else fmt(s.mean) + ("" if math.isnan(s.std) else f" ± {fmt(s.std)}")
            )
            c = report.comparisons.get((row.label, q))
            if c is not None and c.mark:
                cls = "win" if c.mark == "win" else "loss"
                text += f' <span class="{cls}">{WIN if c.mark == "win" else LOSS}</span>'
            is_best = best[q] is not None and s.n and s.mean == best[q]
            cells.append(f"<td{' class=best' if is_best else ''}>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _tests_table(report: Report) -> str:
    rows = []
    for (label, m), c in report.comparisons.items():
        result = {
            "win": f'<span class="win">{WIN} better</span>',
            "loss": f'<span class="loss">{LOSS} worse</span>',
        }.get(c.mark, "n.s.")
        rows.append(
            f"<tr><td>{_e(label)}</td><td>{_e(m)}</td><td>{c.n_pairs}</td>"
            f"<td>{_num(c.mean_diff)}</td><td>{_sig(c.p_ttest)}</td>"
            f"<td>{_sig(c.p_ttest_holm)}</td><td>{_sig(c.p_wilcoxon)}</td>"
            f"<td>{_sig(c.p_wilcoxon_holm)}</td><td>{result}</td></tr>"
        )
    return (
        "<table><thead><tr><th>ranker</th><th>metric</th><th>pairs</th><th>mean diff</th>"
        "<th>p t-test</th><th>Holm</th><th>p Wilcoxon</th><th>Holm</th><th>result</th>"
        "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _figures(plots: Iterable[Path]) -> str:
    out = []
    for p in plots:
        data = base64.b64encode(Path(p).read_bytes()).decode("ascii")
        out.append(
            f'<figure><img alt="{_e(Path(p).stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(Path(p).stem.replace('_', ' '))}</figcaption></figure>"
        )
    return "\n".join(out)


def _provenance(report: Report) -> str:
    from ltr_bench.evaluation.metrics import CONVENTIONS

    records = [r for row in report.rows for r in row.runs.values()]
    commands = sorted({str(r.config.get("command")) for r in records if r.config.get("command")})
    env = records[0].environment if records else {}
    versions = ", ".join(f"{k} {v}" for k, v in (env.get("versions") or {}).items())
    out = []
    if commands:
        out.append("<p>Produced by:</p><pre>" + "\n".join(_e(c) for c in commands) + "</pre>")
    out.append(
        f"<p>Versions: {_e(versions or 'unknown')}. Machine: "
        f"{_e(env.get('cpu_model', '?'))}, {_e(env.get('cpu_count', '?'))} CPUs. "
        f"ltr-bench commit {_e(env.get('ltr_bench_git_commit') or 'unknown')}.</p>"
    )
    threads = sorted({str(r.n_threads) for r in records})
    out.append(f"<p>Threads per ranker: {_e(', '.join(threads))}.</p>")
    conv = "".join(f"<li><b>{_e(k)}</b>: {_e(v)}</li>" for k, v in CONVENTIONS.items())
    out.append(f"<details><summary>Metric conventions</summary><ul>{conv}</ul></details>")
    base = next((r for r in report.rows if r.is_baseline), report.rows[0])
    fps = "".join(
        f"<tr><td>{f}</td><td>{s}</td>"
        + "".join(
            f"<td><code>{_e(str(rec.fingerprints.get(split, '-'))[:16])}</code></td>"
            for split in ("train", "vali", "test")
        )
        + "</tr>"
        for (f, s), rec in sorted(base.runs.items())
    )
    out.append(
        "<details><summary>Split fingerprints (sha256, first 16 hex digits; every row "
        "was checked to have the same)</summary><table><thead><tr><th>fold</th>"
        "<th>seed</th><th>train</th><th>vali</th><th>test</th></tr></thead><tbody>"
        + fps
        + "</tbody></table></details>"
    )
    return "\n".join(out)


def to_html(report: Report, *, plots: Iterable[Path] = ()) -> str:
    """The report as one self-contained HTML page (``plots``: PNG files to embed)."""

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    notes = "".join(f"<li>{_e(s)}</li>" for s in legend(report))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>ltr-bench report: {_e(report.dataset)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{_e(report.dataset)}: {len(report.rows)} ranker(s) compared</h1>",
        f'<p class="sub">Baseline {_e(report.baseline)} · folds '
        f"{_e(', '.join(map(str, report.folds)))} · seeds "
        f"{_e(', '.join(map(str, report.seeds)))} · generated {stamp} by ltr-bench</p>",
        "<h2>Results</h2>",
        _results_table(report),
        '<p class="sub">Bold: the best mean of the column (highest; lowest for times and '
        f"kNN error). {WIN} / {LOSS}: significantly better / worse than the baseline.</p>",
        f'<ul class="notes">{notes}</ul>',
    ]
    from ltr_bench.report.click_pivot import pivot_html

    pivots = pivot_html(report)  # click rows like with like, under the table
    if pivots:
        parts.append(pivots)
    from ltr_bench.report.published import published_section
    from ltr_bench.report.published.render import section_html

    published = section_html(published_section(report))  # under the table, as in Markdown
    if published:
        parts.append(published)
    figures = _figures(plots)
    if figures:
        parts += ["<h2>Figures</h2>", figures]
    if report.comparisons:
        parts += [f"<h2>Paired tests against {_e(report.baseline)}</h2>", _tests_table(report)]
    parts += ["<h2>Provenance</h2>", _provenance(report), "</body></html>"]
    return "\n".join(parts) + "\n"
