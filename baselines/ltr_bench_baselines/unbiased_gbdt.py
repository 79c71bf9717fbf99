"""What the tree rankers' unbiased (position-debiased) modes share: the tag, the check that
``fit`` got positions, and the displayed order XGBoost reads positions from.

Two libraries ship an unbiased lambdarank learned from clicks, each with its own input:

* LightGBM (``--param lightgbm.unbiased=true``): the training ``Dataset`` gets ``position``,
  one integer per row (the rank the row was shown at), and ``lambdarank`` then learns one
  multiplicative bias factor per distinct position value jointly with the trees (Unbiased
  LambdaMART, Hu et al., WWW 2019, as implemented by LightGBM since 4.1):
  ``lambda_ij / (t+_{pos_i} t-_{pos_j})``, the factors regularised by
  ``lambdarank_position_bias_regularization`` (an ``extra_params`` key, LightGBM default 0).
* XGBoost (``--param xgboost-lambdamart.unbiased=true``): ``lambdarank_unbiased=True``. XGBoost
  takes no position array: it reads the position from the order of the rows inside a query
  (its documentation: the rows of a query are "in the order they were displayed"), so
  :func:`displayed_order` sorts each query's training rows by ``position`` (stable; rows that
  were not shown, ``position <= 0``, go last in their input order). Its bias estimates are
  normalised by ``lambdarank_bias_norm`` (default 2, an ``extra_params`` key). XGBoost refuses
  ``lambdarank_unbiased`` with ``lambdarank_pair_method="mean"`` (its own test parameters
  exclude the pair), so the unbiased mode uses ``topk`` pairs unless ``extra_params`` says
  otherwise.

A third mode, ``unbiased="ips"`` (both libraries), weights every click by its inverse
examination propensity in a custom objective (:mod:`ltr_bench_baselines.ips_gbdt`, which says
why per-row weights cannot do it); the propensities are the click model's true ones, or with
``propensity="randomisation"`` / ``"em"`` estimates (:mod:`ltr_bench.clicks.propensities`).
``unbiased="naive"`` is the same objective with every weight 1 (needs no positions): the
uncorrected counterpart of ``"ips"``, as ``neural``'s ``unbiased="naive"`` is of its IPS.

Gains (``gain``, both libraries): ``"exp"`` is the libraries' own ``2^label - 1``
(LightGBM's default ``label_gain`` table of 31 entries, XGBoost's ``ndcg_exp_gain=true``),
which caps labels at 30 / 31; ``"linear"`` (LightGBM ``label_gain = [0, 1, 2, ...]`` up to the
largest training or validation label; XGBoost ``ndcg_exp_gain=false``) takes any label. The
harness sets ``"linear"`` on click data (``RankerTags.gain_param``) unless the user set the
gain or gave LightGBM a ``label_gain`` table in ``extra_params``.

Positions are integers, 1 = the top of the shown list; 0 (or any value <= 0) marks a row
that was not shown. The harness passes ``position`` (and ``propensity``) to ``fit`` only to a
ranker whose :class:`~ltr_bench.ranker.RankerTags` say ``accepts_position`` -- which these
rankers declare exactly when ``unbiased`` is true -- and only on click data; an unbiased
ranker fitted without positions raises :class:`~ltr_bench.ranker.RankerInputError`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ltr_bench.ranker import RankerInputError, RankerTags, query_boundaries

__all__ = [
    "GAINS",
    "PROPENSITY_SOURCES",
    "check_click_params",
    "check_positions",
    "click_constraints",
    "displayed_order",
    "position_tags",
]

#: the ``gain`` values: the libraries' exponential gain, or the label itself
GAINS = ("exp", "linear")
#: the ``propensity`` values of ``unbiased="ips"``: the click model's truth or an estimate
PROPENSITY_SOURCES = ("true", "randomisation", "em")


def click_constraints() -> dict:
    """The parameter constraints of ``unbiased``, ``gain`` and ``propensity``."""
    from sklearn.utils._param_validation import StrOptions

    return {
        "unbiased": ["boolean", StrOptions({"ips", "naive"})],
        "gain": [StrOptions(set(GAINS))],
        "propensity": [StrOptions(set(PROPENSITY_SOURCES))],
    }


def check_click_params(ranker) -> None:
    """Refuse (``ValueError``) a ``propensity`` that nothing would use."""
    if ranker.propensity != "true" and ranker.unbiased != "ips":
        raise ValueError(
            f"propensity={ranker.propensity!r} chooses the propensities of unbiased='ips'; "
            f"with unbiased={ranker.unbiased!r} nothing uses them"
        )


def position_tags(tags: RankerTags, unbiased, propensity: str = "true") -> RankerTags:
    """``tags`` with ``accepts_position`` and ``requires_position`` set when ``unbiased`` is
    true or ``"ips"``; for ``"ips"`` also ``requires_propensity`` (true propensities) or
    ``propensity_estimate`` (declared, never sniffed)."""
    on = unbiased is True or unbiased == "ips"
    ips = unbiased == "ips"
    return dataclasses.replace(
        tags,
        accepts_position=on,
        requires_position=on,
        requires_propensity=ips and propensity == "true",
        propensity_estimate=propensity if ips and propensity != "true" else None,
    )


def check_positions(ranker: str, position, n_rows: int) -> np.ndarray:
    """``position`` as int64 (n_rows,), or :class:`RankerInputError` saying what is missing.

    ``ranker`` names the ranker in the message (``"lightgbm"``)."""
    if position is None:
        raise RankerInputError(
            f"{ranker}: unbiased=true learns from the position each training document was "
            "shown at, but fit got no positions: the data has no simulated clicks (add "
            "--dataset-option clicks=pbm, or leave unbiased at false)"
        )
    pos = np.asarray(position)
    if pos.shape != (n_rows,):
        raise RankerInputError(
            f"{ranker}: position must have one entry per training row ({n_rows}), got "
            f"shape {pos.shape}"
        )
    as_float = pos.astype(np.float64)
    if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
        raise RankerInputError(f"{ranker}: position must hold integers (1 = top, 0 = not shown)")
    return pos.astype(np.int64)


def displayed_order(qid: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Row permutation that puts every query's rows in displayed order (XGBoost's input).

    Query blocks keep their order; inside a block rows are sorted by ``position`` ascending
    (stable), rows with ``position <= 0`` (not shown) after the shown ones in input order.
    ``qid = [1, 1, 1, 2, 2]``, ``position = [2, 0, 1, 1, 2]`` gives ``[2, 0, 1, 3, 4]``.
    """
    b = query_boundaries(qid)
    key = np.where(position > 0, position, np.iinfo(np.int64).max)
    order = np.empty(len(qid), dtype=np.int64)
    for i in range(len(b) - 1):
        lo, hi = b[i], b[i + 1]
        order[lo:hi] = lo + np.argsort(key[lo:hi], kind="stable")
    return order
