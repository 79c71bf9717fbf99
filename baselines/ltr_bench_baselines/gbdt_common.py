"""What the gradient-boosted tree rankers share: presets, early stopping, threads, tags,
input checks, the trees' input for query-by-example rows and the diagnostics of ``fitted_info``.

The rankers live in :mod:`ltr_bench_baselines.lightgbm` (``lightgbm``) and
:mod:`ltr_bench_baselines.xgboost` (``xgboost-gbrt``, ``xgboost-lambdamart``), registered in the
``ltr_bench.rankers`` entry point group (main ``pyproject.toml``) like any plugin; the Dask
twins in :mod:`ltr_bench_baselines.dask_gbdt`. Everything below holds for all of them.

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

from ltr_bench.ranker import (
    BaseRanker,
    RankerInputError,
    RankerTags,
    check_ranking_input,
    query_boundaries,
    split_query_document,
)

__all__ = [
    "CATBOOST_PRESETS",
    "FROM_PRESET",
    "GBDTRanker",
    "LIGHTGBM_PRESETS",
    "XGBOOST_PRESETS",
]


# --------------------------------------------------------------------------- helpers


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _resolve_threads(n_jobs) -> int:
    if n_jobs is None or n_jobs == -1:
        return _available_cpus()
    if isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool) and int(n_jobs) >= 1:
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


def _extra(extra_params, reserved: dict[str, str], library: str | None = None) -> dict:
    """``extra_params`` as a dict; keys that a named parameter already sets are an error, and
    so are keys ``library`` does not know (:mod:`.library_params`)."""
    if extra_params is None:
        return {}
    if not isinstance(extra_params, dict):
        raise ValueError(f"extra_params must be a dict or None, got {type(extra_params).__name__}")
    clash = sorted(k for k in extra_params if k in reserved)
    if clash:
        hints = ", ".join(f"{k!r} (use the parameter {reserved[k]!r})" for k in clash)
        raise ValueError(f"extra_params may not set {hints}")
    if library is not None:
        from .library_params import check_library_keys

        check_library_keys(library, extra_params)
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

#: ``catboost``'s presets (:mod:`ltr_bench_baselines.catboost` says where they come from)
CATBOOST_PRESETS = {
    "auto": dict(
        n_estimators=1000,
        learning_rate=0.1,
        depth=6,
        l2_leaf_reg=3.0,
        border_count=254,
        early_stopping_rounds=50,
    ),
    "catboost-defaults": dict(
        n_estimators=1000,
        learning_rate=0.03,
        depth=6,
        l2_leaf_reg=3.0,
        border_count=254,
        early_stopping_rounds=50,
    ),
    "mq2008-benchmark": dict(
        n_estimators=8000,
        learning_rate=0.03,
        depth=4,
        l2_leaf_reg=3.0,
        border_count=64,
        early_stopping_rounds=8000,
    ),
    "mslr-benchmark": dict(
        n_estimators=8000,
        learning_rate=0.07,
        depth=10,
        l2_leaf_reg=3.0,
        border_count=64,
        early_stopping_rounds=8000,
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


# --------------------------------------------------------------------------- the base


#: the parameter checks every library's ranker shares (BaseRanker.validate_params)
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


class GBDTRanker(BaseRanker):
    """The base of the tree rankers: the tags they share (``_TAGS``) and the learning curves
    read from ``evals_result_``. Subclasses implement ``fit`` (setting ``evals_result_``,
    ``{data: {metric: [value per round]}}``), ``predict`` and ``fitted_info``."""

    def ranker_tags(self) -> RankerTags:
        return _TAGS

    def learning_curves(self) -> dict[str, list[float]]:
        """The validation metric after every boosting round, as the library computed it:
        ``{"vali_ndcg@10": [v_1, ..., v_R]}`` (one key per ``eval_at`` k, ``v_r`` after
        round r, R = every round trained, including those after the best round that early
        stopping discards; ``best_iteration_`` says which round ``predict`` uses). Gain
        ``2^rel - 1``, queries without relevant documents 1, ties as the library ranks them
        (module docstring). ``{}`` when ``fit`` had no validation set (or, for
        ``catboost``, nothing to learn).
        """
        self._check_fitted("evals_result_")
        return {
            f"{data}_{metric}": [float(v) for v in values]
            for data, metrics in self.evals_result_.items()
            for metric, values in metrics.items()
        }

    def export_onnx(self, kit):
        """The trees ``predict`` uses, on the trees' input (``[q, x, |q - x|]`` for
        query-by-example rows), converted by the library's builder in ``kit``
        (:meth:`_onnx_trees`)."""
        g = kit.Graph(self.n_features_in_)
        x = kit.query_document_abs_diff(g, g.input, self.query_dim)
        return g.model(self._onnx_trees(kit, g, x))

    def _onnx_trees(self, kit, g, x) -> str:
        """The tensor of the trees' raw sums on ``x`` (each library's ranker says how)."""
        raise NotImplementedError

    def missing_scores(self, X) -> np.ndarray:
        """The library's own scores (float64, ``(n,)``) of the rows ``X`` ``(n,
        n_features_in_)``, which may hold NaN (``predict`` refuses it): each NaN treated as
        the library treats a missing value. The export proof compares the ONNX graph's
        scores of rows with NaN with these (:mod:`ltr_bench.models.onnx.check`)."""
        from ltr_bench.ranker import RankerInputError

        self._check_fitted("n_features_in_")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise RankerInputError(f"X has shape {X.shape}; expected (n, {self.n_features_in_})")
        if np.isinf(X).any():
            raise RankerInputError("X contains infinite values")
        return self._library_scores(X)

    def _library_scores(self, X) -> np.ndarray:
        """The library's scores of the checked rows ``X`` (each library's ranker says how)."""
        raise NotImplementedError

    def _check_library_width(self, n_library: int, file: str) -> None:
        """``load_native``: the library model ``file`` reads ``n_library`` features, the
        width of the trees' input (``n_features_in_``, plus ``query_dim`` columns ``|q - x|``
        for query-by-example rows); else ``ValueError`` (the files do not belong together:
        a model file of another model copied in)."""
        n = getattr(self, "n_features_in_", None)
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
            raise ValueError(f"the fitted state's n_features_in_ is {n!r}, not a feature count")
        expected = n + int(self.query_dim or 0)
        if int(n_library) != expected:
            extra = f" plus {self.query_dim} |q - x| columns" if self.query_dim else ""
            raise ValueError(
                f"{file} is a model of {int(n_library)} features, but the fitted state says "
                f"{n}{extra} ({expected}): the files do not belong to one model"
            )
