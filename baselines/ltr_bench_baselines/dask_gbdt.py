"""LightGBM lambdarank and XGBoost lambda-MART trained across the workers of a Dask cluster.

Registered as ``lightgbm-dask`` and ``xgboost-dask``. Each is the twin of a single-machine
ranker (``lightgbm`` of :mod:`ltr_bench_baselines.lightgbm`, ``xgboost-lambdamart`` of
:mod:`ltr_bench_baselines.xgboost`): the same parameters, presets and their resolution, the
same native parameters, the same ``predict`` and ``fitted_info``; only training is
distributed (data-parallel: each worker holds some queries and builds histograms of them,
the libraries combine them). Use them when one training set does not fit one worker, or to
use several machines for one model; for many small models, ``ltr-bench run --workers N``
(one cell per worker) is faster.

Cluster (parameter ``scheduler``)
---------------------------------
* ``None`` (default): a ``distributed.LocalCluster`` of ``n_workers`` (default 2) processes
  with ``n_jobs`` threads each, started on the first ``fit`` of this process and reused by
  later fits (closed when the process exits). It cannot be started inside a Dask worker (its
  processes are daemonic): inside ``ltr-bench run --workers N`` give ``scheduler``.
* ``"tcp://host:8786"``: the running cluster at that address; every worker of it takes
  part. ``--param lightgbm-dask.scheduler=tcp://host:8786``.

Partitioning
------------
The training (and validation) rows are cut into one part per worker, at query boundaries
only, with about the same number of rows in each (:func:`query_partitions`): no query is
ever split across workers, which lambdarank needs (a query's pairs must be on one worker).
``fit`` receives numpy arrays (the ranker interface), so the parts are sent from the
client to the workers.

Validation and early stopping
-----------------------------
``xgboost-dask``: XGBoost evaluates ``ndcg@k`` of the validation split across all workers
(reduced over them) and stops early exactly as its twin.

``lightgbm-dask``: LightGBM's Dask interface reports validation metrics of one worker's part
only and has no early stopping, so all ``n_estimators`` rounds are trained and the round is
chosen afterwards on the client: NDCG@``eval_at[0]`` of the whole validation split after
every round (per-tree predictions summed; :func:`ltr_bench.evaluation.metrics.evaluate`, gain
``2^rel - 1``, queries without relevant documents scoring 1, as LightGBM) and the same rule
as LightGBM's early stopping: the best round is the first with the highest value seen
before ``early_stopping_rounds`` rounds passed without a strictly higher one. The result is
the round early stopping would have stopped at; only the extra rounds' time is spent.

Results are not bit-identical to the twins' (histograms built from parts; LightGBM's
distributed feature binning), but reach the same NDCG within noise (tested on synthetic
data in ``tests/baselines/test_dask_gbdt.py``). ``lightgbm-dask`` is not even reproducible
run to run (tag ``deterministic=False``): which worker receives which part, and so
LightGBM's machine ranks, may change, and the trees with them. ``xgboost-dask`` is
reproducible for a seed and a number of workers.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import multiprocessing
import threading
import warnings
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ltr_bench.ranker import RankerInputError, RankerTags, query_boundaries

from .gbdt_common import (
    _TAGS,
    FROM_PRESET,
    _check_fit_input,
    _eval_at,
    _plain_evals,
    _tree_features,
)
from .lightgbm import LightGBMRanker
from .xgboost import XGBoostLambdaMARTRanker

__all__ = ["DaskLightGBMRanker", "DaskXGBoostRanker", "query_partitions"]

_LOCAL: dict[tuple[int, int], tuple] = {}
_LOCAL_LOCK = threading.Lock()


def query_partitions(qid: np.ndarray, n_parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut the contiguous query blocks of ``qid`` (n_docs,) into at most ``n_parts`` parts
    of about equal row counts, at query boundaries only.

    Returns ``(rows, queries)``: rows per part and query blocks per part (both (n,) int64,
    positive, ``rows.sum() == len(qid)``). Fewer parts than asked when there are fewer
    queries than parts.
    """
    b = query_boundaries(qid)  # starts of the blocks and len(qid)
    n_queries = b.size - 1
    if n_queries < 1:
        raise RankerInputError("qid has no rows")
    targets = np.linspace(0, b[-1], min(int(n_parts), n_queries) + 1)
    # the query boundary nearest to each equal-rows target; duplicates merge parts
    cut_queries = np.unique(np.abs(b[None, :] - targets[:, None]).argmin(axis=1))
    cut_queries[0], cut_queries[-1] = 0, n_queries
    cut_queries = np.unique(cut_queries)
    return np.diff(b[cut_queries]).astype(np.int64), np.diff(cut_queries).astype(np.int64)


def _client(scheduler, n_workers: int, threads: int):
    """(client, n_workers of the cluster) for ``scheduler`` or this process's LocalCluster."""
    from distributed import Client, LocalCluster

    if scheduler is not None:
        client = Client(scheduler, timeout="30s", set_as_default=False)
    else:
        if multiprocessing.current_process().daemon:
            raise RuntimeError(
                "cannot start a local Dask cluster inside a Dask worker process; give "
                "scheduler='tcp://host:port' (the cluster this cell runs on, or another)"
            )
        key = (int(n_workers), int(threads))
        with _LOCAL_LOCK:
            if key not in _LOCAL:
                cluster = LocalCluster(
                    n_workers=key[0],
                    threads_per_worker=key[1],
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.ERROR,
                )
                _LOCAL[key] = (cluster, Client(cluster, set_as_default=False))
            client = _LOCAL[key][1]
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    if not workers:
        raise RuntimeError(f"the Dask cluster at {scheduler} has no workers")
    return client, len(workers)


@atexit.register
def _close_local_clusters() -> None:
    with _LOCAL_LOCK:
        for cluster, client in _LOCAL.values():
            client.close()
            cluster.close()
        _LOCAL.clear()


def _dask_parts(X, y, qid, n_parts: int):
    """Dask arrays of ``X``, ``y``, the group sizes and the block index of each row (a
    sorted query id, as XGBoost wants), chunked one part per worker along query
    boundaries."""
    import dask.array as da

    rows, queries = query_partitions(qid, n_parts)
    sizes = np.diff(query_boundaries(qid)).astype(np.int64)
    block = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    row_chunks = (tuple(int(r) for r in rows),)
    return (
        da.from_array(X, chunks=(row_chunks[0], (X.shape[1],))),
        da.from_array(y, chunks=row_chunks),
        da.from_array(sizes, chunks=(tuple(int(q) for q in queries),)),
        da.from_array(block, chunks=row_chunks),
    )


def _best_round(curve: list[float], patience) -> int:
    """1-based round LightGBM's early stopping would keep: the first maximum seen before
    ``patience`` rounds pass without a strictly higher value (all rounds: the first
    maximum; ``patience`` None: the last round)."""
    if patience is None:
        return len(curve)
    best, best_i = -np.inf, 0
    for i, value in enumerate(curve):
        if value > best:
            best, best_i = value, i
        elif i - best_i >= patience:
            break
    return best_i + 1


_DASK_DOC = """
    scheduler : str or None, default None   address of a running Dask scheduler; None: a local
        cluster of ``n_workers`` processes (see :mod:`ltr_bench_baselines.dask_gbdt`)
    n_workers : int, default 2               workers of the local cluster (ignored with
        ``scheduler``)
"""


#: the checks of the parameters both Dask rankers add to their twins'
_DASK_CONSTRAINTS = {
    "scheduler": [str, None],
    "n_workers": [Interval(Integral, 1, None, closed="left")],
}


class DaskLightGBMRanker(LightGBMRanker):
    __doc__ = (
        """LightGBM lambdarank trained on a Dask cluster (``lightgbm.dask.DaskLGBMRanker``,
    data partitioned by query); the twin of ``lightgbm``, whose parameters it takes, plus:
    """
        + _DASK_DOC
        + """
    ``n_jobs`` is the thread count of each worker of the local cluster and of ``predict``.
    Early stopping is applied after training (module docstring).
    """
    )

    #: learning from clicks (``unbiased``) is not offered on a cluster: the positions are not
    #: partitioned with the data; use ``lightgbm`` / ``xgboost-lambdamart``; the gain stays
    #: the library's exponential one (no ``gain_param``: click counts up to 30 / 31)
    unbiased = False
    gain = "exp"
    propensity = "true"

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
        scheduler=None,
        n_workers=2,
    ):
        super().__init__(
            preset=preset,
            objective=objective,
            n_estimators=n_estimators,
            num_leaves=num_leaves,
            learning_rate=learning_rate,
            min_sum_hessian_in_leaf=min_sum_hessian_in_leaf,
            min_data_in_leaf=min_data_in_leaf,
            early_stopping_rounds=early_stopping_rounds,
            eval_at=eval_at,
            n_jobs=n_jobs,
            random_state=random_state,
            extra_params=extra_params,
            query_dim=query_dim,
        )
        self.scheduler = scheduler
        self.n_workers = n_workers
        # the class attributes above: not parameters of the cluster twin
        del self.unbiased, self.gain, self.propensity

    def ranker_tags(self) -> RankerTags:
        # which worker gets which part (and LightGBM's machine ranks) can change between
        # runs, and with them the merged histograms: same seed, slightly different trees;
        # the label limit is LightGBM's (its label_gain table)
        max_label = LightGBMRanker.ranker_tags(self).max_label
        return dataclasses.replace(_TAGS, deterministic=False, max_label=max_label)

    _parameter_constraints = {**LightGBMRanker._parameter_constraints, **_DASK_CONSTRAINTS}

    def fit(self, X, y, *, qid, eval_set=None):
        from lightgbm.dask import DaskLGBMRanker

        from ltr_bench.evaluation.metrics import evaluate

        X, y, qid, eval_set = _check_fit_input(X, y, qid, eval_set)
        resolved = self._resolve(X.shape[0])
        params = self._native_params(resolved)
        client, n_workers = _client(self.scheduler, self.n_workers, params["num_threads"])
        # each worker trains with its own Dask thread count (the local cluster's is n_jobs)
        native = {
            k: v
            for k, v in params.items()
            if k not in ("objective", "metric", "eval_at", "num_threads")
        }
        Xd, yd, groups, _ = _dask_parts(_tree_features(X, self.query_dim), y, qid, n_workers)
        model = DaskLGBMRanker(
            client=client,
            objective=params["objective"],
            n_estimators=resolved["n_estimators"],
            **native,
        )
        with client.as_current(), warnings.catch_warnings():
            # lightgbm.dask says so for the thread parameter the sklearn wrapper always has
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            model.fit(Xd, yd, group=groups)
        booster = model.to_local().booster_
        rounds = int(booster.current_iteration())
        evals_result, best = {}, rounds
        if eval_set is not None:
            Xv, yv, qv = eval_set
            k = _eval_at(self.eval_at)[0]
            Tv = _tree_features(Xv, self.query_dim)
            scores = np.zeros(Xv.shape[0])
            curve = []
            for i in range(rounds):  # the validation NDCG after each round, on every query
                scores += booster.predict(
                    Tv,
                    start_iteration=i,
                    num_iteration=1,
                    raw_score=True,
                    num_threads=params["num_threads"],
                )
                curve.append(float(evaluate(yv, scores, qv, f"ndcg@{k}")[f"ndcg@{k}"]))
            evals_result = {"vali": {f"ndcg@{k}": curve}}
            best = _best_round(curve, resolved["early_stopping_rounds"])
        self.booster_ = booster
        self.best_iteration_ = best
        self.evals_result_ = _plain_evals(evals_result)
        self.n_features_in_ = X.shape[1]
        self.n_threads_ = params["num_threads"]
        self.params_ = params
        self.resolved_params_ = resolved
        self.n_partitions_ = int(Xd.numblocks[0])
        return self


class DaskXGBoostRanker(XGBoostLambdaMARTRanker):
    __doc__ = (
        """XGBoost lambda-MART (``rank:ndcg``) trained on a Dask cluster (``xgboost.dask``
    with ``qid``, data partitioned by query); the twin of ``xgboost-lambdamart``, whose
    parameters it takes, plus:
    """
        + _DASK_DOC
        + """
    ``n_jobs`` is the thread count of each worker's training and of ``predict``.
    """
    )

    #: learning from clicks (``unbiased``) is not offered on a cluster: the positions are not
    #: partitioned with the data; use ``lightgbm`` / ``xgboost-lambdamart``; the gain stays
    #: the library's exponential one (no ``gain_param``: click counts up to 30 / 31)
    unbiased = False
    gain = "exp"
    propensity = "true"

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
        scheduler=None,
        n_workers=2,
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
        self.scheduler = scheduler
        self.n_workers = n_workers
        # the class attributes above: not parameters of the cluster twin
        del self.unbiased, self.gain, self.propensity

    _parameter_constraints = {**XGBoostLambdaMARTRanker._parameter_constraints, **_DASK_CONSTRAINTS}

    def ranker_tags(self) -> RankerTags:
        # no gain parameter on the cluster twin: XGBoost's exponential gain and its limit
        return dataclasses.replace(super().ranker_tags(), gain_param=None)

    def fit(self, X, y, *, qid, eval_set=None):
        import xgboost as xgb
        import xgboost.dask  # noqa: F401 - not imported by `import xgboost`

        X, y, qid, eval_set = _check_fit_input(X, y, qid, eval_set)
        resolved = self._resolve(X.shape[0])
        n_estimators, stopping = resolved["n_estimators"], resolved["early_stopping_rounds"]
        params = self._native_params(resolved)
        client, n_workers = _client(self.scheduler, self.n_workers, params["nthread"])
        Xd, yd, _, qd = _dask_parts(_tree_features(X, self.query_dim), y, qid, n_workers)
        with client.as_current():  # xgboost.dask looks the client up as the current one
            dtrain = xgb.dask.DaskDMatrix(client, Xd, yd, qid=qd)
            evals = []
            if eval_set is not None:
                Xv, yv, qv = eval_set
                Xvd, yvd, _, qvd = _dask_parts(
                    _tree_features(Xv, self.query_dim), yv, qv, n_workers
                )
                evals = [(xgb.dask.DaskDMatrix(client, Xvd, yvd, qid=qvd), "vali")]
            out = xgb.dask.train(
                client,
                params,
                dtrain,
                num_boost_round=n_estimators,
                evals=evals,
                verbose_eval=False,
                early_stopping_rounds=stopping if evals else None,
            )
        booster = out["booster"]
        rounds = booster.num_boosted_rounds()
        if evals and stopping is not None:
            rounds = int(booster.best_iteration) + 1  # best_iteration is 0-based
        self.booster_ = booster
        self.best_iteration_ = rounds
        self.evals_result_ = _plain_evals(out.get("history") or {})
        self.n_features_in_ = X.shape[1]
        self.n_threads_ = params["nthread"]
        self.params_ = params
        self.resolved_params_ = resolved
        self.n_partitions_ = int(Xd.numblocks[0])
        return self
