"""RankSVM (ltr_bench_baselines.ranksvm): pairs, the sampling bound, the SVM it solves."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from ltr_bench.cli import main
from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.ranker import query_boundaries
from ltr_bench.testing import check_ranker, make_check_data
from ltr_bench_baselines.ranksvm import (
    LETOR_C_GRID,
    LetorRankSVMRanker,
    RankSVMRanker,
    crucial_pairs,
    pairs_per_query_cap,
)


def _all_pairs_by_loops(y, qid):
    """Every (hi, lo) of one query with y[hi] > y[lo], by a double loop over rows."""
    out = set()
    for i in range(y.size):
        for j in range(y.size):
            if qid[i] == qid[j] and y[i] > y[j]:
                out.add((i, j))
    return out


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_ranksvm_follows_the_ranker_contract(loss):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_ranker(RankSVMRanker(loss=loss, random_state=0))
        check_ranker(RankSVMRanker(loss=loss, max_pairs=15, random_state=0))


def test_crucial_pairs_are_exactly_the_pairs_of_different_labels_within_a_query():
    X, y, qid = make_check_data(n_queries=6)
    hi, lo, total, cap = crucial_pairs(y, query_boundaries(qid))
    got = set(zip(hi.tolist(), lo.tolist()))
    assert got == _all_pairs_by_loops(y, qid)
    assert len(got) == hi.size == total and cap is None


def test_sampling_bound_water_fills_queries_and_draws_distinct_valid_pairs():
    X, y, qid = make_check_data(n_queries=12, max_docs=20)
    b = query_boundaries(qid)
    everything = _all_pairs_by_loops(y, qid)
    per_query = np.array(
        [sum(1 for i, _ in everything if b[q] <= i < b[q + 1]) for q in range(b.size - 1)]
    )
    budget = int(per_query.sum()) // 3
    hi, lo, total, cap = crucial_pairs(y, b, max_pairs=budget, rng=np.random.default_rng(1))
    assert total == per_query.sum() and cap == pairs_per_query_cap(per_query, budget)
    assert np.minimum(per_query, cap).sum() <= budget < np.minimum(per_query, cap + 1).sum()
    got = list(zip(hi.tolist(), lo.tolist()))
    assert len(set(got)) == len(got) and set(got) <= everything
    taken = np.bincount(np.searchsorted(b, hi, side="right") - 1, minlength=b.size - 1)
    assert np.array_equal(taken, np.minimum(per_query, cap))


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_learned_direction_equals_linearsvc_on_explicitly_enumerated_pair_differences(loss):
    X, y, qid = make_check_data(n_queries=10, n_features=4)
    model = RankSVMRanker(C=0.5, loss=loss, tol=1e-10, max_iter=100_000, random_state=0)
    model.fit(X, y, qid=qid)
    Z = StandardScaler().fit_transform(X)
    pairs = sorted(_all_pairs_by_loops(y, qid))
    D = np.array([Z[i] - Z[j] for i, j in pairs])
    D = np.vstack([D, -D])  # each constraint once per class: the same optimum, doubled C
    labels = np.r_[np.ones(len(pairs)), -np.ones(len(pairs))]
    ref = LinearSVC(
        C=0.25, loss=loss, dual=loss == "hinge", fit_intercept=False, tol=1e-10, max_iter=100_000
    )
    ref.fit(D, labels)
    np.testing.assert_allclose(model.coef_, ref.coef_.ravel(), rtol=1e-4, atol=1e-6)
    assert model.fitted_info()["n_pairs"] == len(pairs)


def test_a_query_with_all_labels_equal_is_skipped_counted_and_warned_about():
    X, y, qid = make_check_data(n_queries=5)
    y = y.copy()
    first = qid == qid[0]
    y[first] = 2
    with pytest.warns(UserWarning, match="1 of 5 training queries have all labels equal"):
        model = RankSVMRanker(random_state=0).fit(X, y, qid=qid)
    assert model.fitted_info()["n_queries_skipped"] == 1
    assert model.fitted_info()["n_queries_used"] == 4


def test_no_pairs_at_all_gives_a_constant_model_not_a_crash():
    X, y, qid = make_check_data(n_queries=3)
    with pytest.warns(UserWarning, match="3 of 3"):
        model = RankSVMRanker().fit(X, np.zeros_like(y), qid=qid)
    assert np.all(model.predict(X) == 0.0) and model.fitted_info()["n_pairs"] == 0


def test_different_seeds_sample_different_pairs_and_the_same_seed_the_same_model():
    X, y, qid = make_check_data(n_queries=10, max_docs=20)
    a = RankSVMRanker(max_pairs=40, random_state=1).fit(X, y, qid=qid)
    b = RankSVMRanker(max_pairs=40, random_state=1).fit(X, y, qid=qid)
    c = RankSVMRanker(max_pairs=40, random_state=2).fit(X, y, qid=qid)
    assert np.array_equal(a.coef_, b.coef_) and not np.array_equal(a.coef_, c.coef_)


@pytest.mark.parametrize(
    "params, word",
    [
        ({"C": 0}, "C"),
        ({"loss": "log"}, "squared_hinge"),
        ({"max_pairs": 0}, "max_pairs"),
        ({"C_grid": []}, "C_grid"),
        ({"C_grid": [1.0, -2.0]}, "C_grid"),
        ({"C_grid": ["a"]}, "C_grid"),
        ({"select_metric": "err"}, "metric"),
        ({"standardize": "no"}, "standardize"),
    ],
)
def test_bad_parameters_are_refused_before_any_data(params, word):
    with pytest.raises(ValueError, match=word):
        RankSVMRanker(**params).validate_params()


def test_cli_refuses_a_bad_c_with_exit_2_before_loading_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        ["run", "--no-mlflow", "--ranker", "ranksvm", "--dataset", "synthetic"]
        + ["--param", "ranksvm.C=-1"],
    )
    assert result.exit_code == 2, result.output
    assert "C must be a finite number > 0" in result.output
    assert "Traceback" not in result.output


def test_c_grid_keeps_the_c_with_the_best_validation_map_and_that_c_s_own_model():
    X, y, qid = make_check_data(n_queries=12, n_features=5, seed=3)
    Xv, yv, qv = make_check_data(n_queries=8, n_features=5, seed=4)
    grid = (1e-4, 1e-2, 1.0)
    chosen = RankSVMRanker(C_grid=grid, loss="hinge", random_state=0)
    chosen.fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    # the reference: one plain fit per C, judged on the validation split by hand
    by_c = {}
    for c in grid:
        single = RankSVMRanker(C=c, loss="hinge", random_state=0).fit(X, y, qid=qid)
        by_c[c] = (evaluate(yv, single.predict(Xv), qv, ("map",))["map"], single.coef_)
    best = max(grid, key=lambda c: (by_c[c][0], -c))
    assert chosen.C_ == best and chosen.fitted_info()["C"] == best
    assert chosen.validation_scores_ == pytest.approx({c: v for c, (v, _) in by_c.items()})
    assert np.array_equal(chosen.coef_, by_c[best][1])


def test_c_grid_breaks_a_tie_towards_the_smaller_c():
    X, y, qid = make_check_data(n_queries=6, n_features=3)
    # validation split of one query whose labels all tie: every C scores the same MAP
    Xv, yv, qv = X[:4], np.array([1, 1, 1, 1]), np.zeros(4, dtype=np.int64)
    model = RankSVMRanker(C_grid=(10.0, 0.1, 1.0), random_state=0)
    model.fit(X, y, qid=qid, eval_set=(Xv, yv, qv))
    assert len(set(model.validation_scores_.values())) == 1 and model.C_ == 0.1


def test_c_grid_without_a_validation_split_uses_c_and_says_so():
    X, y, qid = make_check_data(n_queries=6)
    with pytest.warns(UserWarning, match="no eval_set.*C=0.5 is used instead"):
        model = RankSVMRanker(C=0.5, C_grid=(1e-3, 1.0), random_state=0).fit(X, y, qid=qid)
    plain = RankSVMRanker(C=0.5, random_state=0).fit(X, y, qid=qid)
    assert model.C_ == 0.5 and np.array_equal(model.coef_, plain.coef_)


def test_standardize_false_scores_the_features_as_given():
    X, y, qid = make_check_data(n_queries=6, n_features=4)
    model = RankSVMRanker(standardize=False, random_state=0).fit(X, y, qid=qid)
    assert model.scaler_ is None
    np.testing.assert_array_equal(model.predict(X), X @ model.coef_)


def test_ranksvm_letor_is_the_letor_baseline_setting_and_follows_the_contract():
    model = LetorRankSVMRanker()
    params = model.get_params()
    assert params["loss"] == "hinge" and params["standardize"] is False
    assert params["C_grid"] == LETOR_C_GRID and params["select_metric"] == "map"
    assert model.ranker_tags().uses_eval_set
    assert not RankSVMRanker().ranker_tags().uses_eval_set
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_ranker(LetorRankSVMRanker(C_grid=(1e-3, 1e-1), random_state=0))
