"""Feature scaling, fitted on the training split only and applied to every split.

``x' = (x - shift) / scale`` per feature column:

- ``"l2"`` (the paper, Section 4.5): shift 0, scale = the column's 2-norm over the training
  documents, ``sqrt(sum_i x_ij^2)``.
- ``"zscore"``: shift = training mean, scale = training standard deviation.
- ``"none"``: identity.

A column whose scale is 0 (constant zero, or constant for zscore) gets scale 1 so it stays
finite. The fit reads X in row chunks, so it never copies the whole matrix. (The authors' code
normalises only the training data and scores raw test features; we do not copy that.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FeatureScaler", "SCALINGS"]

SCALINGS = ("l2", "zscore", "none")


@dataclass
class FeatureScaler:
    kind: str
    shift: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray, kind: str, *, chunk_rows: int = 262_144) -> FeatureScaler:
        n, d = X.shape
        if kind == "none":
            return cls(kind, np.zeros(d), np.ones(d))
        s1 = np.zeros(d)
        s2 = np.zeros(d)
        for start in range(0, n, chunk_rows):
            block = np.asarray(X[start : start + chunk_rows], dtype=np.float64)
            s1 += block.sum(axis=0)
            s2 += np.einsum("ij,ij->j", block, block)
        if kind == "l2":
            shift, scale = np.zeros(d), np.sqrt(s2)
        elif kind == "zscore":
            shift = s1 / max(n, 1)
            # Var = E[x^2] - E[x]^2 can go slightly negative in floating point: clip.
            scale = np.sqrt(np.maximum(s2 / max(n, 1) - shift**2, 0.0))
        else:
            raise ValueError(f"scaling must be one of {SCALINGS}, got {kind!r}")
        scale = np.where(scale > 0, scale, 1.0)
        return cls(kind, shift, scale)

    def transform(self, X: np.ndarray, dtype=np.float64) -> np.ndarray:
        """A new array ``(X - shift) / scale`` of ``dtype`` (never modifies X)."""
        out = np.asarray(X, dtype=np.float64) - self.shift
        out /= self.scale
        return out.astype(dtype, copy=False)
