"""Results: the one shape of a finished cell and where it is kept.

Owns :class:`ResultRecord` (:mod:`.record`), the local store (:mod:`.store`), file formats
(:mod:`.files`: atomic writes, per-query CSV, TREC runs and qrels, JSON) and the labels that name a
configuration (:mod:`.labels`). May import the root contract only; knows neither the harness
nor MLflow (``tracking`` and ``report`` read results, never the other way round).
"""

from ltr_bench.results.claims import ClaimWaitError
from ltr_bench.results.files import (
    OutputError,
    ResultsWriteError,
    UnwritableRecordError,
    atomic_write_bytes,
    atomic_write_text,
    check_not_an_input,
    check_output_path,
    check_writable_dir,
    figure_png,
    per_query_csv,
    qrels_text,
    read_per_query_csv,
    record_json,
    records_json,
    trec_run_text,
    write_output,
)
from ltr_bench.results.record import (
    RECORD_FORMAT,
    DamagedRecordError,
    ResultRecord,
    aggregate,
    group_flags,
    jsonable,
    now,
)
from ltr_bench.results.store import CellClaim, ResultStore

__all__ = [
    "RECORD_FORMAT",
    "CellClaim",
    "ClaimWaitError",
    "DamagedRecordError",
    "OutputError",
    "ResultRecord",
    "ResultStore",
    "ResultsWriteError",
    "UnwritableRecordError",
    "aggregate",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_not_an_input",
    "check_output_path",
    "check_writable_dir",
    "figure_png",
    "group_flags",
    "jsonable",
    "now",
    "per_query_csv",
    "qrels_text",
    "read_per_query_csv",
    "record_json",
    "records_json",
    "trec_run_text",
    "write_output",
]
