"""allRank's click models (``allrank/click_models``) by their names and arguments.

Re-implemented from their documented behaviour (not copied), per shown list, top-down,
positions ``i = 0..k-1`` as allRank indexes them (rank ``i + 1``), labels ``y`` the true
relevance, ``X`` the shown documents' features:

- ``random`` (``RandomClickModel(n_clicks)``): ``n_clicks`` positions drawn uniformly without
  replacement are clicked (all of them when the list is shorter; allRank raises there).
- ``fixed`` (``FixedClickModel(click_positions)``): exactly the listed 0-based positions are
  clicked (positions past the list's end are ignored; allRank raises there).
- ``multiple`` (``MultipleClickModel(click_models, probabilities)``): each session one of
  ``click_models`` is chosen with ``probabilities`` (which must sum to 1) and clicks.
- ``conditioned`` (``ConditionedClickModel(click_models, combiner)``): every model clicks and
  ``combiner`` (``"all"`` / ``"any"``, or ``numpy.all`` / ``numpy.any`` by name) combines the
  clicks per position.
- ``max-clicks`` (``MaxClicksModel(click_model, max_clicks)``): ``click_model``'s clicks from
  the top, only the first ``max_clicks`` kept (None: all).
- ``only-relevant`` (``OnlyRelevantClickModel(relevancy_threshold=1)``): click iff
  ``y >= relevancy_threshold``.
- ``base-cascade`` (``BaseCascadeModel(eta, threshold)``): position ``i`` is observed with
  probability ``(1 / (i + 1))^eta`` independently; click iff ``y * observed >= threshold`` (so
  with ``threshold <= 0`` everything is clicked, as in allRank).
- ``everything-but-duplicates`` (``EverythingButDuplicatesClickModel(duplicate_margin=0,
  metric="euclidean")``): position ``j`` is clicked iff its distance (scipy's ``cdist``
  ``metric``) to every document above it is larger than ``duplicate_margin``.
- ``diverse-clicks`` (``DiverseClicksModel(dedicated_click_model, q_percentile=0.5)``, from
  Seq2Slate): the margin is the ``q_percentile`` quantile of the list's pairwise Euclidean
  distances; going top-down over the positions ``dedicated_click_model`` clicked, a click is
  kept iff the document is farther than the margin from every click kept so far.

Only ``base-cascade`` (and ``diverse-clicks`` over it) has an examination step: its
propensity is ``(1 / rank)^eta``; the others have none (propensity NaN).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from ltr_bench.clicks.models import ClickModel, ShownLists

__all__ = ["ALLRANK_MODELS", "AllRankModel"]


class AllRankModel(ClickModel):
    """Base of the allRank models: ``click(y, X, rng, ymax) -> (k,) bool`` for one list;
    :meth:`sample` calls it per query and session (allRank's models are per-listing)."""

    needs_features = False

    def __init__(self, **args):
        self._args = args

    @property
    def args(self) -> dict:
        """The arguments with nested models as their specs (``click_models`` is a list of
        them): JSON-able, so the spec can be rebuilt and keys the cache by content."""

        def plain(v):
            if isinstance(v, ClickModel):
                return v.spec()
            if isinstance(v, (list, tuple)):
                return [plain(x) for x in v]
            return v

        return {k: plain(v) for k, v in self._args.items()}

    def click(self, y: np.ndarray, X, rng: np.random.Generator, ymax: int) -> np.ndarray:
        raise NotImplementedError

    def uses_features(self) -> bool:
        return self.needs_features

    def sample(self, lists: ShownLists, rng, sessions):
        Q, K = lists.y.shape
        clicks = np.zeros((sessions, Q, K), dtype=bool)
        need_x = self.uses_features()
        for q, n in enumerate(lists.lengths):
            y = lists.y[q, :n]
            X = lists.features(q) if need_x and lists.features is not None else None
            for s in range(sessions):
                clicks[s, q, :n] = self.click(y, X, rng, lists.max_label)
        return clicks


class RandomClicks(AllRankModel):
    name = "random"

    def click(self, y, X, rng, ymax):
        out = np.zeros(y.size, dtype=bool)
        out[rng.choice(y.size, size=min(int(self._args["n_clicks"]), y.size), replace=False)] = 1
        return out


class FixedClicks(AllRankModel):
    name = "fixed"

    def click(self, y, X, rng, ymax):
        out = np.zeros(y.size, dtype=bool)
        pos = [int(p) for p in self._args["click_positions"] if 0 <= int(p) < y.size]
        out[pos] = True
        return out


class MultipleClicks(AllRankModel):
    name = "multiple"

    def uses_features(self):
        return any(m.uses_features() for m in self._args["click_models"] if _is_allrank(m))

    def click(self, y, X, rng, ymax):
        cum = np.cumsum(self._args["probabilities"])
        chosen = self._args["click_models"][int(np.argmax(rng.random() < cum))]
        return _click_one(chosen, y, X, rng, ymax)


class ConditionedClicks(AllRankModel):
    name = "conditioned"

    def uses_features(self):
        return any(m.uses_features() for m in self._args["click_models"] if _is_allrank(m))

    def click(self, y, X, rng, ymax):
        combine = np.all if self._args["combiner"] == "all" else np.any
        return combine([_click_one(m, y, X, rng, ymax) for m in self._args["click_models"]], axis=0)


class MaxClicks(AllRankModel):
    name = "max-clicks"

    def uses_features(self):
        return _is_allrank(self._args["click_model"]) and self._args["click_model"].uses_features()

    def click(self, y, X, rng, ymax):
        clicks = _click_one(self._args["click_model"], y, X, rng, ymax)
        limit = self._args["max_clicks"]
        return clicks if limit is None else clicks & (np.cumsum(clicks) <= int(limit))


class OnlyRelevantClicks(AllRankModel):
    name = "only-relevant"

    def click(self, y, X, rng, ymax):
        return y >= self._args["relevancy_threshold"]


class BaseCascadeClicks(AllRankModel):
    name = "base-cascade"

    def click(self, y, X, rng, ymax):
        observed = (1.0 / np.arange(1, y.size + 1)) ** self._args["eta"] >= rng.random(y.size)
        return y * observed >= self._args["threshold"]

    def examination(self, lists):
        theta = (1.0 / lists.ranks) ** float(self._args["eta"])
        return np.where(lists.mask, theta[None, :], 0.0)


class EverythingButDuplicates(AllRankModel):
    name = "everything-but-duplicates"
    needs_features = True

    def click(self, y, X, rng, ymax):
        return _not_duplicate_of_above(X, self._args["duplicate_margin"], self._args["metric"])


class DiverseClicks(AllRankModel):
    name = "diverse-clicks"
    needs_features = True

    def click(self, y, X, rng, ymax):
        dist = cdist(X, X, metric="euclidean")
        pairs = dist[np.triu_indices(len(X), k=1)]
        margin = np.quantile(pairs, self._args["q_percentile"]) if pairs.size else 0.0
        clicks = _click_one(self._args["dedicated_click_model"], y, X, rng, ymax).astype(bool)
        kept: list[int] = []
        for i in np.flatnonzero(clicks):
            if all(dist[j, i] > margin for j in kept):
                kept.append(int(i))
            else:
                clicks[i] = False
        return clicks

    def examination(self, lists):
        return self._args["dedicated_click_model"].examination(lists)


def _is_allrank(model) -> bool:
    return isinstance(model, AllRankModel)


def _not_duplicate_of_above(X, margin: float, metric: str) -> np.ndarray:
    dist = cdist(X, X, metric=metric)
    above = np.triu(np.ones(dist.shape, dtype=bool), k=1)  # (i, j) with i < j
    return np.asarray(np.where(above, dist > margin, True).all(axis=0))


def _click_one(model: ClickModel, y, X, rng, ymax: int) -> np.ndarray:
    """One session of any click model on one list (a literature model via a 1-list batch)."""
    if isinstance(model, AllRankModel):
        return np.asarray(model.click(y, X, rng, ymax), dtype=bool)
    lists = ShownLists(y=np.asarray(y, dtype=np.int64)[None, :], max_label=ymax)
    return model.sample(lists, rng, 1)[0, 0]


#: allRank's short name -> (class, allRank's class path, {argument: default or REQUIRED})
REQUIRED = object()
ALLRANK_MODELS: dict[str, tuple[type, str, dict]] = {
    "random": (RandomClicks, "base.RandomClickModel", {"n_clicks": REQUIRED}),
    "fixed": (FixedClicks, "base.FixedClickModel", {"click_positions": REQUIRED}),
    "multiple": (
        MultipleClicks,
        "base.MultipleClickModel",
        {"click_models": REQUIRED, "probabilities": REQUIRED},
    ),
    "conditioned": (
        ConditionedClicks,
        "base.ConditionedClickModel",
        {"click_models": REQUIRED, "combiner": REQUIRED},
    ),
    "max-clicks": (
        MaxClicks,
        "base.MaxClicksModel",
        {"click_model": REQUIRED, "max_clicks": REQUIRED},
    ),
    "only-relevant": (
        OnlyRelevantClicks,
        "base.OnlyRelevantClickModel",
        {"relevancy_threshold": 1},
    ),
    "base-cascade": (
        BaseCascadeClicks,
        "cascade_models.BaseCascadeModel",
        {"eta": REQUIRED, "threshold": REQUIRED},
    ),
    "diverse-clicks": (
        DiverseClicks,
        "cascade_models.DiverseClicksModel",
        {"dedicated_click_model": REQUIRED, "q_percentile": 0.5},
    ),
    "everything-but-duplicates": (
        EverythingButDuplicates,
        "duplicate_aware.EverythingButDuplicatesClickModel",
        {"duplicate_margin": 0, "metric": "euclidean"},
    ),
}
