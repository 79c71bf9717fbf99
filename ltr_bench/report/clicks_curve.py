"""The clicks curve: ranking quality on the true test labels against the size of the click log.

Unbiased learning to rank is judged by how a learner's quality grows with the click log
(Joachims, Swaminathan and Schnabel, WSDM 2017, Fig. 2; Oosterhuis and de Rijke, SIGIR 2020):
a naive learner flattens at its bias, an unbiased one keeps climbing towards the skyline, the
same learner on the true labels. One size of log can point either way, so the report draws the
whole curve when its rows were trained on click logs of several sizes
(``--sweep DATASET.sessions=10,100,1000``, :mod:`ltr_bench.run.sweeps`).

The x axis is the first of :data:`AXES` that takes more than one value among the report's
click-trained rows, read from each record's resolved click configuration
(``dataset_identity.clicks``; for options outside it, the record's dataset options):
``sessions`` (sessions per query), ``train_queries`` (training queries in the log),
``logging_fraction``, ``top_k``. Rows are grouped into lines by their name without that option
(:func:`ltr_bench.results.labels.row_label_without`): one line per learner and debiasing
(``lightgbm · clicks pbm eta=1``, ``lightgbm[unbiased=true] · clicks pbm eta=1``, ...). Rows
trained on the true labels are the skylines, drawn as horizontal lines with a band of ±1 sd.
Each point is the mean over the report's folds (seeds averaged per fold first) of the metric on
the true test labels, with ±1 sample standard deviation over folds as its error bar; every
point uses the same folds (the report's units). :func:`curve_markdown` and :func:`curve_csv`
give the same numbers as a table. Nothing is retrained.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ltr_bench.report.click_rows import clicks_of
from ltr_bench.report.tables import Report
from ltr_bench.results.labels import label_sort_key, row_label, row_label_without, value_text

__all__ = [
    "AXES",
    "ClicksCurve",
    "clicks_curve",
    "curve_csv",
    "curve_markdown",
    "plot_clicks_curve",
    "write_clicks_curve",
]

#: the log-size options a curve can be drawn over, in order of preference
AXES = ("sessions", "train_queries", "logging_fraction", "top_k")
#: what the axes mean, for the figure and the table
AXIS_TEXT = {
    "sessions": "sessions per query in the click log",
    "train_queries": "training queries in the click log",
    "logging_fraction": "fraction of training queries the logging ranker saw",
    "top_k": "documents shown per session",
}


@dataclass
class CurveLine:
    """One learner and debiasing: ``points`` x -> (mean, sd, folds) over the report's folds;
    a skyline (true labels) has the single point ``None``."""

    label: str
    ranker: str
    points: dict = field(default_factory=dict)

    @property
    def skyline(self) -> bool:
        return None in self.points


@dataclass
class ClicksCurve:
    dataset: str
    metric: str
    axis: str
    xs: list
    lines: list[CurveLine]
    folds: list[int]


def _x(record, axis: str):
    clicks = clicks_of(record) or {}
    value = clicks.get(axis, (record.dataset_options or {}).get(axis))
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _stat(row, metric: str) -> tuple[float, float, int]:
    values = [v for v in row.fold_values(metric).values() if not math.isnan(v)]
    if not values:
        return float("nan"), float("nan"), 0
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    return float(np.mean(values)), sd, len(values)


def clicks_curve(report: Report, metric: str | None = None) -> ClicksCurve | None:
    """The curve of ``metric`` (default ``ndcg@10`` when the report has it, else its first
    metric) over the report's rows, or None when its click-trained rows do not span two log
    sizes."""
    if metric is None:
        metric = "ndcg@10" if "ndcg@10" in report.metrics else report.metrics[0]
    clicked = [row for row in report.rows if clicks_of(next(iter(row.runs.values())))]
    axis = None
    for name in AXES:
        values = {_x(next(iter(r.runs.values())), name) for r in clicked}
        if len(values - {None}) > 1 and None not in values:
            axis = name
            break
    if axis is None:
        return None
    lines: dict[str, CurveLine] = {}
    for row in report.rows:
        first = next(iter(row.runs.values()))
        label = first.label or first.ranker
        if clicks_of(first):
            name = row_label_without(label, first.dataset_options, first.dataset_identity, axis)
            x = _x(first, axis)
        else:
            name = row_label(label, first.dataset_options, first.dataset_identity) + " · skyline"
            x = None
        line = lines.setdefault(name, CurveLine(name, first.ranker))
        if x in line.points:  # two rows at one point of one line: their names say too little
            name = f"{name} ({row.label})"
            line = lines.setdefault(name, CurveLine(name, first.ranker))
        line.points[x] = _stat(row, metric)
    xs = sorted({x for line in lines.values() for x in line.points if x is not None})
    ordered = sorted(lines.values(), key=lambda c: (c.ranker, c.skyline, label_sort_key(c.label)))
    return ClicksCurve(report.dataset, metric, axis, xs, ordered, report.folds)


def _cell(stat) -> str:
    mean, sd, _ = stat
    if math.isnan(mean):
        return ""
    return f"{mean:.4f}" + ("" if math.isnan(sd) else f" ± {sd:.4f}")


def curve_markdown(curve: ClicksCurve) -> str:
    """The curve's numbers as a Markdown section: one row per line, one column per x value
    and one for the skylines (true labels)."""
    from ltr_bench.report.plots import pretty

    head = ["line", *(value_text(x) for x in curve.xs), "true labels"]
    out = [
        f"## {pretty(curve.metric)} against {AXIS_TEXT.get(curve.axis, curve.axis)}",
        "",
        f"Mean ± sd over {len(curve.folds)} fold(s) ({', '.join(map(str, curve.folds))}), "
        "on the true test labels; columns: the click log's "
        f"`{curve.axis}`; skylines trained on the true labels.",
        "",
        "| " + " | ".join(head) + " |",
        "|---|" + "---:|" * (len(head) - 1),
    ]
    for line in curve.lines:
        cells = [_cell(line.points[x]) if x in line.points else "" for x in curve.xs]
        cells.append(_cell(line.points[None]) if line.skyline else "")
        out.append("| " + " | ".join([line.label, *cells]) + " |")
    return "\n".join(out) + "\n"


def curve_csv(curve: ClicksCurve) -> str:
    """One line per point: ``line,axis,x,metric,mean,sd,folds`` (x empty for a skyline)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["line", "axis", "x", "metric", "mean", "sd", "folds"])
    for line in curve.lines:
        for x, (mean, sd, n) in line.points.items():
            w.writerow([line.label, curve.axis, "" if x is None else x, curve.metric, mean, sd, n])
    return buf.getvalue()


def plot_clicks_curve(curve: ClicksCurve, path: str | Path) -> Path:
    """The figure: one line per learner and debiasing with error bars, the skylines as
    horizontal lines with a ±1 sd band; a ranker's lines share its colour and differ in
    marker and line style. Log x axis when the sizes span a factor 10 or more."""
    from ltr_bench.report.plots import _bounded, _plt, _save, pretty

    plt = _plt()
    colours = plt.get_cmap("tab10").colors
    rankers = list(dict.fromkeys(line.ranker for line in curve.lines))
    fig, ax = plt.subplots(figsize=(9.6, 5.2))
    xs = np.array(curve.xs, dtype=float)
    styles = ["-", "--", "-.", ":"]
    seen: dict[str, int] = {}
    for line in curve.lines:
        colour = colours[rankers.index(line.ranker) % len(colours)]
        i = seen[line.ranker] = seen.get(line.ranker, -1) + 1
        if line.skyline:
            mean, sd, _ = line.points[None]
            ax.axhline(mean, color=colour, linewidth=2.2, alpha=0.8, label=line.label)
            if not math.isnan(sd):
                ax.axhspan(mean - sd, mean + sd, color=colour, alpha=0.08)
            continue
        x = np.array([p for p in curve.xs if p in line.points], dtype=float)
        stats = [line.points[p] for p in curve.xs if p in line.points]
        ax.errorbar(
            x,
            [s[0] for s in stats],
            yerr=[0.0 if math.isnan(s[1]) else s[1] for s in stats],
            color=colour,
            marker="osD^v<>pP*hX"[i % 12],
            linestyle=styles[i % len(styles)],
            capsize=3,
            linewidth=1.4,
            label=line.label,
        )
    if xs.size and xs.min() > 0 and xs.max() / xs.min() >= 10:
        ax.set_xscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([value_text(x) for x in curve.xs])
    ax.minorticks_off()
    ax.set_xlabel(AXIS_TEXT.get(curve.axis, curve.axis))
    ax.set_ylabel(f"{pretty(curve.metric)} on the true test labels")
    ax.set_title(
        f"{curve.dataset}: {pretty(curve.metric)} against the click log's {curve.axis}, "
        f"mean ± 1 sd over {_folds_text_of(curve)}",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    _bounded(ax, curve.metric)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return _save(fig, path)


def _folds_text_of(curve: ClicksCurve) -> str:
    n = len(curve.folds)
    return f"{n} fold" + ("" if n == 1 else "s")


def write_clicks_curve(report: Report, out_dir: str | Path) -> list[Path]:
    """``<out_dir>/<dataset>_clicks_curve.png`` when the report's rows make a curve
    (:func:`clicks_curve`), else nothing (``[]``)."""
    curve = clicks_curve(report)
    if curve is None:
        return []
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.dataset).strip("._") or "dataset"
    return [plot_clicks_curve(curve, Path(out_dir) / f"{safe}_clicks_curve.png")]
