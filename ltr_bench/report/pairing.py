"""Paired comparisons of two rows of a report on the same test queries, and their marks.

A comparison of a candidate row against a reference row (the report's baseline, or a
click-trained row's own naive row, :mod:`ltr_bench.report.click_pivot`) pairs their per-query
values by ``(fold, seed, qid)`` over the units both have and pools them (``n`` pairs): paired
t-test and Wilcoxon signed-rank (:func:`ltr_bench.evaluation.stats.paired_pvalues`, both
two-sided) give ``p_t`` and ``p_w``. :func:`correct_and_mark` applies Holm's step-down
correction to a family of comparisons (each test separately) and marks a *win* or *loss*
when the mean difference is positive / negative and the Holm-adjusted p-value of the chosen
test (both, with ``test="both"``) is below ``alpha``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ltr_bench.errors import EXIT_FAILED, EXIT_USAGE, LtrBenchError
from ltr_bench.evaluation.stats import holm, paired_pvalues
from ltr_bench.results import ResultRecord

__all__ = ["Comparison", "ReportError", "Unit", "compare_rows", "correct_and_mark"]

Unit = tuple[int, int]  # (fold, seed)


class ReportError(LtrBenchError):
    """A report cannot be made as asked. ``usage`` is True for a bad request (unknown
    metric, ranker or baseline: exit 2) and False for a problem with the stored results
    (nothing comparable, missing values: exit 1)."""

    def __init__(self, message: str, *, usage: bool = False):
        super().__init__(message)
        self.usage = usage
        self.exit_code = EXIT_USAGE if usage else EXIT_FAILED


@dataclass
class Comparison:
    label: str
    metric: str
    n_pairs: int
    mean_diff: float  # candidate - reference, per query, pooled
    p_ttest: float
    p_wilcoxon: float
    p_ttest_holm: float = float("nan")
    p_wilcoxon_holm: float = float("nan")
    mark: str = ""  # "win", "loss" or ""


def _pairs(
    cand: ResultRecord, base: ResultRecord, metric: str, c_label: str, b_label: str
) -> tuple[np.ndarray, np.ndarray] | None:
    pc, pb = cand.per_query, base.per_query
    if not pc or not pb or metric not in pc or metric not in pb:
        return None
    bq = {q: i for i, q in enumerate(pb["qid"])}
    if len(bq) != len(pb["qid"]) or set(bq) != set(pc["qid"]) or len(pc["qid"]) != len(bq):
        raise ReportError(
            f"per-query results of {c_label} and {b_label} on fold {cand.fold} "
            f"seed {cand.seed} do not cover the same query ids; cannot pair them"
        )
    idx = np.array([bq[q] for q in pc["qid"]], dtype=np.int64)
    return (np.asarray(pc[metric], dtype=np.float64), np.asarray(pb[metric], dtype=np.float64)[idx])


def compare_rows(
    cand: Mapping[Unit, ResultRecord],
    ref: Mapping[Unit, ResultRecord],
    metric: str,
    units: Iterable[Unit],
    c_label: str,
    r_label: str,
) -> Comparison:
    """``cand`` against ``ref`` on ``metric``, per-query values paired over ``units`` (module
    docstring); ``n_pairs`` 0 and NaN values when a unit lacks per-query values."""
    xs, ys = [], []
    for u in units:
        pair = _pairs(cand[u], ref[u], metric, c_label, r_label)
        if pair is None:
            nan = float("nan")
            return Comparison(c_label, metric, 0, nan, nan, nan)
        xs.append(pair[0])
        ys.append(pair[1])
    x, y = np.concatenate(xs), np.concatenate(ys)
    p_t, p_w = paired_pvalues(x, y)
    return Comparison(c_label, metric, int(x.size), float(np.mean(x - y)), p_t, p_w)


def correct_and_mark(comps: list[Comparison], alpha: float, test: str) -> None:
    """Holm over ``comps`` (one family; each test separately), then the win / loss marks."""
    for attr in ("p_ttest", "p_wilcoxon"):
        adj = holm([getattr(c, attr) for c in comps])
        for c, a in zip(comps, adj):
            setattr(c, attr + "_holm", float(a))
    for c in comps:
        ps = {
            "both": (c.p_ttest_holm, c.p_wilcoxon_holm),
            "ttest": (c.p_ttest_holm,),
            "wilcoxon": (c.p_wilcoxon_holm,),
        }[test]
        if all(p < alpha for p in ps) and c.mean_diff != 0:  # NaN compares False
            c.mark = "win" if c.mean_diff > 0 else "loss"
