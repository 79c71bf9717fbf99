"""Document ids from the comments of LETOR lines.

LETOR 3.0 (OHSUMED, the .gov sets) and LETOR 4.0 (MQ2007, MQ2008) end every line with the
document's id in a comment, ``... 46:0.07 #docid = GX004-93-7097963 inc = 0.01 prob = 0.13``
(OHSUMED: ``#docid = 57950``); MSLR, Yahoo! and Istella lines have none. The id is the first
run of non-blank characters after ``docid =`` in the line's comment (after its first ``#``).

A file has document ids only when every data line (a line with something before any ``#``)
has one; otherwise it has none and its rows are named by their position, as before ids were
read. :class:`DocidCollector` gathers them block by block beside the parser
(:mod:`ltr_bench.data.reader`, :mod:`ltr_bench.data.stream`) and gives up at the first
block with a line without one, so a file without ids costs one substring test per block.
The ids are bytes (``numpy`` ``S`` arrays: memory-mappable in the parsed-data cache); how a
row is named in a TREC file, repeats inside a query included, is
:func:`ltr_bench.folds.doc_names`.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["DocidCollector", "block_docids"]

_DOCID = re.compile(rb"docid\s*=\s*(\S+)")


def block_docids(block: bytes) -> list[bytes] | None:
    """The document id of each data line of ``block`` (whole lines), in order; None when a
    data line has none."""
    if b"docid" not in block:
        return [] if not any(_is_data(line) for line in block.split(b"\n")) else None
    out = []
    for line in block.split(b"\n"):
        head, sep, comment = line.partition(b"#")
        if not head.strip():
            continue
        found = _DOCID.search(comment) if sep else None
        if found is None:
            return None
        out.append(found.group(1))
    return out


def _is_data(line: bytes) -> bool:
    return bool(line.split(b"#", 1)[0].strip())


class DocidCollector:
    """The ids of a file's rows, one block at a time (see the module): :meth:`add` gives each
    block's, :meth:`array` all of them (kept only with ``keep``); both give None once some
    data line had no id (:attr:`complete` is then False)."""

    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self.complete = True
        self.parts: list[np.ndarray] = []

    def add(self, block: bytes, n_rows: int) -> np.ndarray | None:
        """Read the ids of ``block``, whose parse gave ``n_rows`` rows; returns them (None
        once the file is known to lack ids: a line without one, or a count that differs)."""
        if not self.complete:
            return None
        ids = block_docids(block)
        if ids is None or len(ids) != n_rows:
            self.complete, self.parts = False, []
            return None
        part = np.array(ids, dtype=bytes) if ids else np.empty(0, dtype="S1")
        if self.keep:
            self.parts.append(part)
        return part

    def array(self) -> np.ndarray | None:
        """Every row's id (``S`` dtype, file order), or None."""
        if not self.complete:
            return None
        return np.concatenate(self.parts) if self.parts else np.empty(0, dtype="S1")
