"""Writing results to files: atomic text writes, the per-query CSV codec, TREC run files
and records as JSON.

Atomic writes go to a temporary file in the same folder, are fsynced and renamed, so a file
exists only when completely written. The per-query CSV writes floats with ``repr``, so values
read back are bit-identical.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ltr_bench.results.record import ResultRecord


class ResultsWriteError(Exception):
    """A result or log could not be written (full disk, permissions). ``str(err)`` names the
    file and the operating system's reason. Raised by :class:`ResultStore`; the harness turns
    it into a clean stop."""

    def __init__(self, path: Path, exc: OSError):
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            reason = "no space left on the device"
        super().__init__(f"cannot write {path}: {reason}")
        self.path = path
        self.errno = exc.errno


def check_writable_dir(folder: Path, what: str) -> None:
    """Create ``folder`` if needed and prove a file can be written in it (a probe file is
    written, synced and removed); raises :class:`~ltr_bench.errors.UsageError` naming
    ``what`` (the option) and the reason."""
    from ltr_bench.errors import UsageError

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".ltr-bench-probe-", dir=folder)
        try:
            os.write(fd, b"probe\n" * 512)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            reason = "no space left on the device"
        raise UsageError(
            f"{what} {folder} is not usable: {reason}. Choose a writable folder with free space."
        ) from None


def _default_mode() -> int:
    """0666 less the process umask: the mode ``open()`` would give a new file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one:
    a temporary file in the same folder, fsync, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fchmod(fh.fileno(), _default_mode())  # mkstemp makes 0600; honour the umask
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def per_query_csv(per_query: dict[str, list]) -> str:
    """CSV text: header ``qid,<metric>...``, one row per query; floats via ``repr`` (exact)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = list(per_query)
    w.writerow(cols)
    for row in zip(*(per_query[c] for c in cols)):
        w.writerow([repr(v) if isinstance(v, float) else v for v in row])
    return buf.getvalue()


def read_per_query_csv(path: Path) -> dict[str, list]:
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    out: dict[str, list] = {c: [] for c in header}
    for row in body:
        for c, v in zip(header, row):
            out[c].append(_number(v) if c != "qid" else _qid(v))
    return out


def _number(text: str) -> float:
    return float(text)


def _qid(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def trec_run_text(qid, scores, *, tag: str) -> str:
    """The test scores as a TREC run file: ``qid Q0 docid rank score tag`` per line, docid =
    the row's position in the split (0-based), rank 1-based by descending score (equal scores:
    larger docid string first, trec_eval's own order), scores written exactly (``repr``).
    trec_eval, ranx or the LETOR scripts can re-evaluate exactly these predictions."""
    qid = np.asarray(qid)
    scores = np.asarray(scores, dtype=np.float64)
    tag = "".join(c if c.isalnum() or c in "-_.[]=," else "_" for c in tag) or "ltr-bench"
    lines = []
    for q in dict.fromkeys(qid.tolist()):
        rows = np.flatnonzero(qid == q)
        order = sorted(rows.tolist(), key=lambda i: str(i), reverse=True)
        order.sort(key=lambda i: -scores[i])
        lines += [
            f"{q} Q0 {i} {r} {float(scores[i])!r} {tag}" for r, i in enumerate(order, start=1)
        ]
    return "\n".join(lines) + "\n"


def records_json(records: Iterable[ResultRecord]) -> str:
    """The CLI's ``--output`` document: a JSON list of :meth:`ResultRecord.to_dict`."""
    return (
        json.dumps(
            [r.to_dict() for r in records], indent=1, sort_keys=True, allow_nan=True, default=repr
        )
        + "\n"
    )
