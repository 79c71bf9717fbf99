"""The GBDT baselines: contract conformance, NDCG agreement with the libraries' own evaluation,
early stopping, threads, declared tags, fitted_info, progress and parameter errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.progress import progress_handler
from ltr_bench.ranker import RankerInputError, RankerTags, query_boundaries
from ltr_bench.registry import load_ranker_class
from ltr_bench.testing import make_check_data, parametrize_with_checks
from ltr_bench_baselines.catboost import CatBoostRanker
from ltr_bench_baselines.lightgbm import LightGBMRanker
from ltr_bench_baselines.xgboost import XGBoostGBRTRanker, XGBoostLambdaMARTRanker

# Small trees that do split on the ~70-row check data (the MSLR defaults' min hessian of 100
# would leave every tree a single leaf there, and a constant scorer proves little). One
# thread: the test machine is shared, and thread counts have their own test.
SMALL = {
    LightGBMRanker: dict(
        n_estimators=15, num_leaves=7, min_sum_hessian_in_leaf=1e-3, min_data_in_leaf=2, n_jobs=1
    ),
    XGBoostGBRTRanker: dict(n_estimators=15, max_leaves=7, min_child_weight=1.0, n_jobs=1),
    XGBoostLambdaMARTRanker: dict(n_estimators=15, max_leaves=7, min_child_weight=1e-3, n_jobs=1),
}
# Enough trees and leaves that no two documents of a validation query tie (checked below).
TIE_FREE = {
    LightGBMRanker: dict(num_leaves=31, min_data_in_leaf=1),
    XGBoostGBRTRanker: dict(max_leaves=31),
    XGBoostLambdaMARTRanker: dict(max_leaves=31),
}
CLASSES = list(SMALL)


def small(cls, **overrides):
    return cls(**{**SMALL[cls], **overrides})


def ranking_data(seed, n_queries, n_empty=3):
    """Continuous features (no two documents alike), 1..30 documents per query, and the first
    ``n_empty`` queries relabelled all-zero."""
    X, y, qid = make_check_data(seed, n_queries=n_queries, n_features=8, min_docs=1, max_docs=30)
    empty = qid[query_boundaries(qid)[:n_empty]]
    y = np.where(np.isin(qid, empty), 0, y)
    return X, y, qid


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_small_settings_grow_real_trees_on_the_check_data(cls):
    # precondition of the contract checks below: a constant scorer would prove little
    X, y, qid = make_check_data()
    assert np.unique(small(cls).fit(X, y, qid=qid).predict(X)).size > 5


@parametrize_with_checks([small(cls) for cls in CLASSES])
def test_gbdt_ranker_follows_the_ranker_contract(ranker, check):
    check(ranker)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_tags_declare_seed_threads_early_stopping_and_the_query_block(cls):
    # max_label: the library's label limit (checked against the libraries in
    # test_unbiased_gbdt.py::test_declared_max_label_is_the_largest_label_the_library_accepts)
    limits = {"LightGBMRanker": 30, "XGBoostLambdaMARTRanker": 31}
    # the gain of click labels (linear on click data, set by the harness), where there is one
    gain = "gain" if cls.__name__ in limits else None
    assert cls().ranker_tags() == RankerTags(
        requires_qid_at_predict=False,
        uses_eval_set=True,
        deterministic=True,
        thread_param="n_jobs",
        seed_param="random_state",
        query_dim_param="query_dim",
        max_label=limits.get(cls.__name__),
        gain_param=gain,
    )


def balanced_qbe(seed, n_classes=4, per_class=12, d=3):
    """Query-by-example rows ``[q, x]`` like ``gauss-*``: every point is a query against every
    point, relevant when of the same class. Balanced classes make every candidate relevant
    to the same share of queries, so no column of ``[q, x]`` alone separates the labels."""
    rng = np.random.default_rng(seed)
    cls = np.repeat(np.arange(n_classes), per_class)
    P = rng.normal(size=(n_classes, d))[cls] * 3 + rng.normal(size=(cls.size, d))
    n = cls.size
    X = np.hstack([np.repeat(P, n, axis=0), np.tile(P, (n, 1))])
    y = (np.repeat(cls, n) == np.tile(cls, n)).astype(np.int64)
    return X, y, np.repeat(np.arange(n), n)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_query_by_example_rows_get_distance_columns_so_pointwise_trees_can_split(cls):
    # issue 11: xgboost-gbrt was a constant model on gauss-10 (the first split has zero gain)
    X, y, qid = balanced_qbe(0)
    Xt, yt, qt = balanced_qbe(1)
    raw = cls(n_estimators=30, n_jobs=1).fit(X, y, qid=qid)
    qbe = cls(n_estimators=30, n_jobs=1, query_dim=3).fit(X, y, qid=qid)
    if cls is XGBoostGBRTRanker:
        assert raw.fitted_info()["constant_model"]
    info = qbe.fitted_info()
    assert not info["constant_model"] and info["n_features"] == 6
    # a new draw (other class centres); a random ranking scores about 0.25 (1 in 4 relevant)
    assert evaluate(yt, qbe.predict(Xt), qt, "ndcg@10")["ndcg@10"] > 0.5
    with pytest.raises(RankerInputError, match="query_dim=4 means rows"):
        cls(n_jobs=1, query_dim=4).fit(X, y, qid=qid)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_fitted_info_counts_the_trees_and_leaves_predict_uses(cls):
    X, y, qid = ranking_data(3, 40)
    val = ranking_data(4, 30)
    ranker = small(cls, n_estimators=300, early_stopping_rounds=3, learning_rate=0.5)
    info = ranker.fit(X, y, qid=qid, eval_set=val).fitted_info()
    best = ranker.best_iteration_
    assert info["best_iteration"] == best == info["n_trees"]  # one tree per round
    assert info["rounds_trained"] == best + 3 < 300  # early stopping discarded 3 rounds
    assert info["stopped_by"] == "early-stopping" and info["early_stopping"] is True
    assert info["early_stopping_rounds"] == 3 and info["preset"] == "auto"
    assert info["constant_model"] is False
    assert info["n_features"] == 8 and 1 <= info["n_features_used"] <= 8
    # independent count: each tree's leaf index of every row, over the trees used
    if cls is LightGBMRanker:
        leaves = ranker.booster_.predict(X, num_iteration=best, pred_leaf=True)
        n_leaves = [t["num_leaves"] for t in ranker.booster_.dump_model()["tree_info"][:best]]
    else:
        import xgboost as xgb

        leaves = ranker.booster_.predict(xgb.DMatrix(X), iteration_range=(0, best), pred_leaf=True)
        import json

        def leaves_of(node):  # the JSON dump, not the text dump fitted_info reads
            return 1 if "leaf" in node else sum(leaves_of(c) for c in node["children"])

        dump = ranker.booster_.get_dump(dump_format="json")[:best]
        n_leaves = [leaves_of(json.loads(t)) for t in dump]
    leaves = leaves.reshape(len(X), -1)  # (n,) when a single tree is used
    assert leaves.shape == (len(X), best)
    # every leaf reached by a training row exists, and a tree has at most num_leaves=7
    assert all(len(np.unique(leaves[:, t])) <= n_leaves[t] <= 7 for t in range(best))
    assert info["n_leaves"] == sum(n_leaves)
    assert info["n_leaves"] >= sum(len(np.unique(leaves[:, t])) for t in range(best))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_our_ndcg_of_predictions_equals_the_librarys_own_validation_ndcg(cls):
    train = ranking_data(1, 40)
    X_val, y_val, qid_val = ranking_data(2, 30)
    ranker = small(
        cls, **TIE_FREE[cls], n_estimators=60, eval_at=(5, 10), early_stopping_rounds=None
    )
    ranker.fit(train[0], train[1], qid=train[2], eval_set=(X_val, y_val, qid_val))
    scores = ranker.predict(X_val, qid=qid_val)

    # precondition: no tie between documents of different labels in one query (the libraries
    # break ties by position, we average over orderings; equal labels tie harmlessly)
    b = query_boundaries(qid_val)
    for i in range(len(b) - 1):
        s, lab = scores[b[i] : b[i + 1]], y_val[b[i] : b[i + 1]]
        pairs = (s[:, None] == s[None, :]) & (lab[:, None] != lab[None, :])
        assert not pairs.any(), f"tied scores across labels in query {qid_val[b[i]]}"

    ours = evaluate(y_val, scores, qid_val, ("ndcg@5", "ndcg@10"), empty_query=1.0)
    assert ranker.best_iteration_ == 60
    theirs = {m: values[-1] for m, values in ranker.evals_result_["vali"].items()}
    assert set(theirs) == {"ndcg@5", "ndcg@10"}
    for metric in ("ndcg@5", "ndcg@10"):
        assert ours[metric] == pytest.approx(theirs[metric], abs=1e-6)
    # the all-zero queries are in there and scored 1 by both (0 would differ by 3/30)
    zero = evaluate(y_val, scores, qid_val, ("ndcg@10",), empty_query=0.0)["ndcg@10"]
    assert abs(zero - theirs["ndcg@10"]) > 0.05


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_early_stopping_keeps_the_best_round_and_no_eval_set_uses_all_trees(cls):
    X, y, qid = ranking_data(3, 40)
    val = ranking_data(4, 30)
    stopped = small(cls, n_estimators=300, early_stopping_rounds=3, learning_rate=0.5)
    stopped.fit(X, y, qid=qid, eval_set=val)
    curve = np.array(stopped.evals_result_["vali"]["ndcg@10"])
    assert len(curve) < 300  # it stopped
    assert len(curve) == stopped.best_iteration_ + 3
    assert stopped.best_iteration_ == int(np.argmax(curve)) + 1  # first maximum
    # predict uses exactly the first best_iteration_ trees: the same scores as a model
    # trained for that many rounds (the validation set only observes training)
    short = small(cls, n_estimators=stopped.best_iteration_, learning_rate=0.5).fit(X, y, qid=qid)
    assert np.array_equal(stopped.predict(val[0]), short.predict(val[0]))

    full = small(cls, n_estimators=20).fit(X, y, qid=qid)
    assert full.best_iteration_ == 20 and full.evals_result_ == {}

    no_stop = small(cls, n_estimators=20, early_stopping_rounds=None).fit(
        X, y, qid=qid, eval_set=val
    )
    assert no_stop.best_iteration_ == 20
    assert len(no_stop.evals_result_["vali"]["ndcg@10"]) == 20
    assert np.array_equal(no_stop.predict(X), full.predict(X))  # eval_set only observes


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_thread_count_is_a_parameter_and_is_recorded(cls):
    assert cls().ranker_tags().thread_param == "n_jobs"
    X, y, qid = make_check_data()
    one = small(cls, n_jobs=1).fit(X, y, qid=qid)
    assert one.n_threads_ == 1
    default = small(cls, n_jobs=None, n_estimators=2).fit(X, y, qid=qid)
    assert default.n_threads_ == len(os.sched_getaffinity(0))
    native = "num_threads" if cls is LightGBMRanker else "nthread"
    assert one.params_[native] == 1


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_progress_is_reported_once_per_boosting_round(cls):
    X, y, qid = make_check_data()
    calls = []
    with progress_handler(lambda done, total, msg: calls.append((done, total))):
        small(cls, n_estimators=12).fit(X, y, qid=qid)
    assert calls == [(i, 12) for i in range(1, 13)]


def test_lightgbm_mslr_benchmark_preset_is_the_published_setting():
    # LightGBM docs/Experiments.rst, setting "LightGBM": 500 trees, no early stopping
    ranker = LightGBMRanker(preset="mslr-benchmark")
    resolved = ranker._resolve(2_000_000)
    params = ranker._native_params(resolved)
    assert resolved["n_estimators"] == 500 and resolved["early_stopping_rounds"] is None
    assert (
        params["num_leaves"],
        params["learning_rate"],
        params["min_data_in_leaf"],
        params["min_sum_hessian_in_leaf"],
    ) == (255, 0.1, 0, 100.0)
    assert params["objective"] == "lambdarank" and params["eval_at"] == [10]


@pytest.mark.parametrize("cls", [XGBoostGBRTRanker, XGBoostLambdaMARTRanker])
def test_xgboost_mslr_benchmark_preset_is_the_published_xgboost_hist_setting(cls):
    # LightGBM docs/Experiments.rst, setting "xgboost_hist"
    ranker = cls(preset="mslr-benchmark")
    resolved = ranker._resolve(2_000_000)
    params = ranker._native_params(resolved)
    assert resolved["n_estimators"] == 500 and resolved["early_stopping_rounds"] is None
    assert (
        params["eta"],
        params["min_child_weight"],
        params["tree_method"],
        params["grow_policy"],
        params["max_depth"],
        params["max_leaves"],
    ) == (0.1, 100.0, "hist", "lossguide", 0, 255)
    expected = "reg:squarederror" if cls is XGBoostGBRTRanker else "rank:ndcg"
    assert params["objective"] == expected


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_auto_preset_leaf_minimum_is_20_documents_or_1_percent_of_small_training_sets(cls):
    key = "min_data_in_leaf" if cls is LightGBMRanker else "min_child_weight"
    leaves = "num_leaves" if cls is LightGBMRanker else "max_leaves"
    ranker = cls()
    assert ranker.preset == "auto"
    for n_train, expected in (
        (3_000_000, 20),
        (9219, 20),
        (2000, 20),
        (1999, 19),
        (450, 4),
        (70, 1),
    ):
        resolved = ranker._resolve(n_train)
        assert resolved[key] == expected, n_train
        assert resolved[leaves] == 31 and resolved["n_estimators"] == 500
        assert resolved["early_stopping_rounds"] == 50


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_explicit_parameters_override_the_preset_and_the_preset_is_a_recorded_parameter(cls):
    leaves = "num_leaves" if cls is LightGBMRanker else "max_leaves"
    ranker = cls(preset="mslr-benchmark", **{leaves: 7}, early_stopping_rounds=5)
    assert ranker.get_params()["preset"] == "mslr-benchmark"
    resolved = ranker._resolve(100)
    assert resolved[leaves] == 7 and resolved["early_stopping_rounds"] == 5
    assert resolved["learning_rate"] == 0.1 and resolved["n_estimators"] == 500
    # None means "from the preset" for early stopping only through the sentinel "preset"
    assert cls(early_stopping_rounds=None)._resolve(100)["early_stopping_rounds"] is None
    paper = cls(preset="lgmml-paper")._resolve(100)
    assert (paper["n_estimators"], paper[leaves], paper["early_stopping_rounds"]) == (5000, 10, 100)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_unknown_preset_is_an_error_that_lists_the_presets(cls):
    X, y, qid = make_check_data()
    with pytest.raises(ValueError, match=r"preset must be one of 'auto', 'mslr-benchmark'"):
        cls(preset="fast").fit(X, y, qid=qid)


def _ohsumed_fold1(shared_data):
    from ltr_bench.data.loading import load_fold

    fold = load_fold(shared_data / "OHSUMED-LETOR3-Feature-min", 1)
    return fold, (fold.vali.X, fold.vali.y, fold.vali.qid)


def test_lightgbm_auto_splits_on_ohsumed_where_the_mslr_preset_is_constant(shared_data):
    # issue 11: the published MSLR setting's hessian minimum of 100 is never reached on
    # OHSUMED's 9,219 training documents, so every tree is one leaf
    fold, vali = _ohsumed_fold1(shared_data)
    tr = fold.train
    info = {}
    for preset in ("auto", "mslr-benchmark"):
        ranker = LightGBMRanker(preset=preset, n_estimators=20, n_jobs=1)
        ranker.fit(tr.X, tr.y, qid=tr.qid, eval_set=vali)
        info[preset] = ranker.fitted_info()
        scores = ranker.predict(fold.test.X)
        assert info[preset]["constant_model"] == (np.unique(scores).size == 1)
    # LightGBM gives up after the first tree that cannot split
    mslr = info["mslr-benchmark"]
    assert mslr["constant_model"] and mslr["n_leaves"] == mslr["n_trees"] == 1
    assert mslr["stopped_by"] == "no-split"
    assert not info["auto"]["constant_model"]
    assert info["auto"]["n_leaves"] > 5 * info["auto"]["n_trees"]
    assert info["auto"]["min_data_in_leaf"] == 20 and info["auto"]["preset"] == "auto"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_auto_defaults_grow_many_leaves_on_a_few_hundred_rows(cls):
    # 40 queries of 1..30 documents: the auto leaf minimum shrinks to 1% of the rows
    X, y, qid = ranking_data(5, 40)
    ranker = cls(n_estimators=20, n_jobs=1).fit(X, y, qid=qid)
    info = ranker.fitted_info()
    assert not info["constant_model"]
    assert info["n_leaves"] >= 3 * info["n_trees"] == 60
    assert info["stopped_by"] == "max-rounds" and info["early_stopping"] is False


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_extra_params_reach_the_library_and_may_not_repeat_a_named_parameter(cls):
    X, y, qid = make_check_data()
    key, value = ("lambda_l2", 3.5) if cls is LightGBMRanker else ("reg_lambda", 3.5)
    ranker = small(cls, extra_params={key: value}).fit(X, y, qid=qid)
    assert ranker.params_[key] == value
    if cls is LightGBMRanker:
        assert ranker.booster_.params[key] == value
    else:
        assert f'"{key}":"3.5' in ranker.booster_.save_config().replace(" ", "")
    clash = "num_leaves" if cls is LightGBMRanker else "max_leaves"
    with pytest.raises(ValueError, match=rf"extra_params may not set '{clash}'"):
        small(cls, extra_params={clash: 3}).fit(X, y, qid=qid)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_bad_parameters_and_inputs_give_errors_that_name_them(cls):
    X, y, qid = make_check_data()
    with pytest.raises(ValueError, match="n_estimators must be an integer >= 1"):
        small(cls, n_estimators=0).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="learning_rate"):
        small(cls, learning_rate=-1).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="n_jobs"):
        small(cls, n_jobs=0).fit(X, y, qid=qid)
    with pytest.raises(RankerInputError, match="eval_set: X has 3 features"):
        small(cls).fit(X, y, qid=qid, eval_set=(X[:, :3], y, qid))
    with pytest.raises(RankerInputError, match="eval_set must be None or a tuple"):
        small(cls).fit(X, y, qid=qid, eval_set=(X, y))
    fitted = small(cls).fit(X, y, qid=qid)
    with pytest.raises(RankerInputError, match="fitted with 5"):
        fitted.predict(X[:, :4])


def test_entry_points_resolve_to_the_gbdt_classes():
    assert load_ranker_class("lightgbm") is LightGBMRanker
    assert load_ranker_class("xgboost-gbrt") is XGBoostGBRTRanker
    assert load_ranker_class("xgboost-lambdamart") is XGBoostLambdaMARTRanker


# ---------------------------------------------------------------- XGBoost pruning (tuning)

XGB_CLASSES = [XGBoostGBRTRanker, XGBoostLambdaMARTRanker]


class _PruneFromStep:
    """A stand-in for an Optuna trial (what :func:`ltr_bench.tune.study.trial_reporter`
    reports to): records every reported (step, value) and asks to prune once a step reaches
    ``step``."""

    def __init__(self, step):
        self.step, self.reported = step, []

    def report(self, value, step):
        self.reported.append((step, value))

    def should_prune(self):
        return bool(self.reported) and self.reported[-1][0] >= self.step


def _in_trial(trial, fn):
    from ltr_bench.progress import intermediate_handler
    from ltr_bench.tune.study import trial_reporter

    with intermediate_handler(trial_reporter(trial)):
        return fn()


@pytest.mark.parametrize("cls", XGB_CLASSES, ids=lambda c: c.__name__)
def test_xgboost_reports_the_validation_curve_and_a_pruned_trial_leaves_fit(cls):
    import optuna

    from ltr_bench.tune.study import REPORT_EVERY

    X, y, qid = ranking_data(5, 40)
    val = ranking_data(6, 30)
    full = small(cls, n_estimators=40, early_stopping_rounds=None).fit(X, y, qid=qid, eval_set=val)
    curve = full.evals_result_["vali"]["ndcg@10"]
    trial = _PruneFromStep(2 * REPORT_EVERY)
    pruned = small(cls, n_estimators=40, early_stopping_rounds=None)
    with pytest.raises(optuna.TrialPruned):
        _in_trial(trial, lambda: pruned.fit(X, y, qid=qid, eval_set=val))
    # rounds 0, 10, 20 (0-based, like LightGBM's): the last value of the first eval metric
    assert trial.reported == [(s, pytest.approx(curve[s], abs=0)) for s in (0, 10, 20)]
    assert not hasattr(pruned, "booster_")  # fit did not finish

    quiet = _PruneFromStep(0)  # no eval_set: nothing to report, nothing pruned
    _in_trial(quiet, lambda: small(cls, n_estimators=12).fit(X, y, qid=qid))
    assert quiet.reported == []


@pytest.mark.parametrize("cls", XGB_CLASSES, ids=lambda c: c.__name__)
def test_xgboost_fit_in_a_study_whose_pruner_always_prunes_raises_trial_pruned(cls):
    import optuna

    X, y, qid = ranking_data(7, 30)
    val = ranking_data(8, 20)
    study = optuna.create_study(
        direction="maximize", pruner=optuna.pruners.ThresholdPruner(lower=2.0)
    )  # ndcg <= 1
    trial = study.ask()
    with pytest.raises(optuna.TrialPruned):
        _in_trial(trial, lambda: small(cls).fit(X, y, qid=qid, eval_set=val))
    assert list(trial.storage.get_trial(trial._trial_id).intermediate_values) == [0]


@pytest.mark.parametrize("cls", XGB_CLASSES, ids=lambda c: c.__name__)
def test_xgboost_pruning_callback_changes_nothing_outside_tuning(cls, monkeypatch):
    import xgboost as xgb

    from ltr_bench_baselines import xgboost as xgboost_rankers

    X, y, qid = ranking_data(9, 40)
    val = ranking_data(10, 30)
    with_cb = small(cls, n_estimators=60, learning_rate=0.5).fit(X, y, qid=qid, eval_set=val)
    monkeypatch.setattr(
        xgboost_rankers, "_xgboost_pruning", lambda metric: xgb.callback.TrainingCallback()
    )
    without = small(cls, n_estimators=60, learning_rate=0.5).fit(X, y, qid=qid, eval_set=val)
    assert with_cb.best_iteration_ == without.best_iteration_
    assert with_cb.evals_result_ == without.evals_result_
    assert np.array_equal(with_cb.predict(val[0]), without.predict(val[0]))


# ---------------------------------------------------------------- LightGBM XE-NDCG


@parametrize_with_checks([small(LightGBMRanker, objective="rank_xendcg")])
def test_lightgbm_xendcg_follows_the_ranker_contract(ranker, check):
    check(ranker)


def test_lightgbm_xendcg_objective_reaches_lightgbm_and_learns_a_ranking():
    # one relevance function (make_check_data draws one per seed): train and validation are
    # the first 60 and the last 40 queries of the same data
    X, y, qid = ranking_data(11, 100, n_empty=0)
    cut = query_boundaries(qid)[60]
    X, y, qid, Xv, yv, qv = X[:cut], y[:cut], qid[:cut], X[cut:], y[cut:], qid[cut:]
    xe = small(LightGBMRanker, objective="rank_xendcg", n_estimators=40).fit(X, y, qid=qid)
    lr = small(LightGBMRanker, n_estimators=40).fit(X, y, qid=qid)
    # LightGBM's own record of the objective it trained with
    assert xe.booster_.dump_model()["objective"].startswith("rank_xendcg")
    assert lr.booster_.dump_model()["objective"].startswith("lambdarank")
    assert xe.params_["objective"] == "rank_xendcg" == xe.fitted_info()["objective"]
    assert not np.allclose(xe.predict(Xv), lr.predict(Xv))
    # it learns: far above the expected NDCG of a random ranking (a constant scorer)
    learned = evaluate(yv, xe.predict(Xv), qv, "ndcg@10")["ndcg@10"]
    chance = evaluate(yv, np.zeros(len(yv)), qv, "ndcg@10")["ndcg@10"]
    assert learned > chance + 0.15


def test_lightgbm_xendcg_random_targets_follow_the_seed():
    # XE-NDCG draws gamma ~ U(0, 1) per document and round from LightGBM's objective_seed,
    # which LightGBM derives from seed (random_state)
    X, y, qid = ranking_data(13, 40, n_empty=0)
    fit = lambda seed: (  # noqa: E731
        small(LightGBMRanker, objective="rank_xendcg", random_state=seed, n_estimators=20)
        .fit(X, y, qid=qid)
        .predict(X)
    )
    assert np.array_equal(fit(1), fit(1))
    assert not np.array_equal(fit(1), fit(2))


def test_unknown_lightgbm_objective_is_an_error_that_lists_the_objectives():
    with pytest.raises(ValueError, match="'objective' parameter of LightGBMRanker"):
        LightGBMRanker(objective="rank_xe").validate_params()
    X, y, qid = make_check_data()
    with pytest.raises(ValueError, match="objective must be one of lambdarank, rank_xendcg"):
        LightGBMRanker(objective="rank_xe", n_jobs=1).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="extra_params may not set 'objective'"):
        LightGBMRanker(extra_params={"objective": "rank_xendcg"}).fit(X, y, qid=qid)


# ---------------------------------------------------------------- learning curves


def _staged_scores(ranker, X, rounds):
    """Scores of the first ``rounds`` boosting rounds, from the library's own model."""
    if isinstance(ranker, LightGBMRanker):
        return ranker.booster_.predict(X, num_iteration=rounds)
    if isinstance(ranker, CatBoostRanker):
        return ranker.model_.predict(X, ntree_end=rounds)
    import xgboost as xgb

    return ranker.booster_.predict(xgb.DMatrix(X), iteration_range=(0, rounds))


def _tie_free(scores, y, qid):
    """No tie between documents of different labels inside a query (then the libraries'
    tie rules and ours agree)."""
    b = query_boundaries(qid)
    for i in range(len(b) - 1):
        s, lab = scores[b[i] : b[i + 1]], y[b[i] : b[i + 1]]
        if ((s[:, None] == s[None, :]) & (lab[:, None] != lab[None, :])).any():
            return False
    return True


CURVE_RANKERS = {
    **{cls: {**SMALL[cls], **TIE_FREE[cls]} for cls in CLASSES},
    CatBoostRanker: dict(n_estimators=15, depth=6, n_jobs=1),
}


@pytest.mark.parametrize("cls", list(CURVE_RANKERS), ids=lambda c: c.__name__)
def test_learning_curves_are_the_validation_ndcg_of_every_round_trained(cls):
    X, y, qid = ranking_data(3, 40)
    Xv, yv, qv = ranking_data(4, 30)
    params = {**CURVE_RANKERS[cls], "learning_rate": 0.3, "eval_at": (10, 5)}
    ranker = cls(**params | {"n_estimators": 40}, early_stopping_rounds=None)
    ranker.fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    curves = ranker.learning_curves()
    assert set(curves) == {"vali_ndcg@5", "vali_ndcg@10"}
    curve = curves["vali_ndcg@10"]
    assert len(curve) == 40 and all(type(v) is float for v in curve)
    # independent check: our NDCG@10 of the library's staged scores after each round where
    # no two documents of different labels tie (tie rules differ, test_library_metrics.py)
    checked = 0
    for rounds in range(1, 41):
        scores = _staged_scores(ranker, Xv, rounds)
        if _tie_free(scores, yv, qv):
            ours = evaluate(yv, scores, qv, "ndcg@10")["ndcg@10"]
            assert curve[rounds - 1] == pytest.approx(ours, abs=1e-6), rounds
            checked += 1
    assert checked >= 10

    # with early stopping: every round trained, the ones after the best included; predict
    # uses the best. Early stopping follows the first eval_at -- for LightGBM the smallest k,
    # as LightGBM sorts eval_at -- so the first is the smallest here
    stopped = cls(**params | {"n_estimators": 300, "eval_at": (5, 10)}, early_stopping_rounds=4)
    curve = stopped.fit(X, y, qid=qid, eval_set=(Xv, yv, qv)).learning_curves()["vali_ndcg@5"]
    assert len(curve) == stopped.fitted_info()["rounds_trained"] == stopped.best_iteration_ + 4
    assert max(curve) == curve[stopped.best_iteration_ - 1]


@pytest.mark.parametrize("cls", list(CURVE_RANKERS), ids=lambda c: c.__name__)
def test_learning_curves_are_empty_without_a_validation_set_and_need_a_fit(cls):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        cls().learning_curves()
    X, y, qid = make_check_data()
    assert cls(**CURVE_RANKERS[cls]).fit(X, y, qid=qid).learning_curves() == {}
