"""The plot of estimated against true propensities by rank."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.report import propensity_plot
from ltr_bench.report.plots import write_plots
from ltr_bench.report.propensity_plot import estimated_curves, log_curves, true_curve
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord

CLICKS = {"model": {"name": "pbm", "args": {"eta": 2.0, "eps": 0.1}}, "sessions": 10}


def _log(f, *, em=True):
    """A fold's click-log estimates as simulate_clicks keeps them (made-up values)."""
    out = {"ranks": 3, "randomisation": [1.0, 0.5 + 0.01 * f, 0.3]}
    if em:
        out["regression_em"] = [1.0, 0.45, 0.35 - 0.01 * f]
    return {"logging_queries": 10, "propensity_estimates": out}


def _records(clicks=CLICKS, prefix=""):
    out = []
    for label, learned in ((prefix + "dla", True), (prefix + "naive", False)):
        for f in (1, 2):
            info = {f"propensity@{k}": 1.0 / k + 0.01 * f for k in range(1, 4)} if learned else {}
            out.append(
                ResultRecord(
                    key=f"{label}-{f}-{prefix}",
                    plan_key=f"pk-{label}",
                    config_key=f"ck-{label}",
                    ranker="neural",
                    label=label,
                    dataset="toy",
                    fold=f,
                    seed=0,
                    metrics={"ndcg@10": 0.5, "ndcg@5": 0.4},
                    per_query={"qid": [0, 1], "ndcg@10": [0.4, 0.6], "ndcg@5": [0.3, 0.5]},
                    fit_seconds=1.0,
                    score_us_per_doc=1.0,
                    fingerprints={"train": f"c{f}", "test": f"t{f}"},
                    dataset_identity={"name": "toy", "clicks": clicks},
                    model_info=info,
                    click_log=_log(f),
                )
            )
    return out


def test_true_curve_is_the_position_based_models_and_none_for_others():
    assert true_curve(CLICKS, 3) == pytest.approx([1.0, 0.25, 1 / 9])
    assert true_curve({"model": {"name": "cascade", "args": {}}}, 3) is None
    assert true_curve(None, 3) is None


def test_curves_are_the_fold_means_of_the_rows_that_learned_propensities():
    rep = build_report(_records(), dataset="toy", baseline="naive")
    curves = estimated_curves(rep)
    assert set(curves) == {"dla · clicks pbm x10"}
    mean, std = curves["dla · clicks pbm x10"]
    assert mean == pytest.approx([1.015, 0.515, 1 / 3 + 0.015])
    assert std == pytest.approx([np.std([0.01, 0.02], ddof=1)] * 3)


def test_report_plots_include_the_propensity_figure(tmp_path):
    rep = build_report(_records(), dataset="toy", baseline="naive")
    paths = write_plots(rep, tmp_path)
    png = tmp_path / "toy_propensities.png"
    assert png in paths and png.read_bytes()[:4] == b"\x89PNG"


def test_the_click_logs_randomisation_and_em_estimates_are_drawn_with_the_learned_ones():
    rep = build_report(_records(), dataset="toy", baseline="naive")
    ((clicks, curves),) = log_curves(rep)
    assert clicks == CLICKS
    assert list(curves) == ["result randomisation", "regression EM", "dla · clicks pbm x10"]
    mean, std = curves["result randomisation"]  # one log per unit, shared by both rows
    assert mean == pytest.approx([1.0, 0.515, 0.3])
    assert std == pytest.approx([0.0, np.std([0.51, 0.52], ddof=1), 0.0])
    assert curves["regression EM"][0] == pytest.approx([1.0, 0.45, 0.335])


def test_each_click_configuration_gets_its_own_figure_with_the_true_curve(tmp_path, monkeypatch):
    drawn = []

    def keep(estimates, true, path, *, title):
        drawn.append((sorted(estimates), None if true is None else list(true), title))
        return path

    monkeypatch.setattr(propensity_plot, "plot_propensities", keep)
    other = {"model": {"name": "cascade", "args": {"eps": 0.1}}, "sessions": 10}
    records = _records() + _records(other, prefix="c ")
    rep = build_report(records, dataset="toy", baseline="naive")
    paths = propensity_plot.write_propensity_plot(rep, tmp_path)
    assert [p.name for p in paths] == ["toy_propensities_1.png", "toy_propensities_2.png"]
    (pbm, pbm_true, pbm_title), (cascade, cascade_true, cascade_title) = drawn
    assert pbm == ["dla · clicks pbm x10", "regression EM", "result randomisation"]
    assert (
        pbm_true == pytest.approx([1.0, 0.25, 1 / 9])
        and "clicks pbm(eps=0.1, eta=2.0)" in pbm_title
    )
    assert cascade_true is None and "clicks cascade" in cascade_title


def test_the_figure_has_a_line_per_estimate_and_the_true_curve_dashed(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    seen = {}
    close = plt.close

    def look(fig):
        ax = fig.axes[0]
        seen["legend"] = [t.get_text() for t in ax.get_legend().get_texts()]
        seen["styles"] = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
        close(fig)

    monkeypatch.setattr(plt, "close", look)
    rep = build_report(_records(), dataset="toy", baseline="naive")
    propensity_plot.write_propensity_plot(rep, tmp_path)
    assert sorted(seen["legend"]) == [
        "dla · clicks pbm x10",
        "regression EM",
        "result randomisation",
        "true",
    ]
    assert seen["styles"]["true"] == "--"
