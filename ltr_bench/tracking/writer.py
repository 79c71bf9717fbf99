"""Logging result records to MLflow, and the listener that does it during a run.

Layout
    One experiment per dataset, ``ltr-bench/<dataset>``. One parent run per (configuration,
    dataset, seed) (``ResultRecord.plan_key``), found again on a re-run through its tag
    ``ltr_bench_plan_key`` (no duplicate). One nested run per fold (tag
    ``mlflow.parentRunId``), found again through ``ltr_bench_key`` + ``ltr_bench_finished``
    (a record is never logged twice, also after a crash between two writes). A forced
    recomputation replaces the fold's earlier nested run (the old one is soft-deleted:
    ``mlflow gc`` purges it, the UI can restore it). Nothing here writes the local results.

Nested run content
    metrics: every metric of the record under its MLflow key (``ndcg_at_10``, ...), extra
    metrics, ``fit_seconds``, ``score_us_per_doc``, ``peak_rss_mb``, the stage times
    ``stage_seconds.<load|setup|fit|score|evaluate>``, and the numeric entries
    of ``model_info`` as ``model.<name>``. params: every resolved hyper-parameter, ``seed``,
    ``dataset``, ``fold``, dataset options (``dataset_option.<name>``). tags: ``ranker``,
    ``label``, versions, fingerprints, threads, conventions (from
    :data:`ltr_bench.evaluation.metrics.CONVENTIONS`), environment, warnings, the keys. artifacts:
    ``record.json`` (the whole :class:`~ltr_bench.results.ResultRecord`, which
    :func:`~ltr_bench.tracking.fetch_fold_results` reads back), ``config.json`` (the cell's
    resolved configuration and the invocation's plan) and ``per_query_metrics.csv``.

Parent run content
    Logged once when the invocation ends (:meth:`Tracker.finish`), from every finished fold
    of the group: metric ``<name>`` = mean over the folds, ``<name>_std`` = sample standard
    deviation (ddof=1; only with two or more folds), ``n_folds``. params: hyper-parameters,
    seed, dataset. artifacts: ``plan.json`` (and ``plan.toml`` when the plan came from a file).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ltr_bench.results import ResultRecord, aggregate, per_query_csv
from ltr_bench.tracking.store import (
    TrackingError,
    artifact_root_for,
    experiment_name,
    message,
    mlflow_metric_key,
    open_client,
    prepare_sqlite_store,
    resolve_tracking_uri,
)

__all__ = ["MlflowListener", "Tracker"]

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


def _run_params(record: ResultRecord, *, fold: bool) -> dict[str, Any]:
    params = {**record.params, "seed": record.seed, "dataset": record.dataset}
    if fold:
        params["fold"] = record.fold
    for k, v in record.dataset_options.items():
        params[f"dataset_option.{k}"] = v
    return params


def _record_values(record: ResultRecord) -> dict[str, float]:
    """Every number of a record that is logged as an MLflow metric, by record name."""
    values: dict[str, float] = dict(record.metrics)
    values.update(record.extra_metrics)
    values.update(
        fit_seconds=record.fit_seconds,
        score_us_per_doc=record.score_us_per_doc,
        peak_rss_mb=record.peak_rss_mb,
        ranker_peak_mb=record.ranker_peak_mb,
    )
    for k, v in record.stage_seconds.items():
        values[f"stage_seconds.{k}"] = float(v)
    for k, v in record.model_info.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            values[f"model.{k}"] = float(v)
    return values


def _parent_note(records: list[ResultRecord], stats) -> str:
    """Markdown for a parent run's Description: what it is and its fold means."""
    from ltr_bench.evaluation.metrics import metric_display

    first = records[0]
    units = sorted({(r.fold, r.seed) for r in records})
    lines = [
        f"**{first.label or first.ranker}** on **{first.dataset}**: "
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


class Tracker:
    """Logs result records to MLflow (see the module docstring for the layout).

    ``Tracker(uri)`` does not contact the store yet; :meth:`check` does (call it first to
    fail early). Every public method raises :class:`TrackingError` with a message that says
    what failed.
    """

    def __init__(
        self, tracking_uri: str | None = None, *, cwd: str | Path | None = None, quiet: bool = True
    ):
        self.uri = resolve_tracking_uri(tracking_uri, cwd)
        self.artifact_root = artifact_root_for(self.uri)
        self._client = None
        self._experiments: dict[str, str] = {}
        self._parents: dict[str, str] = {}  # plan_key -> parent run id
        self._parent_records: dict[str, dict[str, ResultRecord]] = {}
        self._failed_plans: set[str] = set()
        self._quiet = quiet

    @property
    def client(self):
        if self._client is None:
            self._client = open_client(self.uri, quiet=self._quiet)
        return self._client

    def _message(self, what: str, exc: BaseException) -> str:
        return message(self.uri, what, exc)

    def check(self, timeout: float = 10.0) -> None:
        """Contact the store once (creates an SQLite database if needed).

        A server URI is probed at ``/health`` first, so an unreachable server fails in
        ``timeout`` seconds instead of after MLflow's retries (minutes by default;
        ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` / ``_TIMEOUT`` tune those for later calls).
        """
        if self.uri.startswith(("http://", "https://")):
            import urllib.error
            import urllib.request

            try:
                urllib.request.urlopen(self.uri.rstrip("/") + "/health", timeout=timeout).close()
            except urllib.error.HTTPError:
                pass  # something answered; the real request below tells whether it is MLflow
            except (OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                raise TrackingError(f"MLflow at {self.uri}: could not connect: {reason}") from exc
        with prepare_sqlite_store(self.uri) as repair:
            for attempt in (1, 2):
                try:
                    self.client.search_experiments(max_results=1)
                    return
                except Exception as exc:
                    self._client = None  # its store object holds the failed engine
                    cause = exc.__cause__ if isinstance(exc, TrackingError) else exc
                    if cause is None:
                        raise  # a TrackingError of our own (e.g. an unusable folder)
                    if attempt == 1 and repair(cause):
                        continue
                    if isinstance(exc, TrackingError):
                        raise
                    raise TrackingError(self._message("connect", exc)) from exc

    # -- experiments and parent runs ---------------------------------------------------------

    def experiment_id(self, dataset: str) -> str:
        """Id of ``ltr-bench/<dataset>``, created (with its artifact location) if missing."""
        if dataset in self._experiments:
            return self._experiments[dataset]
        name = experiment_name(dataset)
        client = self.client
        exp = client.get_experiment_by_name(name)
        if exp is None:
            location = None
            if self.artifact_root is not None:
                location = f"{self.artifact_root}/{_safe_dir_name(dataset)}"
            try:
                exp_id = client.create_experiment(
                    name,
                    artifact_location=location,
                    tags={"ltr_bench_dataset": dataset, **EXPERIMENT_TAGS},
                )
            except Exception:
                exp = client.get_experiment_by_name(name)  # created concurrently
                if exp is None:
                    raise
                exp_id = exp.experiment_id
        else:
            if exp.lifecycle_stage == "deleted":
                client.restore_experiment(exp.experiment_id)
            exp_id = exp.experiment_id
            for k, v in EXPERIMENT_TAGS.items():  # experiments made by older versions
                if exp.tags.get(k) != v:
                    client.set_experiment_tag(exp_id, k, v)
        self._experiments[dataset] = exp_id
        return exp_id

    def _find_runs(self, exp_id: str, **tags: str) -> list:
        filt = " and ".join(f"tags.{k} = '{v}'" for k, v in tags.items())
        return list(self.client.search_runs([exp_id], filter_string=filt, max_results=1000))

    def parent_run(
        self, record: ResultRecord, plan: dict[str, Any] | None = None, plan_toml: str | None = None
    ) -> str:
        """Id of the parent run of ``record.plan_key``: found by tag, else created."""
        if record.plan_key in self._parents:
            return self._parents[record.plan_key]
        client = self.client
        exp_id = self.experiment_id(record.dataset)
        found = self._find_runs(exp_id, **{TAG_PLAN_KEY: record.plan_key, TAG_ROLE: "parent"})
        if found:
            run_id = found[0].info.run_id
            if found[0].info.status != "RUNNING":
                client.update_run(run_id, status="RUNNING")
        else:
            label = record.label or record.ranker
            tags = {
                TAG_PLAN_KEY: record.plan_key,
                TAG_CONFIG_KEY: record.config_key,
                TAG_ROLE: "parent",
                "ranker": record.ranker,
                "label": label,
                "ranker_distribution": record.ranker_distribution,
                "ranker_version": record.ranker_version,
                "dataset": record.dataset,
                "seed": str(record.seed),
            }
            run = client.create_run(exp_id, run_name=f"{label} @ {record.dataset}", tags=tags)
            run_id = run.info.run_id
            from mlflow.entities import Param

            client.log_batch(
                run_id,
                params=[
                    Param(k, param_text(v))
                    for k, v in sorted(_run_params(record, fold=False).items())
                ],
            )
        if plan is not None:
            self._log_json(run_id, plan, "plan.json")
        if plan_toml is not None:
            self._log_text(run_id, plan_toml, "plan.toml")
        self._parents[record.plan_key] = run_id
        return run_id

    # -- artifacts ---------------------------------------------------------------------------

    def _log_json(self, run_id: str, obj: Any, name: str) -> None:
        self._log_text(run_id, json.dumps(obj, indent=1, sort_keys=True, default=repr) + "\n", name)

    def _log_text(self, run_id: str, text: str, name: str) -> None:
        with tempfile.TemporaryDirectory(prefix="ltr-bench-") as tmp:
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            self.client.log_artifact(run_id, str(path))

    # -- cells -------------------------------------------------------------------------------

    def log_record(
        self,
        record: ResultRecord,
        *,
        plan: dict[str, Any] | None = None,
        plan_toml: str | None = None,
    ) -> str:
        """Log one finished record as a nested run unless that exact record is logged
        already, and remember it for its parent's aggregates (:meth:`finish`).

        ``record.per_query`` must be loaded (the per-query artifact is made from it).
        Returns the nested run id. Raises :class:`TrackingError`.
        """
        if not record.ok:
            raise ValueError("only finished records are logged")
        try:
            parent = self.parent_run(record, plan, plan_toml)
            exp_id = self.experiment_id(record.dataset)
            run_id = None
            for run in self._find_runs(exp_id, **{TAG_KEY: record.key, TAG_ROLE: "fold"}):
                if (
                    run.data.tags.get(TAG_FINISHED) == record.finished
                    and run_id is None
                    and run.info.status == "FINISHED"
                ):
                    run_id = run.info.run_id  # logged before
                else:
                    self.client.delete_run(run.info.run_id)  # superseded (--force) or partial
            if run_id is None:
                run_id = self._log_fold_run(exp_id, parent, record, plan)
            self._parent_records.setdefault(record.plan_key, {})[record.key] = record
            return run_id
        except TrackingError:
            raise
        except Exception as exc:
            raise TrackingError(self._message(f"log {record.summary_line()}", exc)) from exc

    def _fold_tags(self, parent: str, record: ResultRecord) -> dict[str, str]:
        from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

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

    def _log_fold_run(
        self, exp_id: str, parent: str, record: ResultRecord, plan: dict[str, Any] | None
    ) -> str:
        from mlflow.entities import Metric, Param

        client = self.client
        run = client.create_run(
            exp_id,
            start_time=_millis(record.started),
            run_name=f"{record.label or record.ranker} fold {record.fold}"
            + (f" seed {record.seed}" if record.seed else ""),
            tags=self._fold_tags(parent, record),
        )
        run_id = run.info.run_id
        try:
            ts = _millis(record.finished) or 0
            metrics = [
                Metric(mlflow_metric_key(k), float(v), ts, 0)
                for k, v in sorted(_record_values(record).items())
                if v is not None
            ]
            params = _run_params(record, fold=True)
            client.log_batch(
                run_id,
                metrics=metrics,
                params=[Param(k, param_text(v)) for k, v in sorted(params.items())],
                tags=[],
            )
            self._log_json(run_id, {"cell": record.config, "plan": plan}, "config.json")
            self._log_text(
                run_id,
                json.dumps(record.to_dict(), indent=1, sort_keys=True, allow_nan=True) + "\n",
                RECORD_ARTIFACT,
            )
            if record.per_query is not None:
                self._log_text(run_id, per_query_csv(record.per_query), PER_QUERY_ARTIFACT)
            if record.run_file and Path(record.run_file).is_file():
                client.log_artifact(run_id, record.run_file)
            client.set_terminated(run_id, "FINISHED", end_time=_millis(record.finished))
        except BaseException:
            try:  # leave no half-logged FINISHED-looking run behind
                client.set_terminated(run_id, "FAILED")
            except Exception:
                pass
            raise
        return run_id

    # -- end of an invocation ----------------------------------------------------------------

    def _compute_end(self, run_id: str, records: list[ResultRecord]) -> int | None:
        """End time that makes the parent's Duration the compute time of its folds (the sum
        of their wall times), not the span of every session that touched it."""
        if not records:
            return None
        start = self.client.get_run(run_id).info.start_time
        spans = [(_millis(r.finished) or 0) - (_millis(r.started) or 0) for r in records]
        return start + max(0, sum(spans))

    def mark_failed(self, plan_key: str) -> None:
        """Remember that a cell of this plan key failed (its parent ends FAILED)."""
        self._failed_plans.add(plan_key)

    def finish(
        self,
        *,
        interrupted: bool = False,
        all_records: Callable[[str], Iterable[ResultRecord]] | None = None,
    ) -> None:
        """Log each touched parent's fold aggregates once and end it: FINISHED, FAILED (a cell
        failed) or KILLED (interrupted).

        ``all_records(plan_key)`` gives every finished record of the group (e.g. from the
        local store, so folds finished in earlier invocations count); by default only the
        records logged through this tracker. Errors are raised as :class:`TrackingError`.
        """
        from mlflow.entities import Metric

        try:
            for plan_key, run_id in self._parents.items():
                records = list(all_records(plan_key)) if all_records else []
                if not records:
                    records = list(self._parent_records.get(plan_key, {}).values())
                if records:
                    stats = aggregate(records)
                    ts = max(_millis(r.finished) or 0 for r in records)
                    self.client.set_tag(run_id, NOTE_TAG, _parent_note(records, stats))
                    metrics = [Metric("n_folds", float(len(records)), ts, 0)]
                    for k, (mean, std, count) in sorted(stats.items()):
                        key = mlflow_metric_key(k)
                        metrics.append(Metric(key, mean, ts, 0))
                        if count > 1:
                            metrics.append(Metric(key + "_std", std, ts, 0))
                    self.client.log_batch(run_id, metrics=metrics)
                status = "FINISHED"
                if plan_key in self._failed_plans:
                    status = "FAILED"
                if interrupted:
                    status = "KILLED"
                self.client.set_terminated(
                    run_id, status, end_time=self._compute_end(run_id, records)
                )
        except Exception as exc:
            raise TrackingError(self._message("end the parent runs", exc)) from exc


class MlflowListener:
    """The MLflow logging policy during ``run_plan``: every finished record (computed now or
    found finished) is logged unless already there; a failed cell marks its parent FAILED; a
    store that stops answering turns logging off for the rest of the run (the results stay in
    the local store) and is reported by :attr:`error`.

    ``store`` (a :class:`~ltr_bench.results.ResultStore`) is only read: per-query values of
    records found finished, and every finished fold of a parent for its aggregates.
    ``on_error(message)`` hears of the first logging failure.
    """

    def __init__(
        self,
        tracker: Tracker,
        store,
        *,
        plan: dict[str, Any] | None = None,
        plan_toml: str | None = None,
        on_error: Callable[[str], None] | None = None,
    ):
        self.tracker: Tracker | None = tracker
        self.store = store
        self.plan = plan
        self.plan_toml = plan_toml
        self.on_error = on_error
        self.error: str | None = None

    def fold_loading(self, dataset: str, fold: int) -> None:
        pass

    def fold_progress(self, *args) -> None:
        pass

    def cell_started(self, *args) -> None:
        pass

    def cell_progress(self, *args) -> None:
        pass

    def cell_finished(self, record: ResultRecord, index: int, total: int, *, skipped: bool) -> None:
        if self.tracker is None:
            return
        if not record.ok:
            self.tracker.mark_failed(record.plan_key)
            return
        if record.per_query is None:
            self.store.per_query(record)
        try:
            self.tracker.log_record(record, plan=self.plan, plan_toml=self.plan_toml)
        except TrackingError as exc:
            self._failed(str(exc))

    def attach_report(self, dataset: str, path: Path) -> None:
        """Attach a report file (e.g. the HTML report) under ``report/`` to every parent run
        of ``dataset`` this invocation touched."""
        if self.tracker is None:
            return
        tracker = self.tracker
        try:
            for plan_key, run_id in tracker._parents.items():
                recs = tracker._parent_records.get(plan_key, {})
                if any(r.dataset == dataset for r in recs.values()):
                    tracker.client.log_artifact(run_id, str(path), artifact_path="report")
        except Exception as exc:  # noqa: BLE001 - the report is a convenience, not a result
            self._failed(message(tracker.uri, f"attach {path.name}", exc))

    def _failed(self, text: str) -> None:
        self.error = text
        self.tracker = None  # keep computing; everything stays in the local results
        if self.on_error is not None:
            self.on_error(text)

    def close(self, *, interrupted: bool = False) -> None:
        """End the parent runs touched by this invocation (see :meth:`Tracker.finish`)."""
        if self.tracker is None:
            return
        try:
            self.tracker.finish(
                interrupted=interrupted, all_records=lambda key: self.store.records(plan_key=key)
            )
        except TrackingError as exc:
            self._failed(str(exc))
