"""Learning from clicks: click models and simulated click logs (issue 32).

Owns the click models (:mod:`.models`: position-based, cascade, DCM, DBN with the simulation
literature's relevance-to-click noise; :mod:`.allrank`: allRank's click models by their names
and arguments), the click dataset options (:mod:`.options`: names, defaults, checks before any
work) and the transformation of a loaded fold into click data (:mod:`.simulate`: a logging
ranker fitted on a small fraction of the training queries ranks each training and validation
query, the top ``top_k`` are shown, the click model samples ``sessions`` sessions; training and
validation labels become click counts, test labels stay the true relevance).

May import: the root contract modules (``ltr_bench.ranker``, ``ltr_bench.registry`` to build the
logging ranker, ``ltr_bench.folds``, ``ltr_bench.errors``) and ``ltr_bench.data`` (its cache and
errors). Imported by ``run`` (the harness applies the transformation after loading a fold).
"""

from __future__ import annotations

from ltr_bench.clicks.models import ClickModel, ShownLists, attraction
from ltr_bench.clicks.options import (
    CLICK_OPTIONS,
    data_options,
    has_click_options,
    resolve_click_options,
)

__all__ = [
    "CLICK_OPTIONS",
    "ClickModel",
    "ShownLists",
    "attraction",
    "build_click_model",
    "data_options",
    "has_click_options",
    "resolve_click_options",
    "simulate_clicks",
]


def build_click_model(spec, *, where: str = "click_model"):
    """A click model from ``{"name": ..., "args": {...}}`` (see :mod:`.registry`)."""
    from ltr_bench.clicks.registry import build_click_model as build

    return build(spec, where=where)


def simulate_clicks(fold, config, *, seed: int, cache_dir=None, estimates=()):
    """The fold with click labels (see :func:`ltr_bench.clicks.simulate.simulate_clicks`)."""
    from ltr_bench.clicks.simulate import simulate_clicks as simulate

    return simulate(fold, config, seed=seed, cache_dir=cache_dir, estimates=estimates)
