"""Estimated examination propensities for the learners that weight clicks by them.

An inverse-propensity learner (``neural.unbiased=ips``, ``lightgbm.unbiased=ips``,
``xgboost-lambdamart.unbiased=ips``) weights each click by ``1 / p`` with ``p`` the probability
that its row was examined. The simulation knows the true ``p`` (``propensity`` beside every
row); a real log does not. With the ranker parameter ``propensity="randomisation"`` or
``"em"`` the learner receives, as ``propensity``, an estimate of the examination curve
``theta_k / theta_1`` by rank (:mod:`ltr_bench.clicks.estimation`), read at each row's shown
rank, instead of the truth:

* ``randomisation`` (Joachims, Swaminathan and Schnabel, WSDM 2017): an intervention. Each
  training query is shown ``sessions`` more times (as many as the log has), its documents in a
  uniformly random order (the top ``top_k`` of a random permutation of all its documents;
  the longest list when ``top_k = 0``), to users of the same click model; then
  ``theta_k / theta_1 = CTR_k / CTR_1``. The randomised sessions are simulated from the true
  training labels, as a live intervention would collect them; they are used for the estimate
  only, never as training labels.
* ``em``: regression EM (Wang et al., WSDM 2018) on the training click log itself (no
  intervention): every shown row is ``sessions`` trials at its rank with its click count.

Rank 1 is 1 by construction. An estimate of 0 or NaN at some rank (no click there in a small
log) would give an infinite weight: the curve is filled forward from the rank above and
clipped below at :data:`PROPENSITY_FLOOR` (weights at most 100 times rank 1's), the clipping
of Joachims et al.'s clipped IPS estimator. Ranks beyond the estimated curve take its last value.

Every random choice comes from the run's seed; an estimate is cached beside the click log
(namespace ``clicks``) under a key holding the log's key parts, the method and
:func:`estimator_spec` (its settings and :data:`ESTIMATION_VERSION`), which is also part of
the result keys of the cells that use it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ESTIMATION_VERSION",
    "ESTIMATORS",
    "PROPENSITY_FLOOR",
    "clean_curve",
    "estimate_curve",
    "estimator_spec",
    "extra_name",
    "rows_propensity",
]

#: the ``propensity`` values of the inverse-propensity learners: the click model's truth, or
#: an estimate by one of these methods
ESTIMATORS = ("randomisation", "em")
#: raised whenever the same log, seed and method would give another estimate
ESTIMATION_VERSION = 1
#: estimates below this (relative to rank 1) are raised to it
PROPENSITY_FLOOR = 0.01
#: regression EM's settings (``propensity_by_regression_em``)
EM_SETTINGS = {"iterations": 50, "C": 1.0, "tol": 1e-4}
#: randomised sessions are simulated this many at a time (bounded memory)
_CHUNK = 64


def estimator_spec(method: str) -> dict:
    """What identifies an estimate besides the log: method, settings and code version."""
    if method not in ESTIMATORS:
        raise ValueError(f"unknown propensity estimator {method!r}; one of {ESTIMATORS}")
    settings = dict(EM_SETTINGS) if method == "em" else {"sessions": "as logged"}
    return {
        "method": method,
        "version": ESTIMATION_VERSION,
        "floor": PROPENSITY_FLOOR,
        **settings,
    }


def extra_name(method: str) -> str:
    """The name of the per-row array in ``Split.extras`` holding the estimate by ``method``."""
    return f"propensity_{method}"


def _randomised_curve(train, config: dict, model, max_label: int, rng) -> np.ndarray:
    """``CTR_k / CTR_1`` of ``sessions`` randomised sessions of every training query."""
    from ltr_bench.clicks.estimation import propensity_by_randomisation, randomised_log
    from ltr_bench.ranker import query_boundaries

    b = query_boundaries(np.asarray(train.qid))
    top_k = int(config["top_k"]) or int(np.diff(b).max())
    sessions = int(config["sessions"])
    clicked = np.zeros(top_k)
    trials = np.zeros(top_k)
    done = 0
    while done < sessions:
        n = min(_CHUNK, sessions - done)
        position, clicks, shown = randomised_log(
            train.y, train.qid, model, max_label=max_label, top_k=top_k, sessions=n, rng=rng
        )
        clicked += np.bincount(position - 1, weights=clicks, minlength=top_k)[:top_k]
        trials += np.bincount(position - 1, weights=shown, minlength=top_k)[:top_k]
        done += n
    # per-rank totals: the same estimate as from the impressions one by one
    return propensity_by_randomisation(np.arange(1, top_k + 1), clicked, trials)


def estimate_curve(raw_train, clicked_train, config: dict, method: str, *, max_label: int, rng):
    """The examination curve ``theta_k / theta_1``, k = 1..K, estimated by ``method``.

    raw_train: the training split with its true labels (randomisation's intervention);
    clicked_train: the same split as click data (``position`` in its extras, click counts as
    labels; regression EM); config: the resolved click configuration. Raw, before
    :func:`clean_curve`."""
    if method == "randomisation":
        from ltr_bench.clicks.registry import build_click_model

        model = build_click_model(config["model"])
        return _randomised_curve(raw_train, config, model, max_label, rng)
    if method == "em":
        from ltr_bench.clicks.estimation import propensity_by_regression_em

        return propensity_by_regression_em(
            clicked_train.X,
            clicked_train.extras["position"],
            clicked_train.y,
            int(config["sessions"]),
            iterations=int(EM_SETTINGS["iterations"]),
            C=float(EM_SETTINGS["C"]),
            tol=float(EM_SETTINGS["tol"]),
        )
    raise ValueError(f"unknown propensity estimator {method!r}; one of {ESTIMATORS}")


def clean_curve(curve) -> np.ndarray:
    """NaN or non-positive ranks filled from the rank above, rank 1 set to 1, everything
    clipped to [:data:`PROPENSITY_FLOOR`, 1] (module docstring)."""
    c = np.asarray(curve, dtype=np.float64).copy()
    c[0] = 1.0
    for k in range(1, c.size):
        if not (np.isfinite(c[k]) and c[k] > 0):
            c[k] = c[k - 1]
    return np.clip(c, PROPENSITY_FLOOR, 1.0)


def rows_propensity(curve: np.ndarray, position: np.ndarray) -> np.ndarray:
    """The curve read at each row's 1-based ``position`` (beyond it: its last value; rows
    that were not shown, ``position <= 0``, get NaN)."""
    pos = np.asarray(position, dtype=np.int64)
    idx = np.clip(pos, 1, curve.size) - 1
    return np.where(pos > 0, curve[idx], np.nan)
