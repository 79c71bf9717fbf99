"""A ranker for the click tests that declares ``accepts_position`` and records what ``fit``
received (reached through its import path ``ltrb_click_rankers:PositionRecorder``)."""

from __future__ import annotations

import numpy as np

from ltr_bench.ranker import BaseRanker, RankerTags, check_ranking_input

#: one dict per fit: the labels' maximum and the click keywords received
FITS: list[dict] = []


class PositionRecorder(BaseRanker):
    """Scores with the first feature; remembers ``position`` / ``propensity``."""

    def ranker_tags(self) -> RankerTags:
        return RankerTags(accepts_position=True)

    def fit(self, X, y, *, qid, eval_set=None, position=None, propensity=None):
        X, y, qid = check_ranking_input(X, y, qid)
        FITS.append(
            {
                "n": len(y),
                "y_max": int(y.max()),
                "position": None if position is None else np.array(position),
                "propensity": None if propensity is None else np.array(propensity),
            }
        )
        self.fitted_ = True
        return self

    def predict(self, X, *, qid=None):
        self._check_fitted("fitted_")
        return np.asarray(X, dtype=np.float64)[:, 0].copy()
