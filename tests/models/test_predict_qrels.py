"""``predict --output RUN --qrels QRELS``: the run and its qrels name documents by the data
file's own ids (``#docid = ...``), so trec_eval-style tools score the run exactly as ``predict``
prints it.

Comparing like with like (ir_measures over pytrec_eval, i.e. trec_eval's own code):

* gain: ltr-bench's NDCG uses ``2^label - 1``, trec_eval the label itself; ir_measures'
  ``nDCG(gains=...)`` maps each label to ``2^label - 1`` first, which makes trec_eval's sum the
  exponential one exactly (the gains are integers);
* a query without relevant documents scores 0 in trec_eval: compared with the ``_empty0``
  keys (the plain keys give such a query 1);
* tied scores: ltr-bench takes the expected value over the tie's orderings, trec_eval breaks
  ties by document id; the model here is linear on continuous features, and the test checks
  that no query has a tie, so both rank alike;
* ERR has no trec_eval measure and is not compared.
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench.cli import main
from ltr_bench.data import load_fold
from ltr_bench.models import load_model
from ltr_bench.models.predict import predict_file
from ltr_bench.results import ResultStore
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import run_plan
from ltr_bench.run.plan import DatasetChoice, Plan, RankerChoice

ir_measures = pytest.importorskip("ir_measures")

TINY = {"n_queries": 40, "docs_per_query": 12, "n_features": 5, "n_informative": 3}
METRICS = "ndcg@5,ndcg@10,map,mrr,p@5,recall@10"


@pytest.fixture(scope="module")
def ridge_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    plan = Plan(
        rankers=[RankerChoice("ridge", {})],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=[1],
        seed=5,
        threads=1,
    )
    report = run_plan(expand_plan(plan, score_repeats=1, keep_models=root), ResultStore(root))
    assert not report.failed
    return report.records[0].model_dir


def _letor_file_with_ids(path):
    """Fold 1's test rows of the generated data as a LETOR 4.0-style file: ids like
    ``GX004-93-7097963`` in each line's comment, one query with no relevant document and one
    id written twice inside a query (the TREC files must keep both rows)."""
    test = load_fold("synthetic", 1, seed=5, options=dict(TINY)).test
    y = test.y.copy()
    y[test.qid == test.qid[0]] = 0
    rng = np.random.default_rng(0)
    ids = [f"GX{rng.integers(1000):03d}-{rng.integers(100):02d}-{rng.integers(10**7)}" for _ in y]
    last = np.flatnonzero(test.qid == test.qid[-1])
    ids[last[1]] = ids[last[0]]
    with open(path, "w") as fh:
        for i in range(y.size):
            feats = " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(test.X[i].tolist()))
            fh.write(f"{y[i]} qid:{test.qid[i]} {feats} #docid = {ids[i]} inc = 1 prob = 0.5\n")
    return ids


MEASURES = {  # ltr-bench key -> the trec_eval measure that defines it alike (see the module)
    "ndcg@5_empty0": ir_measures.nDCG(gains={g: 2**g - 1 for g in range(5)}) @ 5,
    "ndcg@10_empty0": ir_measures.nDCG(gains={g: 2**g - 1 for g in range(5)}) @ 10,
    "map_empty0": ir_measures.AP,
    "mrr_empty0": ir_measures.RR,
    "p@5": ir_measures.P @ 5,
    "recall@10_empty0": ir_measures.R @ 10,
}


def test_trec_eval_scores_the_run_against_its_qrels_exactly_as_predict_prints(
    ridge_model, tmp_path
):
    data = tmp_path / "queries.txt"
    ids = _letor_file_with_ids(data)
    args = ["predict", "--model", ridge_model, "--data", data, "--metrics", METRICS]
    args += ["--output", tmp_path / "my.run", "--qrels", tmp_path / "my.qrels"]
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    printed = dict(line.split() for line in result.stdout.splitlines())
    assert "repeat the document id" in result.stderr  # the twice-written id is said

    run = list(ir_measures.read_trec_run(str(tmp_path / "my.run")))
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "my.qrels")))
    assert {d.doc_id for d in run} == {q.doc_id for q in qrels}
    assert {d.doc_id for d in run} >= set(ids)  # the file's own ids name the documents
    assert sum(d.doc_id.endswith("~2") for d in run) == 1
    scores: dict = {}
    for d in run:
        scores.setdefault(d.query_id, []).append(d.score)
    assert all(len(set(s)) == len(s) for s in scores.values())  # no ties (see the module)

    theirs = ir_measures.calc_aggregate(list(MEASURES.values()), qrels, run)
    ours = predict_file(load_model(ridge_model), data, metrics=METRICS.split(",")).metrics
    assert ours is not None
    for key, measure in MEASURES.items():
        assert ours[key] == pytest.approx(theirs[measure], abs=1e-12), key
        assert float(printed[key]) == pytest.approx(theirs[measure], abs=5e-7), key
    assert ours["ndcg@10"] > ours["ndcg@10_empty0"]  # the empty query: 1 against 0


def test_qrels_of_rows_without_labels_are_refused(ridge_model, tmp_path):
    data = tmp_path / "unlabelled.txt"
    data.write_text("qid:1 1:0.5 2:0.1 3:0 4:1 5:2\nqid:1 1:0.2 2:0.3 3:1 4:0 5:1\n")
    args = ["predict", "--model", ridge_model, "--data", data, "--qrels", tmp_path / "q"]
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 2
    assert "--qrels" in result.stderr and "no labels" in result.stderr
    assert not (tmp_path / "q").exists()


@pytest.mark.slow
def test_ohsumed_run_file_names_its_documents_and_trec_eval_reproduces_the_trec_profile(
    shared_data, tmp_path, monkeypatch
):
    """OHSUMED lines carry ``#docid = N`` and many documents share features (tied scores):
    the run ``--save-scores`` keeps and the qrels ``predict --qrels`` writes use those ids,
    and trec_eval on them gives the recorded ``--convention trec`` values, ties included (the
    profile breaks ties by the same ids as trec_eval)."""
    import json

    monkeypatch.chdir(tmp_path)
    folder = str(shared_data / "OHSUMED-LETOR3-Feature-min")
    run = CliRunner().invoke(
        main,
        ["run", "--ranker", "ridge", "--dataset", folder, "--folds", "1", "--no-mlflow",
         "--convention", "trec", "--save-scores", "--metrics", "ndcg@10,map,p@5"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    (path,) = (tmp_path / "mlflow_runs" / "results").glob("*[0-9a-f].json")
    rec = json.loads(path.read_text())
    result = CliRunner().invoke(
        main,
        ["predict", "--model", rec["model_dir"], "--data", f"{folder}:1:test",
         "--qrels", "test.qrels", "--output", "predict.run"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    saved = list(ir_measures.read_trec_run(rec["run_file"]))
    assert sorted(saved) == sorted(ir_measures.read_trec_run("predict.run"))
    assert "57950" in {d.doc_id for d in saved}  # Fold1/testset.txt's first line's id
    ties = {}
    for d in saved:
        ties.setdefault((d.query_id, d.score), []).append(d.doc_id)
    assert any(len(v) > 1 for v in ties.values())  # ties decide part of the ranking here
    qrels = list(ir_measures.read_trec_qrels("test.qrels"))
    measures = {"ndcg@10_trec": ir_measures.nDCG @ 10, "map_trec": ir_measures.AP,
                "p@5_trec": ir_measures.P @ 5}  # fmt: skip
    theirs = ir_measures.calc_aggregate(list(measures.values()), qrels, saved)
    for key, measure in measures.items():
        assert rec["metrics"][key] == pytest.approx(theirs[measure], abs=1e-12), key
