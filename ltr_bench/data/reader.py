"""The LETOR / SVMlight reader: scikit-learn's C parser, validation with file:line errors.

Format, one document per line::

    <label> qid:<query id> <index>:<value> <index>:<value> ... [# comment]

Indices are 1-based and increasing; a trailing ``#`` comment is ignored but for the document
id it may hold (``#docid = ...``, :mod:`ltr_bench.data.docids`); plain, gzip, bzip2
and xz files are read transparently (recognised by their magic bytes, so the file name does
not matter). Files without ``qid:`` take their query groups from a LightGBM-style ``.query``
file (one group size per line, in file order).

How it parses. :func:`sklearn.datasets.load_svmlight_file` does the work, but it is called on
line-aligned blocks of about 1 MiB (:data:`BLOCK_BYTES`) rather than on the whole file:
scikit-learn (1.9) grows its query-id array with ``np.append`` once per line, which is
quadratic in the number of lines (measured here: 200,000 short lines take 3.8 s with
``query_id=True`` and 0.3 s without; an MSLR-WEB30K training file has 2.27M lines). Blocks
keep that cost linear, bound the memory of the sparse intermediate to one block, let the dense
rows stream straight into a cache file, and give line numbers for free.

Validation. Each block is checked with vectorised numpy tests (labels finite, integer and in
range; values finite; one ``qid:`` per row). Only when scikit-learn raises or a test fails is
the block scanned line by line in Python
(:func:`ltr_bench.data.diagnose.diagnose_block`) to name the first bad line: the happy path
never loops over lines in Python.

Queries whose rows come in separate blocks are regrouped: rows are stably sorted by the order
in which each query first appears (documents keep their order inside a query) and a
:class:`~ltr_bench.data.errors.DataWarning` names the file and line where the query continues.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
from sklearn.datasets import load_svmlight_file

from ltr_bench.data.diagnose import FORMAT_HINT, MAX_INFERRED_FEATURES, diagnose_block, shown
from ltr_bench.data.docids import DocidCollector
from ltr_bench.data.errors import DataError, DataWarning

__all__ = [
    "BLOCK_BYTES",
    "ParsedFile",
    "diagnose_block",
    "open_data_file",
    "read_letor_file",
    "read_query_file",
]

BLOCK_BYTES = 1 << 20


def _short(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."


Progress = Callable[[int, int, str], None]


def open_data_file(path) -> tuple[BinaryIO, BinaryIO | io.BufferedIOBase]:
    """Open ``path`` for binary reading, decompressing gzip/bzip2/xz by magic bytes.

    Returns ``(raw, stream)``: ``raw.tell()`` is the position in the file on disk (for
    progress), ``stream`` yields the decompressed bytes. Close ``stream`` then ``raw``.
    """
    path = Path(path)
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found.", path=path) from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a folder, expected a data file.", path=path) from None
    except OSError as exc:
        raise DataError(
            f"{path}: cannot open the file ({exc.strerror}). Check its permissions.", path=path
        ) from None
    magic = raw.read(6)
    raw.seek(0)
    stream: BinaryIO | io.BufferedIOBase
    if magic[:2] == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
    elif magic[:3] == b"BZh":
        stream = bz2.BZ2File(raw, mode="rb")
    elif magic == b"\xfd7zXZ\x00":
        stream = lzma.LZMAFile(raw, mode="rb")
    else:
        stream = raw
    return raw, stream


def _iter_blocks(path, block_bytes: int | None = None):
    """Yield ``(block, first_line, n_lines, bytes_done, bytes_total)`` of line-aligned blocks.

    ``first_line`` is the 1-based line number of the block's first line; ``bytes_*`` count
    bytes of the file on disk (compressed bytes for compressed files).
    """
    path = Path(path)
    block_bytes = block_bytes or BLOCK_BYTES
    raw, stream = open_data_file(path)
    total = path.stat().st_size
    line = 1
    carry = b""
    try:
        while True:
            try:
                chunk = stream.read(block_bytes)
            except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
                raise DataError(
                    f"{path}: the compressed file is damaged or truncated ({_short(exc)}). "
                    "Download or "
                    "copy it again, or decompress it and check what is wrong.",
                    path=path,
                ) from None
            if not chunk:
                if carry:
                    yield carry, line, 1, raw.tell(), total
                return
            buf = carry + chunk
            cut = buf.rfind(b"\n")
            if cut < 0:
                carry = buf
                continue
            block, carry = buf[: cut + 1], buf[cut + 1 :]
            n = block.count(b"\n")
            yield block, line, n, raw.tell(), total
            line += n
    finally:
        stream.close()
        raw.close()


def _line_of_row(path, row: int) -> int:
    """1-based line number of data row ``row`` (0-based; blank/comment-only lines are not rows).

    A Python scan of the file: used only to report errors and warnings.
    """
    count = -1
    for block, first_line, _, _, _ in _iter_blocks(path):
        for offset, line in enumerate(block.split(b"\n")):
            if line.split(b"#", 1)[0].strip():
                count += 1
                if count == row:
                    return first_line + offset
    return -1


def read_query_file(path, n_rows: int, data_path) -> np.ndarray:
    """Group sizes from a LightGBM-style ``.query`` file (one positive integer per line).

    Raises :class:`DataError` naming the line of a bad entry, or both files when the sizes do
    not add up to the data file's ``n_rows``.
    """
    sizes = []
    for block, first_line, _, _, _ in _iter_blocks(path):
        for offset, line in enumerate(block.split(b"\n")):
            tok = line.strip()
            if not tok:
                continue
            lineno = first_line + offset
            try:
                size = int(tok)
            except ValueError:
                raise DataError(
                    f"{path}:{lineno}: cannot parse {shown(tok)} as a "
                    "group size. A .query file holds one positive integer per line: the number "
                    "of consecutive rows of the data file that form one query.",
                    path=path,
                    line=lineno,
                ) from None
            if size < 1:
                raise DataError(
                    f"{path}:{lineno}: group size {size} is not positive. Every query needs "
                    "at least one row; remove the line.",
                    path=path,
                    line=lineno,
                )
            sizes.append(size)
    total = int(np.sum(sizes)) if sizes else 0
    if total != n_rows:
        raise DataError(
            f"{path}: the group sizes add up to {total} rows, but {data_path} has {n_rows} "
            "rows. The .query file must describe the data file it sits next to, one line per "
            "query in file order.",
            path=path,
        )
    return np.asarray(sizes, dtype=np.int64)


@dataclass
class ParsedFile:
    """Result of :func:`read_letor_file`.

    y, qid: int64 (n_rows,), each query contiguous (regrouped if needed). X: dense float64
    (n_rows, n_features), same row order, when no ``x_out`` was given, else None (rows were
    written to ``x_out`` as raw float64, C order, in file order). order: None, or (only with
    ``x_out``) the stable permutation the rows written to ``x_out`` still need.
    warnings: messages already issued, to repeat when the data is reloaded from a cache.
    docid: (n_rows,) bytes, the documents' ids from the lines' ``#docid = ...`` comments in
    the same row order as ``y``, or None when a line has none (:mod:`ltr_bench.data.docids`).
    """

    path: Path
    y: np.ndarray
    qid: np.ndarray
    n_features: int
    X: np.ndarray | None = None
    order: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)
    docid: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.y.shape[0])


def _contiguity_order(qid: np.ndarray) -> np.ndarray | None:
    """None if each query id forms one block, else the stable regrouping permutation."""
    if qid.size == 0:
        return None
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    if np.unique(qid[starts]).size == starts.size:
        return None
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return np.argsort(rank[inverse], kind="stable")


def _first_split_query(qid: np.ndarray) -> tuple[int, int, int]:
    """(query id, row where its first block starts, row where it re-appears)."""
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    seen: dict[int, int] = {}
    for s in starts.tolist():  # one entry per block, not per line
        q = int(qid[s])
        if q in seen:
            return q, seen[q], s
        seen[q] = s
    raise AssertionError("no split query")


def read_letor_file(
    path,
    *,
    n_features: int | None,
    label_min: int = 0,
    label_max: int | None = None,
    query_file=None,
    x_out: BinaryIO | None = None,
    context: str = "this dataset",
    progress: Progress | None = None,
) -> ParsedFile:
    """Parse one LETOR/SVMlight file (plain, .gz, .bz2 or .xz) into dense arrays.

    n_features: the row width (the spec's count); None infers it as the largest index seen.
    label_min/label_max: allowed label range (``label_max=None``: any integer >= label_min).
    query_file: a ``.query`` file with group sizes; then ``qid:`` fields are not needed (and
    ignored), and query ids are 1, 2, ... in file order. x_out: a binary file to receive the
    dense rows (float64, C order) instead of keeping them in memory; requires n_features.
    context: how messages name the dataset. progress: ``callable(done, total, message)``.

    Raises :class:`DataError` (file:line, what, how to fix) on bad input; warns with
    :class:`DataWarning` when a query's rows were regrouped.
    """
    path = Path(path)
    if x_out is not None and n_features is None:
        raise ValueError("x_out requires n_features")
    try:
        return _read_letor_file(
            path,
            n_features=n_features,
            label_min=label_min,
            label_max=label_max,
            query_file=query_file,
            x_out=x_out,
            context=context,
            progress=progress,
        )
    except DataError as exc:
        if "damaged or truncated" not in str(exc):
            damage = compressed_damage(path)
            if damage is not None:  # garbage from a broken stream, not a bad line
                raise damage from None
        raise


def compressed_damage(path) -> DataError | None:
    """For a compressed file: a :class:`DataError` when its stream is damaged or truncated
    (decompressing it to the end fails), else None. Plain files: None."""
    try:
        for _ in _iter_blocks(path):
            pass
    except DataError as exc:
        if "damaged or truncated" in str(exc):
            return exc
    return None


def _read_letor_file(
    path: Path, *, n_features, label_min, label_max, query_file, x_out, context, progress
) -> ParsedFile:
    need_qid = query_file is None
    ys, qids, dense_parts, sparse_parts = [], [], [], []
    width = 0
    n_rows = 0
    docids = DocidCollector()
    check = dict(
        n_features=n_features,
        label_min=label_min,
        label_max=label_max,
        need_qid=need_qid,
        context=context,
    )
    for block, first_line, _, done, total in _iter_blocks(path):
        try:
            Xb, yb, qb = load_svmlight_file(
                io.BytesIO(block),
                n_features=n_features,
                dtype=np.float64,
                zero_based=False,
                query_id=True,
            )
        except (ValueError, OverflowError, MemoryError) as exc:
            problem = diagnose_block(block, first_line, path, **check)
            if problem is not None:
                raise problem from None
            last_line = first_line + block.count(b"\n")
            raise DataError(
                f"{path}: lines {first_line}..{last_line}: cannot parse the data "
                f"({type(exc).__name__}: {_short(exc)}). {FORMAT_HINT}",
                path=path,
            ) from None
        rows = Xb.shape[0]
        bad = (
            not np.all(np.isfinite(yb))
            or not np.all(yb == np.round(yb))
            or (n_features is None and Xb.shape[1] > MAX_INFERRED_FEATURES)
            or (rows and yb.min() < label_min)
            or (rows and label_max is not None and yb.max() > label_max)
            or not np.all(np.isfinite(Xb.data))
            or (need_qid and qb.shape[0] != rows)
        )
        if bad:
            problem = diagnose_block(block, first_line, path, **check)
            if problem is None:  # pragma: no cover - the scan checks everything the fast test does
                problem = DataError(
                    f"{path}: lines {first_line}..: invalid data that the "
                    "line scan could not locate; please report this file.",
                    path=path,
                )
            raise problem
        if rows:
            docids.add(block, rows)
            ys.append(yb.astype(np.int64))
            if need_qid:
                qids.append(np.asarray(qb, dtype=np.int64))
            if n_features is None:
                sparse_parts.append(Xb)
                width = max(width, Xb.shape[1])
            elif x_out is not None:
                x_out.write(np.ascontiguousarray(Xb.toarray()).tobytes())
            else:
                dense_parts.append(Xb.toarray())
        n_rows += rows
        if progress is not None:
            progress(done, total, f"parsing {path.name}")
    if n_rows == 0:
        raise DataError(
            f"{path}: the file has no data lines (it is empty or holds only comments). "
            "Download or extract it again; a complete LETOR file has one line per document.",
            path=path,
        )
    y = np.concatenate(ys)
    if need_qid:
        qid = np.concatenate(qids)
    else:
        sizes = read_query_file(query_file, n_rows, path)
        qid = np.repeat(np.arange(1, sizes.size + 1, dtype=np.int64), sizes)
    if n_features is None:
        n_features = max(width, 1)
        X = np.zeros((n_rows, n_features), dtype=np.float64)
        r = 0
        for part in sparse_parts:
            X[r : r + part.shape[0], : part.shape[1]] = part.toarray()
            r += part.shape[0]
    elif x_out is None:
        X = np.concatenate(dense_parts) if len(dense_parts) > 1 else dense_parts[0]
    else:
        X = None
    parsed = ParsedFile(
        path=path, y=y, qid=qid, n_features=int(n_features), X=X, docid=docids.array()
    )
    order = _contiguity_order(qid)
    if order is not None:
        q, first_row, again_row = _first_split_query(qid)
        msg = (
            f"{path}:{_line_of_row(path, again_row)}: the rows of query {q} continue here "
            f"after other queries (its first block starts at line "
            f"{_line_of_row(path, first_row)}); rows were regrouped so that each query is "
            "contiguous (stable: queries in order of first appearance, documents in file "
            "order). Sort the file by query id to silence this warning."
        )
        warnings.warn(msg, DataWarning, stacklevel=2)
        parsed.warnings.append(msg)
        parsed.y = y[order]
        parsed.qid = qid[order]
        if parsed.docid is not None:
            parsed.docid = parsed.docid[order]
        if parsed.X is not None:
            parsed.X = np.ascontiguousarray(parsed.X[order])
        else:
            parsed.order = order
    return parsed
