"""The dataset registry holds what the issue asks for."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ltr_bench.data import DatasetSpec, get_spec, list_datasets

EXPECTED = {  # name: (n_features, label_max, n_folds, has_vali, a file of fold 1)
    "mslr30k": (136, 4, 5, True, "MSLR-WEB30K/Fold1/vali.txt"),
    "mslr10k": (136, 4, 5, True, "MSLR-WEB10K/Fold1/train.txt"),
    "mq2008": (46, 2, 5, True, "MQ2008/Fold1/test.txt"),
    "mq2007": (46, 2, 5, True, "MQ2007/Fold1/test.txt"),
    "ohsumed": (45, 2, 5, True, "OHSUMED/Feature-min/Fold1/trainingset.txt"),
    "yahoo-set1": (700, 4, 1, True, "ltrc_yahoo/set1.valid.txt"),
    "yahoo-set2": (700, 4, 1, True, "ltrc_yahoo/set2.train.txt"),
    "istella-s": (220, 4, 1, True, "istella-s/sample/vali.txt"),
    "lightgbm-example": (300, 4, 1, False, "lightgbm-example/rank.test"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_downloaded_dataset_specs(name):
    spec = get_spec(name)
    nf, lmax, nfolds, has_vali, one_file = EXPECTED[name]
    assert (spec.n_features, spec.label_min, spec.label_max, spec.n_folds, spec.has_vali) == (
        nf,
        0,
        lmax,
        nfolds,
        has_vali,
    )
    assert spec.kind == "letor" and spec.homepage.startswith("https://") and spec.citation
    files = spec.fold_files(Path("/home"), 1)
    assert Path("/home") / one_file in files.values()
    assert spec.layout.startswith("<data home>/")


def test_generated_and_qbe_specs_and_registry():
    names = [s.name for s in list_datasets()]
    for n in ("synthetic", "gauss-10", "gauss-50", "gauss-100", "wine", "wdbc"):
        assert n in names
    assert get_spec("synthetic").kind == "generated"
    assert {get_spec(n).kind for n in ("wine", "wdbc", "gauss-50")} == {"qbe"}
    assert get_spec("wine").options["test_size"] == 0.2
    assert get_spec("wine").options["n_folds"] == 10
    assert get_spec("MSLR30K") is get_spec("mslr30k")
    assert dataclasses.is_dataclass(DatasetSpec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_spec("wine").name = "x"
