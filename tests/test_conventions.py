"""conventions: profiles that score predictions the way the LETOR scripts and trec_eval do,
checked against values worked out by hand from the scripts' definitions and against
trec_eval itself (pytrec_eval)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ltr_bench.evaluation.conventions import evaluate_profile, profile_keys
from ltr_bench.evaluation.metrics import evaluate

# one query, rows in file order: labels 0 2 1 0; rows 0 and 1 tie
Y = np.array([0, 2, 1, 0])
S = np.array([0.5, 0.5, 0.9, 0.1])
Q = np.array([7, 7, 7, 7])


def test_letor4_matches_the_script_worked_by_hand():
    # ranked (ties in file order): rows 2, 0, 1, 3 -> labels 1 0 2 0, gains 1 0 3 0;
    # discounts 1, 1, 1/log2(3), 1/log2(4); ideal gains 3 1 0 0
    means, _ = evaluate_profile(Y, S, Q, ["ndcg@2", "ndcg@3", "ndcg@5", "p@5", "map"], "letor4")
    assert means["ndcg@2_letor4"] == pytest.approx(1 / 4)
    assert means["ndcg@3_letor4"] == pytest.approx((1 + 3 / math.log2(3)) / 4)
    assert means["ndcg@5_letor4"] == 0.0  # fewer than 5 documents
    assert means["p@5_letor4"] == pytest.approx(2 / 5)  # missing ranks count as irrelevant
    assert means["map_letor4"] == pytest.approx((1 / 1 + 2 / 3) / 2)


def test_letor3_differs_from_letor4_only_in_precision_of_short_queries():
    m3, _ = evaluate_profile(Y, S, Q, ["ndcg@3", "p@3", "p@5", "map"], "letor3")
    m4, _ = evaluate_profile(Y, S, Q, ["ndcg@3", "p@3", "p@5", "map"], "letor4")
    assert m3["p@5_letor3"] == 0.0 and m4["p@5_letor4"] == pytest.approx(0.4)
    for k in ("ndcg@3", "p@3", "map"):
        assert m3[f"{k}_letor3"] == m4[f"{k}_letor4"]


def test_letor_ties_keep_file_order_so_reordering_the_file_changes_the_score():
    swapped = [1, 0, 2, 3]  # the tied rows in the other file order
    a, _ = evaluate_profile(Y, S, Q, ["ndcg@2"], "letor4")
    b, _ = evaluate_profile(Y[swapped], S[swapped], Q, ["ndcg@2"], "letor4")
    # rows 2, 1 first: labels 1 2 -> (1 + 3) / (3 + 1) = 1
    assert a["ndcg@2_letor4"] == pytest.approx(0.25) and b["ndcg@2_letor4"] == 1.0


def test_a_query_without_relevant_documents_scores_zero_under_the_scripts():
    y = np.r_[Y, 0, 0]
    s = np.r_[S, 0.3, 0.2]
    q = np.r_[Q, 8, 8]
    _, pq = evaluate_profile(y, s, q, ["ndcg@2", "map"], "letor4")
    assert pq["ndcg@2_letor4"][1] == 0.0 and pq["map_letor4"][1] == 0.0


def test_nonempty_leaves_queries_without_relevant_documents_out_of_the_mean():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=60)
    y[:10] = 0  # queries 0 and 1 are empty
    q = np.repeat(np.arange(12), 5)
    s = rng.normal(size=60)
    means, pq = evaluate_profile(y, s, q, ["ndcg@5", "map"], "nonempty")
    assert np.isnan(pq["ndcg@5_nonempty"][0]) and np.isnan(pq["map_nonempty"][1])
    ref = evaluate(y[10:], s[10:], q[10:], ["ndcg@5", "map"])
    assert means["ndcg@5_nonempty"] == pytest.approx(ref["ndcg@5"])
    assert means["map_nonempty"] == pytest.approx(ref["map"])


def test_err_is_only_offered_where_it_is_defined():
    assert profile_keys(["ndcg@10", "err@10", "map"], "letor4") == ["ndcg@10_letor4", "map_letor4"]
    assert "err@10_nonempty" in profile_keys(["err@10"], "nonempty")


@pytest.mark.parametrize("tied", [False, True])
def test_trec_matches_trec_eval_including_its_tie_rule(tied):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(4)
    n_q, per = 25, 12
    q = np.repeat(np.arange(n_q), per)
    y = rng.integers(0, 4, size=q.size)
    y[:per] = 0  # one query without relevant documents
    s = rng.normal(size=q.size)
    if tied:
        s = np.round(s)  # many ties: trec_eval breaks them by document id
    keys = ["ndcg@5", "ndcg@10", "p@5", "p@20", "map", "mrr", "recall@10"]
    means, pq = evaluate_profile(y, s, q, keys, "trec")
    qrel, run = {}, {}
    for i in range(q.size):
        qrel.setdefault(str(q[i]), {})[str(i)] = int(y[i])
        run.setdefault(str(q[i]), {})[str(i)] = float(s[i])
    measures = {"ndcg_cut.5,10", "P.5,20", "map", "recip_rank", "recall.10"}
    got = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
    names = {
        "ndcg@5": "ndcg_cut_5",
        "ndcg@10": "ndcg_cut_10",
        "p@5": "P_5",
        "p@20": "P_20",
        "map": "map",
        "mrr": "recip_rank",
        "recall@10": "recall_10",
    }
    for key, measure in names.items():
        ours = np.asarray(pq[f"{key}_trec"])
        theirs = np.array([got[str(i)][measure] for i in range(n_q)])
        np.testing.assert_allclose(ours, theirs, atol=1e-12, err_msg=key)


def test_run_records_profiles_and_a_trec_run_file_that_trec_eval_reads_the_same(
    tmp_path, monkeypatch
):
    """``run --convention trec --save-scores``: the run file holds exactly the evaluated
    predictions; trec_eval on it reproduces the recorded trec-profile values."""
    import json

    from click.testing import CliRunner

    from ltr_bench.cli import main

    pytrec_eval = pytest.importorskip("pytrec_eval")
    from ltr_bench.data import load_fold

    monkeypatch.chdir(tmp_path)
    opts = ["--dataset-option", "n_queries=40", "--dataset-option", "docs_per_query=8"]
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--ranker",
            "lightgbm",
            "--dataset",
            "synthetic",
            *opts,
            "--folds",
            "1",
            "--param",
            "lightgbm.n_estimators=20",
            "--convention",
            "trec,letor4",
            "--save-scores",
            "--no-mlflow",
            "--results-dir",
            "res",
            "--metrics",
            "ndcg@10,map",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ndcg@10_trec" in result.stdout  # the summary shows the first profile
    (path,) = (tmp_path / "res").glob("*[0-9a-f].json")
    rec = json.loads(path.read_text())
    assert {"ndcg@10_trec", "map_trec", "ndcg@10_letor4", "map_letor4"} <= set(rec["metrics"])
    run: dict = {}
    for line in open(rec["run_file"]):
        q, q0, doc, rank, score, tag = line.split()
        assert q0 == "Q0" and tag == "lightgbm[n_estimators=20]"  # the configuration's label
        run.setdefault(q, {})[doc] = float(score)
    fold = load_fold("synthetic", 1, options={"n_queries": 40, "docs_per_query": 8})
    qrel: dict = {}
    for i, (q, y) in enumerate(zip(fold.test.qid, fold.test.y)):
        qrel.setdefault(str(q), {})[str(i)] = int(y)
    got = pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut.10", "map"}).evaluate(run)
    assert np.mean([v["ndcg_cut_10"] for v in got.values()]) == pytest.approx(
        rec["metrics"]["ndcg@10_trec"], abs=1e-12
    )
    assert np.mean([v["map"] for v in got.values()]) == pytest.approx(
        rec["metrics"]["map_trec"], abs=1e-12
    )
