"""The parsed-data cache: reuse, invalidation, location, atomic writes."""

from __future__ import annotations

import os

import numpy as np
import pytest
from ltrb_data_helpers import good_lines, make_letor_dir, write_lines

from ltr_bench.data import DataWarning, load_fold, loading, resolve_cache_dir
from ltr_bench.data import cache as cache_mod


@pytest.fixture
def count_parses(monkeypatch):
    calls = []
    real = loading.read_letor_file

    def spy(path, **kw):
        calls.append(path)
        return real(path, **kw)

    monkeypatch.setattr(loading, "read_letor_file", spy)
    return calls


def test_second_load_reuses_the_cache_as_read_only_maps(tmp_path, count_parses):
    root = make_letor_dir(tmp_path / "d")
    cache = tmp_path / "cache"
    first = load_fold(root, 1, cache_dir=cache)
    assert len(count_parses) == 3
    again = load_fold(root, 1, cache_dir=cache)
    assert len(count_parses) == 3  # nothing parsed the second time
    assert again.fingerprints() == first.fingerprints()
    np.testing.assert_array_equal(again.train.X, first.train.X)
    assert not again.train.X.flags.writeable
    assert again.train.X.flags["C_CONTIGUOUS"] and type(again.train.X) is np.ndarray
    entries = [p for p in (cache / "letor").iterdir() if not p.name.startswith(".")]
    assert len(entries) == 3  # one per split file; no temporary folders left behind
    assert not [p for p in (cache / "letor").iterdir() if p.name.startswith(".tmp")]


def test_changed_source_file_is_parsed_again(tmp_path, count_parses):
    root = make_letor_dir(tmp_path / "d")
    cache = tmp_path / "cache"
    first = load_fold(root, 1, cache_dir=cache)
    lines = good_lines(qid0=1)
    lines[0] = "2" + lines[0][1:]  # one label changes, same size
    train = root / "Fold1" / "train.txt"
    st = train.stat()
    write_lines(train, lines)
    assert train.stat().st_size == st.st_size
    os.utime(train, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    second = load_fold(root, 1, cache_dir=cache)
    assert len(count_parses) == 4  # only the changed file
    assert second.train.y[0] == 2 and first.train.y[0] != 2
    assert second.train.fingerprint != first.train.fingerprint
    assert second.test.fingerprint == first.test.fingerprint


def test_replaced_file_with_same_size_and_mtime_detected_by_edge_hash(tmp_path, count_parses):
    root = make_letor_dir(tmp_path / "d")
    cache = tmp_path / "cache"
    load_fold(root, 1, cache_dir=cache)
    train = root / "Fold1" / "train.txt"
    st = train.stat()
    text = train.read_bytes()
    train.write_bytes(text.replace(b"qid:1 1:1", b"qid:1 1:3", 1))
    os.utime(train, ns=(st.st_atime_ns, st.st_mtime_ns))
    fold = load_fold(root, 1, cache_dir=cache)
    assert len(count_parses) == 4 and fold.train.X[0, 0] == 3.01


def test_cache_lives_in_the_cache_folder_not_the_data_folder(tmp_path, monkeypatch):
    root = make_letor_dir(tmp_path / "d")
    monkeypatch.setenv("LTR_BENCH_CACHE", str(tmp_path / "envcache"))
    assert resolve_cache_dir() == tmp_path / "envcache"
    assert resolve_cache_dir(tmp_path / "x") == tmp_path / "x"
    before = sorted(p.name for p in root.rglob("*"))
    os.chmod(root / "Fold1", 0o555)  # a read-only data folder is fine
    try:
        load_fold(root, 1)
    finally:
        os.chmod(root / "Fold1", 0o755)
    assert sorted(p.name for p in root.rglob("*")) == before
    assert (tmp_path / "envcache" / "letor").is_dir()


def test_unwritable_cache_folder_warns_and_still_loads(tmp_path):
    root = make_letor_dir(tmp_path / "d")
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    with pytest.warns(DataWarning, match="cannot write the parsed-data cache"):
        fold = load_fold(root, 1, cache_dir=blocker)
    assert fold.train.n_queries == 3


def test_failed_build_leaves_no_entry(tmp_path):
    def build(writer):
        writer.save("a", np.arange(3))
        raise RuntimeError("killed half way")

    with pytest.raises(RuntimeError):
        cache_mod.write_entry(tmp_path, "ns", "k1", build)
    assert cache_mod.load_entry(tmp_path, "ns", "k1") is None
    assert list((tmp_path / "ns").iterdir()) == []


def test_entry_round_trip_and_concurrent_finish(tmp_path):
    def build(writer):
        writer.save("a", np.arange(6).reshape(2, 3))
        m = writer.open_map("b", np.float64, (4,))
        m[:] = [1, 2, 3, 4]
        m.flush()
        return {"note": "x"}

    arrays, meta = cache_mod.write_entry(tmp_path, "ns", "k", build)
    np.testing.assert_array_equal(arrays["a"], [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(arrays["b"], [1, 2, 3, 4])
    assert meta["note"] == "x"
    # a second writer of the same key keeps the finished entry
    arrays2, _ = cache_mod.write_entry(tmp_path, "ns", "k", build)
    np.testing.assert_array_equal(arrays2["a"], arrays["a"])


def test_bad_data_is_not_cached(tmp_path):
    root = make_letor_dir(tmp_path / "d")
    lines = good_lines()
    lines[1] = "1 qid:1 1:nan"
    write_lines(root / "Fold1" / "train.txt", lines)
    for _ in range(2):  # the error comes back every time, no half-written entry is reused
        with pytest.raises(Exception, match="NaN or infinite"):
            load_fold(root, 1, cache_dir=tmp_path / "c")
    assert not [p for p in (tmp_path / "c" / "letor").iterdir() if p.name.startswith(".tmp")]


def test_damaged_entry_is_rebuilt(tmp_path, count_parses):
    root = make_letor_dir(tmp_path / "d")
    cache = tmp_path / "cache"
    first = load_fold(root, 1, cache_dir=cache)
    for x in (cache / "letor").glob("*/X.f8"):
        x.write_bytes(x.read_bytes()[:8])  # truncated array file
    again = load_fold(root, 1, cache_dir=cache)
    assert len(count_parses) == 6 and again.fingerprints() == first.fingerprints()
    load_fold(root, 1, cache_dir=cache)
    assert len(count_parses) == 6
