"""The propensity plot: estimated against true examination propensities by rank.

Estimates are relative to rank 1 (``theta_k / theta_1``), as unbiased learning to rank uses
them. One figure per click configuration among a report's rows, with:

* the estimates of the click log itself, made when the log was simulated and kept in every
  record of it (``record.click_log["propensity_estimates"]``, :mod:`ltr_bench.clicks.simulate`):
  *result randomisation* (a randomised log of the same training queries) and *regression
  EM* (the log alone), each drawn as its mean over the report's units (fold, seed) with ±1
  sample standard deviation;
* each row that learned propensities (``neural`` with ``unbiased="dla"`` reports
  ``propensity@k``, k = 1..10, in its ``fitted_info``), the same way;
* the true curve of the click model, dashed: for the position-based model ``(1/k)^eta``
  (:func:`true_curve`); other click models have no single curve (their examination depends
  on the list), so only the estimates are drawn.

:func:`plot_propensities` draws any estimates by rank (``experiments/clicks_propensities.py``
uses it too).
"""

from __future__ import annotations

import re
import textwrap
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

    fig, ax = plt.subplots(figsize=(7.2, 4.6))
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
        ax.plot(ranks, true, "k--", linewidth=1.5, label="true", zorder=5)  # on top
        n = max(n, len(true))
    ax.set_xlabel("rank")
    ax.set_ylabel("propensity / propensity at rank 1")
    ax.set_xticks(np.arange(1, n + 1))
    ax.set_ylim(bottom=0)
    lines = [w for part in title.split("\n") for w in textwrap.wrap(part, 80) or [""]]
    ax.set_title("\n".join(lines), fontsize=9)
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


def _mean_std(curves: list[list[float]]) -> tuple[np.ndarray, np.ndarray] | None:
    n = min((len(c) for c in curves), default=0)
    if n == 0:
        return None
    values = np.array([c[:n] for c in curves], dtype=np.float64)
    std = values.std(axis=0, ddof=1) if len(values) > 1 else np.full(n, np.nan)
    return values.mean(axis=0), std


def log_curves(report: Report) -> list[tuple[dict, dict[str, tuple[np.ndarray, np.ndarray]]]]:
    """Per click configuration of the report's rows (in row order): ``(its resolved click
    configuration, {"result randomisation": (mean, std), "regression EM": (mean, std),
    <row that learned propensities>: (mean, std)})``, by rank over the report's units (one
    click log per unit: every row of the configuration shares it)."""
    configs: list[tuple[dict, list]] = []
    for row in report.rows:
        first = next(iter(row.runs.values()))
        clicks = (first.dataset_identity or {}).get("clicks")
        if not clicks:
            continue
        for known, rows in configs:
            if known == clicks:
                rows.append(row)
                break
        else:
            configs.append((clicks, [row]))
    learned = estimated_curves(report)
    out = []
    for clicks, rows in configs:
        curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        logs: dict = {}
        for row in rows:
            for unit, r in row.runs.items():
                logs.setdefault(unit, (r.click_log or {}).get("propensity_estimates") or {})
        for key, name in (
            ("randomisation", "result randomisation"),
            ("regression_em", "regression EM"),
        ):
            found = [e[key] for e in logs.values() if e.get(key)]
            stat = _mean_std(found) if len(found) == len(logs) else None
            if stat is not None:
                curves[name] = stat
        curves.update({row.label: learned[row.label] for row in rows if row.label in learned})
        if curves:
            out.append((clicks, curves))
    return out


def write_propensity_plot(report: Report, out_dir: str | Path) -> list[Path]:
    """``<out_dir>/<dataset>_propensities.png`` (``..._propensities_<i>.png``, i = 1, 2, ...,
    when the rows hold several click configurations, each named in its title) when some
    click row has estimates; else nothing (``[]``)."""
    from ltr_bench.report.click_rows import click_text

    found = log_curves(report)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.dataset).strip("._") or "dataset"
    paths = []
    for i, (clicks, curves) in enumerate(found, start=1):
        n = max(len(mean) for mean, _ in curves.values())
        suffix = "" if len(found) == 1 else f"_{i}"
        title = (
            f"{report.dataset}: examination by rank, relative to rank 1 (mean ± sd over "
            f"{len(report.units)} units)\n{click_text(clicks)}"
        )
        path = Path(out_dir) / f"{safe}_propensities{suffix}.png"
        paths.append(plot_propensities(curves, true_curve(clicks, n), path, title=title))
    return paths
