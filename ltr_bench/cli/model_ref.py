"""What ``--model`` names (``predict``, ``export``), resolved to a loaded model: anything
``ltr-bench models`` prints in a column a user would copy.

* a kept model's folder (``mlflow_runs/results/<key>.model.<token>``, relative or absolute);
* a fold run: its id alone, ``runs:/<id>`` or ``runs:/<id>/model``;
* a logged model: ``models:/<model id>`` or the id ``m-...`` alone; a registered version
  ``models:/<name>/<version>``; any other MLflow model URI as MLflow reads it.

A parent run (one per configuration; it holds the fold means, not a model) is answered with
its fold runs and their model URIs (:class:`~ltr_bench.tracking.lookup.ParentRunError`, exit
2), never with MLflow's bare "failed to download".
"""

from __future__ import annotations

import re
from pathlib import Path

from ltr_bench.errors import LtrBenchError, UsageError

__all__ = ["ModelNotFound", "is_model_uri", "load_model_ref"]

_MLFLOW_ID = re.compile(r"(m-)?[0-9a-f]{32}")


def is_model_uri(text: str) -> bool:
    """Whether ``--model`` text names a model in MLflow (``runs:/...``, ``models:/...``, a
    run id, a logged model's id ``m-...``) rather than a path (an existing path always
    wins)."""
    if Path(text).expanduser().exists():
        return False
    return ("://" not in text and ":/" in text) or _MLFLOW_ID.fullmatch(text) is not None


def load_model_ref(model_ref: str, tracking_uri, tmp: str, console):
    """The :class:`~ltr_bench.models.LoadedModel` that ``--model`` names (see the module): a
    kept model's folder, or a model in the MLflow store of ``tracking_uri`` downloaded into
    ``tmp`` (a temporary folder the caller removes). Raises :class:`ModelNotFound` (exit 1)
    for a reference MLflow cannot answer with an ltr-bench model,
    :class:`~ltr_bench.errors.UsageError` (exit 2) for a path that does not exist or a parent
    run, :class:`~ltr_bench.models.ModelLoadError` (exit 1) for a folder that cannot be
    loaded."""
    from ltr_bench.models import ModelLoadError, load_model

    folder = Path(model_ref).expanduser()
    if is_model_uri(model_ref):
        from ltr_bench.tracking.lookup import ModelRefError, model_uri_for
        from ltr_bench.tracking.models import download_model

        console.status(f"looking up {model_ref} in MLflow ...", force=True)
        notes: list[str] = []
        try:
            uri, store = model_uri_for(model_ref, tracking_uri, notes)
            for note in filter(None, notes):
                console.line(f"note: {note}")
            console.status(f"fetching {uri} from MLflow {store} ...", force=True)
            folder = download_model(uri, store, tmp)
        except (LookupError, ModelRefError) as exc:
            raise ModelNotFound(str(exc)) from None
        # the download is a temporary folder: messages name the model as the user gave it
        try:
            model = load_model(folder)
        except ModelLoadError as exc:
            raise ModelLoadError(str(exc).replace(str(folder), model_ref)) from None
        model.name = model_ref
        return model
    elif not folder.exists():
        raise UsageError(
            f"--model {model_ref}: no such folder (give a kept model's folder, a fold run's id "
            "or an MLflow model URI such as runs:/<run id>/model; `ltr-bench models` lists "
            "them)"
        )
    return load_model(folder)


class ModelNotFound(LtrBenchError):
    """An MLflow reference that does not resolve to an ltr-bench model (exit code 1)."""
