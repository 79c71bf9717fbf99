"""The LightGBM example data ships with the package: a real LETOR dataset with no download."""

from __future__ import annotations

import numpy as np

from ltr_bench.data import dataset_present, load_fold


def test_lightgbm_example_loads_from_the_package_with_an_empty_data_home(tmp_path):
    present, where = dataset_present("lightgbm-example", data_dir=tmp_path)
    assert present and where.name == "lightgbm-example" and tmp_path not in where.parents
    fold = load_fold("lightgbm-example", 1, data_dir=tmp_path, cache_dir=tmp_path / "cache")
    # LightGBM's rank.train / rank.test: 3005 / 768 documents, 300 feature columns
    assert fold.train.X.shape == (3005, 300) and fold.test.X.shape[0] == 768
    assert fold.vali is None and set(np.unique(fold.train.y)) <= {0, 1, 2, 3, 4}


def test_a_copy_in_the_data_home_takes_precedence(tmp_path):
    import shutil

    from ltr_bench.data.layout import BUILTIN_DIR

    shutil.copytree(BUILTIN_DIR / "lightgbm-example", tmp_path / "lightgbm-example")
    present, where = dataset_present("lightgbm-example", data_dir=tmp_path)
    assert present and where == tmp_path / "lightgbm-example"
