"""The propensity plot: estimated against true examination propensities by rank.

Estimates are relative to rank 1 (``theta_k / theta_1``), as unbiased learning to rank uses
them. Two sources:

* the fold runs of a report: a ranker that learns propensities (``neural`` with
  ``unbiased="dla"``) reports ``propensity@k`` (k = 1..10) in its ``fitted_info``; each such
  row is drawn as its mean over the report's folds with ±1 sample standard deviation;
* any other estimate by rank (:mod:`ltr_bench.clicks.estimation`: result randomisation,
  regression EM), passed as arrays to :func:`plot_propensities`.

The true curve is the click model's: for the position-based model ``(1/k)^eta``
(:func:`true_curve` reads it from a run's click configuration, ``dataset_identity.clicks``);
other click models have no single curve (their examination depends on the list) and only
the estimates are drawn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ltr_bench.report.tables import Report

__all__ = ["estimated_curves", "plot_propensities", "true_curve", "write_propensity_plot"]


def true_curve(clicks: dict | None, n_ranks: int) -> np.ndarray | None:
    """``(1/k)^eta`` for k = 1..n_ranks when ``clicks`` (a resolved click configuration) is
    the position-based model, else None."""
    model = (clicks or {}).get("model") or {}
    if model.get("name") != "pbm":
        return None
    eta = float((model.get("args") or {}).get("eta", 1.0))
    return (1.0 / np.arange(1, n_ranks + 1)) ** eta


def estimated_curves(report: Report) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{row label: (mean, std)}`` by rank of the rows whose runs report ``propensity@k``
    (ranks present in every run of the row; std NaN with one run)."""
    out = {}
    for row in report.rows:
        runs = list(row.runs.values())
        ranks = []
        k = 1
        while runs and all(f"propensity@{k}" in r.model_info for r in runs):
            ranks.append(k)
            k += 1
        if not ranks:
            continue
        values = np.array([[float(r.model_info[f"propensity@{k}"]) for k in ranks] for r in runs])
        std = values.std(axis=0, ddof=1) if len(runs) > 1 else np.full(len(ranks), np.nan)
        out[row.label] = (values.mean(axis=0), std)
    return out


def plot_propensities(
    estimates: Mapping[str, np.ndarray | tuple[np.ndarray, np.ndarray]],
    true: np.ndarray | None,
    path: str | Path,
    *,
    title: str = "Examination propensity by rank (relative to rank 1)",
) -> Path:
    """One line per estimate (an array by rank, or ``(mean, std)`` drawn with error bars)
    and the true curve dashed; rank on the x axis, propensity on y. Writes a PNG."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from ltr_bench.results.files import figure_png, write_output

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    n = 0
    for i, (label, value) in enumerate(estimates.items()):
        mean, std = value if isinstance(value, tuple) else (np.asarray(value), None)
        ranks = np.arange(1, len(mean) + 1)
        n = max(n, len(mean))
        marker = "osD^v<>"[i % 7]
        if std is not None and np.isfinite(std).any():
            ax.errorbar(ranks, mean, yerr=std, marker=marker, capsize=3, label=label)
        else:
            ax.plot(ranks, mean, marker=marker, label=label)
    if true is not None:
        ranks = np.arange(1, len(true) + 1)
        ax.plot(ranks, true, "k--", linewidth=1.5, label="true")
        n = max(n, len(true))
    ax.set_xlabel("rank")
    ax.set_ylabel("propensity / propensity at rank 1")
    ax.set_xticks(np.arange(1, n + 1))
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        data = figure_png(fig, dpi=120)
    finally:
        plt.close(fig)
    path = Path(path)
    write_output(path, data, what="--plots")
    return path


def write_propensity_plot(report: Report, out_dir: str | Path) -> list[Path]:
    """``<out_dir>/<dataset>_propensities.png`` when some row learned propensities, else
    nothing (``[]``)."""
    curves = estimated_curves(report)
    if not curves:
        return []
    first = next(r for row in report.rows if row.label in curves for r in row.runs.values())
    n = len(next(iter(curves.values()))[0])
    true = true_curve((first.dataset_identity or {}).get("clicks"), n)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.dataset).strip("._") or "dataset"
    path = Path(out_dir) / f"{safe}_propensities.png"
    return [plot_propensities(curves, true, path)]
