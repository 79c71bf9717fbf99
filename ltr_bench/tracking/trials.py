"""Tuning trials as MLflow runs: children of the tuned configuration's parent run.

Layout: each finished Optuna trial of a tuned cell (:mod:`ltr_bench.tune.study`) becomes one run
nested under the parent run of the tuned record (``mlflow.parentRunId``), tagged
``ltr_bench_role = "trial"`` (so :func:`~ltr_bench.tracking.fetch_fold_results`, which reads
``"fold"`` runs, never mistakes a trial for a result), with the trial's parameters as params,
its objective value on the validation data as the metric ``validation_<objective>``,
``fit_seconds`` / ``score_seconds``, and the trial's state (COMPLETE, PRUNED, FAIL) as a
tag. Logging is idempotent: a trial already logged (tag ``ltr_bench_trial_key``) is not
logged again, so a resumed tuning run adds only the new trials; a trial run left RUNNING (its
logging was cut short by a kill or a failing store) is deleted and logged again whole. A
trial run is created, filled and ended in that order, so RUNNING means incomplete.
"""

from __future__ import annotations

from collections.abc import Iterable

from ltr_bench.results import ResultRecord
from ltr_bench.tracking.layout import TAG_ROLE, param_text
from ltr_bench.tracking.store import TrackingError, mlflow_metric_key
from ltr_bench.tracking.writer import Tracker

__all__ = ["log_trials"]

TAG_TRIAL_KEY = "ltr_bench_trial_key"


def log_trials(tracker: Tracker, record: ResultRecord, trials: Iterable, *, objective: str) -> int:
    """Log ``trials`` (Optuna ``FrozenTrial`` objects of the study that chose ``record``'s
    parameters) as child runs of ``record``'s parent run. Returns how many were new.
    Raises :class:`TrackingError`."""
    from mlflow.entities import Metric, Param
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    try:
        parent = tracker.parent_run(record)
        exp_id = tracker.experiment_id(record.dataset)
        client = tracker.client
        logged = set()
        for r in client.search_runs(
            [exp_id],
            filter_string=f"tags.{TAG_ROLE} = 'trial' and tags.mlflow.parentRunId = '{parent}'",
            max_results=50000,
        ):
            if r.info.status == "RUNNING":  # its logging was cut short: log it again whole
                client.delete_run(r.info.run_id)
            else:
                logged.add(r.data.tags.get(TAG_TRIAL_KEY))
        new = 0
        for t in trials:
            tkey = f"{record.key[:16]}/{t.number}"
            if tkey in logged:
                continue
            start = int(t.datetime_start.timestamp() * 1000) if t.datetime_start else None
            end = int(t.datetime_complete.timestamp() * 1000) if t.datetime_complete else None
            run = client.create_run(
                exp_id,
                start_time=start,
                run_name=f"{record.row_name} fold {record.fold} trial {t.number}",
                tags={
                    MLFLOW_PARENT_RUN_ID: parent,
                    TAG_ROLE: "trial",
                    TAG_TRIAL_KEY: tkey,
                    "fold": str(record.fold),
                    "seed": str(record.seed),
                    "trial": str(t.number),
                    "trial_state": t.state.name,
                    "label": record.label,
                },
            )
            metrics = []
            ts = end or start or 0
            if t.value is not None:
                metrics.append(
                    Metric(mlflow_metric_key(f"validation_{objective}"), float(t.value), ts, 0)
                )
            for k in ("fit_seconds", "score_seconds"):
                if isinstance(t.user_attrs.get(k), (int, float)):
                    metrics.append(Metric(k, float(t.user_attrs[k]), ts, 0))
            for step, v in sorted(t.intermediate_values.items()):
                metrics.append(
                    Metric(mlflow_metric_key(f"intermediate_{objective}"), float(v), ts, int(step))
                )
            client.log_batch(
                run.info.run_id,
                metrics=metrics,
                params=[Param(k, param_text(v)) for k, v in sorted(t.params.items())],
            )
            client.set_terminated(
                run.info.run_id,
                "FINISHED"
                if t.state.name == "COMPLETE"
                else "KILLED"
                if t.state.name == "PRUNED"
                else "FAILED",
                end_time=end,
            )
            new += 1
        return new
    except TrackingError:
        raise
    except Exception as exc:
        raise TrackingError(
            tracker._message(  # noqa: SLF001 - same wording as the writer
                f"log the tuning trials of {record.summary_line()}", exc
            )
        ) from exc
