"""The ``catboost`` ranker: contract conformance for every loss, seeds and threads, early
stopping, agreement with CatBoost's own NDCG, degenerate labels, presets, progress, pruning
and parameter errors."""

from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.progress import progress_handler
from ltr_bench.ranker import apply_run_settings, query_boundaries
from ltr_bench.registry import load_ranker_class
from ltr_bench.testing import make_check_data, parametrize_with_checks
from ltr_bench_baselines.catboost import CATBOOST_LOSSES, CatBoostRanker
from ltr_bench_baselines.gbdt_common import CATBOOST_PRESETS

# small symmetric trees on one thread: the machine is shared, threads have their own test
SMALL = dict(n_estimators=15, depth=3, n_jobs=1)


def small(**overrides):
    return CatBoostRanker(**{**SMALL, **overrides})


def ranking_data(seed, n_queries, n_empty=3):
    """Continuous features, 1..30 documents per query, the first ``n_empty`` queries
    relabelled all-zero."""
    X, y, qid = make_check_data(seed, n_queries=n_queries, n_features=8, min_docs=1, max_docs=30)
    empty = qid[query_boundaries(qid)[:n_empty]]
    return X, np.where(np.isin(qid, empty), 0, y), qid


def test_small_settings_grow_real_trees_on_the_check_data():
    # precondition of the contract checks: a constant scorer would prove little
    X, y, qid = make_check_data()
    assert np.unique(small().fit(X, y, qid=qid).predict(X)).size > 5


@parametrize_with_checks([small(loss=loss) for loss in CATBOOST_LOSSES])
def test_catboost_follows_the_ranker_contract_with_every_loss(ranker, check):
    check(ranker)


def test_tags_declare_seed_threads_early_stopping_and_the_query_block():
    tags = CatBoostRanker().ranker_tags()
    assert (tags.seed_param, tags.thread_param, tags.query_dim_param) == (
        "random_state",
        "n_jobs",
        "query_dim",
    )
    assert tags.uses_eval_set and tags.deterministic
    # the harness's --threads and --seed arrive as thread_count and random_seed
    ranker = CatBoostRanker()
    assert apply_run_settings(ranker, seed=7, threads=2, query_dim=None) == {
        "random_state": 7,
        "n_jobs": 2,
    }
    X, y, qid = make_check_data()
    ranker.set_params(n_estimators=3).fit(X, y, qid=qid)
    assert ranker.params_["thread_count"] == 2 == ranker.n_threads_
    assert ranker.params_["random_seed"] == 7


def test_the_same_seed_gives_the_same_scores_and_another_seed_other_scores():
    X, y, qid = ranking_data(1, 40)
    Xv = ranking_data(2, 20)[0]
    a = small(random_state=3, n_estimators=30).fit(X, y, qid=qid).predict(Xv)
    b = small(random_state=3, n_estimators=30).fit(X, y, qid=qid).predict(Xv)
    c = small(random_state=4, n_estimators=30).fit(X, y, qid=qid).predict(Xv)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)  # YetiRank's random permutations follow the seed


def test_scores_do_not_depend_on_the_thread_count():
    X, y, qid = ranking_data(1, 40)
    one = small(n_estimators=30, n_jobs=1).fit(X, y, qid=qid)
    two = small(n_estimators=30, n_jobs=2).fit(X, y, qid=qid)
    assert (one.n_threads_, two.n_threads_) == (1, 2)
    assert np.array_equal(one.predict(X), two.predict(X))
    default = small(n_jobs=None, n_estimators=2).fit(X, y, qid=qid)
    assert default.n_threads_ == len(os.sched_getaffinity(0))


def test_early_stopping_keeps_the_best_validation_round():
    X, y, qid = ranking_data(3, 40)
    val = ranking_data(4, 30)
    stopped = small(n_estimators=300, early_stopping_rounds=5, learning_rate=0.5)
    stopped.fit(X, y, qid=qid, eval_set=val)
    curve = np.array(stopped.evals_result_["vali"]["ndcg@10"])
    assert len(curve) < 300  # it stopped
    assert stopped.best_iteration_ == int(np.argmax(curve)) + 1  # the first maximum
    assert len(curve) == stopped.best_iteration_ + 5
    # predict uses exactly the best round's trees: the same scores as a model trained for
    # that many rounds (the validation split only observes training)
    short = small(n_estimators=stopped.best_iteration_, learning_rate=0.5).fit(X, y, qid=qid)
    assert np.array_equal(stopped.predict(val[0]), short.predict(val[0]))
    info = stopped.fitted_info()
    assert info["stopped_by"] == "early-stopping" and info["early_stopping"] is True
    assert info["rounds_trained"] == len(curve) and info["best_iteration"] == len(curve) - 5

    no_stop = small(n_estimators=20, early_stopping_rounds=None).fit(X, y, qid=qid, eval_set=val)
    assert no_stop.best_iteration_ == 20 == len(no_stop.evals_result_["vali"]["ndcg@10"])
    full = small(n_estimators=20).fit(X, y, qid=qid)
    assert full.best_iteration_ == 20 and full.evals_result_ == {}
    assert np.array_equal(no_stop.predict(X), full.predict(X))  # eval_set only observes
    assert full.fitted_info()["stopped_by"] == "max-rounds"


def test_our_ndcg_of_predictions_equals_catboosts_own_validation_ndcg(tmp_path, monkeypatch):
    import catboost

    train = ranking_data(1, 40)
    X_val, y_val, qid_val = ranking_data(2, 30)
    ranker = small(n_estimators=60, depth=6, eval_at=(5, 10), early_stopping_rounds=None)
    ranker.fit(train[0], train[1], qid=train[2], eval_set=(X_val, y_val, qid_val))
    scores = ranker.predict(X_val)
    # precondition: no tie between documents of different labels in one query (CatBoost
    # ranks a tie worst-first, we average over its orderings)
    b = query_boundaries(qid_val)
    for i in range(len(b) - 1):
        s, lab = scores[b[i] : b[i + 1]], y_val[b[i] : b[i + 1]]
        assert not ((s[:, None] == s[None, :]) & (lab[:, None] != lab[None, :])).any()

    ours = evaluate(y_val, scores, qid_val, ("ndcg@5", "ndcg@10"), empty_query=1.0)
    theirs = {m: values[-1] for m, values in ranker.evals_result_["vali"].items()}
    assert set(theirs) == {"ndcg@5", "ndcg@10"}
    # CatBoost's own evaluation of the final model on the validation pool, a second route
    pool = catboost.Pool(X_val, label=y_val, group_id=qid_val)
    metric = "NDCG:top=10;type=Exp"
    monkeypatch.chdir(tmp_path)  # eval_metrics writes catboost_info/ whatever tmp_dir says
    again = ranker.model_.eval_metrics(pool, [metric])[metric]
    for metric in ("ndcg@5", "ndcg@10"):
        assert ours[metric] == pytest.approx(theirs[metric], abs=1e-6)
    assert ours["ndcg@10"] == pytest.approx(again[-1], abs=1e-6)
    # the all-zero queries are in there and scored 1 by both (0 would differ by 3/30)
    zero = evaluate(y_val, scores, qid_val, ("ndcg@10",), empty_query=0.0)["ndcg@10"]
    assert abs(zero - theirs["ndcg@10"]) > 0.05


@pytest.mark.parametrize("loss", CATBOOST_LOSSES)
def test_a_training_query_whose_labels_are_all_equal_does_not_crash(loss):
    X, y, qid = ranking_data(5, 20, n_empty=0)
    first = qid == qid[0]
    y = np.where(first, 2, y)  # all-equal and relevant: no pair inside that query
    ranker = small(loss=loss).fit(X, y, qid=qid)
    scores = ranker.predict(X)
    assert scores.shape == (len(X),) and np.isfinite(scores).all()
    assert ranker.fitted_info()["constant_model"] is False


def test_training_labels_all_equal_give_a_constant_model_not_an_error():
    # CatBoost itself refuses such data ("All train targets are equal")
    X, _, qid = ranking_data(5, 10)
    val = ranking_data(6, 10)
    for label in (0, 1):
        ranker = small().fit(X, np.full(len(X), label), qid=qid, eval_set=val)
        assert np.array_equal(ranker.predict(val[0]), np.zeros(len(val[0])))
        info = ranker.fitted_info()
        assert info["stopped_by"] == "constant-labels" and info["constant_model"] is True
        assert info["n_trees"] == 0 and ranker.model_ is None


def test_fit_and_predict_write_no_files(tmp_path, monkeypatch):
    # CatBoost's default writes catboost_info/ into the working directory
    monkeypatch.chdir(tmp_path)
    X, y, qid = ranking_data(3, 20)
    small().fit(X, y, qid=qid, eval_set=ranking_data(4, 10)).predict(X)
    assert list(tmp_path.iterdir()) == []


def test_fitted_info_counts_symmetric_trees_and_the_features_they_split_on():
    X, y, qid = ranking_data(3, 40)
    ranker = small(n_estimators=25, depth=4).fit(X, y, qid=qid)
    info = ranker.fitted_info()
    assert info["n_trees"] == 25 == info["best_iteration"] == info["rounds_trained"]
    # independent count: a symmetric tree of depth 4 has 16 leaves; every leaf index a row
    # reaches is one of them
    leaves = ranker.model_.calc_leaf_indexes(X)
    assert leaves.shape == (len(X), 25) and leaves.max() < 16
    assert info["n_leaves"] == 25 * 16
    assert info["n_features"] == 8 and 1 <= info["n_features_used"] <= 8
    importance = ranker.model_.get_feature_importance(type="PredictionValuesChange")
    assert info["n_features_used"] == int(np.count_nonzero(importance))
    assert info["loss"] == "YetiRank" and info["preset"] == "auto" and info["depth"] == 4
    assert info["constant_model"] is False


def test_presets_hold_the_documented_values_and_explicit_parameters_win():
    X, y, qid = make_check_data()
    auto = CatBoostRanker(n_jobs=1, n_estimators=2).fit(X, y, qid=qid)
    assert auto.resolved_params_ == {**CATBOOST_PRESETS["auto"], "n_estimators": 2}
    assert auto.params_["depth"] == 6 and auto.params_["learning_rate"] == 0.1
    bench = CatBoostRanker(preset="mq2008-benchmark", n_jobs=1, n_estimators=2, depth=3)
    bench.fit(X, y, qid=qid)
    # the cat-yeti-rank row of catboost/benchmarks ranking/Readme.md (MQ2008)
    assert bench.params_["learning_rate"] == 0.03 and bench.params_["border_count"] == 64
    assert bench.params_["depth"] == 3  # set explicitly: wins over the preset's 4
    assert CATBOOST_PRESETS["mslr-benchmark"]["depth"] == 10
    assert CATBOOST_PRESETS["mslr-benchmark"]["learning_rate"] == 0.07
    assert bench.get_params()["preset"] == "mq2008-benchmark"


def test_progress_is_reported_once_per_boosting_round():
    X, y, qid = make_check_data()
    calls = []
    with progress_handler(lambda done, total, msg: calls.append((done, total))):
        small(n_estimators=12).fit(X, y, qid=qid)
    assert calls == [(i, 12) for i in range(1, 13)]


def test_a_pruned_trial_leaves_fit_as_trial_pruned_and_reports_the_validation_curve():
    import optuna

    from ltr_bench.progress import intermediate_handler

    X, y, qid = ranking_data(5, 40)
    val = ranking_data(6, 30)
    full = small(n_estimators=20, early_stopping_rounds=None).fit(X, y, qid=qid, eval_set=val)
    curve = full.evals_result_["vali"]["ndcg@10"]
    reported = []

    def prune_at_round_5(step, value):
        reported.append((step, value))
        if step == 4:
            raise optuna.TrialPruned()

    pruned = small(n_estimators=20, early_stopping_rounds=None)
    with intermediate_handler(prune_at_round_5), pytest.raises(optuna.TrialPruned):
        pruned.fit(X, y, qid=qid, eval_set=val)
    assert reported == [(s, pytest.approx(curve[s], abs=0)) for s in range(5)]
    assert not hasattr(pruned, "model_")  # fit did not finish


def test_unknown_loss_is_a_bad_invocation_that_lists_the_losses_before_data_loads(tmp_path):
    from ltr_bench.cli import main

    with pytest.raises(ValueError, match="'loss' parameter of CatBoostRanker"):
        CatBoostRanker(loss="Yeti").validate_params()
    with pytest.raises(ValueError, match="loss must be one of YetiRank, YetiRankPairwise"):
        CatBoostRanker(loss="Yeti").fit(*make_check_data()[:2], qid=make_check_data()[2])

    missing = tmp_path / "no-such-dataset"  # the parameter error comes before the data
    result = CliRunner().invoke(
        main,
        ["run", "--no-mlflow", "--ranker", "catboost", "--param", "catboost.loss=Yeti"]
        + ["--dataset", str(missing)],
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    assert "'loss' parameter of CatBoostRanker" in result.stderr
    assert all(loss in result.stderr for loss in CATBOOST_LOSSES)
    assert "Traceback" not in result.output


def test_bad_parameters_give_errors_that_name_them():
    X, y, qid = make_check_data()
    for bad in (dict(depth=17), dict(depth=0), dict(border_count=0), dict(learning_rate=-1.0)):
        name = next(iter(bad))
        with pytest.raises(ValueError, match=name):
            CatBoostRanker(**bad).validate_params()
        with pytest.raises(ValueError, match=name):
            CatBoostRanker(n_jobs=1, **bad).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="extra_params may not set 'iterations'"):
        CatBoostRanker(extra_params={"iterations": 3}).fit(X, y, qid=qid)
    # other CatBoost parameters pass through
    r = small(extra_params={"bootstrap_type": "No"}).fit(X, y, qid=qid)
    assert r.model_.get_all_params()["bootstrap_type"] == "No"


def test_entry_point_resolves_to_the_catboost_class():
    assert load_ranker_class("catboost") is CatBoostRanker


def test_run_records_keep_the_catboost_and_xgboost_versions():
    import catboost
    import xgboost

    from ltr_bench.environment import environment

    versions = environment()["versions"]
    assert versions["catboost"] == catboost.__version__
    # ltr-bench installs XGBoost's CPU build, distribution xgboost-cpu, module xgboost
    assert xgboost.__version__ in (versions["xgboost"], versions["xgboost-cpu"])
