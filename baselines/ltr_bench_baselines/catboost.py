"""CatBoost (``catboost``): ``catboost.CatBoostRanker`` behind the Ranker contract.

Symmetric (oblivious) trees of depth ``depth`` fitted to one of CatBoost's ranking losses
(``loss``; CatBoost's documentation "Ranking: objectives and metrics"):

=====================  ===================================================================
``YetiRank`` (default) pairwise, pairs weighted by how much swapping them changes NDCG
                       under random permutations of the scores (Gulin et al. 2011)
``YetiRankPairwise``   the same with CatBoost's pairwise leaf estimation (slower, more exact)
``PairLogit``          pairwise logistic loss over pairs of different labels in a query
``PairLogitPairwise``  the same with pairwise leaf estimation (slow; memory grows with depth)
``QueryRMSE``          squared error after removing each query's mean (pointwise per query)
``QuerySoftMax``       listwise softmax cross-entropy over each query
``LambdaMart``         LambdaMART on NDCG (CatBoost's own implementation)
``RMSE``               pointwise squared error on the labels, queries ignored: the
                       ``cat-rmse`` row of CatBoost's ranking benchmark (its best on MQ2008)
=====================  ===================================================================

An unknown ``loss`` is a bad invocation: :meth:`BaseRanker.validate_params` lists the valid
names before any data is loaded (``ltr-bench run`` exits 2).

Presets, early stopping and threads follow :mod:`ltr_bench_baselines.gbdt_common`; the
values of :data:`CATBOOST_PRESETS`:

* ``"auto"`` (default): 1,000 rounds, learning rate 0.1, depth 6 (CatBoost's default), L2
  leaf regularisation 3, 254 borders, early stopping after 50 rounds without validation gain.
* ``"catboost-defaults"``: CatBoost's own defaults for ranking losses (1,000 rounds, learning
  rate 0.03 -- CatBoost picks a rate automatically only for RMSE, Logloss and MultiClass --,
  depth 6, L2 3, 254 borders), early stopping 50 as ``lightgbm-defaults``.
* ``"mq2008-benchmark"`` (small data) and ``"mslr-benchmark"`` (MSLR-sized data): the
  ``cat-yeti-rank`` rows of CatBoost's ranking benchmark (catboost/benchmarks,
  ``ranking/Readme.md``: 8,000 rounds; MQ2008 learning rate 0.03, 64 borders, depth 4; MSRank
  0.07, 64 borders, depth 10). The benchmark kept the best round on the *test* fold; here
  ``early_stopping_rounds=8000`` keeps training all 8,000 rounds and keeps the best round on
  the *validation* split.

Early stopping: with ``eval_set`` and ``early_stopping_rounds`` not None, CatBoost stops once
its ``NDCG:top=k;type=Exp`` (k = the first ``eval_at``) on the validation split has not
improved for ``early_stopping_rounds`` rounds and keeps the best round (``use_best_model``):
gain ``2^rel - 1``, discount ``1/log2(rank + 1)``, a query without relevant documents scores
1 -- our default convention -- but tied scores are ranked worst-first (the lowest label
first), where ``ltr_bench.evaluation`` averages over the orderings of a tie
(tests/baselines/test_library_metrics.py). ``best_iteration_`` is the number of rounds kept.

Training data whose labels are all equal (every query without a pair of different labels)
has nothing to rank; CatBoost refuses it ("All train targets are equal"), so ``fit`` then
stores no model and ``predict`` scores every document 0 -- the constant model LightGBM
grows on such data; ``fitted_info()`` says ``stopped_by="constant-labels"``. Single queries
whose labels are all equal are CatBoost's business and train normally.

Threads: ``n_jobs`` (the ``thread_param`` tag) -> CatBoost ``thread_count``; seed:
``random_state`` (``seed_param``) -> ``random_seed``. For a seed the scores are identical,
also across thread counts (checked in tests/baselines/test_catboost.py). CatBoost writes no
files (``allow_writing_files=False``).
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.predict_input import predict_matrix
from ltr_bench.progress import report_intermediate, report_progress

from .gbdt_common import (
    _COMMON_CONSTRAINTS,
    CATBOOST_PRESETS,
    FROM_PRESET,
    GBDTRanker,
    _check_fit_input,
    _eval_at,
    _extra,
    _group_sizes,
    _int_param,
    _positive_float,
    _resolve_preset,
    _resolve_threads,
    _seed,
    _stop_info,
    _tree_features,
)

__all__ = ["CATBOOST_LOSSES", "CatBoostRanker"]

#: the ``loss`` values (CatBoost ``loss_function`` names)
CATBOOST_LOSSES = (
    "YetiRank",
    "YetiRankPairwise",
    "PairLogit",
    "PairLogitPairwise",
    "QueryRMSE",
    "QuerySoftMax",
    "LambdaMart",
    "RMSE",
)


def _ndcg_metric(k: int) -> str:
    """CatBoost's name of NDCG@k with gain ``2^rel - 1`` (``type=Exp``; the default
    ``type=Base`` uses the label itself as the gain)."""
    return f"NDCG:top={k};type=Exp"


def _group_ids(qid: np.ndarray) -> np.ndarray:
    """One id per contiguous query block (0, 1, ...): CatBoost wants each group's rows
    together, which the blocks are, and ids that do not repeat across blocks."""
    sizes = _group_sizes(qid)
    return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


class CatBoostRanker(GBDTRanker):
    """CatBoost's ranking losses on symmetric trees (module docstring).

    Parameters (None / ``"preset"``: the preset's value, resolved in ``fit``)
    ----------
    loss : str, default "YetiRank"           one of :data:`CATBOOST_LOSSES`
    preset : {"auto", "catboost-defaults", "mq2008-benchmark", "mslr-benchmark"}, default "auto"
    n_estimators : int >= 1 or None           boosting rounds (``iterations``)
    learning_rate : float > 0 or None
    depth : int in [1, 16] or None            depth of the symmetric trees (2^depth leaves)
    l2_leaf_reg : float >= 0 or None          L2 regularisation of the leaf values
    border_count : int in [1, 65535] or None  histogram bins per feature (``max_bin``)
    early_stopping_rounds : int >= 1, None or "preset", default "preset"
        Used only when ``fit`` gets ``eval_set``; None disables early stopping (all rounds
        are kept).
    eval_at : int or sequence of int, default 10
        k of the validation NDCG@k CatBoost computes; early stopping follows the first.
    n_jobs : int or None, default None        threads (None or -1: all available CPUs)
    random_state : int or None, default 0     CatBoost ``random_seed``
    extra_params : dict or None               any other CatBoost parameter, passed through
    query_dim : int or None, default None     width of the query block of query-by-example
        rows (set by the harness); the trees then also see ``|q - x|``

    Attributes: ``model_`` (catboost.CatBoostRanker, None when the training labels were
    all equal), ``best_iteration_`` (rounds used by predict), ``rounds_trained_`` (rounds
    boosted, including those early stopping discarded), ``n_features_in_``,
    ``n_threads_``, ``evals_result_`` (``{"vali": {"ndcg@10": [...]}}``), ``params_``
    (the native parameters), ``resolved_params_``.
    """

    _PRESETS = CATBOOST_PRESETS
    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec)
    SEARCH_SPACE = {
        "depth": {"low": 4, "high": 10},
        "learning_rate": {"low": 0.01, "high": 0.3, "log": True},
        "l2_leaf_reg": {"low": 0.1, "high": 30.0, "log": True},
        "n_estimators": {"low": 100, "high": 2000, "log": True},
    }

    _parameter_constraints = {
        "loss": [StrOptions(set(CATBOOST_LOSSES))],
        "preset": [StrOptions(set(CATBOOST_PRESETS))],
        "depth": [Interval(Integral, 1, 16, closed="both"), None],
        "l2_leaf_reg": [Interval(Real, 0, None, closed="left"), None],
        "border_count": [Interval(Integral, 1, 65535, closed="both"), None],
        **_COMMON_CONSTRAINTS,
    }

    def __init__(
        self,
        loss="YetiRank",
        preset="auto",
        n_estimators=None,
        learning_rate=None,
        depth=None,
        l2_leaf_reg=None,
        border_count=None,
        early_stopping_rounds=FROM_PRESET,
        eval_at=10,
        n_jobs=None,
        random_state=0,
        extra_params=None,
        query_dim=None,
    ):
        self.loss = loss
        self.preset = preset
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.depth = depth
        self.l2_leaf_reg = l2_leaf_reg
        self.border_count = border_count
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.extra_params = extra_params
        self.query_dim = query_dim

    _RESERVED = {
        "loss_function": "loss",
        "loss": "loss",
        "iterations": "n_estimators",
        "num_boost_round": "n_estimators",
        "n_estimators": "n_estimators",
        "num_trees": "n_estimators",
        "learning_rate": "learning_rate",
        "eta": "learning_rate",
        "depth": "depth",
        "max_depth": "depth",
        "l2_leaf_reg": "l2_leaf_reg",
        "reg_lambda": "l2_leaf_reg",
        "border_count": "border_count",
        "max_bin": "border_count",
        "early_stopping_rounds": "early_stopping_rounds",
        "od_wait": "early_stopping_rounds",
        "use_best_model": "early_stopping_rounds",
        "eval_metric": "eval_at",
        "thread_count": "n_jobs",
        "n_jobs": "n_jobs",
        "random_seed": "random_state",
        "random_state": "random_state",
    }

    def _resolve(self, n_train: int) -> dict:
        """The preset-governed parameters, validated."""
        r = _resolve_preset(self, self._PRESETS, n_train)
        if self.loss not in CATBOOST_LOSSES:
            raise ValueError(f"loss must be one of {', '.join(CATBOOST_LOSSES)}, got {self.loss!r}")
        depth = _int_param("depth", r["depth"], 1)
        if depth > 16:
            raise ValueError(f"depth must be an integer in [1, 16], got {depth!r}")
        return {
            "n_estimators": _int_param("n_estimators", r["n_estimators"], 1),
            "learning_rate": _positive_float("learning_rate", r["learning_rate"]),
            "depth": depth,
            "l2_leaf_reg": _positive_float("l2_leaf_reg", r["l2_leaf_reg"], allow_zero=True),
            "border_count": _int_param("border_count", r["border_count"], 1),
            "early_stopping_rounds": _int_param(
                "early_stopping_rounds", r["early_stopping_rounds"], 1, allow_none=True
            ),
        }

    def _native_params(self, resolved: dict) -> dict:
        ks = _eval_at(self.eval_at)
        params = {
            "loss_function": self.loss,
            "iterations": resolved["n_estimators"],
            "learning_rate": resolved["learning_rate"],
            "depth": resolved["depth"],
            "l2_leaf_reg": resolved["l2_leaf_reg"],
            "border_count": resolved["border_count"],
            "eval_metric": _ndcg_metric(ks[0]),
            "thread_count": _resolve_threads(self.n_jobs),
            "random_seed": _seed(self.random_state),
            "allow_writing_files": False,
            "logging_level": "Silent",
        }
        if len(ks) > 1:
            params["custom_metric"] = [_ndcg_metric(k) for k in ks[1:]]
        params.update(_extra(self.extra_params, self._RESERVED))
        return params

    def fit(self, X, y, *, qid, eval_set=None):
        import catboost

        X, y, qid, eval_set = _check_fit_input(X, y, qid, eval_set)
        resolved = self._resolve(X.shape[0])
        n_estimators, stopping = resolved["n_estimators"], resolved["early_stopping_rounds"]
        params = self._native_params(resolved)
        self.n_features_in_ = X.shape[1]
        self.n_threads_ = params["thread_count"]
        self.resolved_params_ = resolved
        if np.all(y == y[0]):  # nothing to rank (module docstring)
            self.params_ = params
            self.model_, self.best_iteration_, self.evals_result_ = None, 0, {}
            self.rounds_trained_ = 0
            return self

        train = catboost.Pool(_tree_features(X, self.query_dim), label=y, group_id=_group_ids(qid))
        val = None
        if eval_set is not None:
            Xv, yv, qv = eval_set
            val = catboost.Pool(
                _tree_features(Xv, self.query_dim), label=yv, group_id=_group_ids(qv)
            )
            params["use_best_model"] = stopping is not None
            if stopping is not None:
                params["early_stopping_rounds"] = stopping
        model = catboost.CatBoostRanker(**params)
        callback = _Progress(n_estimators, params["eval_metric"] if val is not None else None)
        with warnings.catch_warnings():
            # RMSE is pointwise on purpose (module docstring); the groups still serve the
            # validation NDCG
            warnings.filterwarnings(
                "ignore", message="Regression loss .* ignores", module="catboost"
            )
            model.fit(train, eval_set=val, callbacks=[callback])
        if callback.error is not None:  # e.g. optuna.TrialPruned from report_intermediate
            raise callback.error

        ks = _eval_at(self.eval_at)
        native = model.get_evals_result().get("validation", {})
        curves = {
            f"ndcg@{k}": [float(v) for v in native[_ndcg_metric(k)]]
            for k in ks
            if _ndcg_metric(k) in native
        }
        self.model_ = model
        self.params_ = params
        self.evals_result_ = {"vali": curves} if curves else {}
        self.best_iteration_ = int(model.tree_count_)
        self.rounds_trained_ = max(int(model.tree_count_), len(next(iter(curves.values()), [])))
        return self

    def save_native(self, folder) -> dict:
        """``model.cbm``: the model in CatBoost's own binary format (absent when ``fit`` had
        nothing to learn and ``model_`` is None); ``state.json``: the other fitted attributes.
        Loaded with ``CatBoostRanker().load_model(..., format="cbm")``."""
        import catboost

        self._check_fitted("model_")
        if self.model_ is not None:
            self.model_.save_model(str(Path(folder) / "model.cbm"), format="cbm")
        save_fitted_state(self, folder, skip=("model_",))
        return {"library": "catboost", "library_version": catboost.__version__}

    @classmethod
    def load_native(cls, folder, manifest):
        import catboost

        ranker = load_fitted_state(cls, folder, manifest)
        path = Path(folder) / "model.cbm"
        ranker.model_ = None
        if path.exists():
            ranker.model_ = catboost.CatBoostRanker().load_model(str(path), format="cbm")
            ranker._check_library_width(len(ranker.model_.feature_names_), "native/model.cbm")
        return ranker

    def _onnx_trees(self, kit, g, x) -> str:
        self._check_fitted("model_")
        if self.model_ is None:  # constant labels: predict scores every row 0
            return kit.zeros(g, x)
        return kit.catboost_trees(g, x, self.model_)

    def predict(self, X, *, qid=None):
        self._check_fitted("model_")
        X, _ = predict_matrix(X, qid, n_features=self.n_features_in_)
        return self._library_scores(X)

    def _library_scores(self, X) -> np.ndarray:
        if X.shape[0] == 0 or self.model_ is None:
            return np.zeros(X.shape[0], dtype=np.float64)
        scores = self.model_.predict(
            _tree_features(X, self.query_dim), thread_count=self.n_threads_
        )
        return np.asarray(scores, dtype=np.float64)

    def fitted_info(self) -> dict[str, int | float | str]:
        """The trees ``predict`` uses.

        ``best_iteration`` (rounds kept), ``rounds_trained`` (rounds boosted, including the
        ones after the best that early stopping discards), ``n_trees`` and ``n_leaves``
        (trees and total leaves kept; a symmetric tree of depth d has 2^d leaves),
        ``constant_model`` (no kept tree has a split), ``n_features`` and
        ``n_features_used`` (columns of the trees' input split on at least once),
        ``early_stopping`` and ``stopped_by`` (``"early-stopping"``, ``"max-rounds"`` or
        ``"constant-labels"``), ``loss``, ``preset`` and the resolved preset-governed
        parameters (``depth``, ``learning_rate``, ...; ``early_stopping_rounds`` only when
        not None).
        """
        self._check_fitted("model_")
        resolved = self.resolved_params_
        common = {
            "n_features": int(self.n_features_in_),
            "loss": str(self.loss),
            "preset": str(self.preset),
            **{k: v for k, v in resolved.items() if v is not None},
        }
        if self.model_ is None:
            return {
                "best_iteration": 0,
                "rounds_trained": 0,
                "n_trees": 0,
                "n_leaves": 0,
                "constant_model": True,
                "n_features_used": 0,
                "early_stopping": False,
                "stopped_by": "constant-labels",
                **common,
            }
        model = self.model_
        n_trees = int(model.tree_count_)
        n_leaves = int(np.sum(model.get_tree_leaf_counts()))
        stopping = resolved["early_stopping_rounds"] if self.evals_result_ else None
        return {
            "best_iteration": int(self.best_iteration_),
            "rounds_trained": int(self.rounds_trained_),
            "n_trees": n_trees,
            "n_leaves": n_leaves,
            "constant_model": n_leaves <= n_trees,
            "n_features_used": _features_used(model),
            **_stop_info(self.rounds_trained_, resolved["n_estimators"], stopping, n_trees),
            **common,
        }


def _features_used(model) -> int:
    """Distinct feature columns the model's trees split on, read from CatBoost's JSON dump
    (``float_feature_index`` of every split, symmetric or not)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as f:
            dump = json.load(f)
    used, stack = set(), [dump.get("oblivious_trees") or dump.get("trees") or []]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "float_feature_index" in node:
                used.add(int(node["float_feature_index"]))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return len(used)


class _Progress:
    """CatBoost's ``after_iteration`` callback: progress per round, and the validation NDCG
    of each round (0-based step, as LightGBM's) to :func:`report_intermediate`.

    CatBoost wraps an exception raised in a callback into its own ``CatBoostError``; so
    that ``optuna.TrialPruned`` leaves ``fit`` as itself, the callback keeps it, stops
    training and ``fit`` raises it."""

    def __init__(self, total: int, metric: str | None):
        self.total, self.metric = total, metric
        self.error: BaseException | None = None

    def after_iteration(self, info) -> bool:
        report_progress(info.iteration, self.total, "boosting round")  # 1-based here
        if self.metric is not None:
            history = info.metrics.get("validation", {}).get(self.metric)
            if history:
                try:
                    report_intermediate(info.iteration - 1, history[-1])
                except BaseException as exc:  # noqa: BLE001 - re-raised by fit
                    self.error = exc
                    return False
        return True
