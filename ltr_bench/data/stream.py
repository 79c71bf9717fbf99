"""Reading a LETOR / SVMlight file in chunks of whole queries: :func:`iter_query_chunks`.

For ranking a file that may not fit in memory (``ltr-bench predict``). The same parser and
checks as :func:`ltr_bench.data.reader.read_letor_file` (scikit-learn's parser on
line-aligned blocks of about 1 MiB; on a failure, the first bad line named by
:func:`~ltr_bench.data.diagnose.diagnose_block`), but blocks are grouped into chunks of whole
queries and handed out one by one instead of being kept.

Labels are optional: a file whose first data line starts with ``qid:`` has none (every line
must then start with it); its chunks have ``y`` None. Document ids are read from the lines'
comments as the whole-file reader reads them (:mod:`ltr_bench.data.docids`): a chunk's
``docid`` is None once a line without one has been seen.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltr_bench.data.diagnose import FORMAT_HINT, diagnose_block
from ltr_bench.data.docids import DocidCollector
from ltr_bench.data.errors import DataError
from ltr_bench.data.reader import _iter_blocks

__all__ = ["CHUNK_ROWS", "Chunk", "is_labelled", "iter_query_chunks"]

#: rows per chunk (whole queries: a chunk ends at the first query boundary past this)
CHUNK_ROWS = 100_000


@dataclass
class Chunk:
    """Whole queries of the file, in file order: ``X`` (n, n_features) float64, ``qid``
    (n,) int64, ``y`` (n,) int64 or None (an unlabelled file), ``first_row`` (0-based row of
    the file where the chunk starts), ``width`` (the largest feature index written in its
    lines, zeros included), ``docid`` (its rows' document ids, bytes; None when the file is
    known to lack them)."""

    X: np.ndarray
    qid: np.ndarray
    y: np.ndarray | None
    first_row: int
    width: int = 0
    docid: np.ndarray | None = None


def is_labelled(path: Path) -> bool:
    """Whether the LETOR file's rows carry labels: its first data line (comments and blank
    lines skipped) does not start with ``qid:``; reads only up to that line's block."""
    return _labelled(Path(path))


def _labelled(path: Path) -> bool:
    for block, *_ in _iter_blocks(path):
        for line in block.splitlines():
            text = line.split(b"#", 1)[0].strip()
            if text:
                return not text.startswith(b"qid:")
    return True


def _parse(block: bytes, first_line: int, path: Path, n_features: int, labelled: bool, check):
    from sklearn.datasets import load_svmlight_file

    data = block if labelled else _with_labels(block)
    try:
        X, y, q = load_svmlight_file(
            io.BytesIO(data), n_features=n_features, dtype=np.float64, zero_based=False,
            query_id=True,
        )  # fmt: skip
    except (ValueError, OverflowError, MemoryError) as exc:
        problem = diagnose_block(data, first_line, path, n_features=n_features, **check)
        if problem is not None:
            raise problem from None
        raise DataError(
            f"{path}: lines {first_line}..: cannot parse the data ({type(exc).__name__}: "
            f"{str(exc)[:200]}). {FORMAT_HINT}",
            path=path,
        ) from None
    top = check.get("label_max")
    bad = (
        q.shape[0] != X.shape[0]
        or not np.all(np.isfinite(X.data))
        or not np.all(np.isfinite(y) & (y == np.round(y)) & (y >= 0))
        or (top is not None and y.size and y.max() > top)  # before int64 wraps a huge one
    )
    if bad:
        problem = diagnose_block(data, first_line, path, n_features=n_features, **check)
        raise problem or DataError(f"{path}: lines {first_line}..: invalid data. {FORMAT_HINT}")
    width = int(X.indices.max()) + 1 if X.indices.size else 0
    return X.toarray(), y.astype(np.int64), np.asarray(q, dtype=np.int64), width


def _with_labels(block: bytes) -> bytes:
    """An unlabelled block with a label 0 in front of every line (the parser needs one)."""
    lines = block.split(b"\n")
    return b"\n".join(b"0 " + line if line.strip() else line for line in lines)


def iter_query_chunks(
    path,
    *,
    n_features: int,
    chunk_rows: int = CHUNK_ROWS,
    progress: Callable[[int, int, str], None] | None = None,
    label_max: int | None = None,
    context: str = "this dataset",
    fixes: dict[str, str] | None = None,
) -> Iterator[Chunk]:
    """Chunks of whole queries of ``path`` (plain, .gz, .bz2, .xz), about ``chunk_rows`` rows
    each. ``n_features``: the row width (an index beyond it is a
    :class:`~ltr_bench.data.errors.FeatureIndexError` naming the line). ``label_max``: the
    largest label accepted (a larger one is an error naming the line, never a wrapped
    int64); ``context`` and ``fixes``: how messages name the data and what they advise
    (:func:`~ltr_bench.data.diagnose.diagnose_block`).
    ``progress(bytes_done, bytes_total, message)`` after each block. A query whose rows are
    not together in the file raises :class:`DataError` naming the line where it reappears
    (a chunked reader cannot regroup it: sort the file by query id). Raises
    :class:`DataError` for an empty file or a bad line (file:line, what, how to fix)."""
    path = Path(path)
    labelled = _labelled(path)
    check = {"label_max": label_max, "context": context, "fixes": fixes}
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    docids = DocidCollector(keep=False)
    held = 0
    row = 0  # rows handed out so far
    seen: set[int] = set()
    last_q: int | None = None
    width = 0  # of the rows not yet handed out
    for block, first_line, _, done, total in _iter_blocks(path):
        X, y, q, w = _parse(block, first_line, path, n_features, labelled, check)
        width = max(width, w)
        if q.size:
            starts = np.flatnonzero(np.r_[q[0] != last_q, q[1:] != q[:-1]])
            for s in starts.tolist():
                qq = int(q[s])
                if qq in seen:
                    raise DataError(
                        f"{path}:{first_line + s}: the rows of query {qq} continue here after "
                        "other queries; predict reads whole queries in file order: sort the "
                        "file by query id (keeping each query's documents in order)",
                        path=path,
                    )
                seen.add(qq)
            last_q = int(q[-1])
            ids = docids.add(block, q.size)
            parts.append((X, y, q, ids if ids is not None else np.empty(q.size, dtype="S1")))
            held += q.size
        if progress is not None:
            progress(done, total, f"ranking {path.name}")
        if held >= chunk_rows:
            X, y, q, d = (np.concatenate(a) for a in zip(*parts))
            cut = int(np.flatnonzero(q == q[-1])[0])  # the last query may continue
            if cut > 0:
                ids = d[:cut] if docids.complete else None
                yield Chunk(X[:cut], q[:cut], y[:cut] if labelled else None, row, width, ids)
                row += cut
                parts, held = [(X[cut:], y[cut:], q[cut:], d[cut:])], q.size - cut
    if parts:
        X, y, q, d = (np.concatenate(a) for a in zip(*parts))
        if q.size:
            ids = d if docids.complete else None
            yield Chunk(X, q, y if labelled else None, row, width, ids)
            row += q.size
    if row == 0:
        raise DataError(
            f"{path}: the file has no data lines (it is empty or holds only comments)", path=path
        )
