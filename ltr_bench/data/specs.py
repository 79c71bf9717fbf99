"""The registry of dataset specs and where data and caches live.

A :class:`DatasetSpec` says what a dataset is (official name, homepage, citation), what it
holds (feature count, label range, folds) and, for downloaded data, the layout of its official
archive under the data home. Generated (``synthetic``) and query-by-example data (``wine``,
``wdbc``, ``gauss-*``) need no files; their ``options`` map each allowed option to its default.

Data home: ``--data-dir``, else ``$LTR_BENCH_DATA``, else ``~/ltr_bench_data``.
Cache folder: the argument, else ``$LTR_BENCH_CACHE``, else ``~/.cache/ltr_bench``; kept apart
from the data home because a data folder may be read-only or shared.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr_bench.data.errors import UnknownDatasetError

__all__ = [
    "COMPRESSION_SUFFIXES",
    "DatasetSpec",
    "get_spec",
    "list_datasets",
    "resolve_cache_dir",
    "resolve_data_dir",
]

#: Every data file may also be stored compressed under its name plus one of these.
COMPRESSION_SUFFIXES = ("", ".gz", ".bz2", ".xz")


@dataclass(frozen=True)
class DatasetSpec:
    """What a dataset is and where its files go.

    name: registry name (``mslr30k``). title: official name. homepage: where to download it (or
    where it comes from). citation: what to cite. n_features: row width of ``X`` (for
    query-by-example data: ``2 * d``, query block then document block; for generated data: the
    default option's width). label_min/label_max: the label range (``label_max`` is the
    ``Fold.max_label``). n_folds: official folds (generated/qbe: default fold count).
    kind: ``"letor"`` (files under the data home), ``"generated"`` (LETOR-like generated) or
    ``"qbe"`` (query-by-example rows ``[query, document]``, built in memory).
    layout: human text of the expected files under the data home. has_vali: a validation
    split exists. options: allowed option names -> defaults. Generated and query-by-example
    data: their generator's settings. LETOR-format data (``kind="letor"``):
    ``query_norm`` (default false; true: LETOR's ``QueryLevelNorm`` features, each feature
    min-max scaled within each query as ``(x - min_q) / (max_q - min_q)``, 0 where constant
    in the query; :func:`ltr_bench.data.loading.query_level_norm`). The LETOR 3.0 OHSUMED
    baseline table was computed on QueryLevelNorm features; the files ltr-bench reads for
    ``ohsumed`` are the ``Feature-min`` (raw) version, so set it to compare with that table.
    ``train_queries`` / ``test_queries`` (default 0, every query): that many whole queries drawn
    from the training / test split with the run's seed (:mod:`ltr_bench.data.subsample`), as a
    paper that used a subset of a large set did.

    The remaining fields describe the official archive for the loader: ``root`` (folder under
    the data home), ``fold_dir`` (per-fold sub-folder template with ``{k}``, or ``""`` for a
    single fold), ``split_files`` ((split, file name) pairs, split in train/vali/test) and
    ``query_files`` (group sizes come from ``<file>.query`` files instead of ``qid:``).
    """

    name: str
    title: str
    homepage: str
    citation: str
    n_features: int
    label_min: int
    label_max: int
    n_folds: int
    kind: str
    layout: str
    has_vali: bool
    options: dict = field(default_factory=dict)
    root: str = ""
    fold_dir: str = ""
    split_files: tuple = ()
    query_files: bool = False

    def fold_files(self, data_dir: Path, fold: int) -> dict[str, Path]:
        """Expected (uncompressed-name) path of each split of ``fold`` under ``data_dir``."""
        base = Path(data_dir) / self.root
        if self.fold_dir:
            base = base / self.fold_dir.format(k=fold)
        return {split: base / fname for split, fname in self.split_files}


_LETOR4 = "Tao Qin and Tie-Yan Liu. Introducing LETOR 4.0 Datasets. arXiv:1306.2597, 2013."
_LETOR_SPLITS = (("train", "train.txt"), ("vali", "vali.txt"), ("test", "test.txt"))
_LETOR3_SPLITS = (
    ("train", "trainingset.txt"),
    ("vali", "validationset.txt"),
    ("test", "testset.txt"),
)


def _letor_layout(root: str, fold_dir: str, splits, n_folds: int, extra: str = "") -> str:
    names = ",".join(f for _, f in splits)
    folds = f"/{fold_dir.replace('{k}', f'{{1..{n_folds}}}')}" if fold_dir else ""
    text = f"<data home>/{root}{folds}/{{{names}}}"
    text += " (each file may also be .gz, .bz2 or .xz)"
    return text + extra


def _mslr(name: str, folder: str, size: str) -> DatasetSpec:
    return DatasetSpec(
        name=name,
        title=f"Microsoft Learning to Rank {folder}",
        homepage="https://www.microsoft.com/en-us/research/project/mslr/",
        citation=_LETOR4,
        n_features=136,
        label_min=0,
        label_max=4,
        n_folds=5,
        kind="letor",
        layout=_letor_layout(
            folder,
            "Fold{k}",
            _LETOR_SPLITS,
            5,
            f"; unzip {folder}.zip ({size}) into <data home>/{folder}/",
        ),
        has_vali=True,
        root=folder,
        fold_dir="Fold{k}",
        split_files=_LETOR_SPLITS,
        options=dict(LETOR_OPTIONS),
    )


def _mq(name: str, folder: str) -> DatasetSpec:
    return DatasetSpec(
        name=name,
        title=f"LETOR 4.0 {folder} (supervised ranking setting)",
        homepage="https://www.microsoft.com/en-us/research/project/letor-learning-rank-"
        "information-retrieval/letor-4-0/",
        citation=_LETOR4,
        n_features=46,
        label_min=0,
        label_max=2,
        n_folds=5,
        kind="letor",
        layout=_letor_layout(
            folder,
            "Fold{k}",
            _LETOR_SPLITS,
            5,
            f"; unpack {folder}.rar so that <data home>/{folder}/Fold1/ exists",
        ),
        has_vali=True,
        root=folder,
        fold_dir="Fold{k}",
        split_files=_LETOR_SPLITS,
        options=dict(LETOR_OPTIONS),
    )


def _yahoo(k: int) -> DatasetSpec:
    splits = (
        ("train", f"set{k}.train.txt"),
        ("vali", f"set{k}.valid.txt"),
        ("test", f"set{k}.test.txt"),
    )
    return DatasetSpec(
        name=f"yahoo-set{k}",
        title=f"Yahoo! Learning to Rank Challenge, Set {k} (C14)",
        homepage="https://webscope.sandbox.yahoo.com/catalog.php?datatype=c",
        citation="Olivier Chapelle and Yi Chang. Yahoo! Learning to Rank Challenge Overview. "
        "JMLR Workshop and Conference Proceedings 14, 2011.",
        n_features=700,
        label_min=0,
        label_max=4,
        n_folds=1,
        kind="letor",
        layout=_letor_layout(
            "ltrc_yahoo",
            "",
            splits,
            1,
            "; unpack the Webscope C14 archive into <data home>/ltrc_yahoo/",
        ),
        has_vali=True,
        root="ltrc_yahoo",
        fold_dir="",
        split_files=splits,
        options=dict(LETOR_OPTIONS),
    )


#: Options of every LETOR-format dataset (see :class:`DatasetSpec`).
LETOR_OPTIONS = {"query_norm": False, "train_queries": 0, "test_queries": 0}

SYNTHETIC_DEFAULTS: dict[str, Any] = {
    "n_queries": 300,
    "docs_per_query": 40,
    "n_features": 30,
    "n_informative": 10,
    "label_noise": 0.5,
    "feature_distribution": "normal",
}

QBE_DEFAULTS = {"test_size": 0.2, "n_folds": 10, "noise_features": 0}

_GAUSS_PER_CLASS = {10: 30, 50: 10, 100: 5}


def _gauss(n_classes: int) -> DatasetSpec:
    d = 10
    return DatasetSpec(
        name=f"gauss-{n_classes}",
        title=f"Gaussian multi-class synthetic data, {n_classes} classes "
        f"(L-GMML paper's Synthetic-{n_classes})",
        homepage="(generated; no download) Su, King & Lyu 2017, Section 4.3.1",
        citation="Yuxin Su, Irwin King and Michael Lyu. Learning to Rank Using Localized "
        "Geometric Mean Metrics. SIGIR 2017.",
        n_features=2 * d,
        label_min=0,
        label_max=1,
        n_folds=10,
        kind="qbe",
        layout="(generated in memory, no files)",
        has_vali=False,
        options={
            "n_classes": n_classes,
            "n_per_class": _GAUSS_PER_CLASS[n_classes],
            "n_features": d,
            "overlap": 1.0,
            **QBE_DEFAULTS,
        },
    )


_SPECS: dict[str, DatasetSpec] = {}


def _register(spec: DatasetSpec) -> None:
    _SPECS[spec.name] = spec


for _s in (
    _mslr("mslr30k", "MSLR-WEB30K", "3.7 GB"),
    _mslr("mslr10k", "MSLR-WEB10K", "1.2 GB"),
    _mq("mq2008", "MQ2008"),
    _mq("mq2007", "MQ2007"),
    DatasetSpec(
        name="ohsumed",
        title="OHSUMED (LETOR 3.0, Feature-min)",
        homepage="https://www.microsoft.com/en-us/research/project/letor-learning-rank-"
        "information-retrieval/letor-3-0/",
        citation="Tao Qin, Tie-Yan Liu, Jun Xu and Hang Li. LETOR: A benchmark collection for "
        "research on learning to rank for information retrieval. Information "
        "Retrieval 13(4), 2010.",
        n_features=45,
        label_min=0,
        label_max=2,
        n_folds=5,
        kind="letor",
        layout=_letor_layout(
            "OHSUMED/Feature-min",
            "Fold{k}",
            _LETOR3_SPLITS,
            5,
            "; from the LETOR 3.0 OHSUMED archive keep OHSUMED/Feature-min/",
        ),
        has_vali=True,
        root="OHSUMED/Feature-min",
        fold_dir="Fold{k}",
        split_files=_LETOR3_SPLITS,
        options=dict(LETOR_OPTIONS),
    ),
    _yahoo(1),
    _yahoo(2),
    DatasetSpec(
        name="istella-s",
        title="Istella-S LETOR (sample)",
        homepage="https://istella.ai/datasets/letor-dataset/",
        citation="Claudio Lucchese, Franco Maria Nardini, Salvatore Orlando, Raffaele Perego, "
        "Fabrizio Silvestri and Salvatore Trani. Post-Learning Optimization of Tree "
        "Ensembles for Efficient Ranking. SIGIR 2016.",
        n_features=220,
        label_min=0,
        label_max=4,
        n_folds=1,
        kind="letor",
        layout=_letor_layout(
            "istella-s/sample",
            "",
            _LETOR_SPLITS,
            1,
            "; unpack istella-s-letor.tar.gz into <data home>/istella-s/",
        ),
        has_vali=True,
        root="istella-s/sample",
        fold_dir="",
        split_files=_LETOR_SPLITS,
        options=dict(LETOR_OPTIONS),
    ),
    DatasetSpec(
        name="lightgbm-example",
        title="LightGBM examples/lambdarank data",
        homepage="https://github.com/microsoft/LightGBM/tree/master/examples/lambdarank",
        citation="Guolin Ke et al. LightGBM: A Highly Efficient Gradient Boosting Decision "
        "Tree. NeurIPS 2017. (Origin of the data itself is not stated.)",
        n_features=300,
        label_min=0,
        label_max=4,
        n_folds=1,
        kind="letor",
        layout="<data home>/lightgbm-example/{rank.train,rank.train.query,rank.test,"
        "rank.test.query} (each file may also be .gz, .bz2 or .xz); no qid: field, "
        "group sizes come from the .query files; no validation split",
        has_vali=False,
        root="lightgbm-example",
        fold_dir="",
        split_files=(("train", "rank.train"), ("test", "rank.test")),
        query_files=True,
        options=dict(LETOR_OPTIONS),
    ),
    DatasetSpec(
        name="synthetic",
        title="ltr-bench synthetic LETOR-like data",
        homepage="(generated; no download)",
        citation="ltr-bench generator (ltr_bench.data.generated); deterministic from the seed.",
        n_features=SYNTHETIC_DEFAULTS["n_features"],
        label_min=0,
        label_max=4,
        n_folds=5,
        kind="generated",
        layout="(generated, no files; large sizes are cached)",
        has_vali=True,
        options=dict(SYNTHETIC_DEFAULTS),
    ),
    _gauss(10),
    _gauss(50),
    _gauss(100),
    DatasetSpec(
        name="wine",
        title="UCI Wine, query-by-example (scikit-learn load_wine)",
        homepage="https://archive.ics.uci.edu/dataset/109/wine (bundled with scikit-learn)",
        citation="Brian McFee and Gert Lanckriet. Metric Learning to Rank. ICML 2010 "
        "(protocol, Section 5.1); data: Forina et al., UCI Wine.",
        n_features=26,
        label_min=0,
        label_max=1,
        n_folds=10,
        kind="qbe",
        layout="(bundled with scikit-learn, no files)",
        has_vali=False,
        options=dict(QBE_DEFAULTS),
    ),
    DatasetSpec(
        name="wdbc",
        title="UCI Breast Cancer Wisconsin (Diagnostic), query-by-example "
        "(scikit-learn load_breast_cancer)",
        homepage="https://archive.ics.uci.edu/dataset/17/breast+cancer+wisconsin+diagnostic "
        "(bundled with scikit-learn)",
        citation="Brian McFee and Gert Lanckriet. Metric Learning to Rank. ICML 2010 "
        "(protocol, Section 5.1); data: Street, Wolberg & Mangasarian 1993.",
        n_features=60,
        label_min=0,
        label_max=1,
        n_folds=10,
        kind="qbe",
        layout="(bundled with scikit-learn, no files)",
        has_vali=False,
        options=dict(QBE_DEFAULTS),
    ),
):
    _register(_s)


def list_datasets() -> list[DatasetSpec]:
    """All registered dataset specs, in registry order."""
    return list(_SPECS.values())


def get_spec(name: str) -> DatasetSpec:
    """The spec called ``name`` (case-insensitive); :class:`UnknownDatasetError` otherwise."""
    key = str(name).strip().lower()
    if key in _SPECS:
        return _SPECS[key]
    known = list(_SPECS)
    suggestions = difflib.get_close_matches(key, known, n=3, cutoff=0.5)
    msg = f"unknown dataset {name!r}."
    if suggestions:
        msg += " Did you mean: " + ", ".join(suggestions) + "?"
    msg += (
        " Known datasets: " + ", ".join(known) + ". A path to a folder of LETOR files "
        "(Fold*/ sub-folders or train/vali/test files) also works."
    )
    raise UnknownDatasetError(msg, name=str(name), suggestions=suggestions, known=known)


def resolve_data_dir(data_dir=None) -> Path:
    """``data_dir`` if given, else ``$LTR_BENCH_DATA``, else ``~/ltr_bench_data`` (expanded)."""
    if data_dir is None or str(data_dir) == "":
        data_dir = os.environ.get("LTR_BENCH_DATA") or "~/ltr_bench_data"
    return Path(data_dir).expanduser()


def resolve_cache_dir(cache_dir=None) -> Path:
    """``cache_dir`` if given, else ``$LTR_BENCH_CACHE``, else ``~/.cache/ltr_bench``."""
    if cache_dir is None or str(cache_dir) == "":
        cache_dir = os.environ.get("LTR_BENCH_CACHE") or "~/.cache/ltr_bench"
    return Path(cache_dir).expanduser()
