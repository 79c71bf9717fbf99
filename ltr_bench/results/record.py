"""The one shape of a finished cell: :class:`ResultRecord`.

Everything measured for one (ranker, parameters, dataset, fold, seed) cell. The CLI's
``--output`` JSON, the MLflow runs (:mod:`ltr_bench.tracking`) and the comparison report
(:mod:`ltr_bench.report.tables`) are all made from it, and
:func:`ltr_bench.tracking.fetch_fold_results` reads MLflow runs back into it.
:func:`aggregate` gives mean, sample standard deviation and count over records;
:func:`group_flags` the notes a group of records deserves. Knows neither MLflow nor the harness.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_bench.results.labels import row_label

RECORD_FORMAT = 1


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
    run) and its configuration over seeds (see :mod:`ltr_bench.run.cells`).
    ranker / label: the registered name, and the configuration's name in the plan.
    metrics: mean over test queries, keys as :mod:`ltr_bench.evaluation.metrics` names them (each
    requested metric under both empty-query conventions).
    extra_metrics: measures that are not ranking metrics (``knn_error`` on
    query-by-example data).
    per_query: ``{"qid": [...], "<metric>": [...], ...}``, queries in order of first
    appearance in the test split (for paired significance tests).
    fit_seconds / score_us_per_doc / query_ms_p50 / query_ms_p99 / query_latency_queries /
    peak_rss_mb / ranker_peak_mb / load_avg: see :mod:`ltr_bench.timing` (records written
    before the per-query latency existed have NaN and 0 there: shown as missing).
    stage_seconds: wall seconds of the cell's stages: ``load`` (reading or generating the
    fold; in process one load serves every ranker of a fold and each of its records carries
    it), ``setup`` (building the ranker), ``fit``, ``score`` (the warm-up call and the timed
    repeats of ``predict`` on the test split, then the one-query calls), ``evaluate`` (the
    metrics), ``save`` (writing the kept model, :mod:`ltr_bench.run.keep`).
    model_info: what the fitted model is (its size, diagnostics): the ranker's
    ``fitted_info()``.
    learning_curves: the ranker's ``learning_curves()``: ``{"train_loss": [...],
    "vali_ndcg@10": [...]}``, one float per iteration or epoch (empty for rankers without
    curves, and in records written before curves existed).
    click_log: on simulated clicks, what the fold's click log says about itself
    (:mod:`ltr_bench.clicks.simulate`): ``logging_queries`` and ``propensity_estimates``
    (``{"ranks": K, "randomisation": [...], "regression_em": [...]}``, relative to rank 1,
    an estimate that could not be made named under ``"unavailable"``); ``{}`` otherwise.
    model_dir: the folder of the kept fitted model (``<results>/<key>.model.<token>``,
    :mod:`ltr_bench.run.keep`), None when models were not kept or it could not be saved.
    status: ``"ok"`` or ``"failed"`` (then ``error``, ``error_stage``, ``traceback``).
    flags: machine-readable marks on the numbers: ``constant_scores`` (every test score
    equal: the metrics are a random ranking's), ``loaded_machine`` (the load average
    during the cell exceeded the thread count by more than one: timings are suspect).
    warnings: things a reader of the numbers must know, as sentences (the flags explained,
    the ranker's own warnings).
    mlflow: where the record's copy is in MLflow: ``{"tracking_uri", "experiment_id",
    "parent_run_id", "run_id"}``, plus ``"model_id"`` and ``"model_uri"``
    (``models:/<model_id>``) when its model was logged. Set on records read back from MLflow
    (:func:`ltr_bench.tracking.fetch_fold_results`) and on records loaded from the local
    store once the logging process logged them (a note beside the record, bound to its
    ``finished`` stamp: :meth:`ltr_bench.results.ResultStore.note_mlflow`); never written
    into the record's own file or artifact.
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
    query_ms_p50: float = float("nan")
    query_ms_p99: float = float("nan")
    query_latency_queries: int = 0
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
    learning_curves: dict[str, list[float]] = field(default_factory=dict)
    click_log: dict[str, Any] = field(default_factory=dict)
    run_file: str | None = None
    model_dir: str | None = None
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

    @classmethod
    def checked(cls, d: Any, where: str) -> ResultRecord:
        """:meth:`from_dict` of a document read from a file or an artifact, every field
        checked against its type first (:data:`FIELD_KINDS`); raises
        :class:`DamagedRecordError` naming ``where`` and the field."""
        if not isinstance(d, dict):
            raise DamagedRecordError(where, None, f"not a JSON object but {_kind(d)}")
        for name in REQUIRED_FIELDS:
            if name not in d:
                raise DamagedRecordError(where, name, "missing")
        for name, value in d.items():
            kind = FIELD_KINDS.get(name)
            if kind is not None and not _is(value, kind):
                raise DamagedRecordError(
                    where, name, f"expected {KIND_TEXT[kind]}, got {_kind(value)} {value!r:.60}"
                )
        for name in ("metrics", "extra_metrics"):
            for k, v in (d.get(name) or {}).items():
                if not _is(v, "number?"):
                    raise DamagedRecordError(
                        where, f"{name}.{k}", f"expected a number, got {_kind(v)} {v!r:.60}"
                    )
        return cls.from_dict(d)

    def all_metrics(self) -> dict[str, float]:
        """Ranking metrics and extra metrics in one mapping."""
        return {**self.metrics, **self.extra_metrics}

    @property
    def row_name(self) -> str:
        """The plain name of this record's row wherever it is shown: its label and the data
        variant it was trained on (:func:`ltr_bench.results.labels.row_label`), e.g.
        ``lightgbm · clicks pbm eta=1 x10``."""
        return row_label(self.label or self.ranker, self.dataset_options, self.dataset_identity)

    def summary_line(self) -> str:
        """``lightgbm / synthetic fold 2`` (for messages), the row's plain name first."""
        seed = f" seed {self.seed}" if self.seed else ""
        return f"{self.row_name} / {self.dataset} fold {self.fold}{seed}"


class DamagedRecordError(ValueError):
    """A stored record (file or MLflow artifact) that is not a valid record: ``where`` (the
    path), ``field`` (None: the whole document) and ``reason``; ``str`` says all three."""

    def __init__(self, where: str, field: str | None, reason: str):
        self.where, self.field, self.reason = str(where), field, reason
        super().__init__(where, field, reason)

    def __str__(self) -> str:
        at = f" field {self.field!r}:" if self.field else ""
        return f"{self.where}:{at} {self.reason}"


REQUIRED_FIELDS = ("key", "plan_key", "ranker", "dataset", "fold", "seed")

#: the JSON kind of every field a record file may hold ("?" = or null)
FIELD_KINDS: dict[str, str] = {
    **dict.fromkeys(
        (
            "key", "plan_key", "ranker", "dataset", "status", "config_key", "label",
            "ranker_distribution", "ranker_version", "dataset_source", "started",
            "finished", "peak_rss_method",
        ),
        "str",
    ),
    **dict.fromkeys(("run_file", "model_dir", "error", "error_stage", "traceback"), "str?"),
    **dict.fromkeys(
        ("fold", "seed", "n_train_docs", "n_test_docs", "n_test_queries", "score_repeats",
         "query_latency_queries", "format"),
        "int",
    ),
    "n_threads": "int?",
    **dict.fromkeys(
        ("fit_seconds", "score_us_per_doc", "query_ms_p50", "query_ms_p99", "peak_rss_mb",
         "ranker_peak_mb"),
        "number?",
    ),
    **dict.fromkeys(
        ("params", "user_params", "dataset_options", "dataset_identity", "fingerprints",
         "metrics", "extra_metrics", "load_avg", "stage_seconds", "environment", "config",
         "model_info", "click_log"),
        "dict",
    ),
    "mlflow": "dict?",
    **dict.fromkeys(("metrics_requested", "flags", "warnings"), "list"),
}  # fmt: skip
KIND_TEXT = {
    "str": "a string",
    "str?": "a string or null",
    "int": "an integer",
    "int?": "an integer or null",
    "number?": "a number or null",
    "dict": "an object",
    "dict?": "an object or null",
    "list": "a list",
}


def _is(value: Any, kind: str) -> bool:
    if value is None:
        return kind.endswith("?")
    base = kind.rstrip("?")
    if base == "str":
        return isinstance(value, str)
    if base == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if base == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base == "dict":
        return isinstance(value, dict)
    return isinstance(value, list)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def aggregate(records: list[ResultRecord]) -> dict[str, tuple[float, float, int]]:
    """Per key of ``metrics`` plus fit_seconds / score_us_per_doc / query_ms_p50 /
    query_ms_p99 / peak_rss_mb and extra
    metrics: ``(mean, std, n)`` over the records (folds). ``std`` is the sample standard
    deviation (ddof=1), NaN for a single fold."""
    values: dict[str, list[float]] = {}
    for r in records:
        items = dict(r.metrics)
        items.update(r.extra_metrics)
        items.update(
            fit_seconds=r.fit_seconds,
            score_us_per_doc=r.score_us_per_doc,
            query_ms_p50=r.query_ms_p50,
            query_ms_p99=r.query_ms_p99,
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
