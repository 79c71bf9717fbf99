"""The one shape of a finished cell and the local store of results.

* :class:`ResultRecord`: everything measured for one (ranker, parameters, dataset, fold,
  seed) cell. The CLI's ``--output`` JSON, the MLflow runs (:mod:`ltr_bench.tracking`) and
  the comparison report (:mod:`ltr_bench.report`) are all made from it, and
  :func:`ltr_bench.tracking.fetch_fold_results` reads MLflow runs back into it.
* :class:`ResultStore`: finished records as files, ``<root>/<key>.json`` and
  ``<root>/<key>.per_query.csv``, written atomically (temporary file, fsync, rename), the
  CSV before the JSON, so a record file exists only for a completely written result.
* The per-query CSV codec (:func:`per_query_csv`, :func:`read_per_query_csv`): floats are
  written with ``repr``, so values read back are bit-identical.
* :func:`aggregate`: mean, sample standard deviation and count over records.

This module knows neither MLflow nor the harness.
"""

from __future__ import annotations

import csv
import datetime as _dt
import errno
import fcntl
import io
import json
import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "RECORD_FORMAT",
    "CellClaim",
    "ResultRecord",
    "ResultStore",
    "ResultsWriteError",
    "aggregate",
    "atomic_write_text",
    "check_writable_dir",
    "group_flags",
    "jsonable",
    "now",
    "per_query_csv",
    "read_per_query_csv",
    "records_json",
]

RECORD_FORMAT = 1


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
    from .errors import UsageError

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


def now() -> str:
    """The current UTC time, ISO 8601 with milliseconds (the records' time stamps)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def jsonable(value: Any) -> Any:
    """A JSON-safe copy: numpy scalars -> Python, tuples -> lists, other objects -> repr."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Path):
        return str(value)
    return repr(value)


@dataclass
class ResultRecord:
    """Everything measured for one cell: the one shape of a finished fold. JSON-able via
    :meth:`to_dict` (without ``per_query``, which the store keeps in a CSV beside the JSON).

    key / plan_key / config_key: the cell, its (configuration, seed) group (one MLflow parent
    run) and its configuration over seeds (see :mod:`ltr_bench.cells`).
    ranker / label: the registered name, and the configuration's name in the plan.
    metrics: mean over test queries, keys as :mod:`ltr_bench.metrics` names them (each
    requested metric under both empty-query conventions).
    extra_metrics: measures that are not ranking metrics (``knn_error`` on
    query-by-example data).
    per_query: ``{"qid": [...], "<metric>": [...], ...}``, queries in order of first
    appearance in the test split (for paired significance tests).
    fit_seconds / score_us_per_doc / peak_rss_mb / ranker_peak_mb / load_avg: see
    :mod:`ltr_bench.timing`.
    stage_seconds: wall seconds of the cell's stages: ``load`` (reading or generating the
    fold; in process one load serves every ranker of a fold and each of its records carries
    it), ``setup`` (building the ranker), ``fit``, ``score`` (the warm-up call and the timed
    repeats of ``predict`` on the test split), ``evaluate`` (the metrics).
    model_info: what the fitted model is (its size, diagnostics): the ranker's
    ``fitted_info()``.
    status: ``"ok"`` or ``"failed"`` (then ``error``, ``error_stage``, ``traceback``).
    flags: machine-readable marks on the numbers: ``constant_scores`` (every test score
    equal: the metrics are a random ranking's), ``loaded_machine`` (the load average
    during the cell exceeded the thread count by more than one: timings are suspect).
    warnings: things a reader of the numbers must know, as sentences (the flags explained,
    the ranker's own warnings).
    mlflow: ``{"tracking_uri", "experiment_id", "run_id", "parent_run_id"}`` on records read
    back from MLflow (:func:`ltr_bench.tracking.fetch_fold_results`); never stored locally.
    """

    key: str
    plan_key: str
    ranker: str
    dataset: str
    fold: int
    seed: int
    status: str = "ok"
    config_key: str = ""
    label: str = ""
    ranker_distribution: str = ""
    ranker_version: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    user_params: dict[str, Any] = field(default_factory=dict)
    dataset_source: str = ""
    dataset_options: dict[str, Any] = field(default_factory=dict)
    dataset_identity: dict[str, Any] = field(default_factory=dict)
    metrics_requested: list[str] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    n_train_docs: int = 0
    n_test_docs: int = 0
    n_test_queries: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    extra_metrics: dict[str, float] = field(default_factory=dict)
    fit_seconds: float = float("nan")
    score_us_per_doc: float = float("nan")
    score_repeats: int = 0
    peak_rss_mb: float = float("nan")
    ranker_peak_mb: float = float("nan")
    peak_rss_method: str = ""
    load_avg: dict[str, float | None] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    n_threads: int | None = None
    started: str = ""
    finished: str = ""
    environment: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    model_info: dict[str, Any] = field(default_factory=dict)
    run_file: str | None = None
    flags: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    error_stage: str | None = None
    traceback: str | None = None
    mlflow: dict[str, Any] | None = None
    format: int = RECORD_FORMAT
    per_query: dict[str, list] | None = field(default=None, repr=False)
    run_text: str | None = field(default=None, repr=False)  # TREC run, until the store saves it

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("per_query", "mlflow", "run_text")}
        if self.mlflow:
            d["mlflow"] = self.mlflow
        d = jsonable(d)
        if per_query:
            d["per_query"] = jsonable(self.per_query)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ResultRecord:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    def all_metrics(self) -> dict[str, float]:
        """Ranking metrics and extra metrics in one mapping."""
        return {**self.metrics, **self.extra_metrics}

    def summary_line(self) -> str:
        """``lightgbm / synthetic fold 2`` (for messages)."""
        seed = f" seed {self.seed}" if self.seed else ""
        return f"{self.label or self.ranker} / {self.dataset} fold {self.fold}{seed}"


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


class ResultStore:
    """Finished cells as files: ``<root>/<key>.json`` and ``<root>/<key>.per_query.csv``.

    Writes are atomic (temporary file + ``os.replace``), the CSV before the JSON, so a record
    file exists only for a completely written result. Failures are appended to
    ``<root>/failures.log`` (tracebacks) and not stored as finished.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._cache: dict[str, ResultRecord] | None = None

    def json_path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def per_query_path(self, key: str) -> Path:
        return self.root / f"{key}.per_query.csv"

    @property
    def failure_log(self) -> Path:
        return self.root / "failures.log"

    @property
    def claims_dir(self) -> Path:
        return self.root / ".claims"

    def claim(self, key: str, *, wait: bool = False) -> CellClaim | None:
        """Claim cell ``key`` for this process (an exclusive ``flock`` on
        ``<root>/.claims/<key>.lock``, released by :meth:`CellClaim.release` or when the
        process ends, however it ends). None when another process holds it (with ``wait``:
        block until it is free). Raises :class:`ResultsWriteError` when the lock file cannot
        be created."""
        path = self.claims_dir / f"{key}.lock"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ResultsWriteError(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return CellClaim(fd)

    def reload(self, key: str) -> ResultRecord | None:
        """The finished record with this key as it is on disk now (another process may have
        written it since this store was indexed)."""
        rec = self._read(self.json_path(key))
        if rec is not None and rec.key == key:
            self._index()[key] = rec
            return rec
        return None

    def _read(self, path: Path) -> ResultRecord | None:
        try:
            rec = ResultRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None  # unreadable or foreign file: treat as not finished
        return rec if rec.ok else None

    def _index(self) -> dict[str, ResultRecord]:
        if self._cache is None:
            self._cache = {}
            if self.root.is_dir():
                for p in sorted(self.root.glob("*.json")):
                    rec = self._read(p)
                    if rec is not None and p.stem == rec.key:
                        self._cache[rec.key] = rec
        return self._cache

    def get(self, key: str) -> ResultRecord | None:
        """The finished record with this key, or None."""
        return self._index().get(key)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def records(self, *, plan_key: str | None = None) -> list[ResultRecord]:
        recs = list(self._index().values())
        if plan_key is not None:
            recs = [r for r in recs if r.plan_key == plan_key]
        return sorted(recs, key=lambda r: (r.dataset, r.ranker, r.fold))

    def save(self, record: ResultRecord, *, per_query: bool = True) -> Path:
        """:meth:`_save`; an :class:`OSError` (full disk, permissions) becomes
        :class:`ResultsWriteError` naming the file (the earlier records stay intact: every
        write is atomic)."""
        try:
            return self._save(record, per_query=per_query)
        except OSError as exc:
            raise ResultsWriteError(Path(exc.filename or self.json_path(record.key)), exc) from None

    def _save(self, record: ResultRecord, *, per_query: bool = True) -> Path:
        """Write a finished record (and, with ``per_query``, its per-query CSV) atomically;
        returns the JSON path. ``per_query=False`` rewrites only the JSON (e.g. to note the
        MLflow run id)."""
        if not record.ok:
            raise ValueError("only finished (status ok) records are stored; use log_failure")
        if per_query and record.per_query is not None:
            atomic_write_text(self.per_query_path(record.key), per_query_csv(record.per_query))
        if record.run_text is not None:
            run_path = self.root / f"{record.key}.run.txt"
            atomic_write_text(run_path, record.run_text)
            record.run_file = str(run_path.resolve())
        path = self.json_path(record.key)
        atomic_write_text(
            path, json.dumps(record.to_dict(), indent=1, sort_keys=True, allow_nan=True) + "\n"
        )
        self._index()[record.key] = record
        return path

    def per_query(self, record: ResultRecord) -> dict[str, list] | None:
        """The per-query values of a record (from memory, else from its CSV)."""
        if record.per_query is not None:
            return record.per_query
        p = self.per_query_path(record.key)
        if p.is_file():
            record.per_query = read_per_query_csv(p)
        return record.per_query

    def log_failure(self, record: ResultRecord) -> Path:
        """Append a failed cell's traceback to ``failures.log``; returns the log path."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with open(self.failure_log, "a", encoding="utf-8") as fh:
                fh.write(
                    f"=== {record.finished} {record.summary_line()} (key {record.key}, "
                    f"stage {record.error_stage})\n"
                )
                fh.write((record.traceback or record.error or "").rstrip() + "\n\n")
        except OSError as exc:
            raise ResultsWriteError(self.failure_log, exc) from None
        return self.failure_log


class CellClaim:
    """A held claim on a cell (see :meth:`ResultStore.claim`)."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> CellClaim:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def aggregate(records: list[ResultRecord]) -> dict[str, tuple[float, float, int]]:
    """Per key of ``metrics`` plus fit_seconds / score_us_per_doc / peak_rss_mb and extra
    metrics: ``(mean, std, n)`` over the records (folds). ``std`` is the sample standard
    deviation (ddof=1), NaN for a single fold."""
    values: dict[str, list[float]] = {}
    for r in records:
        items = dict(r.metrics)
        items.update(r.extra_metrics)
        items.update(
            fit_seconds=r.fit_seconds,
            score_us_per_doc=r.score_us_per_doc,
            peak_rss_mb=r.peak_rss_mb,
            ranker_peak_mb=r.ranker_peak_mb,
        )
        for k, v in items.items():
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                values.setdefault(k, []).append(float(v))
    out = {}
    for k, vs in values.items():
        arr = np.asarray(vs)
        std = float(np.std(arr, ddof=1)) if arr.size > 1 else float("nan")
        out[k] = (float(np.mean(arr)), std, int(arr.size))
    return out


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


FLAG_TEXT = {
    "constant_scores": "constant model (all test scores equal)",
    "loaded_machine": "machine loaded during the cell (timings suspect)",
}


def group_flags(records: Iterable[ResultRecord]) -> list[str]:
    """Readable flags of a group of records (one configuration): per-record flags with their
    count, and ``fit time spread`` when the slowest fold took more than twice the median
    (on an idle machine fold times of one configuration differ far less)."""
    records = list(records)
    out = []
    for flag, text in FLAG_TEXT.items():
        n = sum(flag in r.flags for r in records)
        if n:
            out.append(f"{text}: {n}/{len(records)}")
    fits = np.array([r.fit_seconds for r in records if r.fit_seconds == r.fit_seconds])
    if fits.size >= 2 and np.median(fits) > 0.05 and fits.max() > 2 * np.median(fits):
        out.append(
            f"fit time spread {fits.max() / np.median(fits):.1f}x the median (machine disturbed?)"
        )
    return out
