"""data.normalise: LETOR's QueryLevelNorm (per-query min-max) and the query_norm option of
every LETOR-format dataset, named or a folder."""

from __future__ import annotations

import numpy as np
import pytest
from ltrb_data_helpers import make_letor_dir

from ltr_bench.data import DataError, dataset_identity, get_spec, list_datasets, load_fold
from ltr_bench.data.normalise import query_level_norm


def test_query_level_norm_is_min_max_within_each_query_by_hand():
    X = np.array(
        [
            [1.0, 5.0, -2.0],  # query 7
            [3.0, 5.0, 0.0],
            [2.0, 5.0, 2.0],
            [10.0, 0.0, 4.0],  # query 3
            [20.0, 1.0, 4.0],
        ]
    )
    qid = np.array([7, 7, 7, 3, 3])
    expected = np.array(
        [
            [0.0, 0.0, 0.0],  # the constant column of query 7 becomes 0
            [1.0, 0.0, 0.5],
            [0.5, 0.0, 1.0],
            [0.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
        ]
    )
    out = query_level_norm(X, qid)
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.float64 and X[0, 0] == 1.0  # the input is not changed


@pytest.mark.parametrize("chunk_rows", [1, 7, 50, 1 << 16])
def test_query_level_norm_matches_a_per_query_loop_on_random_data(chunk_rows):
    # chunk_rows 1 and 7 are shorter than some queries (a long query is a chunk of its own)
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 12, size=40)
    qid = np.repeat(np.arange(sizes.size) * 3 + 1, sizes)
    X = rng.normal(size=(qid.size, 6)) * rng.uniform(0.1, 100, size=6)
    X[:, 2] = np.round(X[:, 2])  # ties, and constant columns in small queries
    out = query_level_norm(X, qid, chunk_rows=chunk_rows)
    for q in np.unique(qid):
        rows = X[qid == q]
        lo, hi = rows.min(axis=0), rows.max(axis=0)
        want = np.where(hi > lo, (rows - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
        np.testing.assert_allclose(out[qid == q], want, rtol=0, atol=1e-12)


def test_query_level_norm_of_an_empty_split_is_empty():
    assert query_level_norm(np.zeros((0, 4)), np.zeros(0, dtype=np.int64)).shape == (0, 4)


def test_every_letor_dataset_documents_the_query_norm_option_default_off():
    for spec in list_datasets():
        if spec.kind == "letor":
            assert spec.options == {"query_norm": False, "train_queries": 0, "test_queries": 0}
    assert "QueryLevelNorm" in get_spec("ohsumed").__doc__


def test_named_dataset_option_normalises_every_split_and_changes_the_fingerprints(
    tmp_path, monkeypatch
):
    make_letor_dir(tmp_path / "env" / "MQ2008", n_features=46)
    monkeypatch.setenv("LTR_BENCH_DATA", str(tmp_path / "env"))
    raw = load_fold("mq2008", 1)
    norm = load_fold("mq2008", 1, options={"query_norm": True})
    for split in ("train", "vali", "test"):
        a, b = getattr(raw, split), getattr(norm, split)
        np.testing.assert_array_equal(b.X, query_level_norm(a.X, a.qid))
        np.testing.assert_array_equal(b.y, a.y)
        assert b.X.min() >= 0.0 and b.X.max() <= 1.0
    assert raw.fingerprints() != norm.fingerprints()
    off = load_fold("mq2008", 1, options={"query_norm": "false"})
    assert off.fingerprints() == raw.fingerprints()


def test_identity_names_the_option_only_when_it_is_set(tmp_path, monkeypatch):
    make_letor_dir(tmp_path / "env" / "MQ2008", n_features=46)
    monkeypatch.setenv("LTR_BENCH_DATA", str(tmp_path / "env"))
    plain = dataset_identity("mq2008")
    assert "options" not in plain  # results made before the option existed keep their keys
    assert dataset_identity("mq2008", options={"query_norm": False}) == plain
    on = dataset_identity("mq2008", options={"query_norm": True})
    assert on == {**plain, "options": {"query_norm": True}}
    folder = make_letor_dir(tmp_path / "folder")
    assert "query_norm" not in dataset_identity(folder)["options"]
    assert dataset_identity(folder, options={"query_norm": "yes"})["options"]["query_norm"]


def test_folder_dataset_takes_query_norm_too(tmp_path):
    folder = make_letor_dir(tmp_path / "folder")
    raw = load_fold(folder, 1)
    norm = load_fold(folder, 1, options={"query_norm": True})
    np.testing.assert_array_equal(norm.test.X, query_level_norm(raw.test.X, raw.test.qid))


def test_a_bad_query_norm_value_is_an_error_naming_the_option(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="query_norm='maybe' of a folder dataset must be true"):
        load_fold(make_letor_dir(tmp_path / "folder"), 1, options={"query_norm": "maybe"})
    with pytest.raises(DataError, match="has no option 'query_nrom'; Did you mean 'query_norm'"):
        load_fold("mq2008", 1, options={"query_nrom": True})


def test_ohsumed_query_norm_on_the_shared_copy(shared_data, tmp_path):
    source = shared_data / "OHSUMED-LETOR3-Feature-min"
    if not source.is_dir():
        pytest.skip(f"{source} is absent")
    (tmp_path / "OHSUMED").mkdir()
    (tmp_path / "OHSUMED" / "Feature-min").symlink_to(source, target_is_directory=True)
    raw = load_fold("ohsumed", 1, data_dir=tmp_path)
    norm = load_fold("ohsumed", 1, data_dir=tmp_path, options={"query_norm": True})
    assert raw.train.X.min() < -50 and raw.train.X.max() > 100  # Feature-min: raw values
    assert norm.train.X.min() == 0.0 and norm.train.X.max() == 1.0
    # every query spans [0, 1] in each feature that varies within it
    q = norm.test.qid
    first = q == q[0]
    cols = raw.test.X[first].max(axis=0) > raw.test.X[first].min(axis=0)
    assert np.all(norm.test.X[first][:, cols].max(axis=0) == 1.0)
