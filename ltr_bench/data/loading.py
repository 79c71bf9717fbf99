"""Loading folds: named datasets, folder paths, generated and query-by-example data.

``load_fold(dataset, fold)`` is the one entry point the harness uses. ``dataset`` is a
registered name (:func:`~ltr_bench.data.specs.list_datasets`) or a folder path. A folder works
for any LETOR data laid out either as ``Fold*/`` sub-folders or as one set of split files,
named ``train.txt`` / ``vali.txt`` (or ``valid.txt``) / ``test.txt``, or
``trainingset.txt`` / ``validationset.txt`` / ``testset.txt``, or LightGBM-style
``rank.train`` / ``rank.test`` with ``.query`` files; any of them may be ``.gz``, ``.bz2`` or
``.xz``. For a folder, ``options`` may set ``n_features`` (else the largest index in the
fold's files), ``label_max`` and ``query_norm``. Without ``label_max`` the label range comes
from the training split: its labels must be integers in ``0..``:data:`FOLDER_LABEL_CAP`, the
validation and test labels must lie in ``0..max(training labels)`` (a label outside is an
error naming the file and line), and ``Fold.max_label`` (ERR's top grade) is the largest
training label: never anything read from the test split.

Every LETOR-format dataset (named or a folder) takes the option ``query_norm`` (default
false): true gives LETOR's ``QueryLevelNorm`` version of the features, each feature min-max
scaled within each query (:func:`ltr_bench.data.normalise.query_level_norm`), computed
after parsing (the parsed-data cache keeps the files' own values) and applied to every split
the same way.

A string is a name when it is registered; otherwise a string that names an existing folder
(or contains a path separator, or starts with ``.`` or ``~``) is a path.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.data.cache import cache_key, file_sha256, load_entry, source_signature, write_entry
from ltr_bench.data.errors import DataError, DatasetNotFoundError, DataWarning
from ltr_bench.data.layout import (
    BUILTIN_DIR,
    as_path,
    generic_files,
    generic_layout,
    named_files,
)
from ltr_bench.data.normalise import normalised
from ltr_bench.data.options import folder_options, resolve_options
from ltr_bench.data.reader import read_letor_file
from ltr_bench.data.specs import (
    DatasetSpec,
    get_spec,
    resolve_cache_dir,
    resolve_data_dir,
)
from ltr_bench.data.subsample import SUBSAMPLE_OPTIONS, subsampled
from ltr_bench.folds import Fold, Split, fingerprint_arrays
from ltr_bench.progress import report_progress

__all__ = ["available_folds", "dataset_identity", "dataset_present", "load_fold"]

#: Largest label a folder dataset's training split may hold without the ``label_max``
#: option: graded relevance in LETOR data is 0..4 (Yahoo, MSLR) or 0..2; a larger value is
#: almost always a wrong column, and LightGBM's default gain table stops at 30.
FOLDER_LABEL_CAP = 31


# ----------------------------------------------------------------------------- LETOR splits


def _progress_fn(progress):
    return progress if progress is not None else report_progress


def load_letor_split(
    name: str,
    data_file: Path,
    query_file: Path | None,
    *,
    n_features: int | None,
    label_min: int,
    label_max: int | None,
    context: str,
    cache_dir=None,
    progress=None,
) -> Split:
    """One split, from the cache if an entry for these exact source files exists.

    The cache key holds :func:`~ltr_bench.data.cache.source_signature` of the data (and
    ``.query``) file plus everything that changes the parsed result (``n_features``, label
    range); see :mod:`ltr_bench.data.cache` for why. The split's fingerprint is computed once
    when the entry is written and stored with it. The documents' ids of the lines' comments
    (:mod:`ltr_bench.data.docids`), when every line has one, come back as
    ``split.extras["docid"]``. If the cache folder cannot be written, the
    data is parsed in memory and a :class:`DataWarning` says so.
    """
    key = cache_key(
        {
            "kind": "letor",
            # entries hold the documents' ids since this field: older ones are never found
            "docids": 1,
            "src": source_signature(data_file),
            "query": None if query_file is None else source_signature(query_file),
            "n_features": n_features,
            "label_min": label_min,
            "label_max": label_max,
        }
    )
    parse_kw = dict(
        n_features=n_features,
        label_min=label_min,
        label_max=label_max,
        query_file=query_file,
        context=context,
        progress=progress,
    )
    cache = resolve_cache_dir(cache_dir)
    loaded = load_entry(cache, "letor", key, verify=_verify_split_entry)
    if loaded is None:

        def build(writer):
            if n_features is None:
                parsed = read_letor_file(data_file, **parse_kw)
                writer.save("X", parsed.X)
            else:
                xpath = writer.path("X", np.float64)
                with open(xpath, "wb") as fh:
                    parsed = read_letor_file(data_file, x_out=fh, **parse_kw)
                shape = (parsed.n_rows, parsed.n_features)
                if parsed.order is not None:
                    src = np.memmap(xpath, dtype=np.float64, mode="r", shape=shape)
                    dst = np.memmap(
                        xpath.with_suffix(".tmp"), dtype=np.float64, mode="w+", shape=shape
                    )
                    step = 65536
                    for i in range(0, shape[0], step):
                        dst[i : i + step] = src[parsed.order[i : i + step]]
                    dst.flush()
                    del src, dst
                    os.replace(xpath.with_suffix(".tmp"), xpath)
                writer.declare("X", np.float64, shape)
            writer.save("y", parsed.y)
            writer.save("qid", parsed.qid)
            if parsed.docid is not None:
                writer.save("docid", parsed.docid)
            X = np.memmap(
                writer.path("X", np.float64),
                dtype=np.float64,
                mode="r",
                shape=(parsed.n_rows, parsed.n_features),
            )
            fp = fingerprint_arrays(X, parsed.y, parsed.qid)
            del X
            sources = {str(data_file): file_sha256(data_file)}
            if query_file is not None:
                sources[str(query_file)] = file_sha256(query_file)
            return {
                "fingerprint": fp,
                "docid_sha256": None if parsed.docid is None else _docid_sha256(parsed.docid),
                "warnings": parsed.warnings,
                "source": str(data_file),
                "query_file": str(query_file or ""),
                "source_sha256": sources,
            }

        try:
            loaded = write_entry(cache, "letor", key, build)
        except OSError as exc:
            warnings.warn(
                f"{cache}: cannot write the parsed-data cache ({exc}); the data is "
                "parsed in memory and will be parsed again next time. Set "
                "LTR_BENCH_CACHE to a writable folder.",
                DataWarning,
                stacklevel=3,
            )
            parsed = read_letor_file(data_file, **parse_kw)
            assert parsed.X is not None  # no x_out given: the rows are in memory
            extras = {} if parsed.docid is None else {"docid": parsed.docid}
            return Split(name=name, X=parsed.X, y=parsed.y, qid=parsed.qid, extras=extras)
    else:
        for msg in loaded[1].get("warnings", []):
            warnings.warn(msg + " (from the parsed-data cache)", DataWarning, stacklevel=3)
    arrays, meta = loaded
    return Split(
        name=name,
        X=arrays["X"],
        y=arrays["y"],
        qid=arrays["qid"],
        extras={"docid": arrays["docid"]} if "docid" in arrays else {},
        _fingerprint=meta.get("fingerprint"),
    )


def _docid_sha256(docid: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(docid).tobytes()).hexdigest()


def _verify_split_entry(arrays: dict, meta: dict) -> str | None:
    """What is wrong with a cached split (None: its arrays still have the fingerprint, and
    its document ids the digest, recorded when the entry was written; the ids are not part
    of the split's fingerprint: they name rows, they are not data a ranker sees)."""
    fp = fingerprint_arrays(arrays["X"], arrays["y"], arrays["qid"])
    if fp != meta.get("fingerprint"):
        return "its arrays no longer have the fingerprint recorded when it was written"
    if ("docid" in arrays) != bool(meta.get("docid_sha256")) or (
        "docid" in arrays and _docid_sha256(arrays["docid"]) != meta["docid_sha256"]
    ):
        return "its document ids no longer have the digest recorded when it was written"
    return None


def _warn_label_gaps(path: Path, y: np.ndarray) -> None:
    """Warn when the training labels skip grades (0, 1, 2, 7): the top grade, which sets
    ERR's normaliser, is then probably a typo."""
    counts = np.bincount(np.asarray(y, dtype=np.int64))
    missing = np.flatnonzero(counts == 0)
    if missing.size and counts.size > 2:
        top = counts.size - 1
        warnings.warn(
            f"{path}: the training labels go up to {top} but no row has the "
            f"grade(s) {', '.join(map(str, missing[:10].tolist()))}; {top} is "
            "ERR's top grade for this dataset. Check the labels, or set the dataset "
            "option label_max.",
            DataWarning,
            stacklevel=3,
        )


def _letor_fold(
    dataset_name: str,
    files: dict,
    fold: int,
    *,
    n_features,
    label_min,
    label_max,
    context,
    cache_dir,
    progress,
) -> Fold:
    splits = {}
    train_max = None
    for split in sorted(files, key=lambda s: s != "train"):  # train first: it sets the range
        f, q = files[split]
        if label_max is not None:
            lmax, ctx = label_max, context
        elif split == "train":
            lmax = FOLDER_LABEL_CAP
            ctx = (
                f"{context} (without the dataset option label_max, training labels may "
                f"be 0..{FOLDER_LABEL_CAP})"
            )
        else:
            lmax = train_max
            ctx = (
                f"{context} (the range of its training split {files['train'][0].name}; "
                "set the dataset option label_max if the training split lacks the top "
                "grade)"
            )
        splits[split] = load_letor_split(
            split,
            f,
            q,
            n_features=n_features,
            label_min=label_min,
            label_max=lmax,
            context=ctx,
            cache_dir=cache_dir,
            progress=_progress_fn(progress),
        )
        if split == "train":
            train_max = max(1, int(splits[split].y.max()))
            if label_max is None:
                _warn_label_gaps(f, splits[split].y)
    width = max(s.X.shape[1] for s in splits.values())
    for split, s in splits.items():
        if s.X.shape[1] < width:  # only when n_features was inferred per file
            X = np.zeros((s.n_docs, width))
            X[:, : s.X.shape[1]] = s.X
            splits[split] = Split(name=s.name, X=X, y=s.y, qid=s.qid, extras=s.extras)
    max_label = train_max if label_max is None else label_max
    assert max_label is not None  # the training split is read first and sets train_max
    return Fold(
        dataset=dataset_name,
        index=fold,
        train=splits["train"],
        test=splits["test"],
        vali=splits.get("vali"),
        max_label=max_label,
    )


# ----------------------------------------------------------------------------- public API


def _spec_of(spec_or_name) -> DatasetSpec:
    return spec_or_name if isinstance(spec_or_name, DatasetSpec) else get_spec(spec_or_name)


def dataset_present(spec_or_name, data_dir=None) -> tuple[bool, Path]:
    """``(present, root)``: whether fold 1's files of a downloaded dataset exist, and the
    folder they are expected in. Generated and query-by-example data: ``(True, data home)``."""
    spec = _spec_of(spec_or_name)
    home = resolve_data_dir(data_dir)
    if spec.kind != "letor":
        return True, home
    try:
        files = named_files(spec, data_dir, 1)
    except DataError:
        return False, home / spec.root
    first = next(iter(files.values()))[0]
    root = BUILTIN_DIR / spec.root if BUILTIN_DIR in first.parents else home / spec.root
    return True, root


def available_folds(dataset, *, data_dir=None, options=None) -> list[int]:
    """1-based fold numbers that can be loaded.

    Downloaded data: the official folds whose files are all present (raises
    :class:`DatasetNotFoundError` when none is). Folder path: the ``Fold*`` sub-folders (or
    ``[1]``). ``synthetic``: 1..5. Query-by-example: 1..``n_folds`` (option, default 10).
    """
    path = as_path(dataset)
    if path is not None:
        return list(generic_layout(path))
    spec = get_spec(dataset)
    if spec.kind == "letor":
        folds = []
        for k in range(1, spec.n_folds + 1):
            try:
                named_files(spec, data_dir, k)
            except DatasetNotFoundError:
                continue
            folds.append(k)
        if not folds:
            named_files(spec, data_dir, 1)  # raises the full "where to download" message
        return folds
    opts = resolve_options(spec, options)
    if spec.kind == "generated":
        return list(range(1, spec.n_folds + 1))
    return list(range(1, int(opts["n_folds"]) + 1))


def dataset_identity(dataset, *, data_dir=None, seed: int = 0, options=None) -> dict:
    """JSON-able identity of a dataset for resume keys and run parameters.

    Downloaded: ``{"name", "kind": "letor", "path"}``; folder: ``{"name", "kind": "path",
    "path", "options"}``; generated/qbe: ``{"name", "kind", "seed", "options"}`` with every
    option resolved (defaults included), so equal identities mean equal data.
    """
    path = as_path(dataset)
    if path is not None:
        return {
            "name": path.resolve().name,
            "kind": "path",
            "path": str(path.resolve()),
            "options": folder_options(options),
        }
    spec = get_spec(dataset)
    if spec.kind == "letor":
        ident: dict[str, Any] = {
            "name": spec.name,
            "kind": "letor",
            "path": str((resolve_data_dir(data_dir) / spec.root).resolve()),
        }
        # options only when set to other than their defaults: identities (and so resume keys)
        # of runs on the files as they are stay what they were before options existed
        changed = {k: v for k, v in resolve_options(spec, options).items() if v != spec.options[k]}
        if changed:
            ident["options"] = changed
        if any(changed.get(k) for k in SUBSAMPLE_OPTIONS):  # the draw depends on the seed
            ident["seed"] = int(seed)
        return ident
    return {
        "name": spec.name,
        "kind": spec.kind,
        "seed": int(seed),
        "options": resolve_options(spec, options),
    }


def load_fold(
    dataset,
    fold: int,
    *,
    data_dir=None,
    cache_dir=None,
    seed: int = 0,
    options: dict | None = None,
    progress=None,
) -> Fold:
    """Load fold ``fold`` (1-based) of ``dataset`` (a registered name or a folder path).

    Returns a :class:`~ltr_bench.folds.Fold`: ``X`` float64 C-contiguous (read-only memory
    maps for cached data), ``y`` and ``qid`` int64 with each query's rows contiguous,
    ``vali`` None when the dataset has no validation split, ``max_label`` the top grade.
    ``seed`` and ``options`` apply to generated and query-by-example data, and ``seed`` to
    the query subsamples of LETOR data (``train_queries`` / ``test_queries``). ``progress`` is
    ``callable(done, total, message)`` for long parses and generation (default:
    :func:`ltr_bench.progress.report_progress`).

    Raises :class:`UnknownDatasetError` (unknown name), :class:`DatasetNotFoundError`
    (missing files: says where to download and where to put them), :class:`DataError` (bad
    content: file:line, what, how to fix).
    """
    fold = int(fold)
    path = as_path(dataset)
    if path is not None:
        opts = folder_options(options)
        files = generic_files(path, fold)
        loaded = _letor_fold(
            str(dataset),
            files,
            fold,
            n_features=opts["n_features"],
            label_min=0,
            label_max=opts["label_max"],
            context=f"the data in {path}",
            cache_dir=cache_dir,
            progress=progress,
        )
        return normalised(loaded) if opts.get("query_norm") else loaded
    spec = get_spec(dataset)
    if spec.kind == "letor":
        opts = resolve_options(spec, options)
        files = named_files(spec, data_dir, fold)
        loaded = _letor_fold(
            spec.name,
            files,
            fold,
            n_features=spec.n_features,
            label_min=spec.label_min,
            label_max=spec.label_max,
            context=spec.name,
            cache_dir=cache_dir,
            progress=progress,
        )
        loaded = subsampled(loaded, opts, seed)
        return normalised(loaded) if opts.get("query_norm") else loaded
    opts = resolve_options(spec, options)
    if spec.kind == "generated":
        if not 1 <= fold <= 5:
            raise DataError(f"dataset {spec.name!r} has folds 1..5, not {fold}.")
        from ltr_bench.data.generated import synthetic_fold

        return synthetic_fold(
            opts,
            int(seed),
            fold,
            cache_dir=resolve_cache_dir(cache_dir),
            progress=_progress_fn(progress),
        )
    # query-by-example
    if fold < 1:
        raise DataError(f"dataset {spec.name!r}: fold numbers start at 1, got {fold}.")
    if not 0.0 < float(opts["test_size"]) < 1.0:
        raise DataError(f"option test_size={opts['test_size']} must be between 0 and 1.")
    if spec.name.startswith("gauss-"):
        from ltr_bench.data.generated import gauss_fold

        return gauss_fold(spec.name, opts, int(seed), fold)
    from ltr_bench.data.qbe import load_qbe_points, qbe_fold

    X, classes = load_qbe_points(spec.name)
    return qbe_fold(
        spec.name,
        X,
        classes,
        fold,
        seed=int(seed),
        test_size=float(opts["test_size"]),
        noise_features=int(opts["noise_features"]),
    )
