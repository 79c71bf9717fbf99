"""XGBoost rankers: ``xgboost-gbrt`` (regression trees on the labels, ``reg:squarederror``) and
``xgboost-lambdamart`` (``rank:ndcg``), both with the ``hist`` tree method and lossguide growth.

Presets, early stopping, threads, tags and the trees' input for query-by-example rows are
shared with LightGBM and documented in :mod:`ltr_bench_baselines.gbdt_common`.
"""

from __future__ import annotations

import dataclasses
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.predict_input import predict_matrix
from ltr_bench.progress import report_progress
from ltr_bench.ranker import check_ranking_input

from .gbdt_common import (
    _COMMON_CONSTRAINTS,
    FROM_PRESET,
    XGBOOST_PRESETS,
    GBDTRanker,
    _check_fit_input,
    _eval_at,
    _extra,
    _group_sizes,
    _int_param,
    _plain_evals,
    _positive_float,
    _resolve_preset,
    _resolve_threads,
    _seed,
    _stop_info,
    _tree_features,
)
from .ips_gbdt import SoftmaxIPS, ips_weights
from .unbiased_gbdt import (
    check_click_params,
    check_positions,
    click_constraints,
    displayed_order,
    position_tags,
)

__all__ = ["XGBoostGBRTRanker", "XGBoostLambdaMARTRanker"]


class _XGBoostRanker(GBDTRanker):
    """Shared fit/predict of the two XGBoost rankers; subclasses fix ``_objective``."""

    _objective = ""
    _PRESETS = XGBOOST_PRESETS
    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec)
    SEARCH_SPACE = {
        "max_depth": {"low": 2, "high": 10},
        "learning_rate": {"low": 0.01, "high": 0.3, "log": True},
        "min_child_weight": {"low": 1e-3, "high": 100.0, "log": True},
        "n_estimators": {"low": 50, "high": 1000, "log": True},
    }

    _parameter_constraints = {
        "preset": [StrOptions(set(XGBOOST_PRESETS))],
        "max_leaves": [Interval(Integral, 0, None, closed="left"), None],
        "max_depth": [Interval(Integral, 0, None, closed="left"), None],
        "min_child_weight": [Interval(Real, 0, None, closed="left"), None],
        **_COMMON_CONSTRAINTS,
    }

    def __init__(
        self,
        preset="auto",
        n_estimators=None,
        max_leaves=None,
        max_depth=None,
        learning_rate=None,
        min_child_weight=None,
        early_stopping_rounds=FROM_PRESET,
        eval_at=10,
        n_jobs=None,
        random_state=0,
        extra_params=None,
        query_dim=None,
    ):
        self.preset = preset
        self.n_estimators = n_estimators
        self.max_leaves = max_leaves
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.min_child_weight = min_child_weight
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.extra_params = extra_params
        self.query_dim = query_dim

    _RESERVED = {
        "num_boost_round": "n_estimators",
        "n_estimators": "n_estimators",
        "max_depth": "max_depth",
        "max_leaves": "max_leaves",
        "learning_rate": "learning_rate",
        "eta": "learning_rate",
        "min_child_weight": "min_child_weight",
        "early_stopping_rounds": "early_stopping_rounds",
        "nthread": "n_jobs",
        "n_jobs": "n_jobs",
        "seed": "random_state",
        "random_state": "random_state",
        "eval_metric": "eval_at",
    }

    def validate_params(self) -> None:
        super().validate_params()
        _extra(self.extra_params, self._RESERVED, "xgboost")  # misspelt keys: before any data

    def _resolve(self, n_train: int) -> dict:
        """The preset-governed parameters for ``n_train`` training rows, validated."""
        r = _resolve_preset(self, self._PRESETS, n_train)
        return {
            "n_estimators": _int_param("n_estimators", r["n_estimators"], 1),
            "max_leaves": _int_param("max_leaves", r["max_leaves"], 0),
            "max_depth": _int_param("max_depth", r["max_depth"], 0),
            "learning_rate": _positive_float("learning_rate", r["learning_rate"]),
            "min_child_weight": _positive_float(
                "min_child_weight", r["min_child_weight"], allow_zero=True
            ),
            "early_stopping_rounds": _int_param(
                "early_stopping_rounds", r["early_stopping_rounds"], 1, allow_none=True
            ),
        }

    def _native_params(self, resolved: dict) -> dict:
        params = {
            "objective": self._objective,
            "tree_method": "hist",
            "grow_policy": "lossguide",
            "max_depth": resolved["max_depth"],
            "max_leaves": resolved["max_leaves"],
            "eta": resolved["learning_rate"],
            "min_child_weight": resolved["min_child_weight"],
            "nthread": _resolve_threads(self.n_jobs),
            "seed": _seed(self.random_state),
            "eval_metric": [f"ndcg@{k}" for k in _eval_at(self.eval_at)],
            "verbosity": 0,
        }
        params.update(_extra(self.extra_params, self._RESERVED, "xgboost"))
        return params

    def fit(self, X, y, *, qid, eval_set=None):
        return self._fit(X, y, qid=qid, eval_set=eval_set)

    def _fit(self, X, y, *, qid, eval_set=None, objective=None):
        """``fit`` with ``objective``, a custom objective (scores -> gradient, hessian) in
        place of the native one, or None."""
        import xgboost as xgb

        X, y, qid, eval_set = _check_fit_input(X, y, qid, eval_set)
        resolved = self._resolve(X.shape[0])
        n_estimators, stopping = resolved["n_estimators"], resolved["early_stopping_rounds"]
        params = self._native_params(resolved)
        # group sizes instead of qid: XGBoost requires sorted qid, our contract only
        # contiguous blocks
        dtrain = xgb.DMatrix(_tree_features(X, self.query_dim), label=y, nthread=params["nthread"])
        dtrain.set_group(_group_sizes(qid))
        callbacks = [_xgboost_progress(n_estimators)]
        evals, evals_result = [], {}
        if eval_set is not None:
            Xv, yv, qv = eval_set
            dval = xgb.DMatrix(
                _tree_features(Xv, self.query_dim), label=yv, nthread=params["nthread"]
            )
            dval.set_group(_group_sizes(qv))
            evals = [(dval, "vali")]
            # before EarlyStopping: XGBoost stops asking callbacks once one returns True
            callbacks.append(_xgboost_pruning(params["eval_metric"][0]))
            if stopping is not None:
                callbacks.append(
                    xgb.callback.EarlyStopping(
                        rounds=stopping,
                        metric_name=params["eval_metric"][0],
                        data_name="vali",
                        maximize=True,
                        save_best=False,
                    )
                )
        custom = None
        if objective is not None:  # margins start at 0; the native objective is not used
            params["base_score"] = 0.0

            def custom(preds, _data):
                return objective(preds)

        booster = xgb.train(
            params,
            dtrain,
            num_boost_round=n_estimators,
            evals=evals,
            evals_result=evals_result,
            verbose_eval=False,
            callbacks=callbacks,
            obj=custom,
        )
        rounds = booster.num_boosted_rounds()
        if eval_set is not None and stopping is not None:
            rounds = int(booster.best_iteration) + 1  # best_iteration is 0-based
        self.booster_ = booster
        self.best_iteration_ = rounds
        self.evals_result_ = _plain_evals(evals_result)
        self.n_features_in_ = X.shape[1]
        self.n_threads_ = params["nthread"]
        self.params_ = params
        self.resolved_params_ = resolved
        return self

    def save_native(self, folder) -> dict:
        """``model.ubj``: the booster in XGBoost's own UBJSON model format (every tree, the
        base score); ``state.json``: the other fitted attributes (rounds used, curves,
        parameters). Loaded with ``xgboost.Booster(model_file=...)``."""
        import xgboost as xgb

        self._check_fitted("booster_")
        self.booster_.save_model(str(Path(folder) / "model.ubj"))
        save_fitted_state(self, folder, skip=("booster_",))
        return {"library": "xgboost", "library_version": xgb.__version__}

    @classmethod
    def load_native(cls, folder, manifest):
        import xgboost as xgb

        ranker = load_fitted_state(cls, folder, manifest)
        ranker.booster_ = xgb.Booster(model_file=str(Path(folder) / "model.ubj"))
        ranker._check_library_width(ranker.booster_.num_features(), "native/model.ubj")
        return ranker

    def _onnx_trees(self, kit, g, x) -> str:
        self._check_fitted("booster_")
        return kit.xgboost_trees(g, x, self.booster_, self.best_iteration_)

    def predict(self, X, *, qid=None):
        self._check_fitted("booster_")
        X, _ = predict_matrix(X, qid, n_features=self.n_features_in_)
        return self._library_scores(X)

    def _library_scores(self, X) -> np.ndarray:
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        booster = self.booster_
        if self.__dict__.get("_threads_set_on") != id(booster):
            # inplace_predict runs on the booster's own nthread; a loaded or copied booster
            # has none (a runtime parameter, not saved), so it is set once per booster, not
            # per call (an id, not the booster: the ranker stays picklable as it was)
            booster.set_param({"nthread": int(self.n_threads_)})
            self._threads_set_on = id(booster)
        # no DMatrix per call: the same trees read straight from the array (the scores are
        # the DMatrix path's, float32 sums widened to float64)
        scores = booster.inplace_predict(
            _tree_features(X, self.query_dim), iteration_range=(0, self.best_iteration_)
        )
        return np.asarray(scores, dtype=np.float64)

    def fitted_info(self) -> dict[str, int | float | str]:
        """The trees ``predict`` uses (the first ``best_iteration_`` rounds).

        ``best_iteration`` (rounds used), ``rounds_trained`` (rounds boosted, including the
        ones after the best that early stopping discards), ``n_trees`` and ``n_leaves`` (trees
        and total leaves of the rounds used; one tree per round unless ``extra_params`` asks
        for more), ``constant_model`` (no used tree has a split), ``n_features`` (input
        width) and ``n_features_used`` (columns of the trees' input -- with ``|q - x|`` for
        query-by-example rows -- split on at least once in the trees used);
        ``early_stopping`` (it was active) and ``stopped_by`` (``"early-stopping"`` or
        ``"max-rounds"``); ``preset`` and the resolved preset-governed parameters
        (``max_leaves``, ``min_child_weight``, ... ; ``early_stopping_rounds`` only when not
        None).
        """
        self._check_fitted("booster_")
        used = self.booster_[: self.best_iteration_]  # a copy holding the rounds used
        # the text dump, one line per node ("<id>:leaf=<value>" for a leaf): the same count
        # as parsing the JSON dump, 2-8x faster (10-60 ms of a run's cell on ~100 trees)
        trees = used.get_dump(dump_format="text")
        rounds = int(self.booster_.num_boosted_rounds())
        resolved = self.resolved_params_
        stopping = resolved["early_stopping_rounds"] if self.evals_result_ else None
        n_leaves = int(sum(tree.count(":leaf=") for tree in trees))
        return {
            "best_iteration": int(self.best_iteration_),
            "rounds_trained": rounds,
            "n_trees": len(trees),
            "n_leaves": n_leaves,
            "constant_model": n_leaves <= len(trees),
            "n_features": int(self.n_features_in_),
            "n_features_used": len(used.get_score(importance_type="weight")),
            **_stop_info(rounds, resolved["n_estimators"], stopping, rounds),
            "preset": str(self.preset),
            **{k: v for k, v in resolved.items() if v is not None},
        }


def _xgboost_progress_class():
    import xgboost as xgb

    class Progress(xgb.callback.TrainingCallback):
        def __init__(self, total: int):
            super().__init__()
            self.total = total

        def after_iteration(self, model, epoch, evals_log) -> bool:
            report_progress(epoch + 1, self.total, "boosting round")
            return False  # never asks to stop

    return Progress


def _xgboost_progress(total: int):
    return _xgboost_progress_class()(total)


def _xgboost_pruning_class():
    import xgboost as xgb

    class Pruning(xgb.callback.TrainingCallback):
        """Hands the validation metric of each round (0-based ``epoch``, as LightGBM's
        ``env.iteration``) to :func:`ltr_bench.progress.report_intermediate`, which does
        nothing outside ``ltr-bench tune`` and raises ``optuna.TrialPruned`` inside a trial
        the pruner stops. XGBoost runs callbacks in Python without catching, so the
        exception leaves ``xgb.train`` and ``fit`` as it is."""

        def __init__(self, metric: str):
            from ltr_bench.progress import report_intermediate

            super().__init__()
            self.metric = metric
            self.report = report_intermediate

        def after_iteration(self, model, epoch, evals_log) -> bool:
            history = evals_log.get("vali", {}).get(self.metric)
            if history:
                self.report(epoch, history[-1])
            return False  # never asks to stop; EarlyStopping decides that

    return Pruning


def _xgboost_pruning(metric: str):
    """The pruning callback reading ``metric`` (the first ``eval_metric``) on ``"vali"``."""
    return _xgboost_pruning_class()(metric)


_XGB_DOC_PARAMS = """
    Parameters (None / ``"preset"``: the preset's value, resolved in ``fit``; see the module
    docstring of :mod:`ltr_bench_baselines.gbdt_common` for the presets and their values)
    ----------
    preset : {"auto", "mslr-benchmark", "lgmml-paper"}, default "auto"
    query_dim : int or None, default None    width of the query block of query-by-example rows
        (set by the harness); the trees then also see ``|q - x|`` (module docstring)
    n_estimators : int or None               boosting rounds
    max_leaves : int or None                 (grow_policy=lossguide)
    max_depth : int or None                  0 = unlimited (leaves are the limit)
    learning_rate : float or None            XGBoost ``eta``
    min_child_weight : float or None
    early_stopping_rounds : int, None or "preset", default "preset"
        Used only when ``fit`` gets ``eval_set``; None disables early stopping.
    eval_at : int or sequence of int, default 10
        k of the validation ``ndcg@k`` XGBoost computes; early stopping follows the first.
    n_jobs : int or None, default None       threads (None or -1: all available CPUs)
    random_state : int, RandomState or None, default 0   XGBoost ``seed``
    extra_params : dict or None              any other XGBoost parameter, passed through

    Attributes: ``booster_`` (xgboost.Booster), ``best_iteration_`` (rounds used by predict),
    ``n_features_in_``, ``n_threads_``, ``evals_result_``, ``params_``, ``resolved_params_``
    (the preset-governed parameters as used).
"""


class XGBoostGBRTRanker(_XGBoostRanker):
    __doc__ = (
        """Gradient-boosted regression trees on the relevance labels (pointwise squared error,
    ``reg:squarederror``): the GBRT baseline of the L-GMML paper (Su, King and Lyu 2017).
    Scores are predicted labels; query ids are used only for the validation NDCG.
    """
        + _XGB_DOC_PARAMS
    )
    _objective = "reg:squarederror"


class XGBoostLambdaMARTRanker(_XGBoostRanker):
    __doc__ = (
        """XGBoost lambda-MART: ``rank:ndcg`` (LambdaRank gradients of NDCG; XGBoost's defaults
    for pair sampling and, with ``gain="exp"``, ``ndcg_exp_gain=True``, i.e. gain
    ``2^rel - 1``).

    unbiased : bool, "ips" or "naive", default False  learn from clicks: true, XGBoost's
        ``lambdarank_unbiased``; ``"ips"``, trees fitted to the inverse-propensity-weighted
        softmax cross-entropy (:mod:`ltr_bench_baselines.ips_gbdt`); ``"naive"``, the same
        objective with every weight 1
    gain : {"exp", "linear"}, default "exp"  ``ndcg_exp_gain`` true (labels up to 31) or
        false (gain = label, any label), for the objective and the validation metric; the
        harness sets "linear" on click data (``RankerTags.gain_param``)
    propensity : {"true", "randomisation", "em"}, default "true"  the propensities of
        ``unbiased="ips"``: the click model's, or estimated (:mod:`ltr_bench.clicks.propensities`)
    """
        + _XGB_DOC_PARAMS
    )
    _objective = "rank:ndcg"

    _parameter_constraints = {**_XGBoostRanker._parameter_constraints, **click_constraints()}
    _RESERVED = {
        **_XGBoostRanker._RESERVED,
        "lambdarank_unbiased": "unbiased",
        "ndcg_exp_gain": "gain",
    }

    def __init__(
        self,
        preset="auto",
        n_estimators=None,
        max_leaves=None,
        max_depth=None,
        learning_rate=None,
        min_child_weight=None,
        early_stopping_rounds=FROM_PRESET,
        eval_at=10,
        n_jobs=None,
        random_state=0,
        extra_params=None,
        query_dim=None,
        unbiased=False,
        gain="exp",
        propensity="true",
    ):
        super().__init__(
            preset=preset,
            n_estimators=n_estimators,
            max_leaves=max_leaves,
            max_depth=max_depth,
            learning_rate=learning_rate,
            min_child_weight=min_child_weight,
            early_stopping_rounds=early_stopping_rounds,
            eval_at=eval_at,
            n_jobs=n_jobs,
            random_state=random_state,
            extra_params=extra_params,
            query_dim=query_dim,
        )
        self.unbiased = unbiased
        self.gain = gain
        self.propensity = propensity

    def ranker_tags(self):
        """The tree rankers' tags; ``accepts_position`` exactly when ``unbiased``;
        ``max_label`` 31 with ``gain="exp"``: XGBoost's exponential NDCG gain refuses larger
        labels; none with ``gain="linear"``; ``gain_param`` ``"gain"``."""
        max_label = 31 if self.gain != "linear" else None
        tags = position_tags(super().ranker_tags(), self.unbiased, self.propensity)
        return dataclasses.replace(tags, max_label=max_label, gain_param="gain")

    def validate_params(self) -> None:
        super().validate_params()
        check_click_params(self)

    def _native_params(self, resolved: dict) -> dict:
        params = super()._native_params(resolved)
        params["ndcg_exp_gain"] = self.gain != "linear"
        if self.unbiased is True:
            # Unbiased LambdaMART (Hu et al. 2019); XGBoost refuses it with "mean" pairs
            params["lambdarank_unbiased"] = True
            params.setdefault("lambdarank_pair_method", "topk")
        return params

    def fit(self, X, y, *, qid, eval_set=None, position=None, propensity=None):
        """``unbiased=True``: ``position`` (n_rows,) int, 1 = top, is required and the rows
        of each query are put in displayed order before training (XGBoost reads positions
        from the row order; :func:`~ltr_bench_baselines.unbiased_gbdt.displayed_order`).
        ``unbiased="ips"``: ``position`` and ``propensity`` (n_rows,) are required (the
        custom objective of :mod:`ltr_bench_baselines.ips_gbdt`). Otherwise both are
        ignored."""
        if self.unbiased is True:
            X, y, qid = check_ranking_input(X, y, qid)
            order = displayed_order(qid, check_positions("xgboost-lambdamart", position, len(X)))
            X, y, qid = X[order], y[order], qid[order]
        if self.unbiased == "ips":
            X, y, qid = check_ranking_input(X, y, qid)
            pos = check_positions("xgboost-lambdamart", position, len(X))
            weights = ips_weights("xgboost-lambdamart", y, pos, propensity)
            return self._fit(X, y, qid=qid, eval_set=eval_set, objective=SoftmaxIPS(qid, weights))
        if self.unbiased == "naive":  # the same objective, every weight 1
            X, y, qid = check_ranking_input(X, y, qid)
            return self._fit(X, y, qid=qid, eval_set=eval_set, objective=SoftmaxIPS(qid, y))
        return self._fit(X, y, qid=qid, eval_set=eval_set)
