"""Gradient-boosted tree baselines: LightGBM lambda-MART, XGBoost GBRT, XGBoost lambda-MART.

Registered as ``lightgbm``, ``xgboost-gbrt`` and ``xgboost-lambdamart`` in the
``ltr_bench.rankers`` entry point group (main ``pyproject.toml``), like any plugin.

Presets (``preset``; docs/decisions.md#gbdt-defaults). The size and shape
parameters default to None, meaning "from the preset", and are resolved in ``fit`` (the
training size is known there); a parameter set explicitly always wins over the preset. The
preset is an ordinary parameter, so ``--param lightgbm.preset=mslr-benchmark`` or
``preset = "mslr-benchmark"`` in a TOML plan selects it and the run records it; the resolved
values are in ``resolved_params_`` and ``fitted_info()``.

``"auto"`` (default): works at every size. 500 rounds, learning rate 0.1, early stopping after
50 rounds without validation gain, trees of at most 31 leaves, and a leaf minimum of
``m = min(20, max(1, n_train // 100))`` training documents: LightGBM's library defaults
(``num_leaves=31, min_data_in_leaf=20, min_sum_hessian_in_leaf=1e-3``), shrunk on data under
2,000 training rows so that trees can still split. LightGBM counts documents
(``min_data_in_leaf=m``); XGBoost has only a hessian minimum, ``min_child_weight=m`` (one
document weighs 1 under squared error, so for ``xgboost-gbrt`` this is also ``m`` documents;
``rank:ndcg`` hessians are LambdaRank's). Why not the published MSLR settings: their hessian
minimum of 100 assumes millions of documents; LambdaRank hessians are small, and on OHSUMED's
9,219 training documents LightGBM then never splits (a constant model, NDCG@10 of a random
ranking). On the validation splits of OHSUMED and the default ``synthetic`` (5 folds each),
``auto`` beat ``"mslr-benchmark"`` for ``lightgbm`` and ``xgboost-gbrt`` on both, and for
``xgboost-lambdamart`` on ``synthetic`` (equal within noise on OHSUMED);
docs/decisions.md#gbdt-defaults has the numbers and ``experiments/gbdt_presets_vali.py``
the command.

``"mslr-benchmark"``: LightGBM's published comparison on MSLR-WEB30K ("MS LTR",
docs/Experiments.rst of LightGBM): LightGBM ``learning_rate=0.1, num_leaves=255,
num_trees=500, min_data_in_leaf=0, min_sum_hessian_in_leaf=100``; its ``xgboost_hist`` setting
``eta=0.1, num_round=500, min_child_weight=100, tree_method=hist, grow_policy=lossguide,
max_depth=0, max_leaves=255`` for both XGBoost rankers; all 500 rounds (no early stopping, as
published). Meant for MSLR-sized data: on small data it can give a constant model.

``"lgmml-paper"``: the GBRT and lambda-MART baselines of the L-GMML paper (Su, King and Lyu,
SIGIR 2017, Section 4): RankLib's MART / LambdaMART defaults (10 leaves per tree, shrinkage
0.1, minimum leaf support 1, early stopping after 100 rounds without validation gain) with
the paper's 5,000 trees. ``min_child_weight=1`` stands in for RankLib's leaf support of one
document (exact for ``xgboost-gbrt``; a hessian minimum for the LambdaRank objectives).

``"lightgbm-defaults"`` (``lightgbm`` only): LightGBM's own library defaults (100 rounds,
31 leaves, ``min_data_in_leaf=20``, ``min_sum_hessian_in_leaf=1e-3``), early stopping 50.

Other native parameters keep the libraries' defaults and can be set through
``extra_params`` (a dict passed through to the library; it may not repeat a named parameter).

Early stopping (documented convention): when ``fit`` gets ``eval_set`` (the validation
split) and the resolved ``early_stopping_rounds`` is not None, training stops once
NDCG@``eval_at`` on the validation split -- computed by the library itself, gain
``2^rel - 1``, queries without relevant documents scoring 1 -- has not improved for
``early_stopping_rounds`` rounds, and ``predict`` uses the best round (``best_iteration_``
trees). Without ``eval_set`` every one
of the ``n_estimators`` trees is used. ``evals_result_`` keeps the library's own validation
metric per round (``{"vali": {"ndcg@10": [...]}}``; empty without ``eval_set``). With
``eval_set`` every ranker also hands that metric, round by round, to
:func:`ltr_bench.progress.report_intermediate` (``ltr-bench tune`` prunes hopeless trials with
it; outside tuning the call does nothing).

Threads: ``n_jobs`` (``RankerTags.thread_param``). ``None`` or ``-1`` means every CPU this
process may run on (``os.sched_getaffinity``); a positive integer is used as is. The count
actually used is stored in ``n_threads_``. For a given ``random_state`` and thread count the
scores are reproducible (LightGBM with ``deterministic=True, force_row_wise=True``; XGBoost's
CPU ``hist``); across thread counts neither library promises identical models. On a busy
machine set ``n_jobs`` explicitly: OpenMP threads competing for cores slow down sharply.

Query-by-example rows (``wine``, ``wdbc``, ``gauss-*``: rows ``[q, x]``, ``query_dim`` set by
the harness through ``query_dim_param``): the trees see ``[q, x, |q - x|]``. On such data every
candidate is relevant to the same share of the queries, so no single column of ``[q, x]``
tells relevant rows from the others; a squared-error tree then finds no split with positive
gain (``xgboost-gbrt`` was a constant model on ``gauss-10``), while ``|q_j - x_j|`` does.

Tags (:class:`ltr_bench.ranker.RankerTags`): ``seed_param="random_state"``,
``thread_param="n_jobs"``, ``uses_eval_set=True`` (early stopping),
``query_dim_param="query_dim"``. ``fitted_info()`` reports the trees
``predict`` uses (best iteration, rounds trained, whether early stopping fired, trees, total
leaves, features used), the preset and the resolved parameters.

Queries are passed to the libraries as group sizes of the contiguous query blocks
(:func:`ltr_bench.ranker.query_boundaries`), so query ids need not be sorted.
"""

from __future__ import annotations

import numbers
import os

# scikit-learn's parameter-constraint vocabulary (BaseRanker.validate_params checks them)
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ltr_bench.progress import report_progress
from ltr_bench.ranker import (
    BaseRanker,
    RankerInputError,
    RankerTags,
    check_ranking_input,
    query_boundaries,
    split_query_document,
)

__all__ = ["LightGBMRanker", "XGBoostGBRTRanker", "XGBoostLambdaMARTRanker"]


# --------------------------------------------------------------------------- helpers


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _resolve_threads(n_jobs) -> int:
    if n_jobs is None or n_jobs == -1:
        return _available_cpus()
    if isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool) and n_jobs >= 1:
        return int(n_jobs)
    raise ValueError(f"n_jobs must be None, -1 or a positive integer, got {n_jobs!r}")


def _seed(random_state) -> int:
    """An int seed for the native library; ``None`` draws one from numpy's global RNG
    (scikit-learn's meaning of ``random_state=None``)."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def _int_param(name, value, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        extra = " or None" if allow_none else ""
        raise ValueError(f"{name} must be an integer >= {minimum}{extra}, got {value!r}")
    return int(value)


def _positive_float(name, value, allow_zero=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def _eval_at(value) -> list[int]:
    ks = [value] if isinstance(value, numbers.Integral) else list(value)
    if not ks or any(
        not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1 for k in ks
    ):
        raise ValueError(f"eval_at must be a positive int or a sequence of them, got {value!r}")
    return [int(k) for k in ks]


def _extra(extra_params, reserved: dict[str, str]) -> dict:
    """``extra_params`` as a dict; keys that a named parameter already sets are an error."""
    if extra_params is None:
        return {}
    if not isinstance(extra_params, dict):
        raise ValueError(f"extra_params must be a dict or None, got {type(extra_params).__name__}")
    clash = sorted(k for k in extra_params if k in reserved)
    if clash:
        hints = ", ".join(f"{k!r} (use the parameter {reserved[k]!r})" for k in clash)
        raise ValueError(f"extra_params may not set {hints}")
    return dict(extra_params)


def _check_fit_input(X, y, qid, eval_set):
    X, y, qid = check_ranking_input(X, y, qid)
    if X.shape[0] == 0:
        raise RankerInputError("X has no rows")
    if eval_set is None:
        return X, y, qid, None
    if not (isinstance(eval_set, (tuple, list)) and len(eval_set) == 3):
        raise RankerInputError("eval_set must be None or a tuple (X_val, y_val, qid_val)")
    try:
        Xv, yv, qv = check_ranking_input(*eval_set, n_features=X.shape[1])
    except RankerInputError as exc:
        raise RankerInputError(f"eval_set: {exc}") from exc
    if Xv.shape[0] == 0:
        raise RankerInputError("eval_set: X_val has no rows")
    return X, y, qid, (Xv, yv, qv)


def _plain_evals(evals_result: dict) -> dict:
    """``{data: {metric: [float per round]}}`` with plain Python floats."""
    return {
        data: {metric: [float(v) for v in values] for metric, values in metrics.items()}
        for data, metrics in evals_result.items()
    }


def _group_sizes(qid: np.ndarray) -> np.ndarray:
    return np.diff(query_boundaries(qid))


# --------------------------------------------------------------------------- presets

#: ``early_stopping_rounds`` default: take the preset's value (None already means "off")
FROM_PRESET = "preset"


def _auto_leaf_minimum(n_train: int) -> int:
    """``auto``'s leaf minimum: LightGBM's default of 20 documents, but at most 1% of the
    training rows so that a tree on a few hundred rows can still split."""
    return min(20, max(1, n_train // 100))


#: ``{preset: {parameter: value or callable(n_train)}}`` (see the module docstring)
LIGHTGBM_PRESETS = {
    "auto": dict(
        n_estimators=500,
        num_leaves=31,
        learning_rate=0.1,
        min_data_in_leaf=_auto_leaf_minimum,
        min_sum_hessian_in_leaf=1e-3,
        early_stopping_rounds=50,
    ),
    "mslr-benchmark": dict(
        n_estimators=500,
        num_leaves=255,
        learning_rate=0.1,
        min_data_in_leaf=0,
        min_sum_hessian_in_leaf=100.0,
        early_stopping_rounds=None,
    ),
    "lgmml-paper": dict(
        n_estimators=5000,
        num_leaves=10,
        learning_rate=0.1,
        min_data_in_leaf=1,
        min_sum_hessian_in_leaf=1e-3,
        early_stopping_rounds=100,
    ),
    "lightgbm-defaults": dict(
        n_estimators=100,
        num_leaves=31,
        learning_rate=0.1,
        min_data_in_leaf=20,
        min_sum_hessian_in_leaf=1e-3,
        early_stopping_rounds=50,
    ),
}
XGBOOST_PRESETS = {
    "auto": dict(
        n_estimators=500,
        max_leaves=31,
        max_depth=0,
        learning_rate=0.1,
        min_child_weight=_auto_leaf_minimum,
        early_stopping_rounds=50,
    ),
    "mslr-benchmark": dict(
        n_estimators=500,
        max_leaves=255,
        max_depth=0,
        learning_rate=0.1,
        min_child_weight=100.0,
        early_stopping_rounds=None,
    ),
    "lgmml-paper": dict(
        n_estimators=5000,
        max_leaves=10,
        max_depth=0,
        learning_rate=0.1,
        min_child_weight=1.0,
        early_stopping_rounds=100,
    ),
}


def _resolve_preset(ranker, presets: dict, n_train: int) -> dict:
    """The preset's values for the parameters left at "from the preset" (None, or
    ``FROM_PRESET`` for ``early_stopping_rounds``), the ranker's own values for the rest."""
    name = ranker.preset
    if not isinstance(name, str) or name not in presets:
        raise ValueError(f"preset must be one of {', '.join(map(repr, presets))}, got {name!r}")
    out = {}
    for key, default in presets[name].items():
        value = getattr(ranker, key)
        unset = (
            isinstance(value, str) and value == FROM_PRESET
            if key == "early_stopping_rounds"
            else value is None
        )
        if unset:
            value = default(n_train) if callable(default) else default
        out[key] = value
    return out


def _stop_info(rounds_run: int, n_estimators: int, stopping, trees_grown: int) -> dict:
    """How training ended: ``early_stopping`` (it was active) and ``stopped_by``:
    ``"early-stopping"`` (the loop ended before ``n_estimators`` rounds with early stopping
    active), ``"no-split"`` (without early stopping, fewer trees than rounds: LightGBM stops
    adding trees once no leaf can be split; with early stopping active the booster is cut
    to the best round and this cannot be told apart, ``constant_model`` still can) or
    ``"max-rounds"``."""
    if stopping is not None and rounds_run < n_estimators:
        how = "early-stopping"
    elif stopping is None and trees_grown < n_estimators:
        how = "no-split"
    else:
        how = "max-rounds"
    return {"early_stopping": stopping is not None, "stopped_by": how}


#: all three: early stopping on the validation split; seed, thread count through
#: ``random_state`` / ``n_jobs``; query-by-example rows are plain features to the trees
_TAGS = RankerTags(
    requires_qid_at_predict=False,
    uses_eval_set=True,
    deterministic=True,
    thread_param="n_jobs",
    seed_param="random_state",
    query_dim_param="query_dim",
)


def _tree_features(X: np.ndarray, query_dim) -> np.ndarray:
    """The trees' input: ``X`` itself, or for query-by-example rows ``[q, x]`` (``query_dim``
    set) the columns ``[q, x, |q - x|]``. Why the differences: on such data every candidate
    is relevant to the same share of queries, so no single column of ``[q, x]`` separates
    relevant from irrelevant rows and a squared-error tree's first split has zero gain
    (``xgboost-gbrt`` stayed constant on ``gauss-*``); ``|q_j - x_j|`` does separate them."""
    Q, D = split_query_document(X, query_dim)
    return X if Q is None else np.hstack([X, np.abs(Q - D)])


# --------------------------------------------------------------------------- LightGBM


#: the parameter checks both libraries' rankers share (BaseRanker.validate_params)
_COMMON_CONSTRAINTS = {
    "n_estimators": [Interval(Integral, 1, None, closed="left"), None],
    "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
    "early_stopping_rounds": [
        Interval(Integral, 1, None, closed="left"),
        StrOptions({FROM_PRESET}),
        None,
    ],
    "eval_at": [Interval(Integral, 1, None, closed="left"), list, tuple],
    "n_jobs": [Integral, None],
    "random_state": [Interval(Integral, 0, None, closed="left"), None],
    "extra_params": [dict, None],
    "query_dim": [Interval(Integral, 1, None, closed="left"), None],
}


class LightGBMRanker(BaseRanker):
    """LightGBM ``lambdarank`` (lambda-MART): trees fitted to LambdaRank gradients of NDCG.

    Parameters (None / ``"preset"``: the preset's value, resolved in ``fit``; see the module
    docstring for the presets and their values)
    ----------
    preset : {"auto", "mslr-benchmark", "lgmml-paper", "lightgbm-defaults"}, default "auto"
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
        k of the validation NDCG@k LightGBM computes; early stopping follows the first.
    n_jobs : int or None, default None      threads (None or -1: all available CPUs)
    random_state : int, RandomState or None, default 0   LightGBM ``seed``
    extra_params : dict or None             any other LightGBM parameter, passed through

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
        "num_leaves": [Interval(Integral, 2, None, closed="left"), None],
        "min_sum_hessian_in_leaf": [Interval(Real, 0, None, closed="left"), None],
        "min_data_in_leaf": [Interval(Integral, 0, None, closed="left"), None],
        **_COMMON_CONSTRAINTS,
    }

    def __init__(
        self,
        preset="auto",
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
    ):
        self.preset = preset
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

    _RESERVED = {
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

    def ranker_tags(self) -> RankerTags:
        return _TAGS

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
            "objective": "lambdarank",
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
        params.update(_extra(self.extra_params, self._RESERVED))
        return params

    def fit(self, X, y, *, qid, eval_set=None):
        import lightgbm as lgb

        X, y, qid, eval_set = _check_fit_input(X, y, qid, eval_set)
        resolved = self._resolve(X.shape[0])
        n_estimators, stopping = resolved["n_estimators"], resolved["early_stopping_rounds"]
        params = self._native_params(resolved)

        train = lgb.Dataset(
            _tree_features(X, self.query_dim),
            label=y,
            group=_group_sizes(qid),
            params={"verbosity": -1},
            free_raw_data=True,
        )
        callbacks = [_lightgbm_progress(n_estimators)]
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
        self.params_ = params
        self.resolved_params_ = resolved
        return self

    def predict(self, X, *, qid=None):
        self._check_fitted("booster_")
        X, _, _ = check_ranking_input(
            X, None, qid, n_features=self.n_features_in_, require_qid=False
        )
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
        ``preset`` and the resolved preset-governed parameters (``num_leaves``,
        ``min_data_in_leaf``, ... ; ``early_stopping_rounds`` only when not None).
        """
        self._check_fitted("booster_")
        used = self.best_iteration_
        trees = self.booster_.dump_model(num_iteration=used)["tree_info"]
        splits = self.booster_.feature_importance(importance_type="split", iteration=used)
        # lgb.train truncates the booster to the best round after early stopping; the
        # validation curve still has one entry per round trained
        curve = next(iter(self.evals_result_.get("vali", {}).values()), [])
        rounds = max(int(self.booster_.current_iteration()), len(curve))
        resolved = self.resolved_params_
        stopping = resolved["early_stopping_rounds"] if self.evals_result_ else None
        n_leaves = int(sum(int(t["num_leaves"]) for t in trees))
        return {
            "best_iteration": int(used),
            "rounds_trained": rounds,
            "n_trees": len(trees),
            "n_leaves": n_leaves,
            "constant_model": n_leaves <= len(trees),
            "n_features": int(self.n_features_in_),
            "n_features_used": int(np.count_nonzero(splits)),
            **_stop_info(
                rounds, resolved["n_estimators"], stopping, int(self.booster_.current_iteration())
            ),
            "preset": str(self.preset),
            **{k: v for k, v in resolved.items() if v is not None},
        }


def _lightgbm_progress(total: int):
    def callback(env) -> None:
        report_progress(env.iteration + 1 - env.begin_iteration, total, "boosting round")
        if env.evaluation_result_list:  # lets `ltr-bench tune` prune a hopeless trial early
            from ltr_bench.progress import report_intermediate

            report_intermediate(env.iteration, env.evaluation_result_list[0][2])

    callback.order = 40  # after LightGBM's own evaluation callbacks
    return callback


# --------------------------------------------------------------------------- XGBoost


class _XGBoostRanker(BaseRanker):
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

    def ranker_tags(self) -> RankerTags:
        return _TAGS

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
        params.update(_extra(self.extra_params, self._RESERVED))
        return params

    def fit(self, X, y, *, qid, eval_set=None):
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
        booster = xgb.train(
            params,
            dtrain,
            num_boost_round=n_estimators,
            evals=evals,
            evals_result=evals_result,
            verbose_eval=False,
            callbacks=callbacks,
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

    def predict(self, X, *, qid=None):
        import xgboost as xgb

        self._check_fitted("booster_")
        X, _, _ = check_ranking_input(
            X, None, qid, n_features=self.n_features_in_, require_qid=False
        )
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        data = xgb.DMatrix(_tree_features(X, self.query_dim), nthread=self.n_threads_)
        scores = self.booster_.predict(data, iteration_range=(0, self.best_iteration_))
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
        import json

        self._check_fitted("booster_")
        used = self.booster_[: self.best_iteration_]  # a copy holding the rounds used
        trees = [json.loads(t) for t in used.get_dump(dump_format="json")]
        rounds = int(self.booster_.num_boosted_rounds())
        resolved = self.resolved_params_
        stopping = resolved["early_stopping_rounds"] if self.evals_result_ else None
        n_leaves = int(sum(_xgboost_leaves(t) for t in trees))
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


def _xgboost_leaves(node: dict) -> int:
    """Leaves of one tree of XGBoost's JSON dump (a leaf has ``"leaf"``, a split has
    ``"children"``); iterative, so deep trees (``max_depth=0``) cannot hit the recursion
    limit."""
    count, stack = 0, [node]
    while stack:
        n = stack.pop()
        if "leaf" in n:
            count += 1
        else:
            stack.extend(n.get("children", ()))
    return count


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
    for pair sampling and ``ndcg_exp_gain=True``, i.e. gain ``2^rel - 1``).
    """
        + _XGB_DOC_PARAMS
    )
    _objective = "rank:ndcg"
