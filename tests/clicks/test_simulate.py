"""Simulated click logs as a dataset transformation: the protocol, the test labels kept, the
arrays beside the clicks, determinism, the cache, and the harness's keywords."""

from __future__ import annotations

import json
import math

import ltrb_click_rankers
import numpy as np
import pytest
from click.testing import CliRunner

from ltr_bench import data
from ltr_bench.cli import main
from ltr_bench.clicks import options, simulate
from ltr_bench.clicks.models import attraction
from ltr_bench.clicks.options import MIN_LOGGING_QUERIES, resolve_click_options
from ltr_bench.clicks.registry import build_click_model
from ltr_bench.ranker import query_boundaries

SMALL = {"n_queries": 80, "docs_per_query": 15, "n_features": 8, "n_informative": 4}


@pytest.fixture
def fold(tmp_path):
    return data.load_fold("synthetic", 1, seed=3, options=SMALL, cache_dir=tmp_path / "cache")


def _clicks(fold, tmp_path, seed=3, **options):
    config = resolve_click_options({"clicks": "pbm", **options}, kind="generated")
    return simulate.simulate_clicks(fold, config, seed=seed, cache_dir=tmp_path / "cache")


def test_test_labels_stay_the_true_relevance_while_train_and_vali_become_clicks(fold, tmp_path):
    true_test = fold.test.fingerprint
    out = _clicks(fold, tmp_path, sessions=10)
    assert out.test is fold.test and out.test.fingerprint == true_test
    assert np.array_equal(out.test.y, fold.test.y)
    assert "position" not in out.test.extras
    for part in ("train", "vali"):
        split = getattr(out, part)
        assert split.y.min() >= 0 and split.y.max() <= 10
        assert split.n_queries == getattr(fold, part).n_queries
        lengths = np.diff(query_boundaries(getattr(fold, part).qid))
        assert split.n_docs == np.minimum(lengths, 10).sum()  # the top 10 are shown
    assert out.train.fingerprint != fold.train.fingerprint


def test_positions_are_each_querys_shown_ranks_and_pbm_propensity_is_their_power(fold, tmp_path):
    out = _clicks(fold, tmp_path, eta=1.5, top_k=5)
    b = query_boundaries(out.train.qid)
    pos, prop = out.train.extras["position"], out.train.extras["propensity"]
    for q in range(b.size - 1):
        n = b[q + 1] - b[q]
        assert n <= 5 and sorted(pos[b[q] : b[q + 1]].tolist()) == list(range(1, n + 1))
    np.testing.assert_allclose(prop, (1.0 / pos) ** 1.5)


def test_shown_order_is_the_logging_rankers_and_click_counts_match_their_expectation(fold):
    """With many sessions, the mean click count of each shown row is sessions *
    P(examined at its rank) * alpha(true label), the protocol's definition."""
    config = resolve_click_options({"clicks": "pbm", "sessions": 4000}, kind="generated")
    ranker, _ = simulate._fit_logging_ranker(fold.train, config, 3, 1)
    scores = ranker.predict(np.asarray(fold.train.X))
    arrays = simulate._click_split(
        fold.train, ranker, build_click_model(config["model"]), config, np.random.default_rng(1), 4
    )
    rows, pos = arrays["rows"], arrays["position"]
    qid = fold.train.qid[rows]
    for q in np.unique(qid)[:10]:  # shown by descending logging score
        mine = qid == q
        order = np.argsort(pos[mine])
        assert np.all(np.diff(scores[rows[mine]][order]) <= 0)
    expected = arrays["propensity"] * attraction(fold.train.y[rows], fold.max_label, 0.1)
    got = arrays["y"] / 4000
    assert np.max(np.abs(got - expected) / np.sqrt(expected * (1 - expected) / 4000 + 1e-12)) < 5


def test_the_logging_ranker_sees_the_fraction_of_training_queries_with_a_floor(fold):
    config = resolve_click_options({"clicks": "pbm", "logging_fraction": 0.5}, kind="generated")
    n = fold.train.n_queries
    assert simulate._fit_logging_ranker(fold.train, config, 0, 1)[1] == math.ceil(0.5 * n)
    config["logging_fraction"] = 0.01
    assert simulate._fit_logging_ranker(fold.train, config, 0, 1)[1] == MIN_LOGGING_QUERIES


def test_the_same_seed_gives_the_same_log_and_the_second_time_it_comes_from_the_cache(
    fold, tmp_path, monkeypatch
):
    first = _clicks(fold, tmp_path, clicks="dbn")
    monkeypatch.setattr(simulate, "_fit_logging_ranker", _must_not_run)
    again = _clicks(fold, tmp_path, clicks="dbn")
    assert again.train.fingerprint == first.train.fingerprint
    for key in ("position", "propensity"):
        assert np.array_equal(again.vali.extras[key], first.vali.extras[key])
    with pytest.raises(AssertionError, match="simulated again"):  # any option changes the key
        _clicks(fold, tmp_path, clicks="dbn", gamma=0.5)
    with pytest.raises(AssertionError, match="simulated again"):  # and so does the seed
        _clicks(fold, tmp_path, clicks="dbn", seed=4)
    monkeypatch.undo()
    other = _clicks(fold, tmp_path, clicks="dbn", seed=4)
    assert other.train.fingerprint != first.train.fingerprint


def test_a_newer_simulation_version_simulates_again_instead_of_reading_the_older_log(
    fold, tmp_path, monkeypatch
):
    first = _clicks(fold, tmp_path, clicks="pbm")
    monkeypatch.setattr(simulate, "_fit_logging_ranker", _must_not_run)
    assert _clicks(fold, tmp_path, clicks="pbm").train.fingerprint == first.train.fingerprint
    monkeypatch.setattr(options, "SIMULATION_VERSION", options.SIMULATION_VERSION + 1)
    with pytest.raises(AssertionError, match="simulated again"):
        _clicks(fold, tmp_path, clicks="pbm")
    config = resolve_click_options({"clicks": "pbm"}, kind="generated")
    assert config["simulation"] == options.SIMULATION_VERSION  # so in the dataset identity too


def _must_not_run(*args, **kwargs):
    raise AssertionError("the click log was simulated again instead of read from the cache")


def test_aggregate_any_gives_clicked_at_least_once(fold, tmp_path):
    counts = _clicks(fold, tmp_path, sessions=20)
    once = _clicks(fold, tmp_path, sessions=20, aggregate="any")
    assert np.array_equal(once.train.y, (counts.train.y > 0).astype(np.int64))


def _run(tmp_path, monkeypatch, *argv):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["run", "--no-mlflow", "--results-dir", "res", *argv])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_the_harness_passes_positions_only_to_rankers_that_declare_them(tmp_path, monkeypatch):
    ltrb_click_rankers.FITS.clear()
    options = [f"--dataset-option={k}={v}" for k, v in SMALL.items()]
    clicks = ["--dataset-option", "clicks=pbm", "--dataset-option", "sessions=10"]
    code, out = _run(
        tmp_path,
        monkeypatch,
        *("--ranker", "ltrb_click_rankers:PositionRecorder,ridge", "--dataset", "synthetic"),
        *("--folds", "1", *options, *clicks),
    )
    assert code == 0, out
    (fit,) = ltrb_click_rankers.FITS
    assert fit["position"] is not None and fit["position"].min() == 1
    assert fit["position"].max() == 10 and fit["propensity"].shape == (fit["n"],)
    records = [json.loads(p.read_text()) for p in (tmp_path / "res").glob("*.json")]
    records = [r for r in records if "dataset_identity" in r]
    assert len(records) == 2
    for r in records:
        clicks_id = r["dataset_identity"]["clicks"]
        assert clicks_id["model"] == {"name": "pbm", "args": {"eta": 1.0, "eps": 0.1}}
        assert clicks_id["logging_ranker"]["name"] == "ridge"
    # without clicks the same ranker gets no keywords and true labels; same test split
    code, out = _run(
        tmp_path,
        monkeypatch,
        *("--ranker", "ltrb_click_rankers:PositionRecorder", "--dataset", "synthetic"),
        *("--folds", "1", *options, "--results-dir", "skyline"),
    )
    assert code == 0, out
    assert ltrb_click_rankers.FITS[-1]["position"] is None
    sky = [json.loads(p.read_text()) for p in (tmp_path / "skyline").glob("*.json")]
    sky = [r for r in sky if "fingerprints" in r]
    assert sky[0]["fingerprints"]["test"] == records[0]["fingerprints"]["test"]
    assert sky[0]["fingerprints"]["train"] != records[0]["fingerprints"]["train"]


def test_tuning_on_clicks_keeps_positions_and_scores_validation_click_counts(
    fold, tmp_path, monkeypatch
):
    from ltr_bench.tune.study import tuning_split

    out = _clicks(fold, tmp_path, sessions=30)
    out.vali = None  # the hold-out of training queries must carry the positions along
    fit_split, eval_split, _ = tuning_split(out, 0)
    for split in (fit_split, eval_split):
        assert split.extras["position"].shape == split.y.shape
        assert split.extras["position"].min() == 1
    # labels above the dataset's top grade (click counts) must not stop the trials
    code, text = _run_tune(tmp_path, monkeypatch)
    assert code == 0, text
    assert "ridge[tuned,trials=2]" in text and "FAILED" not in text


def _run_tune(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "cache"))
    options = [f"--dataset-option={k}={v}" for k, v in SMALL.items()]
    argv = ["tune", "--ranker", "ridge", "--dataset", "synthetic", "--folds", "1", *options]
    argv += ["--dataset-option", "clicks=pbm", "--dataset-option", "sessions=30"]
    argv += ["--trials", "2", "--no-mlflow", "--results-dir", "tuned", "--threads", "1"]
    result = CliRunner().invoke(main, argv)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_check_ranker_tries_the_click_keywords_on_rankers_that_declare_them():
    from ltr_bench.testing import ranker_checks

    ltrb_click_rankers.FITS.clear()
    checks = dict(ranker_checks(ltrb_click_rankers.PositionRecorder()))
    checks["position_accepted"]()
    assert ltrb_click_rankers.FITS[-1]["position"].min() == 1
    assert "position_accepted" not in dict(ranker_checks(data_free_ranker()))


def data_free_ranker():
    from ltr_bench.registry import make_ranker

    return make_ranker("ridge")
