"""Report figures stay legible: a colour of its own for each of up to 20 rows, tick labels
of log axes that never overlap (measured by matplotlib's renderer on the figure as saved),
and Pareto fronts that never join rows trained on clicks with rows on the true labels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltr_bench.report import plots
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord

PBM = {"model": {"name": "pbm", "args": {"eta": 1.0}}, "sessions": 10}


def _rows(times, *, clicks_every=0):
    """One row per time (fit seconds; scoring µs/doc = 3 x time), three folds each."""
    out = []
    for i, t in enumerate(times):
        clicks = PBM if clicks_every and i % clicks_every == 1 else None
        for f in (1, 2, 3):
            v = np.linspace(0.3, 0.7, 8) + 0.01 * i
            out.append(
                ResultRecord(
                    key=f"r{i}-{f}",
                    plan_key=f"r{i}",
                    config_key=f"r{i}",
                    ranker="lightgbm",
                    label=f"r{i}",
                    params={"num_leaves": i},
                    dataset="toy",
                    fold=f,
                    seed=0,
                    metrics={"ndcg@10": float(v.mean()) + 0.001 * f},
                    per_query={"qid": list(range(8)), "ndcg@10": v.tolist()},
                    fit_seconds=t * (1 + 0.1 * f),
                    score_us_per_doc=3 * t,
                    fingerprints={"train": f"{'c' if clicks else 't'}{f}", "test": f"te{f}"},
                    dataset_identity={"name": "toy"} | ({"clicks": clicks} if clicks else {}),
                )
            )
    return build_report(out, dataset="toy", baseline="r0")


def test_twenty_rows_get_twenty_distinct_colours_and_neighbours_differ_in_hue():
    colours = plots.palette()
    assert len(colours) == 20 and len(set(colours)) == 20
    style = plots._style(_rows(np.linspace(1, 2, 20)))
    assert len({c for c, _ in style.values()}) == 20
    # neighbours in the list are never two shades of one hue (tab20 pairs them)
    import matplotlib

    tab20 = list(matplotlib.colormaps["tab20"].colors)
    hue = {c: tab20.index(c) // 2 for c in colours}
    assert all(hue[a] != hue[b] for a, b in itertools.pairwise(colours))


def _visible_tick_boxes(fig):
    """Window extents of every drawn, non-empty tick label of every axis, by axis."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            boxes = [
                tick.label1.get_window_extent(renderer)
                for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]
                if low <= tick.get_loc() <= high
                and tick.label1.get_visible()
                and tick.label1.get_text()
            ]
            out.append(
                (axis.axis_name, [t.label1.get_text() for t in axis.get_major_ticks()], boxes)
            )
    return out


@pytest.mark.parametrize(
    "times",
    [
        [0.6, 1.5, 3, 7, 13, 0.9, 2.2, 4.4, 9, 11],  # 1.3 decades: 3x10^0 ran into 4x10^0
        [1.0, 1.3, 1.7, 2.1, 2.6],  # pareto: a fifth of a decade
        [0.05, 0.09, 3.0],  # accuracy against time: 60x, under two decades
        [1e-3, 0.05, 2.0, 300.0, 4e4, 2e5],  # eight decades
    ],
)
def test_tick_labels_of_log_axes_never_overlap(monkeypatch, tmp_path, times):
    seen = []

    def check(fig):
        for name, _, boxes in _visible_tick_boxes(fig):
            for a, b in itertools.combinations(boxes, 2):
                assert not a.overlaps(b), f"{name} tick labels overlap"
            if name == "x" and fig.axes[0].get_xscale() == "log":
                seen.append(len(boxes))
        return b"png"

    monkeypatch.setattr(plots, "_png", check)
    rep = _rows(times)
    plots.plot_accuracy_vs_time(rep, tmp_path / "a.png")
    plots.write_pareto_plots(rep, tmp_path)
    assert seen and min(seen) >= 2  # a log axis always says at least two numbers


def test_a_pareto_front_never_joins_a_click_row_with_a_true_label_row(monkeypatch, tmp_path):
    lines = []

    def keep(fig):
        ax = fig.axes[0]
        lines.extend(len(line.get_xdata()) for line in ax.get_lines() if len(line.get_xdata()) > 1)
        return b"png"

    monkeypatch.setattr(plots, "_png", keep)
    # faster and better alternately: one front would join all six, the click rows
    # (every other) included; per data variant there are two fronts of three
    rep = _rows([1, 2, 4, 8, 16, 32], clicks_every=2)
    rows = {r.label: r for r in rep.rows}
    assert {("c" if "clicks" in r.label else "t") for r in rows.values()} == {"c", "t"}
    plots.plot_pareto(rep, tmp_path / "p.png", time_key="fit_seconds")
    assert sorted(lines) == [3, 3]
