"""plots: the three report figures are valid, non-trivial PNGs with readable labels."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_bench.report import plots
from ltr_bench.report.tables import build_report
from ltr_bench.results import ResultRecord

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _report(ks=(1, 3, 5, 10, 20), n_folds=3):
    rng = np.random.default_rng(0)
    runs = []
    for i, name in enumerate(["lightgbm", "xgboost-gbrt", "lgmml"]):
        for f in range(1, n_folds + 1):
            metrics = {f"ndcg@{k}": 0.4 + 0.1 * i + 0.01 * k + rng.normal(0, 0.01) for k in ks}
            v = rng.uniform(size=10)
            runs.append(
                ResultRecord(
                    key=f"{name}{f}",
                    plan_key=name,
                    config_key=name,
                    ranker=name,
                    label=name,
                    dataset="toy",
                    fold=f,
                    seed=0,
                    metrics=metrics,
                    per_query={"qid": list(range(10)), **{m: v.tolist() for m in metrics}},
                    fit_seconds=10.0**i * (1 + 0.1 * f),
                    score_us_per_doc=1.0 + i,
                    fingerprints={"test": f"t{f}"},
                )
            )
    return build_report(runs, dataset="toy")


def test_write_plots_makes_three_valid_non_trivial_pngs(tmp_path):
    import matplotlib.image

    paths = plots.write_plots(_report(), tmp_path / "out")
    assert [p.name for p in paths] == [
        "toy_ndcg_at_k.png",
        "toy_ndcg_at_10_vs_fit_time.png",
        "toy_ndcg_at_10_per_fold.png",
    ]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == PNG_SIGNATURE
        assert len(data) > 15_000  # a drawn chart, not an empty canvas
        img = matplotlib.image.imread(p)
        assert img.shape[0] >= 400 and img.shape[1] >= 600
        assert img[..., :3].std() > 0.05  # not a blank image


@pytest.fixture
def captured(monkeypatch):
    """The figures the plot functions draw, before they are saved."""
    figs = []
    real = plots._save

    def keep(fig, path):
        figs.append(
            {
                "title": fig.axes[0].get_title(),
                "x": fig.axes[0].get_xlabel(),
                "y": fig.axes[0].get_ylabel(),
                "xscale": fig.axes[0].get_xscale(),
                "legend": [t.get_text() for t in fig.axes[0].get_legend().get_texts()],
                "xticks": list(fig.axes[0].get_xticks()),
            }
        )
        return real(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figs


def test_figures_have_axis_labels_units_and_a_legend_naming_the_baseline(tmp_path, captured):
    plots.write_plots(_report(), tmp_path)
    ndcg_k, vs_time, per_fold = captured
    legend = ["lightgbm (baseline)", "lgmml", "xgboost-gbrt"]
    for fig in captured:
        assert fig["legend"] == legend and "toy" in fig["title"]
    assert "cutoff k" in ndcg_k["x"] and ndcg_k["xticks"] == [1, 3, 5, 10, 20]
    assert "std over 3 folds" in ndcg_k["title"]
    assert "seconds" in vs_time["x"] and vs_time["xscale"] == "log"  # times span 100x
    assert vs_time["y"].startswith("NDCG@10")
    assert per_fold["xticks"] == [1, 2, 3] and "fold" in per_fold["x"]


def test_ndcg_at_k_figure_is_skipped_with_fewer_than_two_cutoffs(tmp_path):
    rep = _report(ks=(10,))
    with pytest.raises(ValueError, match="at least two cutoffs"):
        plots.plot_ndcg_at_k(rep, tmp_path / "x.png")
    assert [p.name for p in plots.write_plots(rep, tmp_path)] == [
        "toy_ndcg_at_10_vs_fit_time.png",
        "toy_ndcg_at_10_per_fold.png",
    ]


def test_metric_names_are_spelled_for_readers():
    assert plots.pretty("ndcg@10") == "NDCG@10"
    assert plots.pretty("map_empty0") == "MAP (empty query = 0)"
    assert plots.pretty("p@5") == "P@5"
