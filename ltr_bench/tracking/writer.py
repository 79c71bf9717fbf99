"""Logging result records to MLflow, and the listener that does it during a run.

Layout
    One experiment per dataset, ``ltr-bench/<dataset>``. One parent run per (configuration,
    dataset, seed) (``ResultRecord.plan_key``), found again on a re-run through its tag
    ``ltr_bench_plan_key`` (no duplicate). One nested run per fold (tag
    ``mlflow.parentRunId``), found again through ``ltr_bench_key`` + ``ltr_bench_finished``
    (a record is never logged twice, also after a crash between two writes); the run found
    is kept only if its ``record.json`` and per-query artifacts still hold the local record
    (:mod:`.integrity`), else it is replaced. A forced recomputation replaces the fold's
    earlier nested run: soft-deleted with its logged model (``mlflow gc`` purges it, the UI
    can restore it), or kept as ``superseded`` when a registered version uses its model
    (:func:`.models_index.retire_run`). Where each record went is in :attr:`Tracker.logged`
    (the logging process notes it beside the local record).

Owners
    A parent run records the process that works on it (:mod:`.owners`); one left RUNNING by
    a process that is gone is ended KILLED when the store is next opened (:meth:`check`) or
    resumed by its own command (:meth:`parent_run`).

Nested run content
    metrics: every metric of the record under its MLflow key (``ndcg_at_10``, ...), extra
    metrics, ``fit_seconds``, ``score_us_per_doc``, ``query_ms_p50`` and ``query_ms_p99``
    (when measured), ``peak_rss_mb``, the stage times
    ``stage_seconds.<load|setup|fit|score|evaluate>``, the numeric entries of ``model_info``
    as ``model.<name>``, and the ranker's learning curves as step metrics
    ``curve.<quantity>`` (step = iteration or epoch, so the UI draws them). params: every
    resolved hyper-parameter, ``seed``, ``dataset``, ``fold``, dataset options
    (``dataset_option.<name>``). tags: ``ranker``, ``label``, versions, fingerprints,
    threads, conventions (from :data:`ltr_bench.evaluation.metrics.CONVENTIONS`),
    environment, warnings, the keys. outputs: the logged model ``model`` (the kept model as
    an MLflow Model, ``python_function`` flavor, when the record has one: :mod:`.models`).
    artifacts: ``record.json`` (the whole :class:`~ltr_bench.results.ResultRecord`, which
    :func:`~ltr_bench.tracking.fetch_fold_results` reads back), ``config.json`` (the cell's
    resolved configuration and the invocation's plan) and ``per_query_metrics.csv``.

Parent run content
    Logged once when the invocation ends (:meth:`Tracker.finish`), from every finished fold
    of the group: metric ``<name>`` = mean over the folds, ``<name>_std`` = sample standard
    deviation (ddof=1; only with two or more folds), ``n_folds``. params: hyper-parameters,
    seed, dataset. artifacts: ``plan.json`` (and ``plan.toml`` when the plan came from a file).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ltr_bench.results import ResultRecord, aggregate, per_query_csv, record_json
from ltr_bench.tracking.integrity import stored_record_problem
from ltr_bench.tracking.layout import (
    EXPERIMENT_TAGS,
    NOTE_TAG,
    PER_QUERY_ARTIFACT,
    RECORD_ARTIFACT,
    TAG_CONFIG_KEY,
    TAG_FINISHED,
    TAG_KEY,
    TAG_PLAN_KEY,
    TAG_ROLE,
    _millis,
    _safe_dir_name,
    curve_metrics,
    fold_tags,
    param_text,
    parent_note,
    record_values,
    run_params,
)
from ltr_bench.tracking.models_index import linked_model_ids, logged_ids, retire_run
from ltr_bench.tracking.owners import (
    TAG_END_REASON,
    TAG_RESUMED,
    end_orphaned_parents,
    owner_gone,
    owner_tags,
)
from ltr_bench.tracking.store import (
    TrackingError,
    artifact_root_for,
    driver_missing,
    experiment_name,
    message,
    mlflow_metric_key,
    open_client,
    prepare_sqlite_store,
    probe_server,
    resolve_tracking_uri,
)

__all__ = ["Tracker", "param_text"]

#: the most metrics MLflow accepts in one ``log_batch`` call
_BATCH_MAX = 1000


class Tracker:
    """Logs result records to MLflow (see the module docstring for the layout).

    ``Tracker(uri)`` does not contact the store yet; :meth:`check` does (call it first to
    fail early). Every public method raises :class:`TrackingError` with a message that says
    what failed.
    """

    def __init__(
        self,
        tracking_uri: str | None = None,
        *,
        cwd: str | Path | None = None,
        quiet: bool = True,
        owner_pid: int | None = None,
    ):
        self.uri = resolve_tracking_uri(tracking_uri, cwd)
        self.artifact_root = artifact_root_for(self.uri)
        self._client = None
        self._experiments: dict[str, str] = {}
        self._parents: dict[str, str] = {}  # plan_key -> parent run id
        self._parent_records: dict[str, dict[str, ResultRecord]] = {}
        self._failed_plans: set[str] = set()
        self._quiet = quiet
        #: the process recorded as owner of the parent runs this tracker takes (default: this
        #: one; a separate logging process passes the pid of the process it logs for)
        self.owner_pid = owner_pid
        #: what this tracker repaired or ended for others (one sentence each), for the user
        self.notes: list[str] = []
        #: record key -> where :meth:`log_record` last put it: ``tracking_uri``,
        #: ``experiment_id``, ``parent_run_id``, ``run_id`` (+ ``model_id``, ``model_uri``)
        self.logged: dict[str, dict[str, str]] = {}

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
        Then parent runs left RUNNING by a process that is gone are ended
        (:meth:`end_orphaned_parents`).
        """
        if self.uri.startswith(("http://", "https://")):
            probe_server(self.uri, timeout)
        with prepare_sqlite_store(self.uri) as repair:
            for attempt in (1, 2):
                try:
                    self.client.search_experiments(max_results=1)
                except Exception as exc:
                    self._client = None  # its store object holds the failed engine
                    cause = exc.__cause__ if isinstance(exc, TrackingError) else exc
                    if cause is None:
                        raise  # a TrackingError of our own (e.g. an unusable folder)
                    if attempt == 1 and repair(cause):
                        continue
                    if isinstance(cause, ImportError):  # never reachable: a bad invocation
                        raise driver_missing(self.uri, cause) from exc
                    if isinstance(exc, TrackingError):
                        raise
                    raise TrackingError(self._message("connect", exc)) from exc
                self.end_orphaned_parents()
                return

    def reconnect(self, timeout: float = 5.0) -> None:
        """Open the store afresh (after it stopped answering); raises :class:`TrackingError`."""
        self._client = None
        self.check(timeout=timeout)

    def end_orphaned_parents(self) -> None:
        """End as KILLED every RUNNING parent run in the store whose owner process is gone
        (:mod:`ltr_bench.tracking.owners`), with a tag saying why. Best effort: a store
        that cannot be searched is reported by the calls that need it."""
        try:
            self.notes += end_orphaned_parents(self._client, skip=set(self._parents.values()))
        except Exception:  # noqa: BLE001 - see the docstring
            return

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
            tags = found[0].data.tags
            gone = owner_gone(tags) if found[0].info.status == "RUNNING" else None
            if found[0].info.status != "RUNNING" or gone is not None:
                # ours now: a finished group gets new folds, or its owner died (resumed).
                # The owner first, so a sweep that reads the run meanwhile sees a live owner.
                from mlflow.entities import RunTag

                reason = gone or tags.get(TAG_END_REASON)
                new_tags = [RunTag(k, v) for k, v in owner_tags(self.owner_pid).items()]
                if reason:
                    resumed = f"resumed by pid {self.owner_pid or os.getpid()} after: {reason}"
                    new_tags.append(RunTag(TAG_RESUMED, resumed[:5000]))
                client.log_batch(run_id, tags=new_tags)
                client.update_run(run_id, status="RUNNING")
                if TAG_END_REASON in tags:
                    client.delete_tag(run_id, TAG_END_REASON)
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
                **owner_tags(self.owner_pid),
            }
            run = client.create_run(
                exp_id, run_name=f"{record.row_name} @ {record.dataset}", tags=tags
            )
            run_id = run.info.run_id
            from mlflow.entities import Param

            client.log_batch(
                run_id,
                params=[
                    Param(k, param_text(v))
                    for k, v in sorted(run_params(record, fold=False).items())
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
            run_id, model_ids = None, []
            for run in self._find_runs(exp_id, **{TAG_KEY: record.key, TAG_ROLE: "fold"}):
                reason = "superseded by a recomputation of its cell"
                if run.data.tags.get(TAG_FINISHED) == record.finished:
                    reason = "a duplicate" if run_id is not None else "partly logged"
                    if run_id is None and run.info.status == "FINISHED":
                        problem = stored_record_problem(self.client, run.info.run_id, record)
                        if problem is None:
                            run_id = run.info.run_id  # logged before, and intact
                            model_ids = linked_model_ids(self.client, run)
                            continue
                        reason = problem
                        self.notes.append(
                            f"MLflow run {run.info.run_id} of {record.summary_line()}: "
                            f"{problem}; logged again from the local record"
                        )
                # replaced: deleted, or kept as superseded for a registered version
                kept = retire_run(self.client, exp_id, run.info.run_id, reason)
                if kept:
                    self.notes.append(kept)
            if run_id is None:
                run_id, model_ids = self._log_fold_run(exp_id, parent, record, plan)
            self._parent_records.setdefault(record.plan_key, {})[record.key] = record
            self.logged[record.key] = logged_ids(self.uri, exp_id, parent, run_id, model_ids)
            return run_id
        except TrackingError:
            raise
        except Exception as exc:
            raise TrackingError(self._message(f"log {record.summary_line()}", exc)) from exc

    def _log_fold_run(
        self, exp_id: str, parent: str, record: ResultRecord, plan: dict[str, Any] | None
    ) -> tuple[str, list[str]]:
        """Log ``record`` as a new fold run; returns its id and its logged model's (if any)."""
        from mlflow.entities import Metric, Param

        client = self.client
        run = client.create_run(
            exp_id,
            start_time=_millis(record.started),
            run_name=f"{record.row_name} fold {record.fold}"
            + (f" seed {record.seed}" if record.seed else ""),
            tags=fold_tags(parent, record),
        )
        run_id = run.info.run_id
        try:
            ts = _millis(record.finished) or 0
            metrics = [
                Metric(mlflow_metric_key(k), float(v), ts, 0)
                for k, v in sorted(record_values(record).items())
                if v is not None
            ]
            params = run_params(record, fold=True)
            # every number in as few calls as MLflow takes (each call is a transaction)
            metrics += [Metric(k, v, ts, step) for k, v, step in curve_metrics(record)]
            client.log_batch(
                run_id,
                metrics=metrics[:_BATCH_MAX],
                params=[Param(k, param_text(v)) for k, v in sorted(params.items())],
                tags=[],
            )
            for start in range(_BATCH_MAX, len(metrics), _BATCH_MAX):
                client.log_batch(run_id, metrics=metrics[start : start + _BATCH_MAX])
            files = {
                "config.json": json.dumps(
                    {"cell": record.config, "plan": plan}, indent=1, sort_keys=True, default=repr
                )
                + "\n",
                RECORD_ARTIFACT: record_json(record),
            }
            if record.per_query is not None:
                files[PER_QUERY_ARTIFACT] = per_query_csv(record.per_query)
            with tempfile.TemporaryDirectory(prefix="ltr-bench-") as tmp:
                for name, text in files.items():
                    (Path(tmp) / name).write_text(text, encoding="utf-8")
                if record.run_file and Path(record.run_file).is_file():
                    shutil.copy(record.run_file, Path(tmp) / Path(record.run_file).name)
                client.log_artifacts(run_id, tmp)  # one call for all the run's files
            model_id = self._log_model(exp_id, run_id, record, params) if record.model_dir else None
            client.set_terminated(run_id, "FINISHED", end_time=_millis(record.finished))
        except BaseException:
            try:  # leave no half-logged FINISHED-looking run behind
                client.set_terminated(run_id, "FAILED")
            except Exception:
                pass
            raise
        return run_id, [model_id] if model_id else []

    def _log_model(self, exp_id: str, run_id: str, record: ResultRecord, params) -> str | None:
        """The kept model as the run's MLflow Model, linked as the run's output
        (:mod:`.models`); returns its id. A model that cannot be read or logged is a note
        (None), the run keeps its results."""
        try:
            from ltr_bench.tracking.models import kept_manifest, log_kept_model

            folder = Path(str(record.model_dir))  # set: the caller checked
            return log_kept_model(
                self.client,
                exp_id,
                run_id,
                folder,
                kept_manifest(folder),
                {k: param_text(v) for k, v in params.items()},
            )
        except Exception as exc:  # noqa: BLE001 - the results stand without the model
            self.notes.append(
                f"the model of {record.summary_line()} was not logged to MLflow "
                f"({type(exc).__name__}: {exc}); it stays in {record.model_dir}"
            )
            return None

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
        reason: str | None = None,
    ) -> None:
        """Log each touched parent's fold aggregates once and end it: FINISHED, FAILED (a cell
        failed, or ``reason`` given: e.g. logging stopped mid-run, so fold runs are missing;
        the tag ``ltr_bench_end_reason`` holds it) or KILLED (interrupted).

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
                    self.client.set_tag(run_id, NOTE_TAG, parent_note(records, stats))
                    metrics = [Metric("n_folds", float(len(records)), ts, 0)]
                    for k, (mean, std, count) in sorted(stats.items()):
                        key = mlflow_metric_key(k)
                        metrics.append(Metric(key, mean, ts, 0))
                        if count > 1:
                            metrics.append(Metric(key + "_std", std, ts, 0))
                    self.client.log_batch(run_id, metrics=metrics)
                status = "FINISHED"
                if plan_key in self._failed_plans or reason:
                    status = "FAILED"
                if reason:
                    self.client.set_tag(run_id, TAG_END_REASON, reason[:5000])
                if interrupted:
                    status = "KILLED"
                self.client.set_terminated(
                    run_id, status, end_time=self._compute_end(run_id, records)
                )
        except Exception as exc:
            raise TrackingError(self._message("end the parent runs", exc)) from exc
