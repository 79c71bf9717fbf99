"""data.subsample: the train_queries / test_queries options of every named LETOR dataset."""

from __future__ import annotations

import numpy as np
import pytest
from ltrb_data_helpers import good_lines, write_lines

from ltr_bench.data import DataError, dataset_identity, load_fold


@pytest.fixture
def mq2008_home(tmp_path, monkeypatch):
    """MQ2008 Fold1 with 12 training, 6 validation and 9 test queries of 4 documents."""
    base = tmp_path / "home" / "MQ2008" / "Fold1"
    for name, n, qid0 in (("train.txt", 12, 1), ("vali.txt", 6, 101), ("test.txt", 9, 201)):
        write_lines(base / name, good_lines(n_queries=n, qid0=qid0, n_features=46))
    monkeypatch.setenv("LTR_BENCH_DATA", str(tmp_path / "home"))
    return tmp_path / "home"


def _queries(split) -> list:
    return list(dict.fromkeys(split.qid.tolist()))


def test_the_draw_keeps_whole_queries_in_file_order_and_leaves_validation_whole(mq2008_home):
    full = load_fold("mq2008", 1)
    part = load_fold("mq2008", 1, seed=3, options={"train_queries": 5, "test_queries": 4})
    assert len(_queries(part.train)) == 5 and len(_queries(part.test)) == 4
    assert part.vali.fingerprint == full.vali.fingerprint
    for name in ("train", "test"):
        a, b = getattr(full, name), getattr(part, name)
        keep = np.isin(a.qid, b.qid)  # every row of a chosen query, in the file's order
        np.testing.assert_array_equal(b.X, a.X[keep])
        np.testing.assert_array_equal(b.y, a.y[keep])
        np.testing.assert_array_equal(b.qid, a.qid[keep])


def test_one_seed_gives_one_draw_and_another_seed_another(mq2008_home):
    opts = {"train_queries": 6}
    a = load_fold("mq2008", 1, seed=1, options=opts)
    assert a.train.fingerprint == load_fold("mq2008", 1, seed=1, options=opts).train.fingerprint
    others = {load_fold("mq2008", 1, seed=s, options=opts).train.fingerprint for s in range(2, 8)}
    assert len(others | {a.train.fingerprint}) > 1  # 12 choose 6: the seed decides


def test_zero_means_every_query_and_the_identity_names_seed_only_when_drawing(mq2008_home):
    full = load_fold("mq2008", 1)
    same = load_fold("mq2008", 1, seed=9, options={"train_queries": 0})
    assert same.fingerprints() == full.fingerprints()
    assert dataset_identity("mq2008", seed=9, options={"train_queries": 0}) == dataset_identity(
        "mq2008"
    )
    drawn = dataset_identity("mq2008", seed=9, options={"train_queries": 5})
    assert drawn["seed"] == 9 and drawn["options"] == {"train_queries": 5}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"train_queries": 13}, "train_queries=13: the train split has only 12 queries"),
        ({"test_queries": -1}, "test_queries=-1 of dataset 'mq2008' must be >= 0"),
        ({"test_queries": 1.5}, "test_queries=1.5 of dataset 'mq2008' must be a finite int"),
    ],
)
def test_impossible_counts_are_refused_naming_the_option(mq2008_home, options, message):
    with pytest.raises(DataError, match=message):
        load_fold("mq2008", 1, options=options)


def test_a_run_with_the_option_trains_on_the_drawn_queries_and_keys_them_apart(
    mq2008_home, tmp_path, monkeypatch
):
    import json

    from click.testing import CliRunner

    from ltr_bench.cli import main

    monkeypatch.chdir(tmp_path)
    args = ["run", "--ranker", "ridge", "--dataset", "mq2008", "--no-mlflow", "--seed", "4"]
    full = CliRunner().invoke(main, args, catch_exceptions=False)
    part = CliRunner().invoke(
        main,
        [*args, "--dataset-option", "train_queries=5", "--dataset-option", "test_queries=3"],
        catch_exceptions=False,
    )
    assert full.exit_code == 0 and part.exit_code == 0, full.output + part.output
    records = [
        json.loads(p.read_text()) for p in (tmp_path / "mlflow_runs" / "results").glob("*.json")
    ]
    assert len(records) == 2  # a new cell, not the full-data result resumed
    drawn = load_fold("mq2008", 1, seed=4, options={"train_queries": 5, "test_queries": 3})
    by_opts = {bool(r["dataset_options"]): r for r in records}
    assert by_opts[True]["fingerprints"]["train"] == drawn.train.fingerprint
    assert by_opts[True]["n_test_queries"] == 3 and by_opts[False]["n_test_queries"] == 9
