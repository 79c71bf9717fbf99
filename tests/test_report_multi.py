"""ltr_bench.report.multi: Friedman and Nemenyi over datasets, the critical-difference
diagram, and `ltr-bench report --dataset a,b,c`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import friedmanchisquare

from ltr_bench.report.multi import (
    build_multi_report,
    critical_difference,
    format_multi,
    plot_cd_diagram,
)
from ltr_bench.report.tables import Report, ReportError, Row, Stat


def _report(dataset: str, values: dict[str, float]) -> Report:
    rows = [
        Row(
            label=label,
            ranker=label.split("[")[0],
            config_key=label,
            params={},
            runs={},
            cells={"ndcg@10": Stat(v, float("nan"), 1)},
        )
        for label, v in values.items()
    ]
    return Report(
        dataset=dataset,
        metrics=["ndcg@10"],
        baseline=rows[0].label,
        alpha=0.05,
        test="both",
        units=[(1, 0)],
        rows=rows,
        comparisons={},
    )


def test_a_consistent_order_on_three_datasets_gives_the_hand_worked_friedman_value():
    # ranks 1, 2, 3 on each of N = 3 datasets (k = 3):
    # chi2_F = 12 N / (k (k+1)) * sum R_j^2 - 3 N (k+1) = 3 * (1 + 4 + 9) - 36 = 6,
    # p = P(chi2_2 > 6) = exp(-3)
    reports = {
        d: _report(d, {"a": 0.5 + i, "b": 0.4 + i, "c": 0.3 + i})
        for i, d in enumerate(("d1", "d2", "d3"))
    }
    mr = build_multi_report(reports)
    assert mr.avg_ranks == {"a": 1.0, "b": 2.0, "c": 3.0}
    assert mr.friedman_stat == pytest.approx(6.0)
    assert mr.friedman_p == pytest.approx(math.exp(-3))
    # Demšar (2006), Table 5: q_0.05 = 2.343 for k = 3; CD = 2.343 * sqrt(3 * 4 / 18)
    assert mr.cd == pytest.approx(2.343 * math.sqrt(12 / 18), abs=2e-3)


def test_friedman_matches_scipy_and_the_average_ranks_match_a_direct_ranking():
    rng = np.random.default_rng(0)
    vals = rng.uniform(0.2, 0.8, size=(6, 4))
    vals[:, 0] += 0.1
    labels = ["w", "x", "y", "z"]
    reports = {f"d{i}": _report(f"d{i}", dict(zip(labels, row))) for i, row in enumerate(vals)}
    mr = build_multi_report(reports)
    stat, p = friedmanchisquare(*vals.T)
    assert mr.friedman_stat == pytest.approx(stat) and mr.friedman_p == pytest.approx(p)
    ranks = np.argsort(np.argsort(-vals, axis=1), axis=1) + 1.0  # no ties in this draw
    assert [mr.avg_ranks[k] for k in labels] == pytest.approx(ranks.mean(axis=0).tolist())
    # Nemenyi is symmetric with ones on the diagonal
    P = mr.nemenyi_p.to_numpy()
    assert np.allclose(P, P.T) and np.allclose(np.diag(P), 1.0)


def test_nemenyi_marks_pairs_whose_average_ranks_differ_by_more_than_the_cd():
    reports = {f"d{i}": _report(f"d{i}", {"a": 0.9, "b": 0.5, "c": 0.1}) for i in range(12)}
    mr = build_multi_report(reports)
    # a vs c: ranks 1 and 3 everywhere, difference 2 > CD(k=3, N=12) = 0.96
    assert mr.cd == pytest.approx(critical_difference(3, 12))
    assert mr.nemenyi_p.loc["a", "c"] < 0.05
    assert mr.nemenyi_p.loc["a", "c"] < mr.nemenyi_p.loc["a", "b"]
    assert "a vs c" in format_multi(mr)


def test_configurations_missing_on_a_dataset_are_left_out_with_a_note():
    reports = {
        "d1": _report("d1", {"a": 0.5, "b": 0.4, "c": 0.3, "extra": 0.9}),
        "d2": _report("d2", {"a": 0.6, "b": 0.3, "c": 0.2}),
    }
    mr = build_multi_report(reports)
    assert mr.labels == ["a", "b", "c"]
    assert any("extra left out" in n for n in mr.notes)


def test_configurations_are_listed_in_natural_label_order_and_tied_ranks_keep_it():
    labels = [
        "lgmml[n_metrics=100]",
        "lgmml[n_metrics=2]",
        "lgmml[n_metrics=10]",
        "lightgbm[num_leaves=63]",
        "lightgbm[num_leaves=7]",
    ]
    natural = [
        "lgmml[n_metrics=2]",
        "lgmml[n_metrics=10]",
        "lgmml[n_metrics=100]",
        "lightgbm[num_leaves=7]",
        "lightgbm[num_leaves=63]",
    ]
    # ranks 1..5 on d1 and 5..1 on d2: every average rank is 3, so the table, sorted by
    # average rank, shows the label order
    reports = {
        d: _report(
            d,
            {lab: 0.5 + sign * 0.01 * i for i, lab in enumerate(labels)}
            | {f"only-{d}[k=10]": 0.1, f"only-{d}[k=9]": 0.2},
        )
        for d, sign in (("d1", 1), ("d2", -1))
    }
    mr = build_multi_report(reports)
    assert mr.labels == natural and list(mr.avg_ranks) == natural
    assert set(mr.avg_ranks.values()) == {3.0}
    table = [line.split(" | ")[0][2:] for line in format_multi(mr).splitlines()[4:9]]
    assert table == natural
    assert "d1: only-d1[k=9], only-d1[k=10] left out (not on every dataset)" in mr.notes


def test_too_few_datasets_or_configurations_is_an_error():
    with pytest.raises(ReportError, match="at least 2 datasets"):
        build_multi_report({"d1": _report("d1", {"a": 1, "b": 2, "c": 3})})
    with pytest.raises(ReportError, match="at least 3 configurations"):
        build_multi_report({d: _report(d, {"a": 1, "b": 2}) for d in ("d1", "d2")})


def test_the_critical_difference_diagram_is_a_png(tmp_path):
    reports = {
        f"d{i}": _report(f"d{i}", {"a": 0.5 + i / 10, "b": 0.4, "c": 0.45}) for i in range(3)
    }
    path = plot_cd_diagram(build_multi_report(reports), tmp_path / "cd.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    from PIL import Image

    with Image.open(path) as img:
        img.verify()


def test_critical_difference_matches_demsar_table_for_k_5():
    # Demšar (2006), Table 5(a): q_0.05 = 2.728 for k = 5
    assert critical_difference(5, 10) == pytest.approx(2.728 * math.sqrt(30 / 60), abs=2e-3)


def test_pareto_front_keeps_only_undominated_points():
    from ltr_bench.report.plots import pareto_front

    pts = [(1.0, 0.5), (2.0, 0.4), (3.0, 0.7), (0.5, 0.3), (3.0, 0.6)]
    assert pareto_front(pts) == [3, 0, 2]
