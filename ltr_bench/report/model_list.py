"""The kept models as ``ltr-bench models`` lists them: one row per finished result whose fitted
model was kept, with what a user needs to pick one and load it.

A row (:class:`ModelRow`) holds the row's name (:func:`ltr_bench.results.labels.row_label`:
the configuration's label and its data variant), the ranker, the dataset and its variant in
words, fold, seed, one metric (``ndcg@10`` when recorded, else the first metric of the run;
``--best METRIC`` chooses), the model's folder, and, once the result is in MLflow, its fold
run id and model URI (from what the caller found in the store; with ``--no-mlflow``, from
``ResultRecord.mlflow``). Rendering: an aligned text table, CSV (``csv`` module) or JSON.
Pure: nothing here reads files or MLflow.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ltr_bench.results import ResultRecord
from ltr_bench.results.labels import label_sort_key, row_label, variant_text

__all__ = [
    "FORMATS",
    "ModelRow",
    "format_rows",
    "format_table",
    "headline_metric",
    "model_rows",
    "select",
]

FORMATS = ("table", "csv", "json")


@dataclass
class ModelRow:
    """One kept model (see the module). ``model_uri`` is ``models:/<model id>`` when MLflow
    holds the model; ``run_id`` is the fold run's id (``runs:/<run_id>/model`` loads the
    same model); both are empty before the result is logged (or with ``--no-mlflow``)."""

    label: str
    ranker: str
    dataset: str
    variant: str
    fold: int
    seed: int
    metric: str
    value: float
    model_dir: str
    present: bool
    run_id: str = ""
    model_uri: str = ""
    parent_run_id: str = ""
    experiment_id: str = ""
    tracking_uri: str = ""
    key: str = ""


def headline_metric(record: ResultRecord) -> str:
    """``ndcg@10`` when the record has it (the run's summary line shows it too), else the
    first metric the run was asked for, else the record's first metric."""
    if "ndcg@10" in record.metrics:
        return "ndcg@10"
    for m in record.metrics_requested:
        if m in record.all_metrics():
            return m
    return next(iter(record.all_metrics()), "")


def _names(record: ResultRecord) -> set[str]:
    label = record.label or record.ranker
    return {
        record.ranker,
        label,
        row_label(label, record.dataset_options, record.dataset_identity),
    }


def select(
    records: Iterable[ResultRecord],
    *,
    datasets: Sequence[str] | None = None,
    rankers: Sequence[str] | None = None,
) -> list[ResultRecord]:
    """The finished records with a kept model, of ``datasets`` and ``rankers`` (a ranker's
    name, a configuration's label or a row's name) when given."""
    out = []
    for r in records:
        if not (r.ok and r.model_dir):
            continue
        if datasets and r.dataset not in datasets:
            continue
        if rankers and not (_names(r) & set(rankers)):
            continue
        out.append(r)
    return out


def model_rows(
    records: Iterable[ResultRecord],
    found: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    *,
    metric: str | Mapping[str, str] | None = None,
    confirmed: bool = False,
) -> list[ModelRow]:
    """One :class:`ModelRow` per record, sorted by dataset, row name (natural order), seed and
    fold. MLflow ids come from ``found`` (``(key, finished)`` -> the same fields, e.g. read
    from the store); unless ``confirmed`` (the ids are only those the store confirmed), a
    record's own ``record.mlflow`` (what was noted when it was logged) comes first.
    ``metric``: the value shown, one for all or one per dataset (default
    :func:`headline_metric` of each record)."""
    rows = []
    for r in records:
        ids = {} if confirmed else dict(r.mlflow or {})
        if not ids.get("run_id"):
            ids = dict((found or {}).get((r.key, r.finished)) or {})
        m = metric.get(r.dataset) if isinstance(metric, Mapping) else metric
        m = m or headline_metric(r)
        label = r.label or r.ranker
        rows.append(
            ModelRow(
                label=row_label(label, r.dataset_options, r.dataset_identity),
                ranker=r.ranker,
                dataset=r.dataset,
                variant=variant_text(r.dataset_options, r.dataset_identity),
                fold=int(r.fold),
                seed=int(r.seed),
                metric=m,
                value=float(r.all_metrics().get(m, math.nan)),
                model_dir=str(r.model_dir),
                present=Path(str(r.model_dir)).is_dir(),
                run_id=str(ids.get("run_id") or ""),
                model_uri=str(ids.get("model_uri") or ""),
                parent_run_id=str(ids.get("parent_run_id") or ""),
                experiment_id=str(ids.get("experiment_id") or ""),
                tracking_uri=str(ids.get("tracking_uri") or ""),
                key=r.key,
            )
        )
    rows.sort(key=lambda x: (x.dataset, label_sort_key(x.label), x.seed, x.fold))
    return rows


def _shown_path(path: str, cwd: Path | None) -> str:
    """``path`` relative to ``cwd`` when it lies under it (shorter, and still what
    ``--model`` takes from that folder), else as recorded."""
    if cwd is None:
        return path
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path


def _value_text(v: float) -> str:
    return "nan" if math.isnan(v) else f"{v:.4f}"


def format_rows(rows: Sequence[ModelRow], fmt: str = "table", *, cwd: Path | None = None) -> str:
    """``rows`` as ``fmt``: ``table`` (aligned columns: row, ranker, dataset, fold, seed, the
    metric, model folder (relative to ``cwd`` when under it), run id, model URI; ``-`` for an
    id not known), ``csv`` (every field of :class:`ModelRow`, a header line) or ``json`` (a
    list of objects with those fields; a NaN value is null)."""
    if fmt == "json":
        docs = [{**asdict(r), "value": None if math.isnan(r.value) else r.value} for r in rows]
        return json.dumps(docs, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        fields = list(ModelRow.__dataclass_fields__)
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow(asdict(r))
        return buf.getvalue()
    if fmt != "table":
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    return format_table(rows, cwd=cwd).text + "\n"


def format_table(rows: Sequence[ModelRow], *, cwd: Path | None = None, width: int | None = None):
    """The ``table`` of :func:`format_rows` fitted to ``width`` (:mod:`ltr_bench.report.fit`;
    None: every column). The run id is never shortened (``runs:/<run id>/model`` is what a
    user copies); to fit, what says nothing goes first, then the model URI (the run id loads
    the same model), the model folder, the ranker (the row's name starts with it) and the
    seed. Returns a :class:`~ltr_bench.report.fit.Fitted`."""
    from ltr_bench.report.fit import Column, fit_table

    metrics = {r.metric for r in rows}
    single = len(metrics) == 1
    columns = [
        Column("label", cut=True),  # a last resort: --wide, csv and json have it whole
        Column("ranker", drop=3),
        Column("dataset"),
        Column("fold", right=True),
        Column("seed", right=True, drop=1),
        Column(metrics.pop() if single else "metric", right=True),
        Column("model folder", drop=4),
        Column("run id"),
        Column("model URI", drop=5),
    ]
    table = []
    for r in rows:
        value = _value_text(r.value) if single else f"{r.metric} {_value_text(r.value)}"
        folder = _shown_path(r.model_dir, cwd) + ("" if r.present else " (missing)")
        table.append(
            [r.label, r.ranker, r.dataset, str(r.fold), str(r.seed), value, folder]
            + [r.run_id or "-", r.model_uri or "-"]
        )
    return fit_table(columns, table, width=width)
