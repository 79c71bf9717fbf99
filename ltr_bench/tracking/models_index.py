"""Finding and removing the logged models of a fold run, without importing ``mlflow.pyfunc``
(the writer needs this for every replaced run; :mod:`.models` costs a second to import)."""

from __future__ import annotations

__all__ = ["MODEL_NAME", "delete_run_models", "run_models"]

#: the MLflow Model's name in a fold run (``runs:/<run>/model``)
MODEL_NAME = "model"


def run_models(client, experiment_id: str, run_id: str) -> list:
    """The logged models whose source is run ``run_id`` (of experiment ``experiment_id``)."""
    return list(
        client.search_logged_models(
            experiment_ids=[experiment_id], filter_string=f"source_run_id = '{run_id}'"
        )
    )


def delete_run_models(client, experiment_id: str, run_id: str) -> None:
    """Delete the logged models of a fold run being replaced (``--force``, a damaged run), so
    the Models tab never lists a model whose record is gone. Best effort: a store without
    logged models (MLflow 2) has nothing to delete."""
    try:
        for model in run_models(client, experiment_id, run_id):
            client.delete_logged_model(model.model_id)
    except Exception:  # noqa: BLE001, S110 - see the docstring
        pass
