"""Report plots (matplotlib, Agg backend, PNG) drawn from a
:class:`~ltr_bench.report.tables.Report`.

* :func:`plot_ndcg_at_k`: NDCG@k against the cutoff k, one line per row (ranker), mean over
  the report's folds with ±1 sample standard deviation as error bars.
* :func:`plot_accuracy_vs_time`: a metric (default NDCG@10) against fit time per fold, both
  mean ± std over the folds; log time axis when the times span more than a factor 20.
* :func:`plot_metric_per_fold`: a metric per fold, one line per ranker (paired view: the
  same split in every column).
* :func:`plot_pareto`: a metric against scoring or fit time, with each ranker's Pareto front
  over its configurations (:func:`write_pareto_plots` draws both).

Every row keeps its colour and marker across the figures; up to 20 rows get 20 distinct
colours (:func:`palette`). Log time axes label plain numbers that never overlap
(:func:`_log_axis`). Nothing is retrained:
the values are those stored in the report's fold runs.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ltr_bench.evaluation.metrics import MetricKey, metric_key_or_none
from ltr_bench.report.tables import Report, Row, _value
from ltr_bench.results.labels import variant_text

__all__ = [
    "pareto_front",
    "plot_accuracy_vs_time",
    "plot_metric_per_fold",
    "plot_ndcg_at_k",
    "plot_pareto",
    "write_pareto_plots",
    "write_plots",
]

_MARKERS = "osD^v<>pP*hX"


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def palette() -> list[tuple[float, float, float]]:
    """20 distinct colours, neighbours of different hues: matplotlib's qualitative ``tab20``
    (ten hues, each dark then light) reordered as its ten dark shades, then its ten light
    ones, so that rows 1-10 get ten hues and rows 11-20 the lighter twins of the same order.
    """
    colours = list(_plt().get_cmap("tab20").colors)
    return colours[0::2] + colours[1::2]


def _style(report: Report) -> dict[str, tuple]:
    """Each row's (colour, marker): unique colours for up to 20 rows (:func:`palette`),
    then they repeat with another marker."""
    colours = palette()
    return {
        row.label: (colours[i % len(colours)], _MARKERS[i % len(_MARKERS)])
        for i, row in enumerate(report.rows)
    }


def _plain(value: float, _pos=None) -> str:
    """A tick label as a plain number (``0.5``, ``20``, ``1e+04``), not ``5×10^-1``."""
    return f"{value:g}"


def _log_axis(ax) -> None:
    """A log x axis whose tick labels never overlap: plain numbers at the powers of ten;
    within two decades also at 2 and 5 times them, within 0.6 of a decade at every
    integer multiple (so a narrow axis still has labels); beyond two decades the other
    ticks unlabelled. (matplotlib's default labels every minor tick of a narrow log axis,
    ``3×10^0`` running into ``4×10^0``.)"""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    low, high = ax.get_xlim()
    decades = math.log10(high / low) if low > 0 and high > low else 0.0
    axis = ax.xaxis
    axis.set_major_locator(LogLocator(base=10, numticks=10))
    axis.set_major_formatter(FuncFormatter(_plain))
    if decades <= 0.6:
        subs, labelled = tuple(range(2, 10)), True
    elif decades <= 2:
        subs, labelled = (2, 5), True
    else:
        subs, labelled = tuple(range(2, 10)), False
    axis.set_minor_locator(LogLocator(base=10, subs=subs, numticks=100))
    axis.set_minor_formatter(FuncFormatter(_plain) if labelled else NullFormatter())


def _name(row: Row) -> str:
    return row.label + (" (baseline)" if row.is_baseline else "")


def _mean_std(row: Row, key: str) -> tuple[float, float]:
    vals = np.array([_value(r, key) for r in row.runs.values()], dtype=np.float64)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return float("nan"), float("nan")
    return float(vals.mean()), float(vals.std(ddof=1)) if vals.size > 1 else 0.0


def pretty(metric: str) -> str:
    """The display name of a metric (:class:`ltr_bench.evaluation.metrics.MetricKey`), e.g.
    ``NDCG@10``; other measures (``knn_error``) unchanged."""
    key = metric_key_or_none(metric)
    return metric if key is None else key.display


def _folds_text(report: Report) -> str:
    n = len(report.folds)
    return f"{n} fold" + ("" if n == 1 else "s")


def _convention(metric: str) -> str:
    key = metric_key_or_none(metric)
    return "" if key is None else key.convention


def _bounded(ax, metric: str) -> None:
    """Ranking metrics live in [0, 1]: error bars must not stretch the axis past 1."""
    if metric_key_or_none(metric) is not None or metric == "knn_error":
        low, high = ax.get_ylim()
        ax.set_ylim(max(low, 0.0), min(high, 1.0))


#: legend labels up to this many characters fit beside the axes of a 9-inch figure
_LEGEND_CHARS = 28


def _legend_outside(ax) -> None:
    """The legend beside the axes, where it cannot hide data; row names longer than
    :data:`_LEGEND_CHARS` (``lightgbm naive · clicks pbm eta=1 x10``) widen the figure so
    the axes keep their width and the title fits above them."""
    legend = ax.legend(
        title="ranker", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0
    )
    longest = max((len(t.get_text()) for t in legend.get_texts()), default=0)
    if longest > _LEGEND_CHARS:
        fig = ax.figure
        width, height = fig.get_size_inches()
        fig.set_size_inches(width + 0.065 * (longest - _LEGEND_CHARS), height)


def _finish_time_plot(fig, ax, path: str | Path, metric: str, *, log: bool = True) -> Path:
    """The shared end of the accuracy-against-time figures: grid, margins, the log time
    axis (:func:`_log_axis`), bounded metric axis, legend beside the axes, saved."""
    ax.grid(True, alpha=0.3, which="both")
    ax.margins(x=0.15, y=0.12)
    if log:
        _log_axis(ax)
    _bounded(ax, metric)
    _legend_outside(ax)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    """The figure as PNG through the one output writer
    (:func:`ltr_bench.results.files.write_output`: atomic, through symlinks, never over a
    device); :class:`~ltr_bench.results.files.OutputError` names the file."""
    from ltr_bench.results.files import write_output

    path = Path(path)
    fig.tight_layout()
    try:
        data = _png(fig)
    finally:
        _plt().close(fig)
    write_output(path, data, what="--plots")
    return path


def _png(fig) -> bytes:
    from ltr_bench.results.files import figure_png

    return figure_png(fig, dpi=120)


def ndcg_cutoffs(report: Report, empty: str = "1") -> list[int]:
    """Cutoffs k with an NDCG@k value (empty-query convention ``empty``) in every used run
    of every row."""
    sets = []
    for row in report.rows:
        for run in row.runs.values():
            sets.append(
                {
                    key.k
                    for name in run.metrics
                    if (key := metric_key_or_none(name))
                    and key.name == "ndcg"
                    and key.empty == empty
                    and key.k is not None  # "ndcg" (the whole list) has no cutoff
                }
            )
    return sorted(set.intersection(*sets)) if sets else []


def plot_ndcg_at_k(report: Report, path: str | Path, *, empty: str = "1") -> Path:
    """NDCG@k (mean ± std over units) against k; ``empty="0"`` for the 0 convention.

    Raises ValueError when fewer than two cutoffs were recorded for every ranker.
    """
    ks = ndcg_cutoffs(report, empty)
    keys = [MetricKey("ndcg", k, empty) for k in ks]
    if len(ks) < 2:
        raise ValueError(
            f"NDCG@k needs at least two cutoffs recorded for every ranker; found {ks or 'none'}"
        )
    plt = _plt()
    style = _style(report)
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    n = len(report.rows)
    # small horizontal offsets so that error bars of close lines do not hide each other
    width = 0.08 * (min(np.diff(ks)) if len(ks) > 1 else 1)
    for i, row in enumerate(report.rows):
        stats = [_mean_std(row, key.text) for key in keys]
        x = np.array(ks, dtype=float) + (i - (n - 1) / 2) * width
        colour, marker = style[row.label]
        ax.errorbar(
            x,
            [s[0] for s in stats],
            yerr=[s[1] for s in stats],
            color=colour,
            marker=marker,
            capsize=3,
            linewidth=1.5,
            label=_name(row),
        )
    ax.set_xticks(ks)
    ax.set_xlabel("cutoff k (number of top-ranked documents evaluated)")
    ax.set_ylabel("NDCG@k on test queries")
    ax.set_title(
        f"{report.dataset}: NDCG@k, mean ± 1 std over {_folds_text(report)}\n"
        f"({keys[0].convention})",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    _bounded(ax, "ndcg@10")
    _legend_outside(ax)
    return _save(fig, path)


def plot_accuracy_vs_time(
    report: Report,
    path: str | Path,
    *,
    metric: str = "ndcg@10",
) -> Path:
    """``metric`` (mean ± std over folds) against fit time per fold (median; the bar spans
    the fastest to the slowest fold, since timings are skewed: a cold first fold, a busy
    machine), one point per ranker, labelled with its name."""
    plt = _plt()
    style = _style(report)
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    lows, highs = [], []
    for row in report.rows:
        t = np.array([_value(r, "fit_seconds") for r in row.runs.values()], dtype=np.float64)
        t = t[~np.isnan(t)]
        y, y_sd = _mean_std(row, metric)
        if t.size == 0 or math.isnan(y):
            continue
        med = float(np.median(t))
        lows.append(float(t.min()))
        highs.append(float(t.max()))
        colour, marker = style[row.label]
        ax.errorbar(
            [med],
            [y],
            xerr=[[med - t.min()], [t.max() - med]],
            yerr=[y_sd],
            color=colour,
            marker=marker,
            markersize=7,
            capsize=3,
            linestyle="none",
            label=_name(row),
        )
    if not lows:
        plt.close(fig)
        raise ValueError(f"no ranker has both {metric} and fit_seconds")
    log = min(lows) > 0 and max(highs) / min(lows) > 20
    ax.set_xlabel(
        "training (fit) time per fold, seconds: median, bar = fastest to slowest "
        "fold" + (" (log scale)" if log else ""),
        fontsize=9,
    )
    ax.set_ylabel(f"{pretty(metric)} on test queries (mean ± 1 std)")
    ax.set_title(
        f"{report.dataset}: {pretty(metric)} against training time over "
        f"{_folds_text(report)}\n(better: up and to the left; wall-clock times "
        f"depend on the machine and its load)",
        fontsize=10,
    )
    return _finish_time_plot(fig, ax, path, metric, log=log)


def plot_metric_per_fold(
    report: Report,
    path: str | Path,
    *,
    metric: str = "ndcg@10",
) -> Path:
    """``metric`` on each fold's test queries, one line per ranker."""
    plt = _plt()
    style = _style(report)
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    n = len(report.rows)
    for i, row in enumerate(report.rows):
        vals = row.fold_values(metric)
        colour, marker = style[row.label]
        # folds are separate experiments: points side by side, never joined by lines
        x = np.array(list(vals), dtype=float) + (i - (n - 1) / 2) * min(0.6 / max(n, 1), 0.15)
        ax.plot(
            x,
            list(vals.values()),
            color=colour,
            marker=marker,
            linestyle="none",
            markersize=7,
            label=_name(row),
        )
    ax.set_xticks(report.folds)
    ax.set_xlabel("fold (same train / validation / test split for every ranker)")
    ax.set_ylabel(f"{pretty(metric)} on the fold's test queries")
    ax.set_title(
        f"{report.dataset}: {pretty(metric)} per fold, mean over seeds ({_convention(metric)})",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3, axis="y")
    _bounded(ax, metric)
    _legend_outside(ax)
    return _save(fig, path)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "dataset"


def write_plots(
    report: Report,
    out_dir: str | Path,
    *,
    metric: str | None = None,
) -> list[Path]:
    """The three figures as ``<out_dir>/<dataset>_{ndcg_at_k,<metric>_vs_fit_time,
    <metric>_per_fold}.png`` (and ``<dataset>_propensities.png`` when a row learned
    propensities, :mod:`ltr_bench.report.propensity_plot`); ``metric`` defaults to
    ``ndcg@10`` when every ranker has it, else the report's first metric. The NDCG@k figure
    is left out when fewer than two cutoffs were recorded."""
    out = Path(out_dir)
    if metric is None:
        have = all("ndcg@10" in r.metrics for row in report.rows for r in row.runs.values())
        metric = "ndcg@10" if have else report.metrics[0]
    base = _safe(report.dataset)
    key = metric_key_or_none(metric)
    mname = _safe(metric if key is None else key.mlflow_key)
    paths = []
    if len(ndcg_cutoffs(report)) >= 2:
        paths.append(plot_ndcg_at_k(report, out / f"{base}_ndcg_at_k.png"))
    paths.append(
        plot_accuracy_vs_time(report, out / f"{base}_{mname}_vs_fit_time.png", metric=metric)
    )
    paths.append(plot_metric_per_fold(report, out / f"{base}_{mname}_per_fold.png", metric=metric))
    from ltr_bench.report.propensity_plot import write_propensity_plot

    paths += write_propensity_plot(report, out)  # rows that learned propensities (DLA)
    return paths


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points (time, accuracy) that no other point dominates (at most the
    time and at least the accuracy, one of them strictly), in increasing time."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -math.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def plot_pareto(
    report: Report, path: str | Path, *, metric: str = "ndcg@10", time_key: str = "score_us_per_doc"
) -> Path:
    """``metric`` (mean over units) against ``time_key`` (``score_us_per_doc``,
    ``query_ms_p50``, ``query_ms_p99`` or ``fit_seconds``, mean over units; log axis), one
    point per row; each ranker's Pareto front over its configurations (sweep values, tuned,
    defaults) on one data variant (the dataset as it is, or one click configuration: never
    both) is joined by a line."""
    plt = _plt()
    style = _style(report)
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    # a front joins configurations of one ranker on one data variant: a row trained on
    # clicks is never on one line with a row trained on the true labels
    by_ranker: dict[tuple[str, str], list[tuple[float, float, Row]]] = {}
    for row in report.rows:
        t, _ = _mean_std(row, time_key)
        y, _ = _mean_std(row, metric)
        if math.isnan(t) or math.isnan(y) or t <= 0:
            continue
        first = next(iter(row.runs.values()))
        variant = variant_text(first.dataset_options, first.dataset_identity)
        by_ranker.setdefault((row.ranker, variant), []).append((t, y, row))
        colour, marker = style[row.label]
        ax.plot(
            [t], [y], color=colour, marker=marker, markersize=7, linestyle="none", label=_name(row)
        )
    if not by_ranker:
        plt.close(fig)
        raise ValueError(f"no ranker has both {metric} and {time_key}")
    for pts in by_ranker.values():
        front = [pts[i] for i in pareto_front([(t, y) for t, y, _ in pts])]
        if len(front) > 1:
            colour = style[front[0][2].label][0]
            ax.plot(
                [p[0] for p in front],
                [p[1] for p in front],
                color=colour,
                alpha=0.6,
                drawstyle="steps-post",
                linewidth=1.2,
            )
    what = {
        "score_us_per_doc": "scoring time, µs per document",
        "query_ms_p50": "one query's scoring time, p50 of predict calls, ms",
        "query_ms_p99": "one query's scoring time, p99 of predict calls, ms",
        "fit_seconds": "training (fit) time per fold, seconds",
    }.get(time_key, time_key)
    ax.set_xlabel(f"{what} (mean; log scale)", fontsize=9)
    ax.set_ylabel(f"{pretty(metric)} on test queries (mean)")
    ax.set_title(
        f"{report.dataset}: {pretty(metric)} against {what.split(',')[0]} over "
        f"{_folds_text(report)}\n(lines: each ranker's Pareto front over its "
        f"configurations on one data variant; better: up and to the left)",
        fontsize=10,
    )
    return _finish_time_plot(fig, ax, path, metric)


def write_pareto_plots(
    report: Report,
    out_dir: str | Path,
    *,
    metric: str = "ndcg@10",
    score_time_key: str = "score_us_per_doc",
) -> list[Path]:
    """``<out_dir>/<dataset>_<metric>_pareto_{score,fit}_time.png``; the scoring plot's cost
    is ``score_time_key`` (``score_us_per_doc``, ``query_ms_p50`` or ``query_ms_p99``)."""
    out = Path(out_dir)
    key = metric_key_or_none(metric)
    mname = _safe(metric if key is None else key.mlflow_key)
    base = _safe(report.dataset)
    return [
        plot_pareto(
            report,
            out / f"{base}_{mname}_pareto_score_time.png",
            metric=metric,
            time_key=score_time_key,
        ),
        plot_pareto(
            report,
            out / f"{base}_{mname}_pareto_fit_time.png",
            metric=metric,
            time_key="fit_seconds",
        ),
    ]
