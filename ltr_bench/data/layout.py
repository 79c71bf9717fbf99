"""Where a fold's files are: a registered dataset's layout under the data home, the copies
shipped in the package, or any folder in a LETOR layout.

A folder works as ``Fold*/`` sub-folders or as one set of split files (names in
:data:`GENERIC_NAMES`, each optionally ``.gz``, ``.bz2`` or ``.xz``; LightGBM-style files need
a ``.query`` file beside them). Every function returns ``{split: (data file, query file or
None)}`` or raises a :class:`DataError` / :class:`DatasetNotFoundError` that says what is
missing and where to put it. Nothing here reads a data file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ltr_bench.data.errors import DataError, DatasetNotFoundError
from ltr_bench.data.specs import _SPECS, COMPRESSION_SUFFIXES, DatasetSpec, resolve_data_dir

GENERIC_NAMES = {
    "train": ("train.txt", "trainingset.txt", "rank.train", "train"),
    "vali": ("vali.txt", "valid.txt", "validationset.txt", "rank.vali", "vali"),
    "test": ("test.txt", "testset.txt", "rank.test", "test"),
}
FOLD_RE = re.compile(r"^fold(\d+)$", re.IGNORECASE)


def as_path(dataset) -> Path | None:
    """The folder path ``dataset`` denotes, or None when it is a dataset name."""
    if isinstance(dataset, os.PathLike):
        return Path(dataset).expanduser()
    s = str(dataset)
    if s.strip().lower() in _SPECS:
        return None
    if os.sep in s or "/" in s or s.startswith((".", "~")) or Path(s).expanduser().is_dir():
        return Path(s).expanduser()
    return None


def data_home_note(data_dir) -> str:
    if data_dir is not None and str(data_dir) != "":
        src = "set by --data-dir"
    elif os.environ.get("LTR_BENCH_DATA"):
        src = "set by $LTR_BENCH_DATA"
    else:
        src = "the default; set --data-dir or $LTR_BENCH_DATA to use another folder"
    return f"The data home is {resolve_data_dir(data_dir)} ({src})."


def find_file(expected: Path) -> Path | None:
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


def strip_compression(name: str) -> str:
    for s in COMPRESSION_SUFFIXES[1:]:
        if name.endswith(s):
            return name[: -len(s)]
    return name


def query_file_for(data_file: Path) -> Path | None:
    return find_file(data_file.with_name(strip_compression(data_file.name) + ".query"))


def not_found(spec: DatasetSpec, data_dir, missing: Path, fold: int) -> DatasetNotFoundError:
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
    lines.append(data_home_note(data_dir))
    return DatasetNotFoundError("\n".join(lines), path=missing)


#: Datasets shipped inside the package (small, with a licence that allows it): a folder per
#: spec root. A copy under the data home takes precedence.
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


def named_files(spec: DatasetSpec, data_dir, fold: int) -> dict[str, tuple[Path, Path | None]]:
    if not 1 <= fold <= spec.n_folds:
        raise DataError(f"dataset {spec.name!r} has folds 1..{spec.n_folds}, not {fold}.")
    home = resolve_data_dir(data_dir)
    builtin = BUILTIN_DIR / spec.root
    if builtin.is_dir() and find_file(spec.fold_files(home, fold)[spec.split_files[0][0]]) is None:
        home = BUILTIN_DIR  # shipped with the package (a copy in the data home wins)
    out = {}
    for split, expected in spec.fold_files(home, fold).items():
        f = find_file(expected)
        if f is None:
            rel = expected.relative_to(home).parts
            chain = [home] + [home.joinpath(*rel[:i]) for i in range(1, len(rel))]
            missing = next((c for c in chain if not c.exists()), expected)
            raise not_found(spec, data_dir, missing, fold)
        q = None
        if spec.query_files:
            q = query_file_for(f)
            if q is None:
                raise not_found(spec, data_dir, expected.with_name(expected.name + ".query"), fold)
        out[split] = (f, q)
    return out


def split_files_in(folder: Path) -> dict[str, tuple[Path, Path | None]]:
    out = {}
    for split, names in GENERIC_NAMES.items():
        hits = [f for f in (find_file(folder / n) for n in names) if f is not None]
        if len(hits) > 1:
            raise DataError(
                f"{folder}: several files could be the {split} split ("
                + ", ".join(h.name for h in hits)
                + "); keep only one.",
                path=folder,
            )
        if hits:
            out[split] = (hits[0], query_file_for(hits[0]))
    return out


def generic_layout(root: Path) -> dict[int, Path]:
    """Fold number -> folder with that fold's split files."""
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"{root}: no such folder. Pass a registered dataset name or a folder that holds "
            "LETOR files (Fold1/, Fold2/, ... sub-folders, or train.txt/vali.txt/test.txt).",
            path=root,
        )
    folds = {}
    for child in root.iterdir():
        m = FOLD_RE.match(child.name)
        if m and child.is_dir():
            folds[int(m.group(1))] = child
    if folds:
        return dict(sorted(folds.items()))
    if split_files_in(root):
        return {1: root}
    names = ", ".join(sorted({n for ns in GENERIC_NAMES.values() for n in ns}))
    raise DatasetNotFoundError(
        f"{root}: no LETOR layout found. Expected Fold1/, Fold2/, ... sub-folders, or split "
        f"files directly in the folder, named one of: {names} (each may end in .gz, .bz2 or "
        ".xz; LightGBM-style files without qid: need a .query file beside them).",
        path=root,
    )


def generic_files(root: Path, fold: int) -> dict[str, tuple[Path, Path | None]]:
    layout = generic_layout(root)
    if fold not in layout:
        raise DataError(
            f"{root}: there is no fold {fold}; found folds " + ", ".join(map(str, layout)) + ".",
            path=root,
        )
    files = split_files_in(layout[fold])
    missing = [s for s in ("train", "test") if s not in files]
    if missing:
        raise DatasetNotFoundError(
            f"{layout[fold]}: no {' and no '.join(missing)} file. Name them "
            + "; ".join(f"{s}: " + " or ".join(GENERIC_NAMES[s][:2]) for s in missing)
            + " (optionally .gz/.bz2/.xz).",
            path=layout[fold],
        )
    return files
