"""Ranking configurations over several datasets: Friedman test, Nemenyi post-hoc test,
critical-difference diagram (Demšar, "Statistical comparisons of classifiers over multiple
data sets", JMLR 7, 2006).

Input: one :class:`~ltr_bench.report.tables.Report` per dataset (each already restricted to the
units every row has, with rows run on other data left out). Configurations are matched
across datasets by row label (e.g. ``lightgbm[tuned,trials=30]``); only labels present on
every dataset take part (a note names the others). Configurations are listed in natural
label order (:func:`ltr_bench.results.labels.label_sort_key`), in the table by average rank.

Definitions (N datasets, k configurations, ``x[i, j]`` = the mean of ``metric`` of
configuration j on dataset i over that dataset's units):

* ranks ``r[i, j]``: 1 = best on dataset i (highest ``x``; lowest for error-type measures such
  as ``knn_error``), ties get the average rank (``scipy.stats.rankdata``);
  average ranks ``R_j = mean_i r[i, j]``.
* Friedman: ``chi2_F = 12 N / (k (k + 1)) * (sum_j R_j^2 - k (k + 1)^2 / 4)``, k - 1 degrees
  of freedom (``scipy.stats.friedmanchisquare``, which also corrects for ties).
* Nemenyi: all pairs, ``scikit_posthocs.posthoc_nemenyi_friedman`` (p-values from the
  studentized range distribution of ``|R_a - R_b| / sqrt(k (k + 1) / (6 N))``).
* critical difference ``CD = q_alpha / sqrt(2) * sqrt(k (k + 1) / (6 N))``, ``q_alpha`` the
  1 - alpha quantile of the studentized range for k groups and infinite degrees of freedom
  (``scipy.stats.studentized_range``): two average ranks further apart than CD differ
  significantly at level alpha.

With N = 2 or 3 datasets these tests have little power; the diagram still shows the ranks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.report.tables import Report, ReportError
from ltr_bench.results.labels import label_sort_key

__all__ = [
    "MultiReport",
    "build_multi_report",
    "critical_difference",
    "format_multi",
    "plot_cd_diagram",
]

LOWER_IS_BETTER = ("knn_error",)


def critical_difference(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi's critical difference of average ranks for k configurations on n datasets."""
    from scipy.stats import studentized_range

    q = studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2)
    return float(q * math.sqrt(k * (k + 1) / (6.0 * n)))


@dataclass
class MultiReport:
    metric: str
    datasets: list[str]
    labels: list[str]
    values: np.ndarray  # (N datasets, k configurations)
    ranks: np.ndarray  # (N, k), 1 = best
    avg_ranks: dict[str, float]
    friedman_stat: float
    friedman_p: float
    nemenyi_p: Any  # pandas.DataFrame (k x k) of p-values (pandas ships no types)
    cd: float
    alpha: float
    notes: list[str] = field(default_factory=list)


def build_multi_report(
    reports: Mapping[str, Report], *, metric: str = "ndcg@10", alpha: float = 0.05
) -> MultiReport:
    """Friedman + Nemenyi over the datasets of ``reports`` (see the module). Raises
    :class:`ReportError` with fewer than 2 datasets or 3 shared configurations."""
    import pandas as pd
    import scikit_posthocs as sp
    from scipy.stats import friedmanchisquare, rankdata

    datasets = list(reports)
    if len(datasets) < 2:
        raise ReportError(
            "a comparison across datasets needs results on at least 2 "
            f"datasets; got {', '.join(datasets) or 'none'}",
            usage=True,
        )
    notes: list[str] = []
    label_sets = {d: {row.label for row in reports[d].rows} for d in datasets}
    shared = sorted(set.intersection(*label_sets.values()), key=label_sort_key)
    for d in datasets:
        extra = sorted(label_sets[d] - set(shared), key=label_sort_key)
        if extra:
            notes.append(f"{d}: {', '.join(extra)} left out (not on every dataset)")
    if len(shared) < 3:
        raise ReportError(
            f"the Friedman test needs at least 3 configurations present on "
            f"every dataset; shared: {', '.join(shared) or 'none'} (pick "
            f"datasets or rankers with results everywhere)"
        )
    values = np.empty((len(datasets), len(shared)))
    for i, d in enumerate(datasets):
        rep = reports[d]
        if metric not in rep.metrics:
            raise ReportError(
                f"{d}: metric {metric} not in its report ({', '.join(rep.metrics)})", usage=True
            )
        for j, label in enumerate(shared):
            values[i, j] = rep.row(label).cells[metric].mean
    if not np.isfinite(values).all():
        raise ReportError(f"{metric} is missing for some configuration on some dataset")
    sign = 1.0 if metric in LOWER_IS_BETTER else -1.0
    ranks = np.vstack([rankdata(sign * v) for v in values])
    stat, p = friedmanchisquare(*values.T)
    nemenyi = sp.posthoc_nemenyi_friedman(sign * values)  # it ranks low values first
    nemenyi.index = nemenyi.columns = shared
    avg = {label: float(r) for label, r in zip(shared, ranks.mean(axis=0))}
    return MultiReport(
        metric=metric,
        datasets=datasets,
        labels=shared,
        values=values,
        ranks=ranks,
        avg_ranks=avg,
        friedman_stat=float(stat),
        friedman_p=float(p),
        nemenyi_p=pd.DataFrame(nemenyi),
        cd=critical_difference(len(shared), len(datasets), alpha),
        alpha=alpha,
        notes=notes,
    )


def format_multi(mr: MultiReport, width: int | None = None) -> str:
    """Markdown: values and ranks per dataset, average ranks, the tests and the CD;
    ``width``: the table no wider (:func:`ltr_bench.report.fit.markdown_table`)."""
    from ltr_bench.report.fit import markdown_table

    head = ["configuration", *mr.datasets, "average rank"]
    lines = [f"## {mr.metric} across {len(mr.datasets)} datasets", ""]
    # best average rank first; ties keep the natural label order (mr.labels, a stable sort)
    order = sorted(range(len(mr.labels)), key=lambda j: mr.avg_ranks[mr.labels[j]])
    body = []
    for j in order:
        cells = [f"{mr.values[i, j]:.4f} ({mr.ranks[i, j]:g})" for i in range(len(mr.datasets))]
        body.append([mr.labels[j], *cells, f"{mr.avg_ranks[mr.labels[j]]:.2f}"])
    lines += markdown_table(head, body, width=width)
    sig = [
        f"{a} vs {b} (p = {mr.nemenyi_p.loc[a, b]:.3g})"
        for ai, a in enumerate(mr.labels)
        for b in mr.labels[ai + 1 :]
        if mr.nemenyi_p.loc[a, b] < mr.alpha
    ]
    lines += [
        "",
        f"- Cells: mean {mr.metric} over each dataset's folds and seeds (rank on "
        f"that dataset, 1 = best, ties averaged).",
        f"- Friedman test over {len(mr.datasets)} datasets x {len(mr.labels)} "
        f"configurations: chi2 = {mr.friedman_stat:.3f}, p = {mr.friedman_p:.3g}.",
        f"- Nemenyi post-hoc test, alpha = {mr.alpha:g}: critical difference of average "
        f"ranks CD = {mr.cd:.3f}; significantly different pairs: "
        + ("; ".join(sig) if sig else "none")
        + ".",
    ]
    lines += [f"- Note: {n}" for n in mr.notes]
    return "\n".join(lines) + "\n"


def plot_cd_diagram(mr: MultiReport, path: str | Path) -> Path:
    """The critical-difference diagram (average ranks on an axis; configurations whose
    Nemenyi p-value is not below alpha joined by a bar) as a PNG, via
    ``scikit_posthocs.critical_difference_diagram``."""
    import pandas as pd
    import scikit_posthocs as sp

    from ltr_bench.report.plots import _plt

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.35 * len(mr.labels)))
    sp.critical_difference_diagram(pd.Series(mr.avg_ranks), mr.nemenyi_p, alpha=mr.alpha, ax=ax)
    ax.set_title(
        f"{mr.metric}: average rank over {len(mr.datasets)} datasets "
        f"(Friedman p = {mr.friedman_p:.3g}; bars join configurations not "
        f"significantly different, Nemenyi alpha = {mr.alpha:g}, CD = {mr.cd:.2f})",
        fontsize=9,
    )
    from ltr_bench.results.files import figure_png, write_output

    path = Path(path)
    try:
        data = figure_png(fig, dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    write_output(path, data, what="--plots")  # the one output writer: atomic, no device lost
    return path
