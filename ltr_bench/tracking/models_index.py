"""A fold run's logged models: finding them, linking them as the run's outputs, and taking a
fold run out of the results without leaving a registered model version pointing at nothing
-- all without importing ``mlflow.pyfunc`` (the writer needs this for every run it logs or
replaces; :mod:`.models` costs a second to import).

Links (how MLflow 3 relates the entities, and what its UI shows):

* run -> model: the logged model is the fold run's *output* (``log_outputs``,
  ``LoggedModelOutput``), so the run lists it (its page's "Logged models", its Artifacts tab)
  and ``Run.outputs.model_outputs`` holds its id; the logged model's ``source_run_id`` is
  the run;
* model -> registered version: a version made from ``models:/<model_id>`` carries
  ``model_id`` and the run's id, and the logged model's tag ``mlflow.modelVersions`` names
  the versions (the Models tab's "Registered models" column): :mod:`.models`.

Retiring (:func:`retire_run`: a fold run superseded by ``--force``, partly logged, damaged or a
duplicate): a run whose model no registered version uses is soft-deleted with its logged
models (the Models tab never lists a model whose record is gone); a run whose model is
registered is kept, with its model, and marked ``ltr_bench_role = "superseded"`` (so no
report, resume or UI filter takes it for a result) with the reason in
``ltr_bench_superseded``: the registered version still loads and still links to the run it
came from.
"""

from __future__ import annotations

__all__ = [
    "MODEL_NAME",
    "ROLE_SUPERSEDED",
    "TAG_SUPERSEDED",
    "delete_run_models",
    "link_models",
    "linked_model_ids",
    "logged_ids",
    "registered_versions",
    "retire_run",
    "run_model_ids",
    "run_models",
]

#: the MLflow Model's name in a fold run (``runs:/<run>/model``)
MODEL_NAME = "model"
#: ``ltr_bench_role`` of a fold run kept only because a registered version uses its model
ROLE_SUPERSEDED = "superseded"
#: why a fold run was superseded and kept
TAG_SUPERSEDED = "ltr_bench_superseded"


def run_models(client, experiment_id: str, run_id: str) -> list:
    """The logged models whose source is run ``run_id`` (of experiment ``experiment_id``)."""
    return list(
        client.search_logged_models(
            experiment_ids=[experiment_id], filter_string=f"source_run_id = '{run_id}'"
        )
    )


def run_model_ids(client, run) -> tuple[list[str], bool]:
    """The ids of fold run ``run``'s logged models ``model`` and whether the run lists them
    as its outputs (runs logged before the link have models whose source is the run but no
    output)."""
    outputs = getattr(run, "outputs", None)
    linked = [o.model_id for o in (outputs.model_outputs if outputs is not None else [])]
    if linked:
        return linked, True
    found = run_models(client, run.info.experiment_id, run.info.run_id)
    return [m.model_id for m in found if m.name == MODEL_NAME], False


def link_models(client, run_id: str, model_ids: list[str]) -> None:
    """Record ``model_ids`` as run ``run_id``'s outputs (step 0), as MLflow's own
    ``log_model`` does."""
    from mlflow.entities import LoggedModelOutput

    if model_ids:
        client.log_outputs(run_id, [LoggedModelOutput(m, step=0) for m in model_ids])


def linked_model_ids(client, run) -> list[str]:
    """:func:`run_model_ids`, linked as the run's outputs now if it was logged before runs
    listed their models (a re-run repairs the links of an older store)."""
    model_ids, linked = run_model_ids(client, run)
    if model_ids and not linked:
        link_models(client, run.info.run_id, model_ids)
    return model_ids


def logged_ids(
    uri: str, experiment_id: str, parent_run_id: str, run_id: str, model_ids: list[str]
) -> dict[str, str]:
    """Where a record was logged (:attr:`ltr_bench.results.ResultRecord.mlflow`): the store,
    experiment, parent and fold run, and its logged model (``model_id``, ``model_uri`` =
    ``models:/<model_id>``) when there is one."""
    ids = {
        "tracking_uri": uri,
        "experiment_id": experiment_id,
        "parent_run_id": parent_run_id,
        "run_id": run_id,
    }
    if model_ids:
        ids |= {"model_id": model_ids[0], "model_uri": f"models:/{model_ids[0]}"}
    return ids


def registered_versions(client, run_id: str) -> list[str]:
    """``NAME version N`` of every registered model version made from run ``run_id``'s
    model (MLflow sets a version's run from its logged model's source run)."""
    versions = client.search_model_versions(f"run_id = '{run_id}'")
    return [f"{v.name} version {v.version}" for v in versions]


def delete_run_models(client, experiment_id: str, run_id: str) -> None:
    """Delete the logged models of a fold run being deleted. Best effort: a store without
    logged models (MLflow 2) has nothing to delete."""
    try:
        for model in run_models(client, experiment_id, run_id):
            client.delete_logged_model(model.model_id)
    except Exception:  # noqa: BLE001, S110 - see the docstring
        pass


def retire_run(client, experiment_id: str, run_id: str, reason: str) -> str | None:
    """Take fold run ``run_id`` out of the results (see the module): deleted with its models,
    or, when a registered version uses its model, kept and marked superseded with
    ``reason``; then returns a sentence for the user saying so (else None)."""
    from ltr_bench.tracking.layout import TAG_ROLE

    versions = registered_versions(client, run_id)
    if not versions:
        client.delete_run(run_id)
        delete_run_models(client, experiment_id, run_id)
        return None
    from mlflow.entities import RunTag

    kept = f"{reason}; kept because its model is registered as {', '.join(versions)}"
    client.log_batch(
        run_id, tags=[RunTag(TAG_ROLE, ROLE_SUPERSEDED), RunTag(TAG_SUPERSEDED, kept[:5000])]
    )
    return (
        f"MLflow run {run_id}: {reason}; kept with its model, not deleted, because "
        f"{', '.join(versions)} use(s) it (tagged {TAG_ROLE} = {ROLE_SUPERSEDED})"
    )
