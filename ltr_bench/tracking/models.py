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
import io
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr_bench.errors import UsageError
from ltr_bench.tracking.models_index import MODEL_NAME, link_models
from ltr_bench.tracking.store import TrackingError

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
    "RegistrationRefused",
    "feature_columns",
    "request_body",
    "kept_manifest",
    "log_kept_model",
    "register_models",
]


#: the kept model folder's artifact name inside the MLflow Model
MODEL_ARTIFACT = "ltr_bench_model"
#: the logged model's tag holding the feature count it takes
TAG_N_FEATURES = "ltr_bench_n_features"


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
    """``qid`` (long) and ``f1`` .. ``f<n>`` (double) in, one double out. The columns are
    optional to MLflow's schema check on purpose: a request that lacks one reaches
    :meth:`RankerPyfunc.predict`, whose 400 answer starts with the cause ("the input lacks
    feature column(s) f3, ..."); MLflow's own check answers with a dump of the request and
    the schema first and the cause at the end."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec

    inputs: list[ColSpec | TensorSpec] = [ColSpec("long", "qid", required=False)]
    inputs += [ColSpec("double", c, required=False) for c in feature_columns(n_features)]
    return ModelSignature(inputs=Schema(inputs), outputs=Schema([ColSpec("double")]))


def request_body(X, qid) -> dict[str, Any]:
    """The JSON body of a scoring request (``mlflow models serve``'s ``/invocations``) for
    the rows ``X`` (``(n_docs, n_features)``, the model's features in LETOR order) of the
    queries ``qid`` (``(n_docs,)``, each query's rows together): ``{"dataframe_split":
    {"columns": ["qid", "f1", ..., "f<n>"], "data": [[qid, x1, ..., xn], ...]}}``."""
    X = np.asarray(X, dtype=np.float64)
    qid = np.asarray(qid)
    rows = [[int(q), *map(float, x)] for q, x in zip(qid, X)]
    columns = ["qid", *feature_columns(X.shape[1])]
    return {"dataframe_split": {"columns": columns, "data": rows}}


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


@contextlib.contextmanager
def _requirements_unchecked():
    """Saving a model, MLflow checks its pip requirements against the installed
    distributions, building on first use in a process a map from every installed
    distribution's file list (~2 s, on the critical path of a short run's end: its logging
    process saves the first model after the run's last cell). The requirements here are the
    installed versions (:func:`_requirements`): the check finds nothing, and what it would
    say is silenced by :func:`_quiet` anyway. So it is skipped while saving."""
    import mlflow.utils.environment as environment

    name = "warn_dependency_requirement_mismatches"
    check = getattr(environment, name, None)
    if check is None:  # another MLflow: nothing to skip
        yield
        return
    setattr(environment, name, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        setattr(environment, name, check)


def kept_manifest(folder: str | Path) -> dict[str, Any]:
    """The JSON manifest of a kept model folder the run just wrote, as it is. Not
    :func:`ltr_bench.models.read_manifest`: importing :mod:`ltr_bench.models` brings
    scikit-learn into the logging process (~1.4 s, which a short run then waits for at its
    end), and its check (every native file's SHA-256) is done by whoever loads the model
    (:func:`ltr_bench.models.load_model`, ``predict``, :class:`RankerPyfunc`). Raises
    ``OSError`` / ``ValueError`` (the model is then not logged, and the run says so)."""
    doc = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{folder}/manifest.json is not a JSON object")
    return doc


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
    the run's ``params``, and link it as the run's output; returns its id (its URI is
    ``models:/<model_id>``)."""
    n = int(manifest.get("n_features") or 0)
    ranker = str(manifest.get("ranker"))
    with _quiet():
        # created in the run's experiment, with the run as its source (the run's models)
        logged = client.create_logged_model(
            experiment_id=experiment_id,
            name=MODEL_NAME,
            source_run_id=run_id,
            params=params,
            tags={"ranker": ranker, "ltr_bench_role": "fold-model", TAG_N_FEATURES: str(n)},
            model_type="ranker",
        )
        with tempfile.TemporaryDirectory(prefix="ltr-bench-mlflow-model-") as tmp:
            local = Path(tmp) / MODEL_NAME
            _save(local, run_id, logged.model_id, folder, manifest, n)
            client.log_model_artifacts(logged.model_id, str(local))
        client.finalize_logged_model(logged.model_id, "READY")
        link_models(client, run_id, [logged.model_id])  # the run's output, as log_model does
    return logged.model_id


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

    with _requirements_unchecked():
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


class RegistrationRefused(TrackingError, UsageError):
    """``--register NAME`` would mix in NAME models that do not take the same input (another
    dataset, another feature count) or versions ltr-bench did not make: refused before
    anything is registered (exit 2)."""


def register_models(
    client, name: str, runs: list[tuple[str, str]], *, dataset: str, description: str
) -> list[tuple[str, str, bool]]:
    """Register the logged model of each fold run in ``runs`` (``(run_id, version
    description)``, runs of ``dataset``) as a version of registered model ``name`` (created
    when missing), linked to it (``model_id``, the run; the logged model names its versions:
    MLflow's own ``register_model``); ``description`` (the comparison the configuration won)
    becomes the registered model's description. A model already registered as a version of
    ``name`` is not registered again. Returns ``(run_id, version, new)`` triples.

    Raises ``LookupError`` naming a run without a logged model (logged with ``--keep-models
    none``, or before models were) and :class:`RegistrationRefused` when ``name`` holds
    versions of another dataset or feature count, or versions not made by ltr-bench."""
    from mlflow.exceptions import MlflowException

    models = {run_id: _run_model(client, run_id) for run_id, _ in runs}
    n_features = {_n_features(model) for model in models.values()} - {None}
    existing = _versions_of(client, name)
    _check_same_input(client, name, existing, dataset, n_features)
    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(name, description=description)
    else:
        client.update_registered_model(name, description=description)
    client.set_registered_model_tag(name, "ltr_bench_dataset", dataset)
    registered: dict[str, str] = {}  # model id or run id -> its version in ``name``
    for v in existing:
        for ref in (v.model_id, _model_id_of(v.source), v.run_id):
            if ref:
                registered.setdefault(ref, str(v.version))
    out = []
    for run_id, text in runs:
        model = models[run_id]
        version = registered.get(model.model_id) or registered.get(run_id)
        if version is not None:
            out.append((run_id, version, False))
            continue
        # MLflow's SQL registry (every store but Databricks') keeps no model_id on a version:
        # the id is in its source (models:/<model_id>) and in this tag
        tags = {"ltr_bench_run": run_id, "ltr_bench_model_id": model.model_id}
        tags["ltr_bench_dataset"] = dataset
        if _n_features(model) is not None:
            tags["ltr_bench_n_features"] = str(_n_features(model))
        with contextlib.redirect_stderr(io.StringIO()):  # MLflow prints "Created version"
            created = mlflow.register_model(f"models:/{model.model_id}", name, tags=tags)
        client.update_model_version(name, created.version, description=text)
        out.append((run_id, str(created.version), True))
    return out


def _versions_of(client, name: str) -> list:
    """Every version of registered model ``name`` (MLflow's filter has no escape for a
    quote: the other quote, else every version filtered here)."""
    quote = "'" if "'" not in name else '"' if '"' not in name else None
    if quote is None:
        return [v for v in client.search_model_versions() if v.name == name]
    return list(client.search_model_versions(f"name = {quote}{name}{quote}"))


def _model_id_of(source: str | None) -> str | None:
    """``<model_id>`` of a ``models:/<model_id>`` source (a version made before versions
    carried their model's id)."""
    if source and source.startswith("models:/m-") and source.count("/") == 1:
        return source[len("models:/") :]
    return None


def _run_model(client, run_id: str):
    """The logged model ``model`` of fold run ``run_id`` (its output, else the model whose
    source it is)."""
    from ltr_bench.tracking.models_index import run_model_ids

    model_ids, _ = run_model_ids(client, client.get_run(run_id))
    if not model_ids:
        raise LookupError(
            f"MLflow run {run_id} has no logged model (run with --keep-models all, the "
            "default, and without --no-mlflow)"
        )
    return client.get_logged_model(model_ids[0])


def _n_features(model) -> int | None:
    """The feature count a logged model takes (its tag; None when it does not say)."""
    value = (model.tags or {}).get(TAG_N_FEATURES)
    return int(value) if value and value.isdigit() else None


def _check_same_input(client, name: str, existing: list, dataset: str, n_features: set) -> None:
    """Refuse (:class:`RegistrationRefused`) to add models of ``dataset`` (taking
    ``n_features``) to ``name`` when its versions are of another dataset or feature count,
    or not ltr-bench's."""
    for v in existing:
        tags = v.tags or {}
        theirs = tags.get("ltr_bench_dataset")
        if theirs is None and tags.get("ltr_bench_run"):  # registered before versions said
            try:
                theirs = client.get_run(v.run_id).data.params.get("dataset")
            except Exception:  # noqa: BLE001 - a run deleted since: unknown
                theirs = None
        if theirs is None:
            raise RegistrationRefused(
                f"--register {name}: registered model {name} holds version {v.version}, "
                "which ltr-bench did not register; choose another NAME"
            )
        feats = tags.get("ltr_bench_n_features")
        if theirs != dataset or (feats and n_features and {int(feats)} != n_features):
            shown = f"{theirs}" + (f", {feats} features" if feats else "")
            ours = f"{dataset}" + (f", {min(n_features)} features" if len(n_features) == 1 else "")
            raise RegistrationRefused(
                f"--register {name}: registered model {name} holds models of another "
                f"input (version {v.version}: {shown}; these: {ours}); a registered model's "
                "versions must take the same input: choose another NAME, e.g. "
                f"{name}-{dataset}"
            )


def download_model(uri: str, tracking_uri: str, dst: str | Path) -> Path:
    """The kept model folder inside the MLflow Model at ``uri`` (``runs:/<run>/model``,
    ``models:/NAME/VERSION``, ``models:/<model_id>``), downloaded from the store at
    ``tracking_uri`` into ``dst``. Only the folder is used (:func:`ltr_bench.models.load_model`
    reads it: nothing of the MLflow Model is unpickled). Raises ``LookupError`` naming the URI
    and the cause: it does not resolve, or it is not an ltr-bench model."""
    from mlflow.artifacts import download_artifacts

    from ltr_bench.tracking.store_check import check_store

    # MLflow would create a missing store, and add its tables to someone else's database
    mlflow.set_tracking_uri(check_store(tracking_uri, writes=False))
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


def register_in_store(
    tracking_uri: str | None,
    name: str,
    runs: list[tuple[str, str]],
    *,
    dataset: str,
    description: str,
) -> list[tuple[str, str, bool]]:
    """:func:`register_models` in the store at ``tracking_uri``; MLflow's failures (a store that
    does not answer, a run without a logged model) become :class:`TrackingError` naming
    the store and the cause. Returns ``(run_id, version, new)`` triples."""
    from ltr_bench.tracking.store import message, open_client
    from ltr_bench.tracking.store_check import check_store

    uri = check_store(tracking_uri, writes=False)
    try:
        with _quiet():
            mlflow.set_tracking_uri(uri)  # MLflow resolves a version's models:/ source through it
            return register_models(
                open_client(uri), name, runs, dataset=dataset, description=description
            )
    except TrackingError:
        raise
    except LookupError as exc:
        raise TrackingError(f"--register {name}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - said in one sentence, never a traceback
        raise TrackingError(message(uri, f"register {name}", exc)) from None
