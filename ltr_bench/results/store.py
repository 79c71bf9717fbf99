"""The local store of results: :class:`ResultStore` (and its per-cell claims, :mod:`.claims`).

Finished records are files, ``<root>/<key>.json`` and ``<root>/<key>.per_query.csv``
(and the kept model's folder ``<root>/<key>.model.<token>``, which the record names),
written atomically (:func:`ltr_bench.results.files.atomic_write_many`: fsynced together,
renamed the CSV before the JSON), so a record file exists only for a completely written
result. This is the source of truth of every finished cell; MLflow gets a copy. Knows
neither MLflow nor the harness.

Where a record's copy is in MLflow (:attr:`ResultRecord.mlflow`: ids) is a note beside the
record, ``<root>/.mlflow/<key>.json``, written by the process that logged it
(:meth:`ResultStore.note_mlflow`) with the record's ``finished`` stamp; a loaded record gets
the ids of the note that carries its own stamp. The record file itself is never rewritten
for it (so the logging process never races the run's own write of the record, and nothing
else in a record can change), and a note of an earlier computation of the cell (``--force``)
is removed when the new record is saved and ignored should it be written late.
The note may also bind MLflow's copy of the fold run's artifacts (``artifacts``: their size
and SHA-256 as logged), so that a re-run can prove that copy unchanged without MLflow.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from ltr_bench.results.claims import CellClaim, acquire, wait_for_claim
from ltr_bench.results.files import (
    ResultsWriteError,
    atomic_write_bytes,
    atomic_write_many,
    per_query_csv,
    read_per_query_csv,
    record_json,
)
from ltr_bench.results.record import DamagedRecordError, ResultRecord


class ResultStore:
    """Finished cells as files: ``<root>/<key>.json`` and ``<root>/<key>.per_query.csv``.

    Writes are atomic (temporary file + ``os.replace``), the CSV before the JSON, so a record
    file exists only for a completely written result. Failures are appended to
    ``<root>/failures.log`` (tracebacks) and not stored as finished.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._cache: dict[str, ResultRecord] | None = None
        #: path -> what is wrong with it: files set aside (never used, never deleted; a
        #: record recomputed in its place keeps the damaged file as ``<name>.damaged``)
        self.damaged: dict[Path, DamagedRecordError] = {}
        self._readable: set[str] = set()  # keys whose per-query CSV was read back
        self._listing: dict[str, list[str]] | None = None  # key -> its model folders' names

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

    def claim_path(self, key: str) -> Path:
        return self.claims_dir / f"{key}.lock"

    def mlflow_note_path(self, key: str) -> Path:
        return self.root / ".mlflow" / f"{key}.json"

    def note_mlflow(
        self, record: ResultRecord, ids: dict[str, str], artifacts: dict | None = None
    ) -> None:
        """Note where ``record`` was logged (``ids``: ``tracking_uri``, ``experiment_id``,
        ``parent_run_id``, ``run_id``, and ``model_id`` / ``model_uri`` when a model was
        logged) beside it, bound to its ``finished`` stamp (see the module); atomic.
        ``artifacts``: the fold run's artifacts as logged (name -> ``[size, sha256]``:
        :func:`ltr_bench.tracking.as_logged.artifact_binding`), kept for a re-run to prove
        MLflow's copy unchanged without opening it. Raises :class:`ResultsWriteError`."""
        path = self.mlflow_note_path(record.key)
        doc: dict = {"key": record.key, "finished": record.finished, "mlflow": dict(ids)}
        if artifacts is not None:
            doc["artifacts"] = artifacts
        try:
            atomic_write_bytes(path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
        except OSError as exc:
            raise ResultsWriteError(path, exc) from None
        cached = self._cache.get(record.key) if self._cache is not None else None
        if cached is not None and cached.finished == record.finished:
            cached.mlflow = dict(ids)

    def mlflow_note(self, record: ResultRecord) -> dict | None:
        """The MLflow note that carries ``record``'s own stamp, checked (``mlflow``: string
        ids; ``artifacts``: as given to :meth:`note_mlflow`, or absent); None without one
        (never logged, logged before notes existed, a note of an earlier computation,
        unreadable)."""
        try:
            doc = json.loads(self.mlflow_note_path(record.key).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        if not isinstance(doc, dict):
            return None
        ids = doc.get("mlflow")
        if (
            doc.get("key") != record.key
            or doc.get("finished") != record.finished
            or not isinstance(ids, dict)
            or not all(isinstance(v, str) for v in ids.values())
        ):
            return None
        return doc

    def _mlflow_ids(self, record: ResultRecord) -> dict[str, str] | None:
        """The ids of :meth:`mlflow_note`."""
        doc = self.mlflow_note(record)
        return None if doc is None else doc["mlflow"]

    def logging_mark(self) -> Path | None:
        """Mark ``<root>/.mlflow/logging-<pid>.open``: a logging process works on this
        folder's records. It is removed (:meth:`logging_done`) only once that process ended
        its parent runs cleanly; one left behind (a kill, an interruption, a store that
        stopped answering) tells the next run that MLflow may hold parents to end or resume,
        so it starts its logging process even when every record has its note. None when
        the mark cannot be written (then logging goes on; a re-run finds no mark)."""
        path = self.root / ".mlflow" / f"logging-{os.getpid()}.open"
        try:
            atomic_write_bytes(path, b"")
        except OSError:
            return None
        return path

    def logging_done(self, mark: Path | None) -> None:
        """Remove ``mark`` and the marks of processes that are gone (the logging process that
        opened the store ended their orphaned parent runs: ``ltr_bench.tracking.owners``)."""
        from ltr_bench.environment import process_alive

        for path in self._logging_marks():
            pid = path.stem.removeprefix("logging-")
            if path == mark or not (pid.isdigit() and process_alive(int(pid))):
                with contextlib.suppress(OSError):
                    path.unlink()

    def logging_unfinished(self) -> bool:
        """Some logging process on this folder's records did not end its parent runs cleanly,
        or is at work now (:meth:`logging_mark`)."""
        return bool(self._logging_marks())

    def _logging_marks(self) -> list[Path]:
        try:
            return sorted((self.root / ".mlflow").glob("logging-*.open"))
        except OSError:
            return []

    def claim(self, key: str, *, wait: bool = False) -> CellClaim | None:
        """Claim cell ``key`` for this process (an exclusive ``flock`` on
        ``<root>/.claims/<key>.lock``, released by :meth:`CellClaim.release` or when the
        process ends, however it ends; see :mod:`ltr_bench.results.claims`). None when another
        process holds it (with ``wait``: block until it is free). Raises
        :class:`ResultsWriteError` when the lock file cannot be created."""
        path = self.claim_path(key)
        try:
            return acquire(path, wait=wait)
        except OSError as exc:
            raise ResultsWriteError(path, exc) from None

    def wait_claim(self, key: str, what: str, **kwargs) -> CellClaim:
        """Wait for another process's claim on ``key`` and take it
        (:func:`ltr_bench.results.claims.wait_for_claim`: says whom it waits for, gives up on a
        stopped holder with :class:`~ltr_bench.results.claims.ClaimWaitError`)."""
        path = self.claim_path(key)
        try:
            return wait_for_claim(path, what, **kwargs)
        except OSError as exc:
            raise ResultsWriteError(path, exc) from None

    def reload(self, key: str) -> ResultRecord | None:
        """The finished record with this key as it is on disk now (another process may have
        written it since this store was indexed)."""
        rec = self._read(self.json_path(key))
        if rec is not None and rec.key == key:
            self._index()[key] = rec
            self._readable.discard(key)  # its CSV may be new too
            return self.get(key)
        return None

    def _read(self, path: Path) -> ResultRecord | None:
        """The finished record in ``path``; None for a missing file or a failed record; a
        damaged file (not JSON, not an object, a field of the wrong type, a name that is not
        its key) is noted in :attr:`damaged` and None returned."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            self.damaged[path] = DamagedRecordError(str(path), None, f"unreadable: {exc}")
            return None
        try:
            rec = ResultRecord.checked(json.loads(text), str(path))
            if path.stem != rec.key:
                raise DamagedRecordError(
                    str(path), "key", f"{rec.key[:16]}... is not the file's name"
                )
        except DamagedRecordError as exc:
            self.damaged[path] = exc
            return None
        except ValueError as exc:  # json.JSONDecodeError
            self.damaged[path] = DamagedRecordError(str(path), None, f"not JSON: {exc}")
            return None
        if not rec.ok:
            return None
        rec.mlflow = self._mlflow_ids(rec)
        return rec

    def _index(self) -> dict[str, ResultRecord]:
        if self._cache is None:
            self._cache = {}
            if self.root.is_dir():
                for p in sorted(self.root.glob("*.json")):
                    rec = self._read(p)
                    if rec is not None:
                        self._cache[rec.key] = rec
        return self._cache

    def damage_notes(self) -> list[str]:
        """One sentence per damaged file: path, field, reason, and what it belonged to."""
        return [f"set aside (damaged): {exc}" for exc in self.damaged.values()]

    def get(self, key: str) -> ResultRecord | None:
        """The finished record with this key, or None; a record whose per-query values cannot
        be read back (see :meth:`per_query`) is set aside, noted in :attr:`damaged`, and None
        returned, so the cell is recomputed rather than skipped."""
        rec = self._index().get(key)
        if rec is None or key in self._readable or rec.per_query is not None:
            return rec
        # read and dropped, not kept: per-query values of a large plan would fill the memory
        if self._read_per_query(rec) is None and self.per_query_path(key).exists():
            return None
        self._readable.add(key)
        return rec

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
        returns the JSON path. ``per_query=False`` writes only the JSON. The record is a new
        computation of its cell: a note of where an earlier one is in MLflow is removed."""
        if not record.ok:
            raise ValueError("only finished (status ok) records are stored; use log_failure")
        # both texts are made (and checked: UnwritableRecordError) before anything is written
        run_text = record.run_text
        run_path = self.root / f"{record.key}.run.txt" if run_text is not None else None
        if run_path is not None:
            record.run_file = str(run_path.resolve())
        doc = record_json(record)
        csv_text = per_query_csv(record.per_query) if record.per_query is not None else None
        files: list[tuple[Path, bytes]] = []
        if per_query and csv_text is not None:
            pq_path = self.per_query_path(record.key)
            if pq_path in self.damaged and pq_path.exists():  # kept for inspection
                os.replace(pq_path, pq_path.with_name(pq_path.name + ".damaged"))
            files.append((pq_path, csv_text.encode("utf-8")))
        if run_path is not None and run_text is not None:
            files.append((run_path, run_text.encode("utf-8")))
        path = self.json_path(record.key)
        if path in self.damaged and path.exists():  # keep what was damaged, for inspection
            os.replace(path, path.with_name(path.name + ".damaged"))
        with contextlib.suppress(FileNotFoundError):  # first: never a new record, old note
            self.mlflow_note_path(record.key).unlink()
        # each file atomic (temporary, fsync, rename), their fsyncs together, the record
        # renamed last: it appears only when its CSV and run file are in place
        atomic_write_many([*files, (path, doc.encode("utf-8"))])
        self._index()[record.key] = record
        self.drop_other_models(record)
        return path

    def drop_other_models(self, record: ResultRecord) -> None:
        """Remove every model folder of ``record``'s cell (``<key>.model.<token>``, written by
        :mod:`ltr_bench.run.keep` before the record) that the record does not name: a
        superseded fit (``--force``), or one whose record was never written (a kill between
        the two). Call it with the cell's claim held, so no other process is writing one."""
        for folder in self._other_models(record, self._model_names(record.key, fresh=True)):
            shutil.rmtree(folder, ignore_errors=True)

    def tidy_models(self, record: ResultRecord) -> None:
        """For a finished cell that is skipped: remove the model folders its record does not
        name (a ``--force`` run killed between writing its model and its record leaves one)
        when no process holds the cell's claim (it is taken, non-blocking, for the removal;
        a process holding it may be writing a model its record will name). One listing of
        the folder serves every skipped cell."""
        if not self._other_models(record, self._model_names(record.key, fresh=False)):
            return
        claim = self.claim(record.key)
        if claim is None:
            return
        try:
            self.drop_other_models(record)
        finally:
            claim.release()

    def _model_names(self, key: str, *, fresh: bool) -> list[str]:
        """Names in the folder that belong to ``key``'s model folders (``fresh``: listed now,
        else from one listing of the folder taken on first use)."""
        prefixes = (f"{key}.model.", f".{key}.model.")
        if fresh:
            try:
                names = os.listdir(self.root)
            except OSError:
                return []
            return [n for n in names if n.startswith(prefixes)]
        if self._listing is None:
            self._listing = {}
            try:
                names = os.listdir(self.root)
            except OSError:
                names = []
            for name in names:
                head, sep, _ = name.lstrip(".").partition(".model.")
                if sep:
                    self._listing.setdefault(head, []).append(name)
        return self._listing.get(key, [])

    def _other_models(self, record: ResultRecord, names: list[str]) -> list[Path]:
        # ".<key>.model.*": the writer's temporary folders, left by a killed process
        keep = Path(record.model_dir).name if record.model_dir else None
        return [self.root / n for n in names if n != keep and (self.root / n).is_dir()]

    def per_query(self, record: ResultRecord) -> dict[str, list] | None:
        """The per-query values of a record (from memory, else from its CSV)."""
        if record.per_query is None:
            record.per_query = self._read_per_query(record)
        return record.per_query

    def _read_per_query(self, record: ResultRecord) -> dict[str, list] | None:
        """The values of the record's per-query CSV; None when there is none or it is damaged
        (then noted in :attr:`damaged` and the record dropped from the index: not a usable
        finished record)."""
        p = self.per_query_path(record.key)
        if not p.is_file():
            return None
        try:
            return read_per_query_csv(p)
        except (OSError, UnicodeDecodeError, DamagedRecordError) as exc:
            err = (
                exc
                if isinstance(exc, DamagedRecordError)
                else DamagedRecordError(str(p), None, f"unreadable: {exc}")
            )
            err.reason += f" (per-query values of {record.summary_line()})"
            self.damaged[p] = err
            self._index().pop(record.key, None)
            self._readable.discard(record.key)
            return None

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
