"""Writing results to files: atomic text writes, the per-query CSV codec, TREC run files
and records as JSON.

Atomic writes go to a temporary file in the same folder, are fsynced and renamed, so a file
exists only when completely written. The per-query CSV writes floats with ``repr``, so values
read back are bit-identical.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import io
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ltr_bench.errors import LtrBenchError
from ltr_bench.results.record import ResultRecord


class ResultsWriteError(Exception):
    """A result or log could not be written (full disk, permissions). ``str(err)`` names the
    file and the operating system's reason. Raised by :class:`ResultStore`; the harness turns
    it into a clean stop."""

    def __init__(self, path: Path, exc: OSError):
        reason = reason_of(exc)
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
        elif exc.errno in (errno.EEXIST, errno.ENOTDIR):  # "File exists" says nothing
            blocker = next((p for p in (folder, *folder.parents) if p.exists()), folder)
            reason = f"{blocker} is not a folder"
        elif exc.errno == errno.ENOENT:
            reason = "it cannot be created there (no such file or directory)"
        raise UsageError(
            f"{what} {folder} is not usable: {reason}. Choose a writable folder with free space."
        ) from None


def check_output_path(path, what: str) -> None:
    """Before any work: ``path`` can be written by :func:`atomic_write_bytes` (its target is a
    file or a character device or does not exist yet, and its folder takes a file); raises
    :class:`~ltr_bench.errors.UsageError` naming ``what`` (the option) and the reason."""
    from ltr_bench.errors import UsageError

    try:
        target, direct = write_target(Path(path))
    except OSError as exc:
        raise UsageError(f"{what} {path}: {reason_of(exc)}") from None
    if not direct:
        check_writable_dir(target.parent, f"{what} {path}: its folder")


def check_not_an_input(path, what: str, inputs) -> None:
    """Before any work: the output ``path`` (option ``what``) replaces no input of the same
    run. ``inputs`` are ``(path, description)`` pairs: a file is an input itself, a folder
    (a dataset, the results store) with everything in it. Links are followed on both sides.
    Raises :class:`~ltr_bench.errors.UsageError` naming the option, the input and what it
    is."""
    from ltr_bench.errors import UsageError

    target = Path(os.path.realpath(path))
    for source, description in inputs:
        real = Path(os.path.realpath(source))
        inside = real.is_dir() and real in target.parents
        if target == real or inside:
            how = "would be written into" if inside else "would replace"
            raise UsageError(
                f"{what} {path} {how} {description} ({source}), an input of this run; "
                "choose a file outside it"
            )


def _default_mode() -> int:
    """0666 less the process umask: the mode ``open()`` would give a new file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


class OutputError(LtrBenchError):
    """An output file (``--output``, ``--plots``, a TREC run) could not be written; ``str``
    names the option, the file and the reason. Exit code 1 (the work was done; its file was
    not written)."""


def write_target(path: Path) -> tuple[Path, bool]:
    """(file to write, direct) for ``path``: symbolic links are followed to their target (the
    link stays a link, the file it points to is replaced); an existing character device
    (``/dev/null``, ``/dev/full``) is written directly (``direct`` True), never replaced by
    a regular file. Anything else that is not a regular file (a folder, a named pipe, a
    socket, a block device) raises ``OSError`` with the reason."""
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
    except (FileNotFoundError, NotADirectoryError):  # to be created (its folder may fail)
        return target, False
    if stat.S_ISREG(st.st_mode):
        return target, False
    if stat.S_ISCHR(st.st_mode):
        return target, True
    shown = target if target == Path(path) else f"{path} (-> {target})"
    raise OSError(errno.EINVAL, f"{shown} is {file_kind(st.st_mode)}, not a file; give a file name")


#: what a file system entry is, in words, by its mode (the first test that holds)
_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    """``"a folder"``, ``"a named pipe"``, ... for an ``st_mode`` (of ``lstat``: a link is
    ``"a symbolic link"``); messages that refuse an entry say what it is."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def atomic_write_bytes(path: Path, data: bytes, *, locked: bool = False) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one: a
    temporary file ``.<name>.<random>.tmp`` in the target's folder, fsync, then ``os.replace``
    (the one writer of every file ltr-bench produces). Through a symbolic link the target is
    written; a character device is written directly and stays a device; see
    :func:`write_target`. An existing file keeps its permission bits; a new one gets the
    umask's. ``locked``: the temporary file is ``flock``-ed until it is renamed, so a writer's
    live temporary file is told from one a killed writer left
    (:func:`ltr_bench.models.onnx.write.remove_stale_temps`). Returns the file written;
    raises ``OSError``."""
    target, direct = write_target(Path(path))
    if direct:
        with open(target, "wb") as fh:
            fh.write(data)
            fh.flush()
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = _default_mode()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if locked:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held until this process closes it, or dies
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)  # mkstemp makes 0600
            os.fsync(fh.fileno())
            os.replace(tmp, target)  # before the close: a locked file is never taken as stale
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def fsync_all(fds: list[int]) -> None:
    """``os.fsync`` every descriptor in ``fds``, concurrently; returns when all are durable
    (raises the first ``OSError``).

    Why concurrently: on a journaling file system (ext4, XFS) the cost of an fsync is a
    journal commit (~4 ms on this machine's virtual disk), and concurrent fsyncs share one
    commit: four files took 7.4 ms one after the other and 1.3 ms together (median of 15).
    A cell writes six or seven files (its model, per-query CSV and record). ``fsync`` releases
    the GIL, so the threads cost the run nothing while they wait."""
    if len(fds) <= 1:
        for fd in fds:
            os.fsync(fd)
        return
    import threading

    errors: list[OSError] = []

    def sync(fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=sync, args=(fd,), daemon=True) for fd in fds[1:]]
    for t in threads:
        t.start()
    sync(fds[0])
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def atomic_write_many(items: list[tuple[Path, bytes]]) -> list[Path]:
    """:func:`atomic_write_bytes` of several files, their fsyncs together
    (:func:`fsync_all`): every file is written to its temporary sibling, all are fsynced,
    then renamed into place **in the order given** (so the last one, a record, appears only
    when the files before it are in place). Returns the files written; raises ``OSError``
    (no temporary file is left; the files renamed before the error stay)."""
    staged: list[tuple[str, Path]] = []  # (temporary file, target) of the regular files
    written: list[Path] = []
    try:
        fds: list[int] = []
        try:
            for path, data in items:
                target, direct = write_target(Path(path))
                written.append(target)
                if direct:
                    with open(target, "wb") as fh:
                        fh.write(data)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    mode = stat.S_IMODE(target.stat().st_mode)
                except FileNotFoundError:
                    mode = _default_mode()
                fd, tmp = tempfile.mkstemp(
                    prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
                )
                fds.append(fd)
                staged.append((tmp, target))
                with os.fdopen(os.dup(fd), "wb") as fh:
                    fh.write(data)
                os.fchmod(fd, mode)  # mkstemp makes 0600
            fsync_all(fds)
        finally:
            for fd in fds:
                os.close(fd)
        while staged:
            tmp, target = staged[0]
            os.replace(tmp, target)
            staged.pop(0)
    except BaseException:
        for tmp, _target in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    return written


def atomic_write_text(path: Path, text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8 (newlines as given)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def reason_of(exc: OSError) -> str:
    """The operating system's words for ``exc`` (``no space left on the device`` for
    ENOSPC)."""
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or str(exc)


def write_output(path, data: str | bytes, *, what: str) -> Path:
    """Write a user-named output (``what``: the option, e.g. ``"--output"``) with
    :func:`atomic_write_bytes`; an ``OSError`` becomes :class:`OutputError` naming ``what``,
    the file and the reason (read-only folder, full disk, a folder or pipe in the way)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        return atomic_write_bytes(Path(path), raw)
    except OSError as exc:
        raise OutputError(f"{what} {path}: cannot write it: {reason_of(exc)}") from None


def figure_png(fig, **savefig_kwargs) -> bytes:
    """A matplotlib figure as PNG bytes (so that figures go through the one writer too)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **savefig_kwargs)
    return buf.getvalue()


class UnwritableRecordError(ValueError):
    """A record holds something its files could not give back (a value that is not a number
    where a number belongs, columns of unequal length): nothing is written. ``str`` names the
    column or field, the row and the value."""


def _csv_number(value, column: str, row: int) -> str:
    """The exact text of one per-query value: a real number (Python or numpy; not a bool)
    written as ``repr(float(value))``, which :func:`read_per_query_csv` reads back
    bit-identically. Anything else raises :class:`UnwritableRecordError` (a numpy scalar's
    own ``repr`` is ``np.float64(...)``, which no reader takes for a number)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise UnwritableRecordError(
            f"per-query column {column!r}, query {row + 1}: expected a number, got "
            f"{type(value).__name__} {value!r:.60}"
        )
    if isinstance(value, np.complexfloating):
        raise UnwritableRecordError(
            f"per-query column {column!r}, query {row + 1}: complex value {value!r:.60}"
        )
    return repr(float(value))


def per_query_csv(per_query: dict[str, list]) -> str:
    """CSV text: header ``qid,<metric>...``, one row per query; every metric value a number
    written exactly (``repr`` of a Python float), qids as given. The one writer of per-query
    values (the store and MLflow both use it); raises :class:`UnwritableRecordError` for a
    value that is not a number or columns of unequal length, before anything is written."""
    cols = list(per_query)
    lengths = {c: len(per_query[c]) for c in cols}
    if len(set(lengths.values())) > 1:
        raise UnwritableRecordError(f"per-query columns of unequal length: {lengths}")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for i, row in enumerate(zip(*(per_query[c] for c in cols))):
        w.writerow(
            [_qid_text(v) if c == "qid" else _csv_number(v, c, i) for c, v in zip(cols, row)]
        )
    return buf.getvalue()


def _qid_text(value) -> str:
    if isinstance(value, (np.integer, np.str_)):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UnwritableRecordError(f"per-query qid {value!r:.60} is not an integer or a string")
    return str(value)


def record_json(record: ResultRecord) -> str:
    """A finished record as the JSON text of its file or artifact (the one writer of record
    documents): :meth:`ResultRecord.to_dict`, checked as a reader checks it
    (:meth:`ResultRecord.checked`), so nothing is written that would be read back as damaged;
    raises :class:`UnwritableRecordError` naming the field."""
    from ltr_bench.results.record import DamagedRecordError

    doc = record.to_dict()
    # where a copy is in MLflow is not part of the record (the store notes it beside the
    # record: ResultStore.note_mlflow); a copy's ids never travel in its own artifact
    doc.pop("mlflow", None)
    try:
        ResultRecord.checked(doc, record.summary_line())
    except DamagedRecordError as exc:
        raise UnwritableRecordError(str(exc)) from None
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=True) + "\n"


def read_per_query_csv(path: Path) -> dict[str, list]:
    """The per-query values of :func:`per_query_csv`; a row of the wrong length or a value
    that is not a number raises :class:`~ltr_bench.results.record.DamagedRecordError` naming
    the file, line and column."""
    from ltr_bench.results.record import DamagedRecordError

    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    if "qid" not in header or len(set(header)) != len(header):
        raise DamagedRecordError(f"{path}:1", None, f"not a per-query header: {header[:5]}")
    out: dict[str, list] = {c: [] for c in header}
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise DamagedRecordError(
                f"{path}:{line}", None, f"{len(row)} values for {len(header)} columns"
            )
        for c, v in zip(header, row):
            try:
                out[c].append(_number(v) if c != "qid" else _qid(v))
            except ValueError:
                raise DamagedRecordError(
                    f"{path}:{line}", c, f"expected a number, got {v[:40]!r}"
                ) from None
    return out


def _number(text: str) -> float:
    return float(text)


def _qid(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def _query_rows(qid: np.ndarray) -> list[tuple]:
    """``(query, rows)`` per query, queries in order of first appearance, rows in order."""
    if qid.size == 0:
        return []
    order = np.argsort(qid, kind="stable")
    starts = np.flatnonzero(np.r_[True, qid[order][1:] != qid[order][:-1]])
    groups = np.split(order, starts[1:])
    groups.sort(key=lambda rows: rows[0])
    return [(qid[rows[0]].item(), rows) for rows in groups]


def trec_run_text(qid, scores, *, tag: str, docid=None) -> str:
    """The scores as a TREC run file: ``qid Q0 docid rank score tag`` per line, the document
    named by :func:`ltr_bench.folds.doc_names` (the data file's own id, ``docid``, when it has
    one, else the row's position in the split, 0-based), rank 1-based by descending score
    (equal scores: larger docid string first, trec_eval's own order), scores written exactly
    (``repr``). trec_eval, ranx or the LETOR scripts can re-evaluate exactly these
    predictions, with the qrels of :func:`qrels_text`."""
    from ltr_bench.folds import doc_names

    qid = np.asarray(qid)
    scores = np.asarray(scores, dtype=np.float64)
    names = doc_names(qid, docid)
    tag = "".join(c if c.isalnum() or c in "-_.[]=," else "_" for c in tag) or "ltr-bench"
    lines = []
    for q, rows in _query_rows(qid):
        order = sorted(rows.tolist(), key=lambda i: names[i], reverse=True)
        order.sort(key=lambda i: -scores[i])
        lines += [
            f"{q} Q0 {names[i]} {r} {float(scores[i])!r} {tag}"
            for r, i in enumerate(order, start=1)
        ]
    return "\n".join(lines) + "\n"


def qrels_text(qid, y, *, docid=None) -> str:
    """The labels as a TREC qrels file, ``qid 0 docid label`` per row in row order, the
    documents named as :func:`trec_run_text` names them (the same ``docid``), so trec_eval,
    ranx or ir_measures score a run against exactly these labels."""
    from ltr_bench.folds import doc_names

    qid = np.asarray(qid)
    names = doc_names(qid, docid)
    labels = np.asarray(y, dtype=np.int64).tolist()
    return "".join(f"{q} 0 {n} {lab}\n" for q, n, lab in zip(qid.tolist(), names, labels))


def records_json(records: Iterable[ResultRecord]) -> str:
    """The CLI's ``--output`` document: a JSON list of :meth:`ResultRecord.to_dict`."""
    return (
        json.dumps(
            [r.to_dict() for r in records], indent=1, sort_keys=True, allow_nan=True, default=repr
        )
        + "\n"
    )
