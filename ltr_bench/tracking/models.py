"""Kept models in MLflow: each fold run's fitted model as an **MLflow Model** (``python_function``
flavor), and registering the best configuration's models in the Model registry.

The MLflow Model (:func:`log_kept_model`, name ``model`` in the fold run; MLflow 3 makes it a
*logged model* ``models:/<model_id>``, listed in the experiment's Models tab) holds the kept
model folder (:mod:`ltr_bench.models`'s format: a JSON manifest and the ranker's native
files) as its artifact ``ltr_bench_model`` and :class:`RankerPyfunc`, which loads it with
:func:`ltr_bench.models.load_model` (never unpickling the folder's files). Its signature is
the model's input: a ``qid`` column (long) and the features ``f1`` .. ``f<n>`` (double,
LETOR's 1-based feature numbers), one row per document, each query's rows together; the
output is one score per row (double), in input order. So::

    model = mlflow.pyfunc.load_model("runs:/<fold run id>/model")
    scores = model.predict(frame)        # frame: pandas, columns qid, f1..fn

The input example is two rows of zeros (one query): it shows the shape, not data.
The python_function wrapper itself is stored by MLflow with cloudpickle (by reference to
this module: ltr-bench must be installed where the model is loaded).

Registering (:func:`register_models`, ``ltr-bench report --register NAME``): one model
version per fold of the best configuration, from its fold runs' logged models, with the
fold's metrics and the comparison it won in the version's description.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr_bench.tracking.models_index import MODEL_NAME, run_models

with warnings.catch_warnings():
    # MLflow advises type hints on each ``predict`` (its own classes' too, at import); the
    # signature is given explicitly
    warnings.simplefilter("ignore", UserWarning)
    import mlflow.pyfunc
    from mlflow.exceptions import MlflowException
    from mlflow.pyfunc import PythonModel

__all__ = [
    "MODEL_ARTIFACT",
    "BadRankingRequest",
    "MODEL_NAME",
    "RankerPyfunc",
    "feature_columns",
    "log_kept_model",
    "register_models",
]


#: the kept model folder's artifact name inside the MLflow Model
MODEL_ARTIFACT = "ltr_bench_model"


def feature_columns(n_features: int) -> list[str]:
    """``f1`` .. ``f<n>``: LETOR's 1-based feature numbers as column names."""
    return [f"f{j}" for j in range(1, n_features + 1)]


class BadRankingRequest(MlflowException, ValueError):
    """Rows the model cannot score, said as MLflow's ``INVALID_PARAMETER_VALUE`` (HTTP 400
    from the scoring server) and still a ``ValueError`` for callers in Python."""

    def __init__(self, message: str) -> None:
        from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

        super().__init__(message, error_code=INVALID_PARAMETER_VALUE)


class RankerPyfunc(PythonModel):
    """The ``python_function`` face of a kept ltr-bench model (see the module)."""

    def load_context(self, context) -> None:
        from ltr_bench.models import load_model

        self.model = load_model(context.artifacts[MODEL_ARTIFACT])

    def predict(self, context, model_input: pd.DataFrame, params=None):
        """Scores of ``model_input`` (pandas: ``qid`` and ``f1`` .. ``f<n>``), float64, one per
        row in input order. Rows of one query must be together (query normalisation is per
        query); the manifest's preprocessing is applied (:meth:`LoadedModel.predict`).

        Input that cannot be scored (no ``qid``, missing columns, a query's rows apart, a
        wrong feature count) raises :class:`BadRankingRequest`, which ``mlflow models
        serve`` answers with 400 and this message (any other exception is its generic
        "unexpected error")."""
        try:
            return self._scores(model_input)
        except ValueError as exc:  # RankerInputError included
            raise BadRankingRequest(str(exc)) from None

    def _scores(self, model_input):
        if "qid" not in getattr(model_input, "columns", ()):
            raise ValueError("the input needs a 'qid' column (the query of each row)")
        n = self.model.n_features
        columns = feature_columns(n) if n else [c for c in model_input.columns if c != "qid"]
        missing = [c for c in columns if c not in model_input.columns]
        if missing:
            raise ValueError(
                f"the input lacks feature column(s) {', '.join(missing[:5])}"
                f"{' ...' if len(missing) > 5 else ''}; the model takes "
                f"{columns[0]} .. {columns[-1]}"
            )
        X = model_input[columns].to_numpy(dtype=np.float64)
        qid = model_input["qid"].to_numpy()
        return self.model.predict(X, qid)


def _signature(n_features: int):
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec

    inputs: list[ColSpec | TensorSpec] = [ColSpec("long", "qid")]
    inputs += [ColSpec("double", c) for c in feature_columns(n_features)]
    return ModelSignature(inputs=Schema(inputs), outputs=Schema([ColSpec("double")]))


def _example(n_features: int):
    import pandas as pd

    frame = pd.DataFrame(np.zeros((2, n_features)), columns=feature_columns(n_features))
    frame.insert(0, "qid", np.ones(2, dtype=np.int64))
    return frame


def _requirements() -> list[str]:
    """The distributions the wrapper needs, pinned to what wrote it (no inference: MLflow's
    would load the model in a subprocess, seconds per model)."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("ltr-bench", "mlflow", "numpy", "pandas"):
        try:
            out.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            out.append(dist)
    return out


def log_kept_model(
    client,
    experiment_id: str,
    run_id: str,
    folder: str | Path,
    manifest: dict[str, Any],
    params: dict[str, str] | None = None,
) -> str:
    """Log the kept model ``folder`` (its ``manifest``) to fold run ``run_id`` (of experiment
    ``experiment_id``, through ``client``) as the MLflow Model ``model`` (see the module), with
    the run's ``params``; returns its model URI (``models:/<model_id>``)."""
    n = int(manifest.get("n_features") or 0)
    ranker = str(manifest.get("ranker"))
    with _quiet():
        # created in the run's experiment, with the run as its source (the run's models)
        logged = client.create_logged_model(
            experiment_id=experiment_id,
            name=MODEL_NAME,
            source_run_id=run_id,
            params=params,
            tags={"ranker": ranker, "ltr_bench_role": "fold-model"},
            model_type="ranker",
        )
        with tempfile.TemporaryDirectory(prefix="ltr-bench-mlflow-model-") as tmp:
            local = Path(tmp) / MODEL_NAME
            _save(local, run_id, logged.model_id, folder, manifest, n)
            client.log_model_artifacts(logged.model_id, str(local))
        client.finalize_logged_model(logged.model_id, "READY")
    return f"models:/{logged.model_id}"


@contextlib.contextmanager
def _quiet():
    """MLflow's chatter while logging a model (progress bars, INFO lines, the advice to use
    type hints or models-from-code) is not for the user of ``ltr-bench run``."""
    logger = logging.getLogger("mlflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    previous = os.environ.get("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR")
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)
        if previous is None:
            os.environ.pop("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", None)
        else:
            os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = previous


def _save(path: Path, run_id: str, model_id: str, folder, manifest: dict[str, Any], n: int):
    """The MLflow Model's files in ``path`` (``mlflow.pyfunc.save_model``). Saved here and
    uploaded with the client, not through ``Model.log``: that one would also load the model
    and score the input example to validate it (0.1-0.4 s a model, ten models a README run);
    the example is two rows of zeros in the signature's columns, and the suite loads a
    logged model with ``mlflow.pyfunc`` and scores a frame."""
    from mlflow.models import Model

    mlflow.pyfunc.save_model(
        path=str(path),
        python_model=RankerPyfunc(),
        artifacts={MODEL_ARTIFACT: str(folder)},
        signature=_signature(n) if n else None,
        input_example=_example(n) if n else None,
        pip_requirements=_requirements(),
        metadata={"ltr_bench_ranker": manifest.get("ranker"), "n_features": n or None},
        mlflow_model=Model(run_id=run_id, model_id=model_id, artifact_path=MODEL_NAME),
    )


def register_models(client, name: str, runs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Register the logged model of each fold run in ``runs`` (``(run_id, description)``)
    as a new version of registered model ``name`` (created when missing), the description on
    the version; returns ``(run_id, version)`` pairs. A run without a logged model raises
    ``LookupError`` naming it (logged with ``--keep-models none``, or before models were)."""
    from mlflow.exceptions import MlflowException

    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(
            name, description="ltr-bench: the best configuration's models, one per fold"
        )
    out = []
    for run_id, description in runs:
        source = _model_source(client, run_id)
        version = client.create_model_version(
            name, source, run_id=run_id, description=description, tags={"ltr_bench_run": run_id}
        )
        out.append((run_id, str(version.version)))
    return out


def _model_source(client, run_id: str) -> str:
    """``models:/<model_id>`` of the run's logged model ``model``."""
    experiment = client.get_run(run_id).info.experiment_id
    for model in run_models(client, experiment, run_id):
        if model.name == MODEL_NAME:
            return f"models:/{model.model_id}"
    raise LookupError(
        f"MLflow run {run_id} has no logged model (run with --keep-models all, the default, "
        "and without --no-mlflow)"
    )


def download_model(uri: str, tracking_uri: str, dst: str | Path) -> Path:
    """The kept model folder inside the MLflow Model at ``uri`` (``runs:/<run>/model``,
    ``models:/NAME/VERSION``, ``models:/<model_id>``), downloaded from the store at
    ``tracking_uri`` into ``dst``. Only the folder is used (:func:`ltr_bench.models.load_model`
    reads it: nothing of the MLflow Model is unpickled). Raises ``LookupError`` naming the URI
    and the cause: it does not resolve, or it is not an ltr-bench model."""
    import mlflow
    from mlflow.artifacts import download_artifacts

    mlflow.set_tracking_uri(tracking_uri)
    try:
        with _quiet():
            local = Path(download_artifacts(artifact_uri=uri, dst_path=str(dst)))
    except Exception as exc:  # noqa: BLE001 - MLflow's many errors, said in one sentence
        raise LookupError(
            f"--model {uri}: MLflow at {tracking_uri} cannot give it: "
            f"{type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    # MLflow keeps the folder's own name under artifacts/ (MLmodel maps MODEL_ARTIFACT to it)
    found = [p for p in (local / "artifacts").glob("*") if (p / "manifest.json").is_file()]
    if len(found) != 1:
        raise LookupError(
            f"--model {uri}: not an ltr-bench model (no kept model folder in its artifacts; "
            "models are logged by `ltr-bench run` and `tune`)"
        )
    return found[0]


def register_in_store(tracking_uri: str | None, name: str, runs: list[tuple[str, str]]):
    """:func:`register_models` in the store at ``tracking_uri``; MLflow's failures (a store that
    does not answer, a run without a logged model) become :class:`TrackingError` naming
    the store and the cause. Returns ``(run_id, version)`` pairs."""
    import mlflow

    from ltr_bench.tracking.store import TrackingError, message, open_client, resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    try:
        with _quiet():
            mlflow.set_tracking_uri(uri)  # MLflow resolves a version's models:/ source through it
            return register_models(open_client(uri), name, runs)
    except TrackingError:
        raise
    except LookupError as exc:
        raise TrackingError(f"--register {name}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - said in one sentence, never a traceback
        raise TrackingError(message(uri, f"register {name}", exc)) from None
