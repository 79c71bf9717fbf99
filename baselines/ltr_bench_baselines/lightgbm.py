"""LightGBM (``lightgbm``): lambda-MART (``lambdarank``, default) or XE-NDCG
(``rank_xendcg``) trees behind the Ranker contract.

``objective`` (a documented parameter, recorded with the run like any other):

* ``"lambdarank"`` (default): LambdaRank gradients of NDCG (Burges 2010) -- LightGBM's
  lambda-MART, the ranker of LightGBM's published MSLR comparison.
* ``"rank_xendcg"``: XE-NDCG (Bruch, Wang, Bendersky and Najork, "An Alternative Cross
  Entropy Loss for Learning-to-Rank", WWW 2020): per query a softmax over the scores,
  ``p_i = exp(s_i) / sum_j exp(s_j)``, fitted by cross-entropy to the target distribution
  ``phi_i / sum_j phi_j`` with ``phi_i = 2^{y_i} - gamma_i``, ``gamma_i ~ U(0, 1)`` drawn
  afresh each round (LightGBM's ``objective_seed``, derived from ``seed``, i.e. from
  ``random_state``). A convex bound on NDCG; the paper finds it as good as lambdarank and
  cheaper per round (no pairs). Labels must be integers (LightGBM's rule for both).

Presets, early stopping, threads, tags and the trees' input for query-by-example rows are
shared with the XGBoost rankers and documented in :mod:`ltr_bench_baselines.gbdt_common`.
"""

from __future__ import annotations

import dataclasses
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ltr_bench.model_state import load_fitted_state, save_fitted_state
from ltr_bench.predict_input import predict_matrix
from ltr_bench.progress import report_progress

from .gbdt_common import (
    _COMMON_CONSTRAINTS,
    FROM_PRESET,
    LIGHTGBM_PRESETS,
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
from .unbiased_gbdt import check_click_params, check_positions, click_constraints, position_tags

__all__ = ["LIGHTGBM_OBJECTIVES", "LightGBMRanker"]

#: the ``objective`` values: LightGBM's names of its two listwise ranking objectives
LIGHTGBM_OBJECTIVES = ("lambdarank", "rank_xendcg")


def _objective(value) -> str:
    if value not in LIGHTGBM_OBJECTIVES:
        raise ValueError(
            f"objective must be one of {', '.join(LIGHTGBM_OBJECTIVES)}, got {value!r}"
        )
    return value


class LightGBMRanker(GBDTRanker):
    """LightGBM ``lambdarank`` (lambda-MART: trees fitted to LambdaRank gradients of NDCG) or
    ``rank_xendcg`` (XE-NDCG, module docstring).

    Parameters (None / ``"preset"``: the preset's value, resolved in ``fit``; see the module
    docstring of :mod:`ltr_bench_baselines.gbdt_common` for the presets and their values)
    ----------
    preset : {"auto", "mslr-benchmark", "lgmml-paper", "lightgbm-defaults"}, default "auto"
    objective : {"lambdarank", "rank_xendcg"}, default "lambdarank"
    query_dim : int or None, default None   width of the query block of query-by-example rows
        (set by the harness); the trees then also see ``|q - x|`` (module docstring)
    n_estimators : int or None                boosting rounds (``num_iterations``)
    num_leaves : int or None
    learning_rate : float or None
    min_sum_hessian_in_leaf : float or None
    min_data_in_leaf : int or None
    early_stopping_rounds : int, None or "preset", default "preset"
        Used only when ``fit`` gets ``eval_set``; None disables early stopping.
    eval_at : int or sequence of int, default 10
        k of the validation NDCG@k LightGBM computes. LightGBM sorts them, so early stopping
        follows the smallest k (XGBoost and CatBoost follow the first as given).
    n_jobs : int or None, default None      threads (None or -1: all available CPUs)
    random_state : int, RandomState or None, default 0   LightGBM ``seed``
    extra_params : dict or None             any other LightGBM parameter, passed through
    unbiased : bool, "ips" or "naive", default False  learn from clicks: true, LightGBM's
        position-debiased lambdarank (``fit`` then needs ``position``, the rank each training
        row was shown at, passed to the training Dataset); ``"ips"``, trees fitted to the
        inverse-propensity-weighted softmax cross-entropy (``fit`` needs ``position`` and
        ``propensity``; :mod:`ltr_bench_baselines.ips_gbdt`); ``"naive"``, the same
        objective with every weight 1 (:mod:`ltr_bench_baselines.unbiased_gbdt`)
    gain : {"exp", "linear"}, default "exp"  the NDCG gain of lambdarank and of the validation
        metric: LightGBM's ``2^label - 1`` (labels up to 30) or the label itself
        (``label_gain = [0, 1, ..., max label]``, any label); the harness sets "linear" on
        click data (``RankerTags.gain_param``)
    propensity : {"true", "randomisation", "em"}, default "true"  the propensities of
        ``unbiased="ips"``: the click model's, or estimated (:mod:`ltr_bench.clicks.propensities`)

    Attributes: ``booster_`` (lightgbm.Booster), ``best_iteration_`` (trees used by
    predict), ``n_features_in_``, ``n_threads_``, ``evals_result_``, ``params_`` (the
    native parameter dict used), ``resolved_params_`` (the preset-governed parameters as
    used, e.g. ``{"num_leaves": 31, "min_data_in_leaf": 20, ...}``).
    """

    _PRESETS = LIGHTGBM_PRESETS
    #: ``ltr-bench tune`` search space (ltr_bench.tune.study.parse_spec); boosting rounds are
    #: searched because without a validation split nothing stops them early
    SEARCH_SPACE = {
        "num_leaves": {"low": 7, "high": 255, "log": True},
        "learning_rate": {"low": 0.01, "high": 0.3, "log": True},
        "min_data_in_leaf": {"low": 1, "high": 200, "log": True},
        "min_sum_hessian_in_leaf": {"low": 1e-3, "high": 10.0, "log": True},
        "n_estimators": {"low": 50, "high": 1000, "log": True},
    }

    #: values checked before any data is loaded (BaseRanker.validate_params); None means
    #: "from the preset"
    _parameter_constraints = {
        "preset": [StrOptions(set(LIGHTGBM_PRESETS))],
        "objective": [StrOptions(set(LIGHTGBM_OBJECTIVES))],
        "num_leaves": [Interval(Integral, 2, None, closed="left"), None],
        "min_sum_hessian_in_leaf": [Interval(Real, 0, None, closed="left"), None],
        "min_data_in_leaf": [Interval(Integral, 0, None, closed="left"), None],
        **click_constraints(),
        **_COMMON_CONSTRAINTS,
    }

    def __init__(
        self,
        preset="auto",
        objective="lambdarank",
        n_estimators=None,
        num_leaves=None,
        learning_rate=None,
        min_sum_hessian_in_leaf=None,
        min_data_in_leaf=None,
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
        self.preset = preset
        self.objective = objective
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_sum_hessian_in_leaf = min_sum_hessian_in_leaf
        self.min_data_in_leaf = min_data_in_leaf
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.extra_params = extra_params
        self.query_dim = query_dim
        self.unbiased = unbiased
        self.gain = gain
        self.propensity = propensity

    def _label_gain(self):
        """``label_gain`` of ``extra_params`` (a list), or None."""
        gain = (
            (self.extra_params or {}).get("label_gain")
            if isinstance(self.extra_params, dict)
            else None
        )
        if isinstance(gain, str):
            gain = [g for g in gain.split(",") if g.strip()]
        return list(gain) if isinstance(gain, (list, tuple)) else None

    def ranker_tags(self):
        """The tree rankers' tags; ``accepts_position`` exactly when ``unbiased``;
        ``max_label``: with ``gain="exp"`` labels index LightGBM's ``label_gain`` table (both
        ranking objectives and the NDCG metric check it), 31 entries by default, so 30 unless
        ``extra_params`` gives a longer one; none with ``gain="linear"``. ``gain_param``
        ``"gain"``, unless ``extra_params`` sets ``label_gain`` (the user chose the table)."""
        table = self._label_gain()
        if self.gain == "linear":
            max_label = None
        else:
            max_label = len(table) - 1 if table is not None else 30
        tags = position_tags(super().ranker_tags(), self.unbiased, self.propensity)
        return dataclasses.replace(
            tags, max_label=max_label, gain_param=None if table is not None else "gain"
        )

    _RESERVED = {
        "objective": "objective",
        "num_iterations": "n_estimators",
        "num_boost_round": "n_estimators",
        "n_estimators": "n_estimators",
        "num_leaves": "num_leaves",
        "learning_rate": "learning_rate",
        "min_sum_hessian_in_leaf": "min_sum_hessian_in_leaf",
        "min_data_in_leaf": "min_data_in_leaf",
        "early_stopping_round": "early_stopping_rounds",
        "early_stopping_rounds": "early_stopping_rounds",
        "eval_at": "eval_at",
        "num_threads": "n_jobs",
        "n_jobs": "n_jobs",
        "seed": "random_state",
        "random_state": "random_state",
    }

    def validate_params(self) -> None:
        super().validate_params()
        _extra(self.extra_params, self._RESERVED, "lightgbm")  # misspelt keys: before any data
        if self.unbiased is True and self.objective != "lambdarank":
            raise ValueError(
                "unbiased=true is LightGBM's position-debiased lambdarank: it needs "
                f"objective='lambdarank', got {self.objective!r}"
            )
        if self.unbiased in ("ips", "naive") and self.objective != "lambdarank":
            raise ValueError(
                f"unbiased={self.unbiased!r} trains the (inverse-propensity-weighted) softmax "
                "cross-entropy "
                "in place of the objective: leave objective at 'lambdarank', got "
                f"{self.objective!r}"
            )
        if self.gain == "linear" and self._label_gain() is not None:
            raise ValueError(
                "gain='linear' sets label_gain itself; extra_params gives one too: drop one"
            )
        check_click_params(self)

    def _resolve(self, n_train: int) -> dict:
        """The preset-governed parameters for ``n_train`` training rows, validated."""
        r = _resolve_preset(self, self._PRESETS, n_train)
        return {
            "n_estimators": _int_param("n_estimators", r["n_estimators"], 1),
            "num_leaves": _int_param("num_leaves", r["num_leaves"], 2),
            "learning_rate": _positive_float("learning_rate", r["learning_rate"]),
            "min_sum_hessian_in_leaf": _positive_float(
                "min_sum_hessian_in_leaf", r["min_sum_hessian_in_leaf"], allow_zero=True
            ),
            "min_data_in_leaf": _int_param("min_data_in_leaf", r["min_data_in_leaf"], 0),
            "early_stopping_rounds": _int_param(
                "early_stopping_rounds", r["early_stopping_rounds"], 1, allow_none=True
            ),
        }

    def _native_params(self, resolved: dict) -> dict:
        params = {
            "objective": _objective(self.objective),
            "metric": "ndcg",
            "eval_at": _eval_at(self.eval_at),
            "num_leaves": resolved["num_leaves"],
            "learning_rate": resolved["learning_rate"],
            "min_sum_hessian_in_leaf": resolved["min_sum_hessian_in_leaf"],
            "min_data_in_leaf": resolved["min_data_in_leaf"],
            "num_threads": _resolve_threads(self.n_jobs),
            "seed": _seed(self.random_state),
            # identical results for a seed, whatever the thread count
            "deterministic": True,
            "force_row_wise": True,
            "verbosity": -1,
        }
        params.update(_extra(self.extra_params, self._RESERVED, "lightgbm"))
        return params

    def fit(self, X, y, *, qid, eval_set=None, position=None, propensity=None):
        """``position`` (n_rows,) int, 1 = top, 0 = not shown: used only when ``unbiased``
        (then required); ``propensity`` (n_rows,) float: used only by ``unbiased="ips"``
        (then required; LightGBM's own debiasing estimates its position biases)."""
        import lightgbm as lgb

        X, y, qid, eval_set = _check_fit_input(X, y, qid, eval_set)
        objective = None
        if self.unbiased is True:
            if self.objective != "lambdarank":
                raise ValueError(
                    f"unbiased=true needs objective='lambdarank', got {self.objective!r}"
                )
            position = check_positions("lightgbm", position, X.shape[0])
        elif self.unbiased == "ips":
            pos = check_positions("lightgbm", position, X.shape[0])
            objective = SoftmaxIPS(qid, ips_weights("lightgbm", y, pos, propensity))
            position = None
        elif self.unbiased == "naive":  # the same objective, every weight 1
            objective, position = SoftmaxIPS(qid, y), None
        else:
            position = None
        resolved = self._resolve(X.shape[0])
        n_estimators, stopping = resolved["n_estimators"], resolved["early_stopping_rounds"]
        params = self._native_params(resolved)
        if self.gain == "linear":  # the label itself, up to the largest label seen
            top = max(int(y.max(initial=0)), int(eval_set[1].max(initial=0)) if eval_set else 0)
            params["label_gain"] = list(range(top + 1))
        if objective is not None:
            params["objective"] = lambda preds, _data: objective(preds)

        train = lgb.Dataset(
            _tree_features(X, self.query_dim),
            label=y,
            group=_group_sizes(qid),
            params={"verbosity": -1},
            free_raw_data=True,
            position=position,
        )
        callbacks = [_LightGBMProgress(n_estimators)]
        valid_sets, valid_names, evals_result = [], [], {}
        if eval_set is not None:
            Xv, yv, qv = eval_set
            valid_sets = [
                lgb.Dataset(
                    _tree_features(Xv, self.query_dim),
                    label=yv,
                    group=_group_sizes(qv),
                    reference=train,
                )
            ]
            valid_names = ["vali"]
            callbacks.append(lgb.record_evaluation(evals_result))
            if stopping is not None:
                callbacks.append(
                    lgb.early_stopping(stopping, first_metric_only=True, verbose=False)
                )
        booster = lgb.train(
            params,
            train,
            num_boost_round=n_estimators,
            valid_sets=valid_sets,
            valid_names=valid_names,
            callbacks=callbacks,
        )
        self.booster_ = booster
        # best_iteration is 0 when early stopping did not run; LightGBM may also stop early
        # by itself when no leaf can be split any more
        self.best_iteration_ = int(booster.best_iteration) or int(booster.current_iteration())
        self.evals_result_ = _plain_evals(evals_result)
        self.n_features_in_ = X.shape[1]
        self.n_threads_ = params["num_threads"]
        if objective is not None:  # the fitted state is JSON: the objective by name
            params["objective"] = "ips-softmax"
        self.params_ = params
        self.resolved_params_ = resolved
        return self

    def save_native(self, folder) -> dict:
        """``model.txt``: the booster in LightGBM's own model text (every tree, thresholds
        written exactly); ``state.json``: the other fitted attributes (best iteration, curves,
        parameters). Loaded with ``lightgbm.Booster(model_file=...)``."""
        import lightgbm as lgb

        self._check_fitted("booster_")
        self.booster_.save_model(str(Path(folder) / "model.txt"), num_iteration=-1)
        save_fitted_state(self, folder, skip=("booster_",))
        return {"library": "lightgbm", "library_version": lgb.__version__}

    @classmethod
    def load_native(cls, folder, manifest):
        import lightgbm as lgb

        ranker = load_fitted_state(cls, folder, manifest)
        ranker.booster_ = lgb.Booster(model_file=str(Path(folder) / "model.txt"))
        ranker._check_library_width(ranker.booster_.num_feature(), "native/model.txt")
        return ranker

    def _onnx_trees(self, kit, g, x) -> str:
        self._check_fitted("booster_")
        return kit.lightgbm_trees(g, x, self.booster_, self.best_iteration_)

    def predict(self, X, *, qid=None):
        self._check_fitted("booster_")
        X, _ = predict_matrix(X, qid, n_features=self.n_features_in_)
        return self._library_scores(X)

    def _library_scores(self, X) -> np.ndarray:
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        scores = self.booster_.predict(
            _tree_features(X, self.query_dim),
            num_iteration=self.best_iteration_,
            num_threads=self.n_threads_,
        )
        return np.asarray(scores, dtype=np.float64)

    def fitted_info(self) -> dict[str, int | float | str]:
        """The trees ``predict`` uses (the first ``best_iteration_`` rounds).

        ``best_iteration`` (rounds used), ``rounds_trained`` (rounds boosted, including the
        ones after the best that early stopping discards), ``n_trees`` and ``n_leaves`` (trees
        and total leaves of the rounds used), ``constant_model`` (no used tree has a split:
        every document gets the same score), ``n_features`` (input width) and
        ``n_features_used`` (columns of the trees' input -- with ``|q - x|`` for
        query-by-example rows -- split on at least once in the trees used);
        ``early_stopping`` (it was active) and ``stopped_by`` (``"early-stopping"``,
        ``"no-split"``: LightGBM stopped adding trees because no leaf could be split --
        told apart only without early stopping --, or ``"max-rounds"``);
        ``preset``, ``objective`` and the resolved preset-governed parameters (``num_leaves``,
        ``min_data_in_leaf``, ... ; ``early_stopping_rounds`` only when not None).
        """
        self._check_fitted("booster_")
        used = self.best_iteration_
        # the model's text, not dump_model(): the same trees, ~10x faster (dump_model builds
        # and parses a JSON of every node: 50-150 ms of a run's cell on 200 trees)
        n_leaves_of = _tree_leaves(self.booster_.model_to_string(num_iteration=used))
        splits = self.booster_.feature_importance(importance_type="split", iteration=used)
        # lgb.train truncates the booster to the best round after early stopping; the
        # validation curve still has one entry per round trained
        curve: list[float] = next(iter(self.evals_result_.get("vali", {}).values()), [])
        rounds = max(int(self.booster_.current_iteration()), len(curve))
        resolved = self.resolved_params_
        stopping = resolved["early_stopping_rounds"] if self.evals_result_ else None
        n_leaves = int(sum(n_leaves_of))
        return {
            "best_iteration": int(used),
            "rounds_trained": rounds,
            "n_trees": len(n_leaves_of),
            "n_leaves": n_leaves,
            "constant_model": n_leaves <= len(n_leaves_of),
            "n_features": int(self.n_features_in_),
            "n_features_used": int(np.count_nonzero(splits)),
            **_stop_info(
                rounds, resolved["n_estimators"], stopping, int(self.booster_.current_iteration())
            ),
            "preset": str(self.preset),
            "objective": str(self.params_["objective"]),
            **{k: v for k, v in resolved.items() if v is not None},
        }


def _tree_leaves(model_text: str) -> list[int]:
    """The leaves of each tree (``num_leaves=N`` of every ``Tree=`` block) of a LightGBM
    model in its text format (``Booster.model_to_string``), in order."""
    trees = model_text.split("\nend of trees", 1)[0]
    return [int(line[11:]) for line in trees.splitlines() if line.startswith("num_leaves=")]


class _LightGBMProgress:
    """LightGBM callback: progress per boosting round, and the round's validation value for
    `ltr-bench tune`'s pruning."""

    order = 40  # after LightGBM's own evaluation callbacks

    def __init__(self, total: int):
        self.total = total

    def __call__(self, env: Any) -> None:
        report_progress(env.iteration + 1 - env.begin_iteration, self.total, "boosting round")
        if env.evaluation_result_list:  # lets `ltr-bench tune` prune a hopeless trial early
            from ltr_bench.progress import report_intermediate

            report_intermediate(env.iteration, env.evaluation_result_list[0][2])
