"""The table of published results shipped with ltr-bench, read and checked row by row.

The table is a CSV file, ``published_results.csv`` in this folder (package data: a wheel
carries it). One line per published number. Columns (all of them are required in the header;
the last four keep the text of the verified list the table was built from, unchanged):

=================== ==========================================================================
column              what it holds
=================== ==========================================================================
dataset             ltr-bench's name of the dataset (``ohsumed``, ``mq2007``, ``mslr10k`` ...;
                    :func:`ltr_bench.data.list_datasets`)
split               the split the number was measured on: ``test``, ``vali`` or ``train``
folds               the folds it covers: ``1`` (one fold), ``1-5`` (the mean over folds 1..5)
                    or a list ``1,3``
model               the model's name as the source prints it (``RankSVM``, ``cat-yeti-rank``)
metric              ``NDCG@k``, ``P@k``, ``MAP``, ... (any spelling
                    :class:`ltr_bench.evaluation.metric_keys.MetricKey` reads, without a
                    convention suffix: the convention has its own column)
value               the number, in [0, 1]
convention          how the source computed it: ``default`` (ltr-bench's own definitions:
                    gain ``2^rel - 1``, discount ``1/log2(rank + 1)``, a query without relevant
                    documents scores 1), a profile of :mod:`ltr_bench.evaluation.conventions`
                    (``letor3``, ``letor4``, ``trec``, ``nonempty``), or ``unstated`` (the source
                    does not say enough to put the number beside ours: it is listed, never
                    compared)
selection           what hyper-parameters and stopping were chosen on: ``vali``, ``test``
                    (optimistic) or ``unstated``
source              a link to the exact file (a commit, not a branch) the number was read from
note                how the number may be compared, in words
fold_or_split,      the verified list's own columns for the row (its split text, its description
convention_detail,  of the convention, the repository with its commit, and the file and place
source_repo_or_url, in it)
source_path_or_page
=================== ==========================================================================

:func:`load_published` reads the table and checks every row; a malformed row raises
:class:`PublishedTableError` naming the file and the line. A test loads the shipped table, so a
bad row fails the test suite, never a user's run.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from ltr_bench.errors import LtrBenchError

__all__ = [
    "COLUMNS",
    "CONVENTIONS",
    "PublishedRow",
    "PublishedTableError",
    "load_published",
    "table_path",
]

TABLE_NAME = "published_results.csv"
COLUMNS = (
    "dataset",
    "split",
    "folds",
    "model",
    "metric",
    "value",
    "convention",
    "selection",
    "source",
    "note",
    "fold_or_split",
    "convention_detail",
    "source_repo_or_url",
    "source_path_or_page",
)
#: Columns that may not be empty.
REQUIRED = ("dataset", "split", "folds", "model", "metric", "value", "convention", "source")
#: convention -> what it means (the profiles' own titles come from the evaluation wing).
CONVENTIONS = {
    "default": "ltr-bench's own: gain 2^rel - 1, discount 1/log2(rank + 1), a query without "
    "relevant documents scores 1",
    "letor3": "the LETOR 3.0 evaluation script (Eval-Score-3.0.pl)",
    "letor4": "the LETOR 4.0 evaluation script (Eval-Score-4.0.pl)",
    "trec": "trec_eval",
    "nonempty": "queries without relevant documents left out",
    "unstated": "not stated by the source (listed, never put beside ours)",
}
SPLITS = ("test", "vali", "train")
SELECTIONS = ("vali", "test", "unstated")
_FOLDS_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")


class PublishedTableError(LtrBenchError):
    """A malformed published-results table: ``str(err)`` starts with ``<file>:<line>:``."""

    def __init__(self, message: str, *, path=None, line: int | None = None):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.line = line


@dataclass(frozen=True)
class PublishedRow:
    """One published number. ``metric_key``: ltr-bench's record key of the same metric under
    the row's convention (``ndcg@10_letor3``; ``ndcg@10`` for ``default``; None for
    ``unstated``). ``folds``: the fold numbers the value is a mean over (one for a single
    fold). ``path`` and ``line``: where the row is in the table."""

    dataset: str
    split: str
    folds: tuple[int, ...]
    model: str
    metric: str
    value: float
    convention: str
    selection: str
    source: str
    note: str
    metric_key: str | None
    base_key: str  # the metric under ltr-bench's default convention, e.g. ``ndcg@10``
    path: str = ""
    line: int = 0
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def folds_text(self) -> str:
        """``1``, ``1-5`` or ``1,3``: as the table writes it."""
        f = self.folds
        if len(f) > 1 and list(f) == list(range(f[0], f[-1] + 1)):
            return f"{f[0]}-{f[-1]}"
        return ",".join(map(str, f))

    @property
    def split_text(self) -> str:
        """``test, 5-fold mean`` or ``test, fold 1``: for people."""
        if len(self.folds) == 1:
            return f"{self.split}, fold {self.folds[0]}"
        return f"{self.split}, mean of folds {self.folds_text}"

    def as_dict(self) -> dict[str, str]:
        """The row's CSV fields (the table's columns, in order)."""
        out = dict(self.extra)
        out.update(
            dataset=self.dataset,
            split=self.split,
            folds=self.folds_text,
            model=self.model,
            metric=self.metric,
            value=repr(self.value),
            convention=self.convention,
            selection=self.selection,
            source=self.source,
            note=self.note,
        )
        return {c: out.get(c, "") for c in COLUMNS}


def table_path() -> Path:
    """The shipped table's file (package data of ``ltr_bench.report.published``)."""
    return Path(__file__).resolve().parent / TABLE_NAME


def _fail(path, line: int, message: str):
    raise PublishedTableError(f"{path}:{line}: {message}", path=path, line=line)


def _parse_folds(text: str, n_folds: int, fail: Callable[[str], NoReturn]) -> tuple[int, ...]:
    folds: list[int] = []
    for part in text.split(","):
        m = _FOLDS_RE.match(part)
        if m is None:
            fail(f"column folds: {text!r} is not a fold list such as 1, 1-5 or 1,3")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if lo < 1 or hi < lo:
            fail(f"column folds: {text!r} is not a fold list such as 1, 1-5 or 1,3")
        folds.extend(range(lo, hi + 1))
    if len(set(folds)) != len(folds):
        fail(f"column folds: {text!r} names a fold twice")
    if max(folds) > n_folds:
        fail(f"column folds: {text!r}: the dataset has {n_folds} fold(s)")
    return tuple(sorted(folds))


def _parse_row(raw: dict, path, line: int) -> PublishedRow:
    from ltr_bench.data.errors import UnknownDatasetError
    from ltr_bench.data.specs import get_spec
    from ltr_bench.evaluation.conventions import profile_keys
    from ltr_bench.evaluation.metric_keys import MetricKey

    def fail(message: str):
        _fail(path, line, message)

    if None in raw:  # csv.DictReader puts surplus fields under the key None
        fail(f"{len(COLUMNS) + len(raw[None])} fields, the header has {len(COLUMNS)}")
    missing = [c for c in COLUMNS if raw.get(c) is None]
    if missing:
        fail(f"too few fields: no value for {', '.join(missing)}")
    row = {c: raw[c].strip() for c in COLUMNS}
    empty = [c for c in REQUIRED if not row[c]]
    if empty:
        fail(f"column {empty[0]} is empty")
    try:
        spec = get_spec(row["dataset"])
    except UnknownDatasetError as exc:
        fail(f"column dataset: {exc}")
    if spec.name != row["dataset"]:
        fail(f"column dataset: write ltr-bench's name {spec.name!r}, not {row['dataset']!r}")
    if row["split"] not in SPLITS:
        fail(f"column split: {row['split']!r} is not one of {', '.join(SPLITS)}")
    folds = _parse_folds(row["folds"], spec.n_folds, fail)
    conv = row["convention"]
    if conv not in CONVENTIONS:
        fail(f"column convention: {conv!r} is not one of {', '.join(CONVENTIONS)}")
    selection = row["selection"] or "unstated"
    if selection not in SELECTIONS:
        fail(f"column selection: {selection!r} is not one of {', '.join(SELECTIONS)}")
    try:
        key = MetricKey.parse(row["metric"])
    except ValueError as exc:
        fail(f"column metric: {exc}")
    if key.profile or key.empty != "1":
        fail(
            f"column metric: {row['metric']!r} carries a convention; write the plain metric "
            "and put the convention in the convention column"
        )
    metric_key = None
    if conv == "default":
        metric_key = key.text
    elif conv != "unstated":
        keys = profile_keys([key.text], conv)
        if not keys:
            fail(f"column metric: {row['metric']} is not defined under the {conv} convention")
        metric_key = keys[0]
    try:
        value = float(row["value"])
    except ValueError:
        fail(f"column value: {row['value']!r} is not a number")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        fail(f"column value: {row['value']} is not between 0 and 1")
    if not re.match(r"^https?://\S+$", row["source"]):
        fail(f"column source: {row['source']!r} is not a link (http:// or https://)")
    return PublishedRow(
        dataset=spec.name,
        split=row["split"],
        folds=folds,
        model=row["model"],
        metric=row["metric"],
        value=value,
        convention=conv,
        selection=selection,
        source=row["source"],
        note=row["note"],
        metric_key=metric_key,
        base_key=key.text,
        path=str(path),
        line=line,
        extra={c: row[c] for c in COLUMNS[10:]},
    )


def load_published(path=None) -> list[PublishedRow]:
    """Every row of the published-results table (default: the shipped one, read once per
    process), in file order. Raises :class:`PublishedTableError` (``<file>:<line>: what``) for
    a missing column, a malformed or duplicated row, and an unreadable file."""
    if path is None:
        return list(_load_shipped())
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _load_shipped() -> tuple[PublishedRow, ...]:
    return tuple(_load(table_path()))


def _load(path: Path) -> list[PublishedRow]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            absent = [c for c in COLUMNS if c not in header]
            if absent:
                _fail(path, 1, f"the header lacks the column(s) {', '.join(absent)}")
            unknown = [c for c in header if c not in COLUMNS]
            if unknown:
                _fail(
                    path,
                    1,
                    f"unknown column(s) {', '.join(unknown)}; columns: {', '.join(COLUMNS)}",
                )
            rows: list[PublishedRow] = []
            seen: dict[tuple, int] = {}
            start = reader.line_num + 1
            for raw in reader:
                line = start  # the line the row starts on (a quoted field may span lines)
                start = reader.line_num + 1
                row = _parse_row(raw, path, line)
                ident: tuple = (row.dataset, row.split, row.folds, row.model, row.base_key)
                ident += (row.convention, row.source)
                if ident in seen:
                    _fail(path, line, f"the same number as line {seen[ident]} again")
                seen[ident] = line
                rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise PublishedTableError(f"{path}: cannot read the published table: {exc}") from None
    return rows
