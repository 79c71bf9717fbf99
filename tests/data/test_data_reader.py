"""The LETOR reader: parsing, compression, blocks, and one test per bad-input case."""

from __future__ import annotations

import re

import numpy as np
import pytest
from ltrb_data_helpers import good_lines, make_letor_dir, write_lines
from sklearn.datasets import load_svmlight_file

from ltr_bench.data import DataError, DataWarning, load_fold, reader
from ltr_bench.data.reader import read_letor_file
from ltr_bench.folds import fingerprint_arrays


def _read(path, **kw):
    kw.setdefault("n_features", 5)
    kw.setdefault("label_max", 4)
    return read_letor_file(path, **kw)


def test_reader_matches_sklearn_whole_file_parse(tmp_path):
    lines = good_lines(n_queries=5, docs=7)
    p = write_lines(tmp_path / "a.txt", lines)
    ours = _read(p)
    X, y, q = load_svmlight_file(str(p), n_features=5, query_id=True, zero_based=False)
    np.testing.assert_array_equal(ours.X, X.toarray())
    np.testing.assert_array_equal(ours.y, y.astype(np.int64))
    np.testing.assert_array_equal(ours.qid, q)
    assert ours.y.dtype == np.int64 and ours.qid.dtype == np.int64
    assert ours.X.dtype == np.float64 and ours.X.flags["C_CONTIGUOUS"]


def test_tiny_blocks_give_identical_arrays_and_correct_line_numbers(tmp_path, monkeypatch):
    # Lines straddle block boundaries when a block is 50 bytes; results must not change.
    lines = good_lines(n_queries=6, docs=5)
    p = write_lines(tmp_path / "a.txt", lines)
    whole = _read(p)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 50)
    blocked = _read(p)
    np.testing.assert_array_equal(whole.X, blocked.X)
    np.testing.assert_array_equal(whole.y, blocked.y)
    np.testing.assert_array_equal(whole.qid, blocked.qid)
    bad = lines[:23] + ["1 qid:9 1:0.5 2:oops"] + lines[23:]
    p2 = write_lines(tmp_path / "b.txt", bad)
    with pytest.raises(DataError, match=re.escape(f"{p2}:24:")):
        _read(p2)


@pytest.mark.parametrize("compression", [".gz", ".bz2", ".xz"])
def test_compressed_files_read_like_plain(tmp_path, compression):
    lines = good_lines()
    plain = _read(write_lines(tmp_path / "p.txt", lines))
    comp = _read(write_lines(tmp_path / "c.txt", lines, compression))
    np.testing.assert_array_equal(plain.X, comp.X)
    np.testing.assert_array_equal(plain.y, comp.y)
    np.testing.assert_array_equal(plain.qid, comp.qid)


def test_comments_blank_lines_and_sparse_rows(tmp_path):
    p = write_lines(
        tmp_path / "a.txt",
        ["# header comment", "", "2 qid:3 2:1.5 # c", "0 qid:3", "1 qid:4 1:-1 5:2e3"],
    )
    r = _read(p)
    np.testing.assert_array_equal(r.X, [[0, 1.5, 0, 0, 0], [0, 0, 0, 0, 0], [-1, 0, 0, 0, 2000.0]])
    np.testing.assert_array_equal(r.y, [2, 0, 1])
    np.testing.assert_array_equal(r.qid, [3, 3, 4])


def test_query_file_gives_groups_without_qid(tmp_path):
    p = write_lines(tmp_path / "rank.train", ["1 1:0.5", "0 2:0.1", "3 1:1 3:2", "2 3:0.3"])
    q = write_lines(tmp_path / "rank.train.query", ["3", "1"])
    r = _read(p, query_file=q)
    np.testing.assert_array_equal(r.qid, [1, 1, 1, 2])
    np.testing.assert_array_equal(r.y, [1, 0, 3, 2])


# ---------------------------------------------------------------- bad input, one per case


def _err(path, **kw) -> str:
    with pytest.raises(DataError) as info:
        _read(path, **kw)
    return str(info.value)


def test_unparsable_line_names_file_line_and_format(tmp_path):
    lines = good_lines()
    lines[1] = "1 qid:1 1:0.5 garbage"
    p = write_lines(tmp_path / "a.txt", lines)
    msg = _err(p)
    assert msg.startswith(f"{p}:2: cannot parse 'garbage' as index:value")
    assert "Each line must read" in msg


def test_unparsable_label(tmp_path):
    p = write_lines(tmp_path / "a.txt", ["x qid:1 1:0.5"])
    assert _err(p).startswith(f"{p}:1: cannot parse the label 'x'")


def test_missing_qid_where_required(tmp_path):
    lines = good_lines()
    lines[2] = "1 1:0.5 2:0.25"
    p = write_lines(tmp_path / "a.txt", lines)
    msg = _err(p)
    assert msg.startswith(f"{p}:3: the line has no qid: field")
    assert ".query" in msg  # says how to supply groups instead


def test_qid_not_right_after_label(tmp_path):
    p = write_lines(tmp_path / "a.txt", ["1 1:0.5 qid:2"])
    assert "qid:<id> must be the second field" in _err(p)


def test_non_integer_label(tmp_path):
    lines = good_lines()
    lines[4] = "1.5" + lines[4][1:]  # good_lines labels are single digits
    p = write_lines(tmp_path / "a.txt", lines)
    msg = _err(p)
    assert msg.startswith(f"{p}:5: the label '1.5' is not an integer")


def test_out_of_range_label_uses_the_spec_range(tmp_path):
    # mq2008: labels 0..2, 46 features, official layout under the data home.
    home = tmp_path / "home"
    make_letor_dir(home / "MQ2008", folds=(1,), n_features=46)
    bad = good_lines(n_features=46)
    bad[6] = "3" + bad[6][1:]
    write_lines(home / "MQ2008" / "Fold1" / "train.txt", bad)
    with pytest.raises(DataError) as info:
        load_fold("mq2008", 1, data_dir=home)
    msg = str(info.value)
    assert msg.startswith(
        f"{home / 'MQ2008' / 'Fold1' / 'train.txt'}:7: the label 3 is outside the allowed range"
    )
    assert "integers 0..2" in msg and "mq2008" in msg


def test_negative_label_rejected_for_folder_path(tmp_path):
    make_letor_dir(tmp_path)
    lines = good_lines()
    lines[0] = "-1" + lines[0][1:]
    write_lines(tmp_path / "Fold1" / "test.txt", lines)
    with pytest.raises(DataError, match=r"test.txt:1: the label -1 is outside"):
        load_fold(tmp_path, 1)


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
def test_nan_or_infinite_value(tmp_path, value):
    lines = good_lines()
    lines[3] = f"1 qid:1 1:0.5 2:{value} 3:1"
    p = write_lines(tmp_path / "a.txt", lines)
    msg = _err(p)
    assert msg.startswith(f"{p}:4: feature 2 has the value '{value}' (NaN or infinite)")
    assert "Replace missing or infinite values" in msg


def test_nan_label(tmp_path):
    p = write_lines(tmp_path / "a.txt", good_lines()[:2] + ["nan qid:1 1:1"])
    assert _err(p).startswith(f"{p}:3: the label is 'nan', not a finite number")


def test_feature_index_beyond_spec(tmp_path):
    lines = good_lines()
    lines[5] = "1 qid:2 1:0.5 6:1.0"
    p = write_lines(tmp_path / "a.txt", lines)
    msg = _err(p, context="mslr30k")
    assert msg.startswith(f"{p}:6: feature index 6 is beyond the 5 features of mslr30k")


def test_zero_based_index_rejected(tmp_path):
    p = write_lines(tmp_path / "a.txt", ["1 qid:1 0:0.5 1:1"])
    assert "indices are 1-based" in _err(p)


def test_unsorted_indices_rejected(tmp_path):
    p = write_lines(tmp_path / "a.txt", ["1 qid:1 3:0.5 2:1"])
    assert _err(p).startswith(f"{p}:1: feature index 2 comes after index 3")


def test_split_query_blocks_are_regrouped_with_a_warning(tmp_path):
    lines = [
        "1 qid:5 1:1",
        "0 qid:5 1:2",
        "2 qid:7 1:3",
        "0 qid:5 1:4",
        "1 qid:7 1:5",
        "2 qid:6 1:6",
    ]
    p = write_lines(tmp_path / "a.txt", lines)
    with pytest.warns(DataWarning) as rec:
        r = _read(p)
    msg = str(rec[0].message)
    assert msg.startswith(f"{p}:4: the rows of query 5 continue here")
    assert "first block starts at line 1" in msg and "regrouped" in msg
    # stable: queries in order of first appearance, documents in file order
    np.testing.assert_array_equal(r.qid, [5, 5, 5, 7, 7, 6])
    np.testing.assert_array_equal(r.X[:, 0], [1, 2, 4, 3, 5, 6])
    np.testing.assert_array_equal(r.y, [1, 0, 0, 2, 1, 2])


def test_split_query_blocks_regrouped_through_the_cache_too(tmp_path):
    make_letor_dir(tmp_path, fold_dirs=False)
    lines = good_lines()
    write_lines(tmp_path / "train.txt", lines[4:8] + lines[:4] + lines[8:] + lines[:1])
    with pytest.warns(DataWarning, match="regrouped"):
        fold = load_fold(tmp_path, 1)
    q = fold.train.qid
    assert list(q[np.r_[True, q[1:] != q[:-1]]]) == [2, 1, 3]
    assert fold.train.fingerprint == fingerprint_arrays(fold.train.X, fold.train.y, q)
    with pytest.warns(DataWarning, match="regrouped.*from the parsed-data cache"):
        again = load_fold(tmp_path, 1)
    np.testing.assert_array_equal(np.asarray(again.train.X), np.asarray(fold.train.X))


@pytest.mark.parametrize("content", [[], ["# only a comment", ""]])
def test_empty_file(tmp_path, content):
    p = write_lines(tmp_path / "a.txt", content)
    assert _err(p).startswith(f"{p}: the file has no data lines")


def test_missing_file(tmp_path):
    msg = _err(tmp_path / "nope.txt")
    assert msg.startswith(f"{tmp_path / 'nope.txt'}: file not found")


def test_damaged_compressed_file(tmp_path):
    p = write_lines(tmp_path / "a.txt", good_lines(n_queries=20), ".gz")
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    assert "damaged or truncated" in _err(p)


def test_query_file_not_matching_rows(tmp_path):
    p = write_lines(tmp_path / "rank.train", ["1 1:0.5", "0 2:0.1", "3 1:1"])
    q = write_lines(tmp_path / "rank.train.query", ["2", "2"])
    msg = _err(p, query_file=q)
    assert "add up to 4 rows" in msg and "has 3 rows" in msg


def test_query_file_bad_line(tmp_path):
    p = write_lines(tmp_path / "rank.train", ["1 1:0.5", "0 2:0.1"])
    q = write_lines(tmp_path / "rank.train.query", ["1", "one"])
    assert _err(p, query_file=q).startswith(f"{q}:2: cannot parse 'one' as a group size")


def test_error_is_not_chained_to_parser_traceback(tmp_path):
    p = write_lines(tmp_path / "a.txt", ["1 qid:1 1:abc"])
    with pytest.raises(DataError) as info:
        _read(p)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert info.value.line == 1 and info.value.path == str(p)
