"""Tests for ltr_bench.evaluation.metrics.

Expected values are written as formulas (hand-worked), or come from an independent
implementation: plain-Python per-query definitions averaged over every ordering of tied
documents (brute force), ``sklearn.metrics.ndcg_score``, LightGBM's / XGBoost's own
evaluation of a fitted model, and trec_eval through ``pytrec_eval`` when it is installed.
Metric names and keys: tests/test_metric_keys.py.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ltr_bench.evaluation.metrics import (
    CONVENTIONS,
    DEFAULT_METRICS,
    evaluate,
    evaluate_conventions,
    parse_metric,
    query_ids,
)

log2 = math.log2


# ---- independent reference: one fixed ordering, plain Python ------------------------
def ref_dcg(labels, k):
    return sum((2**l - 1) / log2(i + 2) for i, l in enumerate(labels[:k]))


def ref_ndcg(labels, k, empty):
    ideal = ref_dcg(sorted(labels, reverse=True), k)
    return empty if ideal == 0 else ref_dcg(labels, k) / ideal


def ref_ap(labels, k, empty):
    n_rel = sum(l >= 1 for l in labels)
    if n_rel == 0:
        return empty
    hits, total = 0, 0.0
    for i, l in enumerate(labels):
        if l >= 1:
            hits += 1
            if k is None or i < k:
                total += hits / (i + 1)
    return total / n_rel


def ref_rr(labels, k, empty):
    if not any(l >= 1 for l in labels):
        return empty
    for i, l in enumerate(labels):
        if l >= 1:
            return 1.0 / (i + 1) if k is None or i < k else 0.0


def ref_err(labels, k, g_max, empty):
    if not any(l >= 1 for l in labels):
        return empty
    p_reach, total = 1.0, 0.0
    for i, l in enumerate(labels[:k]):
        R = (2**l - 1) / 2**g_max
        total += p_reach * R / (i + 1)
        p_reach *= 1 - R
    return total


def ref_precision(labels, k):
    return sum(l >= 1 for l in labels[:k]) / k


def ref_recall(labels, k, empty):
    n_rel = sum(l >= 1 for l in labels)
    return empty if n_rel == 0 else sum(l >= 1 for l in labels[:k]) / n_rel


def ref_metric(name, labels, empty, g_max):
    base, k = parse_metric(name)
    if base == "ndcg":
        return ref_ndcg(labels, k, empty)
    if base == "map":
        return ref_ap(labels, k, empty)
    if base == "mrr":
        return ref_rr(labels, k, empty)
    if base == "err":
        return ref_err(labels, k, g_max, empty)
    if base == "recall":
        return ref_recall(labels, k, empty)
    assert base == "p", base
    return ref_precision(labels, k)


def tie_orderings(scores):
    """Every ordering of the documents consistent with descending scores."""
    values = sorted(set(scores), reverse=True)
    groups = [[i for i, s in enumerate(scores) if s == v] for v in values]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [i for part in parts for i in part]


def brute_force(name, labels, scores, empty, g_max):
    values = [
        ref_metric(name, [labels[i] for i in order], empty, g_max)
        for order in tie_orderings(scores)
    ]
    return sum(values) / len(values)


ALL_FORMS = (
    "ndcg@1",
    "ndcg@3",
    "ndcg@10",
    "map",
    "map@2",
    "mrr",
    "mrr@2",
    "err@1",
    "err@3",
    "err@10",
    "p@1",
    "p@3",
    "p@10",
    "recall@1",
    "recall@3",
    "recall@10",
)


# ---- hand-worked values -------------------------------------------------------------
def test_hand_worked_values_without_ties():
    # one query, ranking by score: labels 3, 0, 1, 0, 2 (5 documents)
    y = [0, 3, 2, 1, 0]
    s = [0.4, 0.9, 0.1, 0.6, 0.8]
    q = [7] * 5
    got = evaluate(
        y,
        s,
        q,
        (
            "ndcg@3",
            "ndcg@10",
            "map",
            "map@3",
            "mrr",
            "err@3",
            "p@3",
            "p@10",
            "recall@1",
            "recall@3",
            "recall@4",
            "recall@10",
        ),
        max_label=3,
    )
    ideal3 = 7 / log2(2) + 3 / log2(3) + 1 / log2(4)
    assert got["ndcg@3"] == pytest.approx((7 / log2(2) + 1 / log2(4)) / ideal3, abs=1e-12)
    ideal5 = ideal3
    dcg5 = 7 / log2(2) + 1 / log2(4) + 3 / log2(6)
    assert got["ndcg@10"] == pytest.approx(dcg5 / ideal5, abs=1e-12)
    assert got["map"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 5) / 3, abs=1e-12)
    assert got["map@3"] == pytest.approx((1 / 1 + 2 / 3) / 3, abs=1e-12)
    assert got["mrr"] == pytest.approx(1.0)
    R3, R1 = 7 / 8, 1 / 8
    assert got["err@3"] == pytest.approx(R3 + (1 - R3) * 0 / 2 + (1 - R3) * R1 / 3, abs=1e-12)
    assert got["p@3"] == pytest.approx(2 / 3)
    assert got["p@10"] == pytest.approx(3 / 10)  # divides by k, not by the query length
    # 3 relevant documents, at ranks 1, 3 and 5
    assert got["recall@1"] == pytest.approx(1 / 3)
    assert got["recall@3"] == pytest.approx(2 / 3)
    assert got["recall@4"] == pytest.approx(2 / 3)
    assert got["recall@10"] == pytest.approx(1.0)  # k beyond the query: every relevant doc


def test_hand_worked_values_with_ties():
    # ranks 1-2 tied (labels 2 and 0), rank 3 label 1
    y = [2, 0, 1]
    s = [1.0, 1.0, 0.5]
    q = [1, 1, 1]
    got = evaluate(
        y,
        s,
        q,
        ("ndcg@1", "ndcg@2", "map", "mrr", "err@2", "p@1", "recall@1", "recall@2"),
        max_label=2,
    )
    ideal1 = 3.0
    assert got["ndcg@1"] == pytest.approx((3 + 0) / 2 / ideal1)  # mean gain on rank 1
    ideal2 = 3 + 1 / log2(3)
    assert got["ndcg@2"] == pytest.approx((3 / 2) * (1 + 1 / log2(3)) / ideal2)
    # orderings [2,0,1] and [0,2,1]: AP = (1 + 2/3)/2 and (1/2 + 2/3)/2
    assert got["map"] == pytest.approx(((1 + 2 / 3) / 2 + (1 / 2 + 2 / 3) / 2) / 2)
    assert got["mrr"] == pytest.approx((1 + 1 / 2) / 2)
    R2 = 3 / 4
    assert got["err@2"] == pytest.approx((R2 + (1 - 0) * R2 / 2) / 2)
    assert got["p@1"] == pytest.approx(1 / 2)
    # 2 relevant: rank 1 holds the label-2 document in one ordering of two
    assert got["recall@1"] == pytest.approx((1 / 2) / 2)
    assert got["recall@2"] == pytest.approx(1 / 2)  # the tie fills ranks 1-2 either way


def test_constant_scorer_mrr_matches_hypergeometric_closed_form():
    # m = 6 tied documents, r = 2 relevant: P(first relevant at j) = C(6-j, 1) / C(6, 2)
    y = [1, 0, 0, 1, 0, 0]
    got = evaluate(y, np.zeros(6), np.zeros(6), ("mrr", "mrr@2"))
    expected = sum(math.comb(6 - j, 1) / math.comb(6, 2) / j for j in range(1, 6))
    assert got["mrr"] == pytest.approx(expected, abs=1e-12)
    assert got["mrr@2"] == pytest.approx(sum(math.comb(6 - j, 1) / 15 / j for j in (1, 2)))


def test_one_document_queries_and_k_beyond_query_length():
    y = [2, 0, 1, 0, 3]
    s = [0.5, 0.1, 0.2, 0.9, 0.3]
    q = [1, 2, 3, 3, 4]  # four queries: sizes 1, 1, 2, 1
    got = evaluate(
        y,
        s,
        q,
        ("ndcg@10", "map", "mrr", "err@10", "p@5", "recall@1"),
        per_query=True,
        empty_query=1.0,
        max_label=3,
    )
    np.testing.assert_allclose(got["ndcg@10"], [1.0, 1.0, (1 / log2(3)) / 1.0, 1.0])
    np.testing.assert_allclose(got["map"], [1.0, 1.0, 1 / 2, 1.0])
    np.testing.assert_allclose(got["mrr"], [1.0, 1.0, 1 / 2, 1.0])
    np.testing.assert_allclose(got["err@10"], [3 / 8, 1.0, (1 / 8) / 2, 7 / 8])
    np.testing.assert_allclose(got["p@5"], [1 / 5, 0.0, 1 / 5, 1 / 5])
    np.testing.assert_allclose(got["recall@1"], [1.0, 1.0, 0.0, 1.0])


# ---- brute-force enumeration of tie orderings ---------------------------------------
def random_tied_queries(rng, n_queries, max_docs, n_score_values, max_label=3):
    y, s, q = [], [], []
    for qi in range(n_queries):
        n = int(rng.integers(1, max_docs + 1))
        labels = rng.integers(0, max_label + 1, n)
        if qi % 5 == 0:
            labels[:] = 0  # empty queries in the mix
        y.extend(labels.tolist())
        s.extend(rng.integers(0, n_score_values, n).astype(float).tolist())
        q.extend([qi] * n)
    return np.array(y), np.array(s), np.array(q)


@pytest.mark.parametrize("empty", [1.0, 0.0])
def test_every_metric_equals_mean_over_all_tie_orderings(empty):
    rng = np.random.default_rng(20240611)
    y, s, q = random_tied_queries(rng, n_queries=60, max_docs=6, n_score_values=3)
    got = evaluate(y, s, q, ALL_FORMS, per_query=True, empty_query=empty, max_label=3)
    for qi in range(60):
        rows = np.flatnonzero(q == qi)
        labels, scores = y[rows].tolist(), s[rows].tolist()
        for name in ALL_FORMS:
            want = brute_force(name, labels, scores, empty, 3)
            assert got[name][qi] == pytest.approx(want, abs=1e-12), (name, labels, scores)


def test_large_tie_group_matches_enumeration_of_label_sequences():
    # One group of 8 tied documents (constant scorer) behind two distinct ones: enumerating
    # the distinct label sequences of the group weights each equally, as all 8! orderings do.
    labels_tied = [4, 0, 2, 0, 1, 0, 3, 0]
    y = np.array([0, 1] + labels_tied)
    s = np.array([3.0, 2.0] + [1.0] * 8)
    names = ("ndcg@5", "map", "map@6", "mrr", "err@6", "err@10", "p@6", "recall@4")
    got = evaluate(y, s, np.zeros(10), names, max_label=4)
    sequences = set(itertools.permutations(labels_tied))
    for name in names:
        want = np.mean([ref_metric(name, [0, 1] + list(seq), 1.0, 4) for seq in sequences])
        assert got[name] == pytest.approx(want, abs=1e-12), name


def test_ties_across_queries_do_not_interact():
    # Equal scores in different queries are not ties.
    y = [1, 0, 0, 1]
    s = [0.5, 0.5, 0.5, 0.5]
    q = [1, 1, 2, 2]
    got = evaluate(y, s, q, ("mrr",), per_query=True)
    np.testing.assert_allclose(got["mrr"], [0.75, 0.75])


# ---- scikit-learn's ndcg_score, query by query ----------------------------------------
@pytest.mark.parametrize("n_score_values", [None, 4])  # continuous scores, or heavy ties
def test_ndcg_matches_sklearn_ndcg_score_per_query(n_score_values):
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(7 if n_score_values is None else 8)
    sizes = rng.integers(2, 40, 80)  # sklearn needs at least two documents per query
    q = np.repeat(np.arange(sizes.size), sizes)
    y = rng.integers(0, 5, q.size)
    y[q % 9 == 0] = 0
    s = (
        rng.normal(size=q.size)
        if n_score_values is None
        else rng.integers(0, n_score_values, q.size).astype(float)
    )
    for k in (1, 3, 5, 10, 50):
        got = evaluate(y, s, q, (f"ndcg@{k}",), per_query=True, empty_query=0.0)[f"ndcg@{k}"]
        want = [ndcg_score([2.0 ** y[q == i] - 1], [s[q == i]], k=k) for i in range(sizes.size)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"k={k}")


# ---- LightGBM's and XGBoost's own evaluation ---------------------------------------
def letor_like(seed, n_queries):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_queries)
    q = np.repeat(np.arange(n_queries), sizes)
    X = rng.normal(size=(q.size, 6))
    latent = X @ np.array([1.0, -0.7, 0.5, 0.0, 0.3, 0.0]) + 0.7 * rng.normal(size=q.size)
    y = np.digitize(latent, np.quantile(latent, [0.5, 0.75, 0.9, 0.97]))
    y[np.isin(q, rng.choice(n_queries, n_queries // 6, replace=False))] = 0
    return X, y, q, sizes


def assert_no_ties_within_queries(scores, q):
    order = np.lexsort((scores, q))
    same = (q[order][1:] == q[order][:-1]) & (scores[order][1:] == scores[order][:-1])
    assert not same.any(), "tied predictions: the library breaks ties by row order, we average"


def test_ndcg_matches_lightgbm_own_eval_including_empty_queries():
    lgb = pytest.importorskip("lightgbm")
    X, y, q, sizes = letor_like(1, 150)
    Xv, yv, qv, sizes_v = letor_like(2, 80)
    empty = np.array([yv[qv == i].max() == 0 for i in range(80)])
    assert empty.sum() >= 10 and (sizes_v < 10).any()  # the cases under test are present
    eval_at = [1, 3, 5, 10]
    params = dict(
        objective="lambdarank",
        metric="ndcg",
        eval_at=eval_at,
        num_leaves=31,
        min_data_in_leaf=2,
        learning_rate=0.1,
        num_threads=1,
        deterministic=True,
        seed=3,
        verbosity=-1,
    )
    train = lgb.Dataset(X, y, group=sizes)
    valid = lgb.Dataset(Xv, yv, group=sizes_v, reference=train)
    record = {}
    booster = lgb.train(
        params,
        train,
        num_boost_round=40,
        valid_sets=[valid],
        valid_names=["valid"],
        callbacks=[lgb.record_evaluation(record)],
    )
    pred = booster.predict(Xv)
    assert_no_ties_within_queries(pred, qv)
    ours = evaluate(yv, pred, qv, [f"ndcg@{k}" for k in eval_at], empty_query=1.0)
    for k in eval_at:
        assert ours[f"ndcg@{k}"] == pytest.approx(record["valid"][f"ndcg@{k}"][-1], abs=1e-6)
    # and the other convention differs exactly by the empty queries' share
    zero = evaluate(yv, pred, qv, ("ndcg@10",), empty_query=0.0)["ndcg@10"]
    assert ours["ndcg@10"] - zero == pytest.approx(empty.mean(), abs=1e-12)


def fit_xgboost(xgb, y_train, y_valid, eval_metric):
    X, _, q, _ = letor_like(3, 150)
    Xv, _, qv, _ = letor_like(4, 80)
    dtrain = xgb.DMatrix(X, label=y_train, qid=q)
    dvalid = xgb.DMatrix(Xv, label=y_valid, qid=qv)
    params = {
        "objective": "rank:ndcg",
        "eval_metric": eval_metric,
        "max_depth": 6,
        "min_child_weight": 0,
        "eta": 0.3,
        "nthread": 1,
        "seed": 5,
    }
    record = {}
    booster = xgb.train(
        params,
        dtrain,
        num_boost_round=40,
        evals=[(dvalid, "valid")],
        evals_result=record,
        verbose_eval=False,
    )
    pred = booster.predict(dvalid).astype(np.float64)
    assert_no_ties_within_queries(pred, qv)
    return pred, qv, {name: values[-1] for name, values in record["valid"].items()}


def test_ndcg_and_empty_convention_match_xgboost_own_eval():
    # XGBoost scores a query without relevant documents 1 in "ndcg@k" and 0 in "ndcg@k-".
    xgb = pytest.importorskip("xgboost")
    _, y, _, _ = letor_like(3, 150)
    _, yv, _, _ = letor_like(4, 80)
    pred, qv, theirs = fit_xgboost(xgb, y, yv, ["ndcg@3", "ndcg@10", "ndcg@3-", "ndcg@10-"])
    for k in (3, 10):
        one = evaluate(yv, pred, qv, (f"ndcg@{k}",), empty_query=1.0)[f"ndcg@{k}"]
        zero = evaluate(yv, pred, qv, (f"ndcg@{k}",), empty_query=0.0)[f"ndcg@{k}"]
        assert one == pytest.approx(theirs[f"ndcg@{k}"], abs=1e-6)
        assert zero == pytest.approx(theirs[f"ndcg@{k}-"], abs=1e-6)


def test_map_matches_xgboost_own_eval_on_binary_labels():
    # XGBoost's map needs binary labels; "map" over the whole list is the same definition
    # as ours (its map@k and pre@k normalise by min(k, R) and min(k, n), ours by R and k).
    xgb = pytest.importorskip("xgboost")
    _, y, _, _ = letor_like(3, 150)
    _, yv, _, _ = letor_like(4, 80)
    y, yv = (y >= 1).astype(int), (yv >= 1).astype(int)
    pred, qv, theirs = fit_xgboost(xgb, y, yv, ["map", "map-"])
    assert evaluate(yv, pred, qv, ("map",))["map"] == pytest.approx(theirs["map"], abs=1e-6)
    zero = evaluate(yv, pred, qv, ("map",), empty_query=0.0)["map"]
    assert zero == pytest.approx(theirs["map-"], abs=1e-6)


# ---- trec_eval (pytrec_eval), query by query ------------------------------------------
def test_recall_precision_map_mrr_match_trec_eval_per_query():
    # trec_eval breaks ties by document id, so the scores are continuous (no ties); its
    # queries without relevant documents score 0, our empty_query=0 convention.
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(17)
    sizes = rng.integers(1, 40, 60)
    q = np.repeat(np.arange(sizes.size), sizes)
    y = rng.integers(0, 4, q.size)
    y[q % 7 == 0] = 0
    s = rng.normal(size=q.size)
    assert np.unique(s).size == s.size
    qrel = {f"q{i}": {} for i in range(sizes.size)}
    run = {f"q{i}": {} for i in range(sizes.size)}
    for row in range(q.size):
        qrel[f"q{q[row]}"][f"d{row}"] = int(y[row])
        run[f"q{q[row]}"][f"d{row}"] = float(s[row])
    cutoffs = (1, 3, 5, 10, 50)
    measures = {
        "map",
        "recip_rank",
        "recall." + ",".join(map(str, cutoffs)),
        "P." + ",".join(map(str, cutoffs)),
        "map_cut." + ",".join(map(str, cutoffs)),
    }
    theirs = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
    pairs = [("map", "map"), ("mrr", "recip_rank")]
    for k in cutoffs:
        pairs += [
            (f"recall@{k}", f"recall_{k}"),
            (f"p@{k}", f"P_{k}"),
            (f"map@{k}", f"map_cut_{k}"),
        ]
    ours = evaluate(y, s, q, [m for m, _ in pairs], per_query=True, empty_query=0.0)
    for ours_name, trec_name in pairs:
        want = [theirs[f"q{i}"][trec_name] for i in range(sizes.size)]
        np.testing.assert_allclose(ours[ours_name], want, rtol=0, atol=1e-12, err_msg=ours_name)


# ---- conventions, grouping, output shape --------------------------------------------
def test_empty_query_convention_both_ways_and_nan_excludes():
    y = [0, 0, 1, 0]
    s = [0.2, 0.1, 0.1, 0.9]
    q = [1, 1, 2, 2]
    names = ("ndcg@5", "map", "mrr", "err@5", "p@2", "recall@2")
    one = evaluate(y, s, q, names, per_query=True, empty_query=1.0)
    zero = evaluate(y, s, q, names, per_query=True, empty_query=0.0)
    for name in ("ndcg@5", "map", "mrr", "err@5", "recall@2"):
        assert one[name][0] == 1.0 and zero[name][0] == 0.0
        assert one[name][1] == zero[name][1] > 0
    assert one["p@2"][0] == zero["p@2"][0] == 0.0  # precision has no empty-query case
    skip = evaluate(y, s, q, names, empty_query=float("nan"))
    assert skip["mrr"] == pytest.approx(1 / 2)
    assert skip["recall@2"] == pytest.approx(1.0)  # only query 2 counts
    assert skip["p@2"] == pytest.approx((0 + 1 / 2) / 2)  # precision keeps every query
    assert np.isnan(evaluate([0], [1.0], [1], ("ndcg@1",), empty_query=np.nan)["ndcg@1"])


def test_per_query_values_follow_first_appearance_of_query_ids():
    y = np.array([1, 0, 0, 2, 1, 0])
    s = np.array([0.1, 0.9, 0.5, 0.4, 0.3, 0.8])
    q = np.array([30, 30, 10, 10, 20, 20])
    got = evaluate(y, s, q, ("mrr",), per_query=True)["mrr"]
    np.testing.assert_allclose(got, [1 / 2, 1 / 2, 1 / 2])
    np.testing.assert_array_equal(query_ids(q), [30, 10, 20])
    got = evaluate([1, 1, 0], [0.1, 0.9, 0.5], ["b", "a", "b"], ("mrr",), per_query=True)["mrr"]
    np.testing.assert_allclose(got, [1 / 2, 1.0])  # query "b" appears first
    np.testing.assert_array_equal(query_ids(["b", "a", "b"]), ["b", "a"])


def test_non_contiguous_rows_give_the_same_values_as_grouped_rows():
    rng = np.random.default_rng(11)
    y, s, q = random_tied_queries(rng, n_queries=40, max_docs=12, n_score_values=5)
    shuffle = rng.permutation(q.size)
    names = ALL_FORMS
    grouped = evaluate(y, s, q, names, per_query=True)
    mixed = evaluate(y[shuffle], s[shuffle], q[shuffle], names, per_query=True)
    appearance = query_ids(q[shuffle])  # query ids 0..39: index into grouped values
    for name in names:
        np.testing.assert_allclose(mixed[name], grouped[name][appearance], atol=1e-12)


def test_mean_is_the_mean_of_per_query_values_and_keys_are_given_strings():
    rng = np.random.default_rng(5)
    y, s, q = random_tied_queries(rng, n_queries=30, max_docs=10, n_score_values=50)
    names = ("NDCG@10", "map", "Err@10", "p@5")
    means = evaluate(y, s, q, names)
    per_query = evaluate(y, s, q, names, per_query=True)
    assert list(means) == list(names)
    for name in names:
        assert isinstance(means[name], float)
        assert per_query[name].shape == (30,)
        assert means[name] == pytest.approx(per_query[name].mean(), abs=1e-15)
    assert evaluate(y, s, q, "ndcg@10").keys() == {"ndcg@10"}  # a lone string is one metric


def test_evaluate_uses_zero_for_names_with_the_empty0_suffix_whatever_empty_query_says():
    y, s, q = [0, 0, 1, 0], [0.2, 0.1, 0.1, 0.9], [1, 1, 2, 2]
    for empty in (1.0, float("nan")):
        got = evaluate(
            y,
            s,
            q,
            ("ndcg@5", "ndcg@5_empty0", "NDCG_AT_5_EMPTY0"),
            per_query=True,
            empty_query=empty,
        )
        np.testing.assert_array_equal(got["ndcg@5_empty0"], [0.0, got["ndcg@5"][1]])
        np.testing.assert_array_equal(got["NDCG_AT_5_EMPTY0"], got["ndcg@5_empty0"])
        assert got["ndcg@5"][0] == empty or np.isnan(empty) and np.isnan(got["ndcg@5"][0])


def test_evaluate_conventions_equals_evaluate_under_each_convention():
    rng = np.random.default_rng(23)
    y, s, q = random_tied_queries(rng, n_queries=25, max_docs=9, n_score_values=4)
    q = q + 100  # ids unlike row positions, so the qid column is checked for real
    requested = ("NDCG@10", "map", "p@3", "recall_at_5", "err@5_empty0")
    means, per_query = evaluate_conventions(y, s, q, requested, max_label=3)
    one = evaluate(
        y,
        s,
        q,
        ("ndcg@10", "map", "p@3", "recall@5", "err@5"),
        per_query=True,
        empty_query=1.0,
        max_label=3,
    )
    zero = evaluate(
        y,
        s,
        q,
        ("ndcg@10", "map", "recall@5", "err@5"),
        per_query=True,
        empty_query=0.0,
        max_label=3,
    )
    expected = {**one, **{f"{m}_empty0": v for m, v in zero.items()}}
    assert list(per_query) == [
        "qid",
        "ndcg@10",
        "map",
        "p@3",
        "recall@5",
        "err@5",
        "ndcg@10_empty0",
        "map_empty0",
        "recall@5_empty0",
        "err@5_empty0",
    ]
    assert per_query["qid"] == list(range(100, 125))
    assert list(means) == list(per_query)[1:]
    for key, values in expected.items():
        assert per_query[key] == pytest.approx(values.tolist(), abs=1e-15), key
        assert isinstance(means[key], float)
        assert means[key] == pytest.approx(values.mean(), abs=1e-15), key


def test_max_label_sets_err_normaliser():
    y, s, q = [1, 0], [0.9, 0.1], [1, 1]
    assert evaluate(y, s, q, ("err@2",))["err@2"] == pytest.approx(1 / 2)  # g_max = 1
    assert evaluate(y, s, q, ("err@2",), max_label=4)["err@2"] == pytest.approx(1 / 16)
    with pytest.raises(ValueError, match="max_label"):
        evaluate([3, 0], s, q, ("err@2",), max_label=2)


def test_default_metrics_and_conventions_are_usable():
    got = evaluate([2, 0, 1], [0.3, 0.2, 0.1], [1, 1, 1], DEFAULT_METRICS)
    assert set(got) == set(DEFAULT_METRICS)
    for key in ("gain", "discount", "empty_query", "ties", "relevant", "err"):
        assert isinstance(CONVENTIONS[key], str) and CONVENTIONS[key]


# ---- parsing and bad input ----------------------------------------------------------
@pytest.mark.parametrize(
    "name, parsed",
    [
        ("ndcg@10", ("ndcg", 10)),
        ("NDCG@3", ("ndcg", 3)),
        ("map", ("map", None)),
        ("map@5", ("map", 5)),
        ("mrr", ("mrr", None)),
        ("MRR@1", ("mrr", 1)),
        ("err@10", ("err", 10)),
        ("p@5", ("p", 5)),
        (" ndcg@20 ", ("ndcg", 20)),
    ],
)
def test_parse_metric_accepts_valid_forms(name, parsed):
    assert parse_metric(name) == parsed


@pytest.mark.parametrize(
    "name", ["ndcg", "err", "p", "ndcg@0", "ndcg@x", "auc", "ndcg@-1", "map@", ""]
)
def test_parse_metric_rejects_bad_names_listing_valid_forms(name):
    with pytest.raises(ValueError, match=r"ndcg@k.*map.*mrr.*err@k.*p@k"):
        parse_metric(name)


def test_bad_metric_name_in_evaluate_raises_before_any_work():
    with pytest.raises(ValueError, match="unknown metric 'ndgc@10'"):
        evaluate([1], [0.5], [1], ("ndcg@10", "ndgc@10"))


@pytest.mark.parametrize(
    "y, s, q, message",
    [
        ([1, 0], [0.5], [1, 1], "scores has 1 entries but y_true has 2"),
        ([1, 0], [0.5, 0.4], [1], "qid has 1 entries but y_true has 2"),
        ([], [], [], "no documents"),
        ([1, -1], [0.5, 0.4], [1, 1], "row 1"),
        ([1, 0.5], [0.5, 0.4], [1, 1], "non-negative integer"),
        ([1, 0], [0.5, np.nan], [1, 1], "NaN.*row 1"),
        ([1, 0], [0.5, 0.4], [1, np.nan], "qid contains NaN"),
        ([[1, 0]], [[0.5, 0.4]], [[1, 1]], "one-dimensional"),
        ([1, 2000], [0.5, 0.4], [1, 1], "labels above 1000.*row 1"),
        ([1, 0], ["a", "b"], [1, 1], "scores must be real numbers"),
    ],
)
def test_bad_input_raises_value_error_saying_what_is_wrong(y, s, q, message):
    with pytest.raises(ValueError, match=message):
        evaluate(y, s, q, ("ndcg@10",))


def test_knn_error_counts_queries_whose_top_k_majority_class_differs():
    from ltr_bench.evaluation.metrics import knn_error

    # query 1 (class 0): top-3 classes 0,0,1 -> 0 correct; query 2 (class 1): top-3 0,0,1 -> wrong
    qid = np.array([1] * 4 + [2] * 4)
    scores = np.array([0.9, 0.8, 0.7, 0.1, 0.9, 0.8, 0.7, 0.1])
    doc_class = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    query_class = np.array([0] * 4 + [1] * 4)
    assert knn_error(scores, qid, doc_class, query_class, k=3) == 0.5
    # k=1 uses only the nearest: query 1 correct, query 2 wrong
    assert knn_error(scores, qid, doc_class, query_class, k=1) == 0.5
    # reversing query 2's scores puts its class-1 documents first -> no error
    scores[4:] = scores[4:][::-1]
    assert knn_error(scores, qid, doc_class, query_class, k=3) == 0.0


def test_knn_error_tied_vote_goes_to_the_class_ranked_first():
    from ltr_bench.evaluation.metrics import knn_error

    qid = np.zeros(4, dtype=int)
    doc_class = np.array([2, 1, 1, 2])
    scores = np.array([0.9, 0.8, 0.7, 0.6])  # top-2 votes: class 2 and class 1, one each
    assert knn_error(scores, qid, doc_class, np.full(4, 2), k=2) == 0.0
    assert knn_error(scores, qid, doc_class, np.full(4, 1), k=2) == 1.0


def test_knn_error_matches_sklearn_kneighbors_classifier_on_euclidean_scores():
    from sklearn.neighbors import KNeighborsClassifier

    from ltr_bench.evaluation.metrics import knn_error

    # two classes and odd k: a vote can never tie, so both classifiers must agree exactly
    rng = np.random.default_rng(3)
    Xtr, ytr = rng.normal(size=(60, 4)), rng.integers(0, 2, 60)
    Xte, yte = rng.normal(size=(25, 4)), rng.integers(0, 2, 25)
    d2 = ((Xte[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1)
    qid = np.repeat(np.arange(25), 60)
    ours = knn_error(-d2.ravel(), qid, np.tile(ytr, 25), np.repeat(yte, 60), k=5)
    ref = np.mean(KNeighborsClassifier(n_neighbors=5).fit(Xtr, ytr).predict(Xte) != yte)
    assert 0.0 < ref < 1.0
    assert ours == pytest.approx(ref)
