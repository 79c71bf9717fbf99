"""When ``ltr-bench run`` starts its MLflow logging process: :class:`LoggingStart`.

The logging process (:class:`~ltr_bench.cli.mlflow_process.MlflowProcess`) imports MLflow
(seconds of CPU) on another core while the run imports its rankers, so it is started first
thing - unless the run may well have nothing to log. A run whose cells are all finished, on
data proven unchanged (:func:`ltr_bench.run.fold_proof.all_proven`) and whose records are all
noted as logged to this very MLflow store (``<results>/.mlflow/<key>.json`` bound to the
record's ``finished`` stamp, :meth:`ltr_bench.results.ResultStore.note_mlflow`) and whose
copies in that store are exactly as logged (:mod:`ltr_bench.tracking.as_logged`: fold and
parent runs FINISHED, the ``record.json`` and per-query artifacts byte for byte as noted, read
from the SQLite file and the local artifact folder without MLflow), needs no logging: the
process is then never started. One record without such a note (never logged, an interrupted
logging, another store, a note of an earlier computation or without the artifacts' binding),
an artifact edited, damaged or deleted, a run deleted or not FINISHED, a store that is not an
``sqlite:///`` file with local artifacts, a logging process that did not end its parent runs
cleanly (a kill, an interruption: its mark ``<results>/.mlflow/logging-<pid>.open`` is
left), ``--force`` or ``--attach-report`` and it is started as before, and logs what MLflow
lacks or holds damaged, and ends or resumes those parents.

Whether to wait: before the plan is known, only file names are looked at
(:func:`may_have_nothing_to_log`): a results folder with a record that has no note at all
starts the process at once (the usual first or interrupted run keeps its head start); a
folder whose every record has a note defers the decision until the cells are known.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ltr_bench.cli.mlflow_process import MlflowProcess

__all__ = ["LoggingStart", "may_have_nothing_to_log", "nothing_to_log"]

_RECORD = re.compile(r"[0-9a-f]{64}")


def may_have_nothing_to_log(results_root: Path) -> bool:
    """The results folder holds records, every one has an MLflow note (by name only:
    whether each note is the record's own is checked once the cells are known) and no
    logging process left its mark."""
    try:
        records = {p.stem for p in results_root.glob("*.json") if _RECORD.fullmatch(p.stem)}
        notes = {p.stem for p in (results_root / ".mlflow").glob("*.json")}
        marks = list((results_root / ".mlflow").glob("logging-*.open"))
    except OSError:
        return False
    return bool(records) and records <= notes and not marks


def nothing_to_log(cells, store, uri: str) -> bool:
    """Every cell of ``cells`` is finished on data proven unchanged without loading it, its
    record (and every other local record of its parent run's group) is noted as logged to
    the MLflow store ``uri``, MLflow's copy of it is exactly as
    logged (:func:`~ltr_bench.tracking.as_logged.unchanged_since_logged`: nothing for a
    re-run to repair) and no logging process left its parent runs unended
    (:meth:`~ltr_bench.results.ResultStore.logging_unfinished`)."""
    from ltr_bench.run.fold_proof import all_proven
    from ltr_bench.tracking.as_logged import unchanged_since_logged

    if store.logging_unfinished():
        return False
    records = {}
    for c in cells:
        rec = store.get(c.key)
        if rec is None:
            return False
        records[rec.key] = rec
    # a parent run's aggregates cover every local record of its group, other folds included
    # (a re-run ends it with them): those must be in MLflow as logged too
    for plan_key in {rec.plan_key for rec in records.values()}:
        for rec in store.records(plan_key=plan_key):
            records.setdefault(rec.key, rec)
    notes = []
    for rec in records.values():
        note = store.mlflow_note(rec)
        if note is None or note["mlflow"].get("tracking_uri") != uri:
            return False
        notes.append((rec.key, rec.finished, note["mlflow"], note.get("artifacts")))
    return all_proven(store.root, cells, store) and unchanged_since_logged(uri, notes)


class LoggingStart:
    """The run's MLflow logging process, started now (:meth:`start`) or never.

    ``uri`` is resolved at once, so a bad ``--tracking-uri`` is refused whether the process
    starts or not. :attr:`process` is None until :meth:`start`."""

    def __init__(self, tracking_uri: str | None, results_root: Path):
        from ltr_bench.tracking.store import resolve_tracking_uri

        self.tracking_uri = tracking_uri
        self.uri = resolve_tracking_uri(tracking_uri)
        self.results_root = results_root
        self.process: MlflowProcess | None = None
        if not may_have_nothing_to_log(results_root):
            self.start()

    def start(self) -> MlflowProcess:
        """The logging process, started if it was not."""
        if self.process is None:
            from ltr_bench.cli.mlflow_process import MlflowProcess

            self.process = MlflowProcess(self.tracking_uri, self.results_root)
        return self.process
