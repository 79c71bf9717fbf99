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


def curve_markdown(curve: ClicksCurve, width: int | None = None) -> str:
    """The curve's numbers as a Markdown section: one row per line, one column per x value
    and one for the skylines (true labels); ``width``: the table no wider
    (:func:`ltr_bench.report.fit.markdown_table`)."""
    from ltr_bench.report.fit import markdown_table
    from ltr_bench.report.plots import pretty

    head = ["line", *(value_text(x) for x in curve.xs), "true labels"]
    out = [
        f"## {pretty(curve.metric)} against {AXIS_TEXT.get(curve.axis, curve.axis)}",
        "",
        f"Mean ± sd over {len(curve.folds)} fold(s) ({', '.join(map(str, curve.folds))}), "
        "on the true test labels; columns: the click log's "
        f"`{curve.axis}`; skylines trained on the true labels.",
        "",
    ]
    body = []
    for line in curve.lines:
        cells = [_cell(line.points[x]) if x in line.points else "" for x in curve.xs]
        cells.append(_cell(line.points[None]) if line.skyline else "")
        body.append([line.label, *cells])
    out += markdown_table(head, body, width=width)
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


def _common_variant(curve: ClicksCurve) -> str:
    """The data variant every click line shares (`` · clicks pbm eta=1``), or ""."""
    ends = {line.label.partition(" · ")[2] for line in curve.lines if not line.skyline}
    return ends.pop() if len(ends) == 1 else ""


def plot_clicks_curve(curve: ClicksCurve, path: str | Path) -> Path:
    """The figure: one panel per ranker (shared y axis), in it one line per debiasing with
    error bars, nudged sideways so that bars at one x do not hide each other, and the
    ranker's skylines as horizontal lines with a ±1 sd band. The click variant all lines
    share goes to the title. Log x axis when the sizes span a factor 10 or more."""
    from ltr_bench.report.plots import _bounded, _plt, _save, pretty

    plt = _plt()
    colours = plt.get_cmap("tab10").colors
    rankers = list(dict.fromkeys(line.ranker for line in curve.lines))
    n = len(rankers)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.6 * cols, 6.0 * rows), sharey=True, squeeze=False
    )
    xs = np.array(curve.xs, dtype=float)
    log = bool(xs.size and xs.min() > 0 and xs.max() / xs.min() >= 10)
    common = _common_variant(curve)
    for k, ranker in enumerate(rankers):
        ax = axes[k // cols][k % cols]
        lines = [line for line in curve.lines if line.ranker == ranker]
        clicked = [line for line in lines if not line.skyline]
        for i, line in enumerate(lines):
            name = line.label.partition(" · ")[0] if common else line.label
            if line.skyline:
                mean, sd, _ = line.points[None]
                style = ["-", "--", ":"][sum(x.skyline for x in lines[:i]) % 3]
                ax.axhline(
                    mean,
                    color="black",
                    linestyle=style,
                    linewidth=1.6,
                    alpha=0.7,
                    label=f"{name} (true labels)",
                )
                if not math.isnan(sd):
                    ax.axhspan(mean - sd, mean + sd, color="grey", alpha=0.08)
                continue
            j = clicked.index(line)
            shift = (j - (len(clicked) - 1) / 2) * 0.025  # in decades (log) or units
            x = np.array([p for p in curve.xs if p in line.points], dtype=float)
            x = x * 10**shift if log else x + shift * max(1.0, float(np.ptp(xs)))
            stats = [line.points[p] for p in curve.xs if p in line.points]
            ax.errorbar(
                x,
                [st[0] for st in stats],
                yerr=[0.0 if math.isnan(st[1]) else st[1] for st in stats],
                color=colours[j % len(colours)],
                marker="osD^v<>pP*hX"[j % 12],
                capsize=2,
                linewidth=1.3,
                label=name,
            )
        if log:
            ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([value_text(x) for x in curve.xs])
        ax.minorticks_off()
        ax.set_title(ranker, fontsize=10)
        ax.set_xlabel(AXIS_TEXT.get(curve.axis, curve.axis), fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    _bounded(axes[0][0], curve.metric)  # once every panel is drawn: the y axis is shared
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    for row in axes:
        row[0].set_ylabel(f"{pretty(curve.metric)} on the true test labels")
    fig.suptitle(
        f"{curve.dataset}{(' · ' + common) if common else ''}: {pretty(curve.metric)} against "
        f"the click log's {curve.axis}, mean ± 1 sd over {_folds_text_of(curve)}",
        fontsize=10,
    )
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
