"""load_fold and friends: shared real data, named layouts, folder paths, missing data."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from ltrb_data_helpers import good_lines, make_letor_dir, write_lines

from ltr_bench.data import (
    DataError,
    DatasetNotFoundError,
    UnknownDatasetError,
    available_folds,
    dataset_identity,
    dataset_present,
    get_spec,
    load_fold,
    resolve_data_dir,
)
from ltr_bench.folds import Fold, fingerprint_arrays
from ltr_bench.ranker import query_boundaries

# From /work/shared/data/README.md, "OHSUMED statistics": (queries, docs, label counts 0/1/2)
OHSUMED_FOLD1 = {
    "train": (63, 9219, (6052, 1765, 1402)),
    "vali": (21, 3538, (2457, 546, 535)),
    "test": (22, 3383, (2794, 274, 315)),
}


def _check_contract(fold: Fold) -> None:
    for s in (fold.train, fold.vali, fold.test):
        if s is None:
            continue
        assert s.X.dtype == np.float64 and s.X.ndim == 2 and s.X.flags["C_CONTIGUOUS"]
        assert s.y.dtype == np.int64 and s.qid.dtype == np.int64
        assert s.X.shape[0] == s.y.shape[0] == s.qid.shape[0]
        query_boundaries(s.qid)  # raises if a query is not contiguous


def test_shared_ohsumed_fold1_matches_the_readme_statistics(shared_data):
    fold = load_fold(shared_data / "OHSUMED-LETOR3-Feature-min", 1)
    _check_contract(fold)
    for name, (nq, nd, counts) in OHSUMED_FOLD1.items():
        s = getattr(fold, name)
        assert s.X.shape == (nd, 45)
        assert s.n_queries == nq
        assert tuple(np.bincount(s.y, minlength=3)) == counts
    # within a fold the qid sets are disjoint
    sets = [set(np.unique(getattr(fold, n).qid)) for n in ("train", "vali", "test")]
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert fold.max_label == 2  # folder path: largest label seen


def test_ohsumed_by_name_uses_the_official_layout(shared_data, tmp_path):
    home = tmp_path / "home"
    (home / "OHSUMED").mkdir(parents=True)
    os.symlink(shared_data / "OHSUMED-LETOR3-Feature-min", home / "OHSUMED" / "Feature-min")
    assert available_folds("ohsumed", data_dir=home) == [1, 2, 3, 4, 5]
    assert dataset_present("ohsumed", home) == (True, home / "OHSUMED" / "Feature-min")
    fold = load_fold("ohsumed", 2, data_dir=home)
    assert fold.dataset == "ohsumed" and fold.index == 2 and fold.max_label == 2
    # README: Fold2 test = T2 (21 queries, 2570 docs), Fold2 vali = Fold1 test.
    assert fold.test.X.shape == (2570, 45) and fold.test.n_queries == 21
    fold1 = load_fold("ohsumed", 1, data_dir=home)
    assert fold.vali.fingerprint == fold1.test.fingerprint


def test_lightgbm_example_via_query_files(shared_data, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(shared_data / "LightGBM-lambdarank-example", home / "lightgbm-example")
    fold = load_fold("lightgbm-example", 1, data_dir=home)
    _check_contract(fold)
    assert fold.vali is None and fold.max_label == 4
    assert fold.train.X.shape == (3005, 300) and fold.train.n_queries == 201
    assert fold.test.X.shape == (768, 300) and fold.test.n_queries == 50
    assert tuple(np.bincount(fold.train.y)) == (645, 1211, 858, 222, 69)
    sizes = np.diff(query_boundaries(fold.train.qid))
    assert sizes.min() == 1 and sizes.max() == 27 and np.median(sizes) == 15
    # the same folder also works as a plain path
    by_path = load_fold(shared_data / "LightGBM-lambdarank-example", 1)
    assert by_path.train.X.shape == (3005, 300)  # column 300 occurs, so inferred width = 300
    assert by_path.train.fingerprint == fold.train.fingerprint


def test_mslr_subset_through_a_path_with_136_features(shared_data, tmp_path):
    src = shared_data / "MSLR-WEB10K-subset-LtRjl" / "train_subset.txt.xz"
    (tmp_path / "Fold1").mkdir()
    shutil.copy(src, tmp_path / "Fold1" / "train.txt.xz")
    shutil.copy(src, tmp_path / "Fold1" / "test.txt.xz")
    fold = load_fold(str(tmp_path), 1, options={"n_features": 136})
    _check_contract(fold)
    assert fold.train.X.shape == (355, 136) and fold.vali is None
    assert list(np.unique(fold.train.qid)) == [13114, 24052]
    assert tuple(np.bincount(fold.train.y)) == (103, 106, 27, 40, 79)
    assert fold.train.X.max() > 1e6  # raw MSLR features, values up to 1.6e6


def test_cached_fingerprint_equals_recomputed(shared_data):
    fold = load_fold(shared_data / "OHSUMED-LETOR3-Feature-min", 3)
    for s in (fold.train, fold.vali, fold.test):
        assert s.fingerprint == fingerprint_arrays(np.array(s.X), s.y, s.qid)


@pytest.mark.parametrize(
    "names",
    [
        ("train.txt", "vali.txt", "test.txt"),
        ("trainingset.txt", "validationset.txt", "testset.txt"),
    ],
)
@pytest.mark.parametrize("fold_dirs", [True, False])
def test_folder_layouts_under_either_naming(tmp_path, names, fold_dirs):
    folds = (1, 2, 3) if fold_dirs else (1,)
    make_letor_dir(tmp_path, names=names, folds=folds, fold_dirs=fold_dirs)
    assert available_folds(tmp_path) == list(folds)
    fold = load_fold(tmp_path, folds[-1])
    _check_contract(fold)
    assert fold.train.n_queries == 3 and fold.vali.n_queries == 3
    assert list(np.unique(fold.test.qid)) == [21, 22, 23]


def test_folder_n_features_option_and_inferred_width(tmp_path):
    make_letor_dir(tmp_path, fold_dirs=False, n_features=5)
    write_lines(tmp_path / "test.txt", good_lines(n_features=3))
    fold = load_fold(tmp_path, 1)
    assert fold.train.X.shape[1] == fold.test.X.shape[1] == 5  # padded to the widest split
    assert not fold.test.X[:, 3:].any()
    wide = load_fold(tmp_path, 1, options={"n_features": 8})
    assert wide.train.X.shape[1] == 8
    with pytest.raises(DataError, match="beyond the 4 features"):
        load_fold(tmp_path, 1, options={"n_features": 4})


def test_named_dataset_missing_says_where_to_download_and_put_files(tmp_path):
    with pytest.raises(DatasetNotFoundError) as info:
        load_fold("mslr30k", 1, data_dir=tmp_path)
    msg = str(info.value)
    assert f"{tmp_path / 'MSLR-WEB30K'} does not exist" in msg
    assert "https://www.microsoft.com/en-us/research/project/mslr/" in msg
    for name in ("train.txt", "vali.txt", "test.txt"):
        assert str(tmp_path / "MSLR-WEB30K" / "Fold1" / name) in msg
    assert "set by --data-dir" in msg
    assert dataset_present("mslr30k", tmp_path) == (False, tmp_path / "MSLR-WEB30K")
    with pytest.raises(DatasetNotFoundError):
        available_folds("mslr30k", data_dir=tmp_path)


def test_named_dataset_missing_one_file_names_that_file(tmp_path):
    make_letor_dir(tmp_path / "MQ2008", folds=(1, 2), n_features=46)
    (tmp_path / "MQ2008" / "Fold2" / "vali.txt").unlink()
    assert available_folds("mq2008", data_dir=tmp_path) == [1]
    with pytest.raises(DatasetNotFoundError) as info:
        load_fold("mq2008", 2, data_dir=tmp_path)
    assert f"{tmp_path / 'MQ2008' / 'Fold2' / 'vali.txt'} does not exist" in str(info.value)


def test_lightgbm_example_missing_query_file(tmp_path):
    d = tmp_path / "lightgbm-example"
    write_lines(d / "rank.train", ["1 1:0.5"])
    write_lines(d / "rank.train.query", ["1"])
    write_lines(d / "rank.test", ["1 1:0.5"])
    with pytest.raises(DatasetNotFoundError, match=r"rank\.test\.query does not exist"):
        load_fold("lightgbm-example", 1, data_dir=tmp_path)


def test_missing_folder_path(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="no such folder"):
        load_fold(str(tmp_path / "absent") + "/", 1)
    with pytest.raises(DatasetNotFoundError, match="no LETOR layout found"):
        load_fold(tmp_path, 1)


def test_folder_without_test_split(tmp_path):
    write_lines(tmp_path / "train.txt", good_lines())
    with pytest.raises(DatasetNotFoundError, match="no test file"):
        load_fold(tmp_path, 1)


def test_plain_and_compressed_copies_of_one_file_are_ambiguous(tmp_path):
    make_letor_dir(tmp_path, fold_dirs=False)
    write_lines(tmp_path / "train.txt", good_lines(), ".gz")
    with pytest.raises(DataError, match="both train.txt and train.txt.gz exist"):
        load_fold(tmp_path, 1)


@pytest.mark.parametrize("compression", [".gz", ".bz2", ".xz"])
def test_compressed_folder_equals_plain_folder(tmp_path, compression):
    plain = load_fold(make_letor_dir(tmp_path / "p"), 1)
    comp = load_fold(make_letor_dir(tmp_path / "c", compression=compression), 1)
    assert plain.fingerprints() == comp.fingerprints()


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UnknownDatasetError) as info:
        load_fold("mslr3k", 1)
    err = info.value
    assert "mslr30k" in err.suggestions and "mslr10k" in err.suggestions
    assert "Did you mean" in str(err) and "ohsumed" in str(err)
    with pytest.raises(UnknownDatasetError):
        get_spec("nonsense")


def test_data_home_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("LTR_BENCH_DATA", str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("LTR_BENCH_DATA")
    assert resolve_data_dir() == resolve_data_dir("~/ltr_bench_data")
    assert str(resolve_data_dir()).endswith("ltr_bench_data") and "~" not in str(resolve_data_dir())
    make_letor_dir(tmp_path / "env" / "MQ2008", n_features=46)
    monkeypatch.setenv("LTR_BENCH_DATA", str(tmp_path / "env"))
    assert load_fold("mq2008", 1).train.X.shape == (12, 46)


def test_options_are_checked():
    with pytest.raises(DataError, match="has no option 'n_querys'"):
        load_fold("synthetic", 1, options={"n_querys": 10})
    with pytest.raises(DataError, match="must be a finite int"):
        load_fold("synthetic", 1, options={"n_queries": "many"})
    with pytest.raises(DataError, match="has no option 'n_features'; allowed options: query_norm"):
        load_fold("mslr30k", 1, options={"n_features": 3})
    with pytest.raises(DataError, match="folds 1..5, not 6"):
        load_fold("synthetic", 6)


def test_dataset_identity_is_json_and_complete(tmp_path):
    import json

    ident = dataset_identity("synthetic", seed=3, options={"n_queries": "50"})
    assert ident["seed"] == 3 and ident["options"]["n_queries"] == 50
    assert ident["options"]["n_features"] == get_spec("synthetic").options["n_features"]
    json.dumps(ident)
    assert dataset_identity("mslr30k", data_dir=tmp_path)["path"] == str(
        (tmp_path / "MSLR-WEB30K").resolve()
    )
    make_letor_dir(tmp_path / "d")
    assert dataset_identity(tmp_path / "d")["kind"] == "path"
    assert available_folds("wine") == list(range(1, 11))
    assert available_folds("gauss-10", options={"n_folds": 3}) == [1, 2, 3]
    assert available_folds("synthetic") == [1, 2, 3, 4, 5]
