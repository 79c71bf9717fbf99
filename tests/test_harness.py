"""The harness: cells, identical splits, local results first, resume, failures, Ctrl-C."""

from __future__ import annotations

import json
import shutil

import ltrb_fake_rankers as fakes
import numpy as np
import pytest

from ltr_bench.data import load_fold
from ltr_bench.evaluation.metrics import evaluate
from ltr_bench.registry import BadParameterError, UnknownRankerError
from ltr_bench.results import ResultStore, read_per_query_csv
from ltr_bench.run.cells import expand_plan
from ltr_bench.run.harness import HarnessInterrupted, run_plan
from ltr_bench.run.listener import Listener
from ltr_bench.run.plan import DatasetChoice, Plan, PlanError, RankerChoice

TINY = {"n_queries": 30, "docs_per_query": 6, "n_features": 5, "n_informative": 3}


def _plan(rankers=("fake-linear", "fake-other"), folds=(1, 2), seed=0, **kw) -> Plan:
    return Plan(
        rankers=[RankerChoice(r, {}) if isinstance(r, str) else r for r in rankers],
        datasets=[DatasetChoice("synthetic", dict(TINY))],
        folds=list(folds) if folds is not None else None,
        seed=seed,
        **kw,
    )


class Recorder(Listener):
    def __init__(self):
        self.finished = []
        self.progress = []
        self.loaded = []

    def fold_loading(self, dataset, fold):
        self.loaded.append((dataset, fold))

    def cell_progress(self, cell, done, total, message):
        self.progress.append((cell.ranker, done, total))

    def cell_finished(self, record, index, total, *, skipped):
        self.finished.append((record.ranker, record.fold, record.status, skipped))


def test_every_ranker_sees_the_same_fingerprinted_splits(fake_rankers, tmp_path):
    store = ResultStore(tmp_path / "results")
    rec = Recorder()
    report = run_plan(expand_plan(_plan(folds=(1, 2, 3))), store, listener=rec)
    assert report.n_run == 6 and not report.failed
    assert rec.loaded == [("synthetic", 1), ("synthetic", 2), ("synthetic", 3)]
    by_fold: dict[int, set] = {}
    for r in report.records:
        by_fold.setdefault(r.fold, set()).add(tuple(sorted(r.fingerprints.items())))
        assert set(r.fingerprints) == {"train", "vali", "test"}
    assert all(len(fps) == 1 for fps in by_fold.values())  # identical across rankers
    assert len({fps.pop() for fps in by_fold.values()}) == 3  # different folds differ
    # the fingerprints are those of the data the dataset layer gives for that fold and seed
    fold2 = load_fold("synthetic", 2, options=TINY, seed=0)
    rec2 = next(r for r in report.records if r.fold == 2)
    assert rec2.fingerprints == fold2.fingerprints()
    # both rankers' fits of one fold saw the same training data, with the validation split
    sums = [(f["ranker"], f["n"], f["sum"], f["eval_set"]) for f in fakes.FITS]
    assert sums[0][1:] == sums[1][1:] and sums[0][0] != sums[1][0]
    assert all(f["eval_set"] for f in fakes.FITS)
    assert rec.progress and all(total == 3 for _, _, total in rec.progress)


def test_seed_reaches_every_rankers_random_state_and_threads_their_thread_param(
    fake_rankers, tmp_path
):
    run_plan(expand_plan(_plan(seed=7, threads=1)), ResultStore(tmp_path / "r"))
    assert {f["random_state"] for f in fakes.FITS} == {7}
    assert {f["n_jobs"] for f in fakes.FITS} == {1}


def test_user_parameters_win_over_seed_and_threads(fake_rankers, tmp_path):
    plan = _plan(
        rankers=[RankerChoice("fake-linear", {"random_state": 3, "n_jobs": 2, "scale": 0.5})],
        seed=7,
        threads=1,
    )
    report = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"))
    assert {(f["random_state"], f["n_jobs"]) for f in fakes.FITS} == {(3, 2)}
    assert report.records[0].params["scale"] == 0.5


def test_record_metrics_equal_an_independent_evaluation_of_the_same_scores(fake_rankers, tmp_path):
    store = ResultStore(tmp_path / "r")
    report = run_plan(expand_plan(_plan(rankers=("fake-linear",), folds=(2,), seed=4)), store)
    rec = report.records[0]
    fold = load_fold("synthetic", 2, options=TINY, seed=4)
    w = np.random.default_rng(4).normal(size=fold.train.X.shape[1])
    scores = fold.test.X @ w
    metrics = ("ndcg@1", "ndcg@10", "map", "err@10")
    one = evaluate(fold.test.y, scores, fold.test.qid, metrics, max_label=fold.max_label)
    zero = evaluate(
        fold.test.y, scores, fold.test.qid, metrics, empty_query=0.0, max_label=fold.max_label
    )
    for m in metrics:
        assert rec.metrics[m] == pytest.approx(one[m], abs=1e-12)
        assert rec.metrics[m + "_empty0"] == pytest.approx(zero[m], abs=1e-12)
    # the per-query CSV holds the values whose mean is the recorded metric
    pq = read_per_query_csv(store.per_query_path(rec.key))
    assert len(pq["qid"]) == fold.test.n_queries
    assert np.mean(pq["ndcg@10"]) == pytest.approx(rec.metrics["ndcg@10"], abs=1e-12)
    assert rec.fit_seconds > 0 and rec.score_us_per_doc > 0 and rec.peak_rss_mb > 0
    assert rec.score_repeats == 5
    assert rec.environment["versions"]["numpy"] == np.__version__
    assert rec.n_test_docs == fold.test.n_docs


def test_records_carry_the_time_of_each_stage_and_the_shared_fold_load(fake_rankers, tmp_path):
    report = run_plan(expand_plan(_plan(folds=(1,))), ResultStore(tmp_path / "r"))
    first, second = report.records
    for rec in report.records:
        assert set(rec.stage_seconds) == {"load", "setup", "fit", "score", "evaluate"}
        assert all(v >= 0 for v in rec.stage_seconds.values())
        assert rec.stage_seconds["fit"] == rec.fit_seconds
        # the score stage holds the warm-up and every timed repeat of predict, at least
        # half of which took the median time or longer
        median_s = rec.score_us_per_doc * rec.n_test_docs * 1e-6
        assert rec.stage_seconds["score"] >= (rec.score_repeats + 1) // 2 * median_s * 0.999
    # in process one load serves both rankers of the fold: the same time on both records
    assert first.stage_seconds["load"] == second.stage_seconds["load"] > 0


def test_results_are_saved_as_json_before_the_listener_hears_of_them(fake_rankers, tmp_path):
    store = ResultStore(tmp_path / "r")

    class Check(Listener):
        def cell_finished(self, record, index, total, *, skipped):
            saved = json.loads(store.json_path(record.key).read_text())
            assert saved["key"] == record.key and saved["status"] == "ok"
            assert saved["metrics"] == pytest.approx(record.metrics)

    run_plan(expand_plan(_plan()), store, listener=Check())


def test_rerun_skips_finished_cells_without_fitting_or_loading(fake_rankers, tmp_path):
    plan = _plan(folds=(1, 2))
    first = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"))
    assert len(fakes.FITS) == 4
    fakes.FITS.clear()
    rec = Recorder()
    again = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"), listener=rec)
    # the fold notes (run.fold_proof) prove the data unchanged: nothing is loaded
    assert fakes.FITS == [] and rec.loaded == []
    assert again.n_skipped == 4 and again.n_run == 0
    assert [r.metrics for r in again.records] == [r.metrics for r in first.records]
    assert all(skipped for *_, skipped in rec.finished)
    shutil.rmtree(tmp_path / "r" / ".folds")  # no proof: each fold is loaded to compare
    rec = Recorder()
    again = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"), listener=rec)
    assert fakes.FITS == [] and rec.loaded == [("synthetic", 1), ("synthetic", 2)]
    assert again.n_skipped == 4 and again.n_run == 0


def test_force_reruns_finished_cells(fake_rankers, tmp_path):
    plan = _plan(folds=(1,))
    run_plan(expand_plan(plan), ResultStore(tmp_path / "r"))
    fakes.FITS.clear()
    report = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"), force=True)
    assert len(fakes.FITS) == 2 and report.n_run == 2 and report.n_skipped == 0


def test_changed_parameters_or_seed_are_new_cells(fake_rankers, tmp_path):
    store_dir = tmp_path / "r"
    run_plan(expand_plan(_plan(rankers=("fake-linear",), folds=(1,))), ResultStore(store_dir))
    fakes.FITS.clear()
    run_plan(
        expand_plan(_plan(rankers=[RankerChoice("fake-linear", {"scale": 2.0})], folds=(1,))),
        ResultStore(store_dir),
    )
    run_plan(
        expand_plan(_plan(rankers=("fake-linear",), folds=(1,), seed=1)), ResultStore(store_dir)
    )
    assert len(fakes.FITS) == 2
    keys = {
        c.key
        for p in (
            _plan(rankers=("fake-linear",), folds=(1,)),
            _plan(rankers=("fake-linear",), folds=(1,), seed=1),
        )
        for c in expand_plan(p).cells
    }
    assert len(keys) == 2


def test_a_failing_ranker_is_recorded_and_the_other_cells_finish(fake_rankers, tmp_path):
    store = ResultStore(tmp_path / "r")
    report = run_plan(expand_plan(_plan(rankers=("fake-linear", "fake-failing"))), store)
    assert [(r.ranker, r.fold) for r in report.records] == [("fake-linear", 1), ("fake-linear", 2)]
    assert [(r.ranker, r.fold, r.error_stage) for r in report.failed] == [
        ("fake-failing", 1, "fit"),
        ("fake-failing", 2, "fit"),
    ]
    assert "fake failure: this ranker always breaks" in report.failed[0].error
    log = store.failure_log.read_text()
    # named as everywhere: the row's label and its dataset options, then dataset and fold
    assert "Traceback" in log and "fake-failing · docs_per_query=" in log
    assert report.failed[1].summary_line() in log
    assert report.failed[1].summary_line().endswith(" / synthetic fold 2")
    # failures are not finished: the next run retries them (and only them)
    fakes.FITS.clear()
    again = run_plan(expand_plan(_plan(rankers=("fake-linear", "fake-failing"))), store)
    assert [f["ranker"] for f in fakes.FITS] == ["FailingRanker", "FailingRanker"]
    assert again.n_skipped == 2


def test_ctrl_c_keeps_finished_cells_and_the_rerun_resumes(fake_rankers, tmp_path):
    plan = _plan(rankers=("fake-linear",), folds=(1, 2, 3))
    fakes.INTERRUPT_AT_FIT = 2  # Ctrl-C while fold 2 is fitted
    with pytest.raises(HarnessInterrupted) as info:
        run_plan(expand_plan(plan), ResultStore(tmp_path / "r"))
    assert [r.fold for r in info.value.report.records] == [1]
    assert isinstance(info.value, KeyboardInterrupt)
    saved = list((tmp_path / "r").glob("*.json"))
    assert len(saved) == 1
    fakes.reset()
    report = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"))
    assert len(fakes.FITS) == 2  # folds 2 and 3 only
    assert report.n_skipped == 1 and [r.fold for r in report.records] == [1, 2, 3]


def test_unreadable_or_partial_result_files_count_as_not_finished(fake_rankers, tmp_path):
    store_dir = tmp_path / "r"
    report = run_plan(
        expand_plan(_plan(rankers=("fake-linear",), folds=(1,))), ResultStore(store_dir)
    )
    path = ResultStore(store_dir).json_path(report.records[0].key)
    path.write_text(path.read_text()[:40])  # truncated, e.g. by a full disk
    (store_dir / ".junk.json.tmp").write_text("{")
    fakes.FITS.clear()
    run_plan(expand_plan(_plan(rankers=("fake-linear",), folds=(1,))), ResultStore(store_dir))
    assert len(fakes.FITS) == 1
    assert json.loads(path.read_text())["status"] == "ok"


def test_query_dim_is_set_on_query_by_example_data(fake_rankers, tmp_path):
    plan = Plan(
        rankers=[RankerChoice("fake-qbe", {}), RankerChoice("fake-linear", {})],
        datasets=[DatasetChoice("gauss-10", {"n_per_class": 8, "n_features": 3})],
        folds=[1],
    )
    report = run_plan(expand_plan(plan), ResultStore(tmp_path / "r"))
    qbe, linear = report.records
    assert qbe.params["query_dim"] == 3 and "query_dim" not in linear.params
    assert qbe.model_info["query_dim_seen"] == 3
    assert fakes.FITS[0]["eval_set"] is False  # gauss data has no validation split


def test_query_by_example_records_carry_the_knn_error_of_their_test_scores(fake_rankers, tmp_path):
    from ltr_bench.evaluation.metrics import knn_error
    from ltr_bench.run.unit import KNN_K

    plan = Plan(
        rankers=[RankerChoice("fake-linear", {})],
        datasets=[DatasetChoice("gauss-10", {"n_per_class": 8, "n_features": 3})],
        folds=[1],
    )
    (rec,) = run_plan(expand_plan(plan), ResultStore(tmp_path / "r")).records
    fold = load_fold("gauss-10", 1, options={"n_per_class": 8, "n_features": 3})
    ranker = fakes.LinearRanker().set_params(
        **{k: v for k, v in rec.params.items() if k in fakes.LinearRanker().get_params()}
    )
    ranker.fit(fold.train.X, fold.train.y, qid=fold.train.qid)
    expected = knn_error(
        ranker.predict(fold.test.X),
        fold.test.qid,
        fold.test.extras["doc_class"],
        fold.test.extras["query_class"],
        k=KNN_K,
    )
    assert rec.extra_metrics["knn_error"] == pytest.approx(expected)


def test_plan_errors_are_raised_before_anything_runs(fake_rankers, tmp_path):
    with pytest.raises(UnknownRankerError) as info:
        expand_plan(_plan(rankers=("fake-lineer",)))
    assert "fake-linear" in info.value.suggestions
    with pytest.raises(BadParameterError, match="no parameter"):
        expand_plan(_plan(rankers=[RankerChoice("fake-linear", {"depth": 3})]))
    with pytest.raises(PlanError, match="no fold 9"):
        expand_plan(_plan(folds=(1, 9)))
    with pytest.raises(PlanError, match="unknown option"):
        expand_plan(
            Plan([RankerChoice("fake-linear")], [DatasetChoice("synthetic", {"n_qeuries": 3})])
        )
    with pytest.raises(PlanError, match="unknown metric"):
        expand_plan(_plan(metrics=("ndcg@10", "auc")))
    assert fakes.FITS == []


def test_a_cell_is_a_picklable_unit_of_work_that_reproduces_its_record(fake_rankers, tmp_path):
    import pickle

    from ltr_bench.run.unit import run_cell

    expanded = expand_plan(_plan(rankers=("fake-linear",), folds=(2,), seed=3))
    report = run_plan(expanded, ResultStore(tmp_path / "r"))
    cell = pickle.loads(pickle.dumps(expanded.cells[0]))
    alone = run_cell(cell)  # loads its own fold, as a remote worker would
    assert alone.ok and alone.key == report.records[0].key
    assert alone.fingerprints == report.records[0].fingerprints
    assert alone.metrics == report.records[0].metrics


def test_constant_scores_are_flagged_and_evaluated_as_one_big_tie(fake_rankers, tmp_path):
    report = run_plan(
        expand_plan(_plan(rankers=("fake-constant", "fake-linear"), folds=(1,))),
        ResultStore(tmp_path / "r"),
    )
    constant, linear = report.records
    assert constant.warnings and "all test scores are equal" in constant.warnings[0]
    assert linear.warnings == []
    # a constant scorer gets the tie-expected value: MAP of a random ranking, per query
    fold = load_fold("synthetic", 1, options=TINY, seed=0)
    expected = evaluate(fold.test.y, np.zeros(fold.test.n_docs), fold.test.qid, ("map",))
    assert constant.metrics["map"] == pytest.approx(expected["map"])


def test_a_ranker_cannot_change_the_data_the_next_ranker_sees(fake_rankers, tmp_path):
    report = run_plan(
        expand_plan(_plan(rankers=("fake-mutating", "fake-linear"), folds=(1,))),
        ResultStore(tmp_path / "r"),
    )
    (failed,) = report.failed
    assert failed.ranker == "fake-mutating" and "read-only" in failed.error
    (ok,) = report.records
    fold = load_fold("synthetic", 1, options=TINY, seed=0)
    assert ok.fingerprints == fold.fingerprints()
    assert fakes.FITS[-1]["sum"] == pytest.approx(float(np.sum(fold.train.X)))


# ------------------------------------------------------------------------ learning curves


def test_learning_curves_of_the_ranker_are_kept_in_the_record_and_its_file(fake_rankers, tmp_path):
    from ltr_bench.results import ResultRecord
    from ltr_bench.run.cells import build_ranker

    store = ResultStore(tmp_path / "r")
    report = run_plan(expand_plan(_plan(rankers=("fake-curves", "fake-linear"), folds=(1,))), store)
    curved, plain = report.records
    # the same ranker fitted here on the same fold gives the curves the record holds
    fold = load_fold("synthetic", 1, options=TINY, seed=0)
    ranker = build_ranker("fake-curves", {}, seed=0, threads=None)
    ranker.fit(
        fold.train.X,
        fold.train.y,
        qid=fold.train.qid,
        eval_set=(fold.vali.X, fold.vali.y, fold.vali.qid),
    )
    expected = ranker.learning_curves()
    assert set(expected) == {"train_loss", "vali_ndcg@10"} and len(expected["train_loss"]) == 5
    assert curved.learning_curves == expected
    assert plain.learning_curves == {}  # BaseRanker's default: no curves
    on_disk = json.loads(store.json_path(curved.key).read_text())
    assert on_disk["learning_curves"] == expected
    # a record written before curves existed reads back with none
    del on_disk["learning_curves"]
    assert ResultRecord.from_dict(on_disk).learning_curves == {}


def test_a_learning_curve_that_is_not_numbers_fails_its_cell_with_the_reason(
    fake_rankers, tmp_path
):
    report = run_plan(
        expand_plan(_plan(rankers=("fake-bad-curves",), folds=(1,))), ResultStore(tmp_path / "r")
    )
    (failed,) = report.failed
    assert failed.error_stage == "learning_curves"
    assert "learning_curves()['train_loss'] must be a sequence of numbers" in failed.error
