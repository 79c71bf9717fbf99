"""Is a fold run's copy of a record intact? Compares the ``record.json`` and per-query
artifacts of an MLflow run with the local record (the source of truth), so a re-run replaces
a run whose artifacts are missing, damaged (truncated, garbled, wrongly typed) or different
(:meth:`ltr_bench.tracking.writer.Tracker.log_record`)."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from ltr_bench.results import DamagedRecordError, ResultRecord, read_per_query_csv
from ltr_bench.tracking.layout import PER_QUERY_ARTIFACT, RECORD_ARTIFACT

__all__ = ["stored_record_problem"]


def _canonical(obj: Any) -> str:
    """JSON text in which equal contents are equal strings (NaN included)."""
    return json.dumps(obj, sort_keys=True, allow_nan=True, default=repr)


def _same_per_query(stored: dict[str, list], local: dict[str, list]) -> bool:
    if list(stored) != list(local):
        return False
    for col, values in local.items():
        theirs = stored[col]
        if len(theirs) != len(values):
            return False
        for a, b in zip(theirs, values):
            if isinstance(b, float) and math.isnan(b):
                if not (isinstance(a, float) and math.isnan(a)):
                    return False
            elif str(a) != str(b) and a != b:
                return False
    return True


def stored_record_problem(client, run_id: str, record: ResultRecord) -> str | None:
    """What is wrong with run ``run_id``'s copy of ``record`` (missing, damaged or different
    artifact), or None when it holds exactly the local record. The per-query artifact is
    compared only when ``record.per_query`` is loaded."""
    with tempfile.TemporaryDirectory(prefix="ltr-bench-verify-") as tmp:
        try:
            path = client.download_artifacts(run_id, RECORD_ARTIFACT, tmp)
            text = Path(path).read_text("utf-8")
        except Exception:  # noqa: BLE001 - gone, unreadable: the same for the report
            return f"its {RECORD_ARTIFACT} artifact is missing or unreadable"
        try:
            stored = json.loads(text)
            ResultRecord.checked(stored, RECORD_ARTIFACT)
        except DamagedRecordError as exc:
            return f"its {RECORD_ARTIFACT} artifact is damaged ({exc.reason})"
        except ValueError as exc:
            return f"its {RECORD_ARTIFACT} artifact is damaged (not JSON: {exc})"
        stored.pop("mlflow", None)
        local = record.to_dict()
        local.pop("mlflow", None)
        if _canonical(stored) != _canonical(local):
            return f"its {RECORD_ARTIFACT} artifact differs from the local record"
        if record.per_query is None:
            return None
        try:
            path = client.download_artifacts(run_id, PER_QUERY_ARTIFACT, tmp)
        except Exception:  # noqa: BLE001
            return f"its {PER_QUERY_ARTIFACT} artifact is missing"
        try:
            values = read_per_query_csv(Path(path))
        except (DamagedRecordError, OSError, UnicodeDecodeError) as exc:
            return f"its {PER_QUERY_ARTIFACT} artifact is damaged ({exc})"
        if not _same_per_query(values, record.per_query):
            return f"its {PER_QUERY_ARTIFACT} artifact differs from the local per-query values"
    return None
