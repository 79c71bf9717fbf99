"""The one module that talks to MLflow (imported lazily, so listing rankers stays fast).

Store
    Default tracking URI ``sqlite:///<cwd>/mlflow_runs/mlflow.db``; ``--tracking-uri`` or
    ``MLFLOW_TRACKING_URI`` point elsewhere (another SQLite file, a shared ``mlflow server``).
    For an SQLite store, artifacts go to ``artifacts/`` beside the database file (so the
    default is ``<cwd>/mlflow_runs/artifacts``); a server decides for itself.

Layout
    One experiment per dataset, ``ltr-bench/<dataset>``. One parent run per (ranker,
    parameters, dataset, seed), found again on a re-run through its tag
    ``ltr_bench_plan_key`` (no duplicate). One nested run per fold (tag
    ``mlflow.parentRunId``), found again through ``ltr_bench_key`` + ``ltr_bench_finished``
    (a record is never logged twice, also after a crash between logging and noting the run
    id locally). A forced recomputation replaces the fold's earlier nested run (the old one
    is soft-deleted: ``mlflow gc`` purges it, the UI can restore it).

Nested run content
    metrics: ``ndcg_at_10`` etc. (``@`` -> ``_at_``; empty query = 1), the same with
    ``_empty0`` (empty query = 0), ``map``, ``mrr``, ``err_at_10``, any extra metric of the
    ranker, ``fit_seconds``, ``score_us_per_doc``, ``peak_rss_mb``.
    params: every resolved hyper-parameter, ``seed``, ``dataset``, ``fold``, dataset options
    (``dataset_option.<name>``). tags: ``ranker``, ``ranker_distribution``,
    ``ranker_version``, ``dataset``, ``fold``, ``fingerprint_train|vali|test``, ``threads``,
    ``convention.<name>`` (from :data:`ltr_bench.metrics.CONVENTIONS`), ``version.<package>``,
    ``git_commit``, ``cpu_model``, ``cpu_count``, the resume key. artifacts:
    ``config.json`` (the cell's resolved configuration and the invocation's plan) and
    ``per_query_metrics.csv`` (``qid`` then one column per metric and convention).

Parent run content
    metric ``<name>`` = mean over the finished folds, ``<name>_std`` = sample standard
    deviation (ddof=1; only with two or more folds), ``n_folds``; each update is logged with
    ``step = n_folds`` so the history shows how the mean grew. params: hyper-parameters,
    seed, dataset. artifacts: ``plan.json`` (and ``plan.toml`` when the plan came from a file).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable

from .harness import ResultRecord, ResultStore, aggregate

__all__ = [
    "TrackingError",
    "Tracker",
    "artifact_root_for",
    "default_tracking_uri",
    "experiment_name",
    "mlflow_metric_key",
    "resolve_tracking_uri",
]

EXPERIMENT_PREFIX = "ltr-bench/"
TAG_KEY = "ltr_bench_key"
TAG_PLAN_KEY = "ltr_bench_plan_key"
TAG_FINISHED = "ltr_bench_finished"
TAG_ROLE = "ltr_bench_role"  # "parent" or "fold"
_PARAM_MAX = 6000  # MLflow's limit on a param value's length


class TrackingError(RuntimeError):
    """MLflow could not be reached or refused a write; ``str(err)`` is user-facing."""


def default_tracking_uri(cwd: str | Path | None = None) -> str:
    """``sqlite:///<abs cwd>/mlflow_runs/mlflow.db``."""
    base = Path(cwd) if cwd else Path.cwd()
    return "sqlite:///" + str((base / "mlflow_runs" / "mlflow.db").resolve())


def resolve_tracking_uri(uri: str | None = None, cwd: str | Path | None = None) -> str:
    """The argument, else ``$MLFLOW_TRACKING_URI``, else :func:`default_tracking_uri`.

    A bare path ending in ``.db`` is taken as an SQLite file.
    """
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(cwd)
    if "://" not in uri and uri.endswith(".db"):
        uri = "sqlite:///" + str(Path(uri).expanduser().resolve())
    return uri


def sqlite_path(uri: str) -> Path | None:
    """The database file of an ``sqlite:///`` URI, else None."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///"):])
    return None


def artifact_root_for(uri: str) -> str | None:
    """Artifact root (file URI) for an SQLite store: ``artifacts/`` beside the database.

    None for servers and other stores (they choose their artifact location).
    """
    db = sqlite_path(uri)
    if db is None:
        return None
    return (db.resolve().parent / "artifacts").as_uri()


def mlflow_metric_key(name: str) -> str:
    """``ndcg@10`` -> ``ndcg_at_10``, ``ndcg@10_empty0`` -> ``ndcg_at_10_empty0``,
    ``p@5`` -> ``p_at_5``; other characters MLflow rejects become ``_``."""
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", name.replace("@", "_at_"))


def experiment_name(dataset: str) -> str:
    return EXPERIMENT_PREFIX + dataset


def _millis(iso: str | None) -> int | None:
    if not iso:
        return None
    try:
        return int(_dt.datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return None


def _safe_dir_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "dataset"


def _param_value(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=repr)
    return s if len(s) <= _PARAM_MAX else s[:_PARAM_MAX - 3] + "..."


class Tracker:
    """Logs result records to MLflow (see the module docstring for the layout).

    ``Tracker(uri)`` does not contact the store yet; :meth:`check` does (call it first to
    fail early). Every public method raises :class:`TrackingError` with a message that says
    what failed; nothing here touches the local results except noting ``record.mlflow``.
    """

    def __init__(self, tracking_uri: str | None = None, *, cwd: str | Path | None = None,
                 quiet: bool = True):
        self.uri = resolve_tracking_uri(tracking_uri, cwd)
        self.artifact_root = artifact_root_for(self.uri)
        self._client = None
        self._experiments: dict[str, str] = {}
        self._parents: dict[str, str] = {}      # plan_key -> parent run id
        self._failed_plans: set[str] = set()
        self._quiet = quiet

    # -- connection --------------------------------------------------------------------------

    @property
    def client(self):
        if self._client is None:
            db = sqlite_path(self.uri)
            if db is not None:
                db.parent.mkdir(parents=True, exist_ok=True)
            try:
                from mlflow.tracking import MlflowClient

                if self._quiet:  # after the import: importing mlflow configures its loggers
                    for name in ("mlflow", "alembic"):
                        logging.getLogger(name).setLevel(logging.WARNING)
                self._client = MlflowClient(tracking_uri=self.uri)
            except Exception as exc:
                raise TrackingError(self._message("open", exc)) from exc
        return self._client

    def _message(self, what: str, exc: BaseException) -> str:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"MLflow at {self.uri}: could not {what}: {type(exc).__name__}: {text}"

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
                raise TrackingError(f"MLflow at {self.uri}: could not connect: {reason}") \
                    from exc
        try:
            self.client.search_experiments(max_results=1)
        except TrackingError:
            raise
        except Exception as exc:
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
                exp_id = client.create_experiment(name, artifact_location=location,
                                                  tags={"ltr_bench_dataset": dataset})
            except Exception:
                exp = client.get_experiment_by_name(name)  # created concurrently
                if exp is None:
                    raise
                exp_id = exp.experiment_id
        else:
            if exp.lifecycle_stage == "deleted":
                client.restore_experiment(exp.experiment_id)
            exp_id = exp.experiment_id
        self._experiments[dataset] = exp_id
        return exp_id

    def _find_runs(self, exp_id: str, **tags: str) -> list:
        filt = " and ".join(f"tags.{k} = '{v}'" for k, v in tags.items())
        return list(self.client.search_runs([exp_id], filter_string=filt, max_results=1000))

    def parent_run(self, record: ResultRecord, plan: dict[str, Any] | None = None,
                   plan_toml: str | None = None) -> str:
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
            tags = {
                TAG_PLAN_KEY: record.plan_key, TAG_ROLE: "parent",
                "ranker": record.ranker, "ranker_distribution": record.ranker_distribution,
                "ranker_version": record.ranker_version, "dataset": record.dataset,
                "seed": str(record.seed),
            }
            run = client.create_run(exp_id, run_name=f"{record.ranker} @ {record.dataset}",
                                    tags=tags)
            run_id = run.info.run_id
            from mlflow.entities import Param

            params = {**record.params, "seed": record.seed, "dataset": record.dataset}
            for k, v in record.dataset_options.items():
                params[f"dataset_option.{k}"] = v
            client.log_batch(run_id, params=[Param(k, _param_value(v))
                                             for k, v in sorted(params.items())])
        if plan is not None:
            self._log_json(run_id, plan, "plan.json")
        if plan_toml is not None:
            self._log_text(run_id, plan_toml, "plan.toml")
        self._parents[record.plan_key] = run_id
        return run_id

    # -- artifacts ---------------------------------------------------------------------------

    def _log_json(self, run_id: str, obj: Any, name: str) -> None:
        self._log_text(run_id, json.dumps(obj, indent=1, sort_keys=True, default=repr) + "\n",
                       name)

    def _log_text(self, run_id: str, text: str, name: str) -> None:
        with tempfile.TemporaryDirectory(prefix="ltr-bench-") as tmp:
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            self.client.log_artifact(run_id, str(path))

    # -- cells -------------------------------------------------------------------------------

    def is_logged(self, record: ResultRecord) -> bool:
        """True when the record notes a run in this store (``record.mlflow``)."""
        m = record.mlflow or {}
        return bool(m.get("run_id")) and m.get("tracking_uri") == self.uri

    def log_record(self, record: ResultRecord, store: ResultStore, *,
                   plan: dict[str, Any] | None = None, plan_toml: str | None = None) -> str:
        """Log one finished record as a nested run (unless already there), refresh the
        parent's fold means, note the run in ``record.mlflow`` and save that locally.

        Returns the nested run id. Raises :class:`TrackingError`.
        """
        if not record.ok:
            raise ValueError("only finished records are logged")
        try:
            if self.is_logged(record):  # noted only after the parent was updated
                return record.mlflow["run_id"]  # type: ignore[index]
            parent = self.parent_run(record, plan, plan_toml)
            exp_id = self.experiment_id(record.dataset)
            run_id = None
            for run in self._find_runs(exp_id, **{TAG_KEY: record.key, TAG_ROLE: "fold"}):
                if run.data.tags.get(TAG_FINISHED) == record.finished and run_id is None \
                        and run.info.status == "FINISHED":
                    run_id = run.info.run_id  # logged before, but not noted locally
                else:
                    self.client.delete_run(run.info.run_id)  # superseded (--force) or partial
            if run_id is None:
                run_id = self._log_fold_run(exp_id, parent, record, store, plan)
            self._update_parent(parent, record, store)
            record.mlflow = {"tracking_uri": self.uri, "experiment_id": exp_id,
                             "run_id": run_id, "parent_run_id": parent}
            store.save(record, per_query=False)
            return run_id
        except TrackingError:
            raise
        except Exception as exc:
            raise TrackingError(self._message(f"log {record.summary_line()}", exc)) from exc

    def _log_fold_run(self, exp_id: str, parent: str, record: ResultRecord,
                      store: ResultStore, plan: dict[str, Any] | None) -> str:
        from mlflow.entities import Metric, Param
        from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

        from .metrics import CONVENTIONS

        client = self.client
        env = record.environment or {}
        tags: dict[str, str] = {
            MLFLOW_PARENT_RUN_ID: parent, TAG_ROLE: "fold", TAG_KEY: record.key,
            TAG_PLAN_KEY: record.plan_key, TAG_FINISHED: record.finished,
            "ranker": record.ranker, "ranker_distribution": record.ranker_distribution,
            "ranker_version": record.ranker_version, "dataset": record.dataset,
            "dataset_source": record.dataset_source, "fold": str(record.fold),
            "seed": str(record.seed),
            "threads": "default" if record.n_threads is None else str(record.n_threads),
            "n_train_docs": str(record.n_train_docs), "n_test_docs": str(record.n_test_docs),
            "n_test_queries": str(record.n_test_queries),
            "score_repeats": str(record.score_repeats),
            "peak_rss_method": record.peak_rss_method,
            "git_commit": str(env.get("git_commit")),
            "ltr_bench_git_commit": str(env.get("ltr_bench_git_commit")),
            "cpu_model": str(env.get("cpu_model")), "cpu_count": str(env.get("cpu_count")),
            "platform": str(env.get("platform")), "hostname": str(env.get("hostname")),
            "convention.empty_query_keys": "plain keys: a query without relevant documents "
                                           "scores 1; keys ending in _empty0: it scores 0",
            "convention.score_us_per_doc": "median of timed predict calls after one warm-up, "
                                           "divided by the test documents, microseconds",
            "convention.peak_rss_mb": "peak resident memory of the process during fit and "
                                      "scoring, MiB, including the loaded data",
        }
        if record.warnings:
            tags["warnings"] = " | ".join(record.warnings)
        for split, fp in record.fingerprints.items():
            tags[f"fingerprint_{split}"] = fp
        for name, text in CONVENTIONS.items():
            tags[f"convention.{name}"] = text
        for pkg, ver in (env.get("versions") or {}).items():
            tags[f"version.{pkg}"] = str(ver)
        tags = {k: v[:5000] for k, v in tags.items()}

        run = client.create_run(exp_id, start_time=_millis(record.started),
                                run_name=f"{record.ranker} fold {record.fold}", tags=tags)
        run_id = run.info.run_id
        try:
            params = {**record.params, "seed": record.seed, "dataset": record.dataset,
                      "fold": record.fold}
            for k, v in record.dataset_options.items():
                params[f"dataset_option.{k}"] = v
            ts = _millis(record.finished) or 0
            values = dict(record.metrics)
            values.update(record.extra_metrics)
            values.update(fit_seconds=record.fit_seconds,
                          score_us_per_doc=record.score_us_per_doc,
                          peak_rss_mb=record.peak_rss_mb)
            metrics = [Metric(mlflow_metric_key(k), float(v), ts, 0)
                       for k, v in sorted(values.items()) if v is not None]
            client.log_batch(run_id, metrics=metrics,
                             params=[Param(k, _param_value(v)) for k, v in sorted(params.items())],
                             tags=[])
            config = {"cell": record.config, "plan": plan}
            self._log_json(run_id, config, "config.json")
            pq_path = store.per_query_path(record.key)
            if pq_path.is_file():
                with tempfile.TemporaryDirectory(prefix="ltr-bench-") as tmp:
                    target = Path(tmp) / "per_query_metrics.csv"
                    target.write_bytes(pq_path.read_bytes())
                    client.log_artifact(run_id, str(target))
            client.set_terminated(run_id, "FINISHED", end_time=_millis(record.finished))
        except BaseException:
            try:  # leave no half-logged FINISHED-looking run behind
                client.set_terminated(run_id, "FAILED")
            except Exception:
                pass
            raise
        return run_id

    def _update_parent(self, parent: str, record: ResultRecord, store: ResultStore) -> None:
        from mlflow.entities import Metric

        records = store.records(plan_key=record.plan_key)
        stats = aggregate(records)
        n = len(records)
        ts = _millis(record.finished) or 0
        metrics = [Metric("n_folds", float(n), ts, n)]
        for k, (mean, std, count) in sorted(stats.items()):
            key = mlflow_metric_key(k)
            metrics.append(Metric(key, mean, ts, n))
            if count > 1:
                metrics.append(Metric(key + "_std", std, ts, n))
        self.client.log_batch(parent, metrics=metrics)

    # -- end of an invocation ----------------------------------------------------------------

    def mark_failed(self, plan_key: str) -> None:
        """Remember that a cell of this plan key failed (its parent ends FAILED)."""
        self._failed_plans.add(plan_key)

    def finish(self, *, interrupted: bool = False) -> None:
        """End the parent runs touched by this invocation: FINISHED, FAILED (a cell failed)
        or KILLED (interrupted). Errors are raised as :class:`TrackingError`."""
        try:
            for plan_key, run_id in self._parents.items():
                status = "FINISHED"
                if plan_key in self._failed_plans:
                    status = "FAILED"
                if interrupted:
                    status = "KILLED"
                self.client.set_terminated(run_id, status)
        except Exception as exc:
            raise TrackingError(self._message("end the parent runs", exc)) from exc


def log_records(tracker: Tracker, records: Iterable[ResultRecord], store: ResultStore,
                **kwargs) -> list[str]:
    """Log several records (e.g. ones finished locally while MLflow was unreachable)."""
    return [tracker.log_record(r, store, **kwargs) for r in records]


# ---- reading runs back (used by report.py) ----
# Appended section (owner: the report helper). Reads what Tracker logged; never writes
# except log_parent_artifacts (report plots). Everything MLflow-specific stays here so that
# report.py works on plain dicts.

class NoResultsError(TrackingError):
    """The store has nothing to report for the request; ``str(err)`` is user-facing."""


def _metric_name(key: str) -> str:
    """Inverse of :func:`mlflow_metric_key` for the harness's keys: ``ndcg_at_10`` ->
    ``ndcg@10`` (``ndcg_at_10_empty0`` -> ``ndcg@10_empty0``); other keys unchanged."""
    return re.sub(r"^([a-z]+)_at_(\d+)", r"\1@\2", key)


_NOT_HYPER = ("seed", "dataset", "fold")


def _all_runs(client, exp_id: str, filter_string: str) -> list:
    runs: list = []
    token = None
    while True:
        page = client.search_runs([exp_id], filter_string=filter_string, max_results=1000,
                                  page_token=token)
        runs.extend(page)
        token = getattr(page, "token", None)
        if not token:
            return runs


def list_datasets_in_store(tracking_uri: str | None = None, *,
                           cwd: str | Path | None = None) -> list[str]:
    """Dataset names that have an ``ltr-bench/<dataset>`` experiment in the store."""
    tracker = Tracker(tracking_uri, cwd=cwd)
    _check_store_exists(tracker.uri)
    try:
        exps = tracker.client.search_experiments(max_results=1000)
    except Exception as exc:
        raise TrackingError(tracker._message("list experiments", exc)) from exc
    return sorted(e.name[len(EXPERIMENT_PREFIX):] for e in exps
                  if e.name.startswith(EXPERIMENT_PREFIX))


def _check_store_exists(uri: str) -> None:
    db = sqlite_path(uri)
    if db is not None and not db.is_file():
        raise NoResultsError(f"no MLflow store at {db} (nothing was logged there): run "
                             f"`ltr-bench run ...` in this folder first, or pass "
                             f"--tracking-uri / set MLFLOW_TRACKING_URI")


def fetch_fold_results(dataset: str, tracking_uri: str | None = None, *,
                       per_query: bool = True, cwd: str | Path | None = None,
                       ) -> list[dict[str, Any]]:
    """Every finished nested fold run of ``ltr-bench/<dataset>``, as plain dicts.

    Each dict: ``run_id``, ``parent_run_id``, ``run_name``, ``ranker``, ``plan_key``,
    ``key``, ``fold`` (int), ``seed`` (str), ``params`` (hyper-parameters as logged, str
    values; without seed/dataset/fold/dataset options), ``dataset_options`` (str values),
    ``metrics`` (``ndcg@10`` / ``ndcg@10_empty0`` / ``map`` ... , also extra metrics;
    without the timing keys), ``fit_seconds``, ``score_us_per_doc``, ``peak_rss_mb`` (float or
    NaN), ``fingerprints`` (``{"train"|"vali"|"test": sha256}``), ``finished`` (ISO time),
    ``per_query`` (``{"qid": [...], "ndcg@10": [...], ...}`` from the run's
    ``per_query_metrics.csv``, or None when ``per_query=False`` or the artifact is missing).

    Raises :class:`NoResultsError` (no store file, no experiment for the dataset: the
    message names the datasets the store has) and :class:`TrackingError` (store unusable).
    Reads only; never creates a store or an experiment.
    """
    from .harness import read_per_query_csv

    tracker = Tracker(tracking_uri, cwd=cwd)
    _check_store_exists(tracker.uri)
    client = tracker.client
    try:
        exp = client.get_experiment_by_name(experiment_name(dataset))
    except Exception as exc:
        raise TrackingError(tracker._message("read the experiments", exc)) from exc
    if exp is None or exp.lifecycle_stage == "deleted":
        known = list_datasets_in_store(tracker.uri)
        raise NoResultsError(
            f"no results for dataset {dataset!r} in the MLflow store {tracker.uri}; "
            + (f"datasets with results: {', '.join(known)}" if known
               else "the store has no ltr-bench results yet (run `ltr-bench run` first)"))
    try:
        runs = _all_runs(client, exp.experiment_id, f"tags.{TAG_ROLE} = 'fold'")
    except Exception as exc:
        raise TrackingError(tracker._message(f"search the runs of {dataset}", exc)) from exc
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ltr-bench-report-") as tmp:
        for run in runs:
            if run.info.status != "FINISHED":
                continue  # a half-logged or superseded run
            tags, data = run.data.tags, run.data
            try:
                fold = int(tags.get("fold", data.params.get("fold")))
            except (TypeError, ValueError):
                continue  # not a run the harness wrote
            metrics = {_metric_name(k): float(v) for k, v in data.metrics.items()}
            timing = {k: metrics.pop(k, float("nan"))
                      for k in ("fit_seconds", "score_us_per_doc", "peak_rss_mb")}
            params = {k: v for k, v in data.params.items()
                      if k not in _NOT_HYPER and not k.startswith("dataset_option.")}
            options = {k[len("dataset_option."):]: v for k, v in data.params.items()
                       if k.startswith("dataset_option.")}
            pq = None
            if per_query:
                try:
                    path = client.download_artifacts(run.info.run_id,
                                                     "per_query_metrics.csv",
                                                     str(Path(tmp) / run.info.run_id))
                    pq = read_per_query_csv(Path(path))
                except Exception:  # noqa: BLE001 - reported by the caller as "no per-query"
                    pq = None
            out.append({
                "run_id": run.info.run_id,
                "parent_run_id": tags.get("mlflow.parentRunId"),
                "run_name": run.info.run_name,
                "ranker": tags.get("ranker", ""),
                "plan_key": tags.get(TAG_PLAN_KEY, ""),
                "key": tags.get(TAG_KEY, ""),
                "fold": fold,
                "seed": tags.get("seed", data.params.get("seed", "")),
                "params": params,
                "dataset_options": options,
                "metrics": metrics,
                **timing,
                "fingerprints": {s: tags[f"fingerprint_{s}"] for s in ("train", "vali", "test")
                                 if f"fingerprint_{s}" in tags},
                "finished": tags.get(TAG_FINISHED, ""),
                "per_query": pq,
            })
    if not out:
        raise NoResultsError(f"the experiment {experiment_name(dataset)!r} in {tracker.uri} "
                             f"has no finished fold runs")
    out.sort(key=lambda d: (d["ranker"], d["plan_key"], d["fold"]))
    return out


def log_parent_artifacts(parent_run_id: str, paths: Iterable[str | Path], *,
                         tracking_uri: str | None = None, artifact_path: str = "report",
                         cwd: str | Path | None = None) -> None:
    """Attach files (e.g. report plots) to a parent run under ``artifact_path/``.

    Re-logging a file of the same name replaces it. Raises :class:`TrackingError`.
    """
    tracker = Tracker(tracking_uri, cwd=cwd)
    try:
        for p in paths:
            tracker.client.log_artifact(parent_run_id, str(p), artifact_path=artifact_path)
    except Exception as exc:
        raise TrackingError(tracker._message(f"log report artifacts to run {parent_run_id}",
                                             exc)) from exc
# ---- end of the report section ----
