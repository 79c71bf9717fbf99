"""What an MLflow run of ltr-bench holds: tag names, params, metric values, fold tags and the
parent's description, computed from a :class:`~ltr_bench.results.ResultRecord` without
touching MLflow (so it is cheap to build, and testable without a store).

The layout itself (experiments, parent and fold runs, artifacts) is described in
:mod:`ltr_bench.tracking.writer`.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from typing import Any

from ltr_bench.results import ResultRecord

__all__ = [
    "EXPERIMENT_TAGS",
    "NOTE_TAG",
    "PER_QUERY_ARTIFACT",
    "RECORD_ARTIFACT",
    "TAG_CONFIG_KEY",
    "TAG_FINISHED",
    "TAG_KEY",
    "TAG_PLAN_KEY",
    "TAG_ROLE",
    "curve_metrics",
    "fold_tags",
    "param_text",
    "parent_note",
    "record_values",
    "run_params",
]

TAG_KEY = "ltr_bench_key"
TAG_PLAN_KEY = "ltr_bench_plan_key"
TAG_CONFIG_KEY = "ltr_bench_config_key"
TAG_FINISHED = "ltr_bench_finished"
TAG_ROLE = "ltr_bench_role"  # "parent" or "fold"
RECORD_ARTIFACT = "record.json"
NOTE_TAG = "mlflow.note.content"  # the run's Description in the MLflow UI
#: Marks our experiments as model-training experiments: MLflow 3's UI otherwise opens them
#: in its GenAI view (traces, token usage).
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
PER_QUERY_ARTIFACT = "per_query_metrics.csv"
_PARAM_MAX = 6000  # MLflow's limit on a param value's length


def _millis(iso: str | None) -> int | None:
    if not iso:
        return None
    try:
        return int(_dt.datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return None


def _safe_dir_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "dataset"


def param_text(v: Any) -> str:
    """The text MLflow holds for a parameter value (also used for report labels)."""
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=repr)
    return s if len(s) <= _PARAM_MAX else s[: _PARAM_MAX - 3] + "..."


def run_params(record: ResultRecord, *, fold: bool) -> dict[str, Any]:
    params = {**record.params, "seed": record.seed, "dataset": record.dataset}
    if fold:
        params["fold"] = record.fold
    for k, v in record.dataset_options.items():
        params[f"dataset_option.{k}"] = v
    return params


def record_values(record: ResultRecord) -> dict[str, float]:
    """Every number of a record that is logged as an MLflow metric, by record name."""
    values: dict[str, float] = dict(record.metrics)
    values.update(record.extra_metrics)
    values.update(
        fit_seconds=record.fit_seconds,
        score_us_per_doc=record.score_us_per_doc,
        peak_rss_mb=record.peak_rss_mb,
        ranker_peak_mb=record.ranker_peak_mb,
    )
    if record.query_latency_queries:  # absent from records made before it was measured
        values.update(query_ms_p50=record.query_ms_p50, query_ms_p99=record.query_ms_p99)
    for k, v in record.stage_seconds.items():
        values[f"stage_seconds.{k}"] = float(v)
    for k, v in record.model_info.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            values[f"model.{k}"] = float(v)
    return values


#: prefix of a learning curve's MLflow key: ``curve.<quantity>``, e.g. ``curve.vali_ndcg_at_10``
CURVE_PREFIX = "curve."


def curve_key(name: str) -> str:
    """The MLflow key of a learning curve named ``name`` (``vali_ndcg@10`` ->
    ``curve.vali_ndcg_at_10``: ``@`` reads ``_at_`` as in the metric keys; other characters
    MLflow rejects become ``_``)."""
    return CURVE_PREFIX + re.sub(r"[^A-Za-z0-9_\-./ ]", "_", name.replace("@", "_at_"))


def curve_metrics(record: ResultRecord) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` of every point of the record's learning curves, step = the
    iteration (1-based: the i-th value of a curve is step i + 1), in curve then step order."""
    return [
        (curve_key(name), float(v), step)
        for name, values in sorted(record.learning_curves.items())
        for step, v in enumerate(values, start=1)
    ]


def parent_note(records: list[ResultRecord], stats) -> str:
    """Markdown for a parent run's Description: what it is and its fold means."""
    from ltr_bench.evaluation.metrics import metric_display

    first = records[0]
    units = sorted({(r.fold, r.seed) for r in records})
    lines = [
        f"**{first.row_name}** on **{first.dataset}**: "
        f"{len(units)} fold(s), seed {first.seed}, {first.n_threads or 'default'} "
        f"thread(s).",
        "",
        "| quantity | mean | std |",
        "|---|---:|---:|",
    ]
    for k, (mean, std, n) in sorted(stats.items()):
        shown = metric_display(k)
        lines.append(f"| {shown} | {mean:.4f} | {'' if n < 2 else f'{std:.4f}'} |")
    flags = sorted({f for r in records for f in r.flags})
    if flags:
        lines += ["", "Flags: " + ", ".join(flags)]
    params = {k: v for k, v in first.user_params.items()}
    if params:
        lines += ["", "Parameters set: " + ", ".join(f"`{k}={v}`" for k, v in params.items())]
    return "\n".join(lines)


#: mlflow.utils.mlflow_tags.MLFLOW_PARENT_RUN_ID, spelt out so that building tags needs no MLflow
MLFLOW_PARENT_RUN_ID = "mlflow.parentRunId"


def fold_tags(parent: str, record: ResultRecord) -> dict[str, str]:
    """The tags of a record's nested (fold) run under the parent run ``parent``."""
    from ltr_bench.evaluation.metrics import CONVENTIONS

    env = record.environment or {}
    tags: dict[str, str] = {
        MLFLOW_PARENT_RUN_ID: parent,
        TAG_ROLE: "fold",
        TAG_KEY: record.key,
        TAG_PLAN_KEY: record.plan_key,
        TAG_CONFIG_KEY: record.config_key,
        TAG_FINISHED: record.finished,
        "ranker": record.ranker,
        "label": record.label or record.ranker,
        "ranker_distribution": record.ranker_distribution,
        "ranker_version": record.ranker_version,
        "dataset": record.dataset,
        "dataset_source": record.dataset_source,
        "fold": str(record.fold),
        "seed": str(record.seed),
        "threads": "default" if record.n_threads is None else str(record.n_threads),
        "n_train_docs": str(record.n_train_docs),
        "n_test_docs": str(record.n_test_docs),
        "n_test_queries": str(record.n_test_queries),
        "score_repeats": str(record.score_repeats),
        "peak_rss_method": record.peak_rss_method,
        "git_commit": str(env.get("git_commit")),
        "ltr_bench_git_commit": str(env.get("ltr_bench_git_commit")),
        "cpu_model": str(env.get("cpu_model")),
        "cpu_count": str(env.get("cpu_count")),
        "platform": str(env.get("platform")),
        "hostname": str(env.get("hostname")),
        "convention.score_us_per_doc": "median of timed predict calls after one warm-up, "
        "divided by the test documents, microseconds",
        "convention.query_ms_p50": "50th / 99th percentile (query_ms_p99) of predict calls "
        "of one test query each, after the bulk timing, milliseconds",
        "convention.peak_rss_mb": "peak resident memory of the process during fit and "
        "scoring, MiB, including the loaded data",
        "convention.ranker_peak_mb": "peak_rss_mb minus the resident memory when the cell "
        "started: what the ranker added, MiB",
        "load_avg_start": str(record.load_avg.get("start")),
        "load_avg_end": str(record.load_avg.get("end")),
    }
    if record.warnings:
        tags["warnings"] = " | ".join(record.warnings)
    if record.flags:
        tags["flags"] = ",".join(record.flags)
    for split, fp in record.fingerprints.items():
        tags[f"fingerprint_{split}"] = fp
    for name, text in CONVENTIONS.items():
        tags[f"convention.{name}"] = text
    for pkg, ver in (env.get("versions") or {}).items():
        tags[f"version.{pkg}"] = str(ver)
    for k, v in record.model_info.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            tags[f"model.{k}"] = str(v)
    return {k: v[:5000] for k, v in tags.items()}
