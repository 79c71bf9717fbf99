"""Feature transforms applied before the training split's standardisation (numpy, no torch).

``log1p`` (Qin et al., ICLR 2021, "Are Neural Rankers still Outperformed by Gradient Boosted
Decision Trees?", Sec. 4.1): ``x <- sign(x) * log(1 + |x|)`` element-wise, which tames the
heavy-tailed counts of LETOR features (MSLR values reach 1e6) before z-scoring. Tree
ensembles are invariant to it (it is monotone), neural scorers are not.
"""

from __future__ import annotations

import numpy as np

FEATURE_TRANSFORMS = ("none", "log1p")


def transform_features(X: np.ndarray, name: str) -> np.ndarray:
    """``X`` under the named transform (a new array for ``log1p``, ``X`` itself for none)."""
    if name == "none":
        return X
    if name == "log1p":
        return np.sign(X) * np.log1p(np.abs(X))
    raise ValueError(
        f"unknown feature_transform {name!r}; choose from {', '.join(FEATURE_TRANSFORMS)}"
    )
