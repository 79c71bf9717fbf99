"""The proof of an export: ONNX Runtime's scores against the native model's on held rows.

:func:`compare_scores` says, for native scores ``s`` and ONNX Runtime's ``o`` of the same rows:

* ``max_scaled_diff = max_i |o_i - s_i| / max(1, |s_i|)``, to hold below
  :data:`~ltr_bench.models.onnx.export.SCORE_BOUND`;
* ``misordered``: pairs of one query whose native scores differ by more than the bound,
  ``s_i - s_j > SCORE_BOUND * max(1, |s_i|, |s_j|)``, that ONNX Runtime does not order the
  same way (``o_i > o_j``); to be 0. Pairs closer than that may swap (they are ties within
  the precision the bound promises).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr_bench.ranker import query_boundaries

__all__ = ["ScoreComparison", "compare_scores"]


@dataclass(frozen=True)
class ScoreComparison:
    """What :func:`compare_scores` found (see the module)."""

    n_rows: int
    n_queries: int
    max_abs_diff: float
    max_scaled_diff: float
    misordered: int
    bound: float

    @property
    def holds(self) -> bool:
        """The scores are within the bound and no pair farther apart than it swapped."""
        return self.max_scaled_diff <= self.bound and self.misordered == 0

    def text(self) -> str:
        """One line: rows, queries, the largest differences and the pairs misordered."""
        verdict = "holds" if self.holds else "FAILS"
        return (
            f"{self.n_rows} rows, {self.n_queries} queries: max |onnx - native| "
            f"{self.max_abs_diff:.3g}, scaled by max(1, |native|) {self.max_scaled_diff:.3g} "
            f"(bound {self.bound:g}: {verdict}); pairs ordered differently beyond the bound: "
            f"{self.misordered}"
        )


def compare_scores(native, onnx, qid, bound: float) -> ScoreComparison:
    """Compare ``onnx`` with ``native`` scores (float, same rows, ``qid`` contiguous)."""
    s = np.asarray(native, dtype=np.float64)
    o = np.asarray(onnx, dtype=np.float64)
    if s.shape != o.shape:
        raise ValueError(f"{o.shape} ONNX scores for {s.shape} native ones")
    bounds = query_boundaries(np.asarray(qid))
    diff = np.abs(o - s)
    scaled = diff / np.maximum(1.0, np.abs(s))
    misordered = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        misordered += _misordered(s[a:b], o[a:b], bound)
    return ScoreComparison(
        n_rows=int(s.size),
        n_queries=int(bounds.size - 1),
        max_abs_diff=float(diff.max(initial=0.0)),
        max_scaled_diff=float(scaled.max(initial=0.0)),
        misordered=int(misordered),
        bound=float(bound),
    )


def _misordered(s: np.ndarray, o: np.ndarray, bound: float) -> int:
    """Pairs (i, j) of one query with ``s_i - s_j > bound * max(1, |s_i|, |s_j|)`` but
    ``o_i <= o_j``; in blocks of rows so that memory stays at ``block x n``."""
    n = s.size
    count = 0
    block = max(1, 4_000_000 // max(n, 1))
    for a in range(0, n, block):
        si, oi = s[a : a + block, None], o[a : a + block, None]
        tol = bound * np.maximum(1.0, np.maximum(np.abs(si), np.abs(s[None, :])))
        apart = (si - s[None, :]) > tol
        count += int(np.count_nonzero(apart & (oi <= o[None, :])))
    return count
