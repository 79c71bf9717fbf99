"""Loading folds: named datasets, folder paths, generated and query-by-example data.

``load_fold(dataset, fold)`` is the one entry point the harness uses. ``dataset`` is a
registered name (:func:`~ltr_bench.data.specs.list_datasets`) or a folder path. A folder works
for any LETOR data laid out either as ``Fold*/`` sub-folders or as one set of split files,
named ``train.txt`` / ``vali.txt`` (or ``valid.txt``) / ``test.txt``, or
``trainingset.txt`` / ``validationset.txt`` / ``testset.txt``, or LightGBM-style
``rank.train`` / ``rank.test`` with ``.query`` files; any of them may be ``.gz``, ``.bz2`` or
``.xz``. For a folder, ``options`` may set ``n_features`` (else the largest index in the
fold's files) and ``label_max``. Without ``label_max`` the label range comes from the
training split: its labels must be integers in ``0..``:data:`FOLDER_LABEL_CAP`, the
validation and test labels must lie in ``0..max(training labels)`` (a label outside is an
error naming the file and line), and ``Fold.max_label`` (ERR's top grade) is the largest
training label: never anything read from the test split.

A string is a name when it is registered; otherwise a string that names an existing folder
(or contains a path separator, or starts with ``.`` or ``~``) is a path.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np

from ltr_bench.data.cache import cache_key, file_sha256, load_entry, source_signature, write_entry
from ltr_bench.data.errors import (
    DataError,
    DatasetNotFoundError,
    DatasetOptionError,
    DataWarning,
)
from ltr_bench.data.generated import check_generated_options
from ltr_bench.data.reader import read_letor_file
from ltr_bench.data.specs import (
    _SPECS,
    COMPRESSION_SUFFIXES,
    DatasetSpec,
    get_spec,
    resolve_cache_dir,
    resolve_data_dir,
)
from ltr_bench.folds import Fold, Split, fingerprint_arrays
from ltr_bench.progress import report_progress

__all__ = ["available_folds", "dataset_identity", "dataset_present", "load_fold"]

_GENERIC_NAMES = {
    "train": ("train.txt", "trainingset.txt", "rank.train", "train"),
    "vali": ("vali.txt", "valid.txt", "validationset.txt", "rank.vali", "vali"),
    "test": ("test.txt", "testset.txt", "rank.test", "test"),
}
_FOLD_RE = re.compile(r"^fold(\d+)$", re.IGNORECASE)

#: Largest label a folder dataset's training split may hold without the ``label_max``
#: option: graded relevance in LETOR data is 0..4 (Yahoo, MSLR) or 0..2; a larger value is
#: almost always a wrong column, and LightGBM's default gain table stops at 30.
FOLDER_LABEL_CAP = 31


# ----------------------------------------------------------------------------- resolution


def _as_path(dataset) -> Path | None:
    """The folder path ``dataset`` denotes, or None when it is a dataset name."""
    if isinstance(dataset, os.PathLike):
        return Path(dataset).expanduser()
    s = str(dataset)
    if s.strip().lower() in _SPECS:
        return None
    if os.sep in s or "/" in s or s.startswith((".", "~")) or Path(s).expanduser().is_dir():
        return Path(s).expanduser()
    return None


def _data_home_note(data_dir) -> str:
    if data_dir is not None and str(data_dir) != "":
        src = "set by --data-dir"
    elif os.environ.get("LTR_BENCH_DATA"):
        src = "set by $LTR_BENCH_DATA"
    else:
        src = "the default; set --data-dir or $LTR_BENCH_DATA to use another folder"
    return f"The data home is {resolve_data_dir(data_dir)} ({src})."


def _find_file(expected: Path) -> Path | None:
    """``expected`` or its compressed variant; DataError if more than one exists."""
    found = [expected.with_name(expected.name + s) for s in COMPRESSION_SUFFIXES]
    for p in found:
        if p.exists() and not p.is_file():
            raise DataError(
                f"{p}: is a folder (or not a regular file), but it has the name "
                "of a data file; replace it by the data file or rename it.",
                path=p,
            )
    found = [p for p in found if p.is_file()]
    if len(found) > 1:
        raise DataError(
            f"{expected.parent}: both " + " and ".join(p.name for p in found) + " exist; "
            "keep only one of them so that it is clear which data is used.",
            path=found[0],
        )
    return found[0] if found else None


def _strip_compression(name: str) -> str:
    for s in COMPRESSION_SUFFIXES[1:]:
        if name.endswith(s):
            return name[: -len(s)]
    return name


def _query_file_for(data_file: Path) -> Path | None:
    return _find_file(data_file.with_name(_strip_compression(data_file.name) + ".query"))


def _options(spec: DatasetSpec, options: dict | None) -> dict:
    """``spec.options`` updated with ``options``, values coerced to the defaults' types."""
    opts = dict(spec.options)
    for key, value in (options or {}).items():
        if key not in spec.options:
            import difflib

            allowed = ", ".join(spec.options) or "none"
            close = difflib.get_close_matches(key, list(spec.options), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise DatasetOptionError(
                f"dataset {spec.name!r} has no option {key!r};{hint} allowed options: {allowed}."
            )
        default = spec.options[key]
        try:
            if isinstance(default, bool):
                value = (
                    value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
                )
            elif isinstance(default, int):
                value = int(value) if isinstance(value, int) else int(_finite(value))
                if isinstance(options[key], float) and value != options[key]:
                    raise ValueError
            elif isinstance(default, float):
                value = _finite(value)
        except (TypeError, ValueError, OverflowError):
            raise DatasetOptionError(
                f"option {key}={options[key]!r} of dataset {spec.name!r} must be a finite "
                f"{type(default).__name__} (default {default!r})."
            ) from None
        opts[key] = value
    check_generated_options(spec.name, opts)  # ranges and memory, before anything is made
    return opts


def _finite(value) -> float:
    f = float(value)
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError
    return f


def _path_options(options: dict | None) -> dict:
    allowed = {"n_features": None, "label_max": None}
    opts = dict(allowed)
    for key, value in (options or {}).items():
        if key not in allowed:
            raise DataError(
                f"a folder dataset has no option {key!r}; allowed options: n_features, label_max."
            )
        try:
            opts[key] = None if value is None else int(value)
            if isinstance(value, float) and opts[key] != value:
                raise ValueError
        except (TypeError, ValueError, OverflowError):
            raise DatasetOptionError(f"option {key}={value!r} must be an integer.") from None
        if opts[key] is not None and opts[key] < (1 if key == "n_features" else 0):
            raise DatasetOptionError(
                f"option {key}={value!r} must be >= {int(key == 'n_features')}."
            )
    return opts


# ----------------------------------------------------------------------------- layouts


def _not_found(spec: DatasetSpec, data_dir, missing: Path, fold: int) -> DatasetNotFoundError:
    home = resolve_data_dir(data_dir)
    lines = [
        f"dataset {spec.name!r} ({spec.title}) was not found: {missing} does not exist.",
        f"Download it from {spec.homepage} and put the files here:",
    ]
    for p in spec.fold_files(home, fold).values():
        lines.append(f"  {p}")
        if spec.query_files:
            lines.append(f"  {p}.query")
    lines.append(f"Expected layout: {spec.layout}.")
    lines.append(_data_home_note(data_dir))
    return DatasetNotFoundError("\n".join(lines), path=missing)


#: Datasets shipped inside the package (small, with a licence that allows it): a folder per
#: spec root. A copy under the data home takes precedence.
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


def _named_files(spec: DatasetSpec, data_dir, fold: int) -> dict[str, tuple[Path, Path | None]]:
    if not 1 <= fold <= spec.n_folds:
        raise DataError(f"dataset {spec.name!r} has folds 1..{spec.n_folds}, not {fold}.")
    home = resolve_data_dir(data_dir)
    builtin = BUILTIN_DIR / spec.root
    if builtin.is_dir() and _find_file(spec.fold_files(home, fold)[spec.split_files[0][0]]) is None:
        home = BUILTIN_DIR  # shipped with the package (a copy in the data home wins)
    out = {}
    for split, expected in spec.fold_files(home, fold).items():
        f = _find_file(expected)
        if f is None:
            rel = expected.relative_to(home).parts
            chain = [home] + [home.joinpath(*rel[:i]) for i in range(1, len(rel))]
            missing = next((c for c in chain if not c.exists()), expected)
            raise _not_found(spec, data_dir, missing, fold)
        q = None
        if spec.query_files:
            q = _query_file_for(f)
            if q is None:
                raise _not_found(spec, data_dir, expected.with_name(expected.name + ".query"), fold)
        out[split] = (f, q)
    return out


def _split_files_in(folder: Path) -> dict[str, tuple[Path, Path | None]]:
    out = {}
    for split, names in _GENERIC_NAMES.items():
        hits = [f for f in (_find_file(folder / n) for n in names) if f is not None]
        if len(hits) > 1:
            raise DataError(
                f"{folder}: several files could be the {split} split ("
                + ", ".join(h.name for h in hits)
                + "); keep only one.",
                path=folder,
            )
        if hits:
            out[split] = (hits[0], _query_file_for(hits[0]))
    return out


def _generic_layout(root: Path) -> dict[int, Path]:
    """Fold number -> folder with that fold's split files."""
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"{root}: no such folder. Pass a registered dataset name or a folder that holds "
            "LETOR files (Fold1/, Fold2/, ... sub-folders, or train.txt/vali.txt/test.txt).",
            path=root,
        )
    folds = {}
    for child in root.iterdir():
        m = _FOLD_RE.match(child.name)
        if m and child.is_dir():
            folds[int(m.group(1))] = child
    if folds:
        return dict(sorted(folds.items()))
    if _split_files_in(root):
        return {1: root}
    names = ", ".join(sorted({n for ns in _GENERIC_NAMES.values() for n in ns}))
    raise DatasetNotFoundError(
        f"{root}: no LETOR layout found. Expected Fold1/, Fold2/, ... sub-folders, or split "
        f"files directly in the folder, named one of: {names} (each may end in .gz, .bz2 or "
        ".xz; LightGBM-style files without qid: need a .query file beside them).",
        path=root,
    )


def _generic_files(root: Path, fold: int) -> dict[str, tuple[Path, Path | None]]:
    layout = _generic_layout(root)
    if fold not in layout:
        raise DataError(
            f"{root}: there is no fold {fold}; found folds " + ", ".join(map(str, layout)) + ".",
            path=root,
        )
    files = _split_files_in(layout[fold])
    missing = [s for s in ("train", "test") if s not in files]
    if missing:
        raise DatasetNotFoundError(
            f"{layout[fold]}: no {' and no '.join(missing)} file. Name them "
            + "; ".join(f"{s}: " + " or ".join(_GENERIC_NAMES[s][:2]) for s in missing)
            + " (optionally .gz/.bz2/.xz).",
            path=layout[fold],
        )
    return files


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
    when the entry is written and stored with it. If the cache folder cannot be written, the
    data is parsed in memory and a :class:`DataWarning` says so.
    """
    key = cache_key(
        {
            "kind": "letor",
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
            return Split(name=name, X=parsed.X, y=parsed.y, qid=parsed.qid)
    else:
        for msg in loaded[1].get("warnings", []):
            warnings.warn(msg + " (from the parsed-data cache)", DataWarning, stacklevel=3)
    arrays, meta = loaded
    return Split(
        name=name,
        X=arrays["X"],
        y=arrays["y"],
        qid=arrays["qid"],
        _fingerprint=meta.get("fingerprint"),
    )


def _verify_split_entry(arrays: dict, meta: dict) -> str | None:
    """What is wrong with a cached split (None: its arrays still have the fingerprint
    recorded when the entry was written)."""
    fp = fingerprint_arrays(arrays["X"], arrays["y"], arrays["qid"])
    if fp != meta.get("fingerprint"):
        return "its arrays no longer have the fingerprint recorded when it was written"
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
        files = _named_files(spec, data_dir, 1)
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
    path = _as_path(dataset)
    if path is not None:
        return list(_generic_layout(path))
    spec = get_spec(dataset)
    if spec.kind == "letor":
        folds = []
        for k in range(1, spec.n_folds + 1):
            try:
                _named_files(spec, data_dir, k)
            except DatasetNotFoundError:
                continue
            folds.append(k)
        if not folds:
            _named_files(spec, data_dir, 1)  # raises the full "where to download" message
        return folds
    opts = _options(spec, options)
    if spec.kind == "generated":
        return list(range(1, spec.n_folds + 1))
    return list(range(1, int(opts["n_folds"]) + 1))


def dataset_identity(dataset, *, data_dir=None, seed: int = 0, options=None) -> dict:
    """JSON-able identity of a dataset for resume keys and run parameters.

    Downloaded: ``{"name", "kind": "letor", "path"}``; folder: ``{"name", "kind": "path",
    "path", "options"}``; generated/qbe: ``{"name", "kind", "seed", "options"}`` with every
    option resolved (defaults included), so equal identities mean equal data.
    """
    path = _as_path(dataset)
    if path is not None:
        return {
            "name": path.resolve().name,
            "kind": "path",
            "path": str(path.resolve()),
            "options": _path_options(options),
        }
    spec = get_spec(dataset)
    if spec.kind == "letor":
        return {
            "name": spec.name,
            "kind": "letor",
            "path": str((resolve_data_dir(data_dir) / spec.root).resolve()),
        }
    return {
        "name": spec.name,
        "kind": spec.kind,
        "seed": int(seed),
        "options": _options(spec, options),
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
    ``seed`` and ``options`` apply to generated and query-by-example data. ``progress`` is
    ``callable(done, total, message)`` for long parses and generation (default:
    :func:`ltr_bench.progress.report_progress`).

    Raises :class:`UnknownDatasetError` (unknown name), :class:`DatasetNotFoundError`
    (missing files: says where to download and where to put them), :class:`DataError` (bad
    content: file:line, what, how to fix).
    """
    fold = int(fold)
    path = _as_path(dataset)
    if path is not None:
        opts = _path_options(options)
        files = _generic_files(path, fold)
        return _letor_fold(
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
    spec = get_spec(dataset)
    if spec.kind == "letor":
        if options:
            raise DataError(
                f"dataset {spec.name!r} takes no options (got " + ", ".join(options) + ")."
            )
        files = _named_files(spec, data_dir, fold)
        return _letor_fold(
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
    opts = _options(spec, options)
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
