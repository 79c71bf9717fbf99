"""The one rule for every path a command writes: :func:`check_output_paths`.

``run``, ``tune``, ``report``, ``predict`` and ``export`` check their output options with it
before any work (exit 2, naming the option and what the path would destroy). An output is
never

* one of the command's inputs: a file it reads (``--data``, a parameter's file, the plan),
  or anything inside a folder it reads (a dataset folder, the model's folder);
* inside a store: the results folder, the MLflow database and its artifacts;
* any store it recognises on disk, whoever owns it (:func:`store_on_disk`): an MLflow
  store (an SQLite file with MLflow's tables, or one whose tables cannot be read, and the
  journal files beside one) or a file of a results folder's layout (a finished record
  ``<key>.json`` anywhere, or any file in a folder that holds records,
  :mod:`ltr_bench.results.layout`);
* inside any model folder (a folder holding an ltr-bench model manifest): its files are
  checked against the manifest, so the model would no longer load;
* the same file as another output of the same command (one would replace the other);
* a place that cannot take a file (:func:`ltr_bench.results.check_output_path`), or, for a
  folder option (``report --plots``), a folder that cannot take files.

Links are resolved on both sides, so no spelling of a path gets around the rule.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ltr_bench.errors import UsageError

__all__ = ["check_output_paths", "model_inputs", "store_inputs", "store_on_disk"]


def check_output_paths(
    outputs: Iterable[tuple[str | Path | None, str]],
    inputs: Iterable[tuple[str | Path, str]] = (),
    *,
    folders: Iterable[str] = (),
) -> None:
    """Refuse (:class:`~ltr_bench.errors.UsageError`, exit 2) any of ``outputs`` (``(path,
    option)`` pairs; a None path is an option not given) that breaks the rule of the
    module. ``inputs``: ``(path, description)`` of what the command reads and the stores it
    uses (:func:`model_inputs`, :func:`store_inputs`,
    :func:`ltr_bench.cli.options.run_inputs`). ``folders``: the options whose value is a
    folder to write files into (``--plots``)."""
    from ltr_bench.models.folder import enclosing_model
    from ltr_bench.results import check_not_an_input, check_output_path, check_writable_dir

    given = [(path, option) for path, option in outputs if path]
    inputs = list(inputs)
    folder_options = set(folders)
    seen: dict[str, tuple[str | Path, str]] = {}
    for path, option in given:
        real = os.path.realpath(path)
        if real in seen:
            first, first_option = seen[real]
            raise UsageError(
                f"{option} {path} and {first_option} {first} are one file: the second would "
                "replace the first and its output would be lost; give each its own file"
            )
        seen[real] = (path, option)
    for path, option in given:
        check_not_an_input(path, option, inputs)
        model = enclosing_model(path)
        if model is not None:
            raise UsageError(
                f"{option} {path} would be written into the model folder {model}: its files "
                "are checked against its manifest, so the model would no longer load; "
                "choose a file outside it"
            )
        # a folder option writes files into the folder: what one of them would be
        store = store_on_disk(Path(path) / "file" if option in folder_options else path)
        if store is not None:
            raise UsageError(f"{option} {path} {store}; choose another file")
        if option in folder_options:
            check_writable_dir(Path(path), option)
        else:
            check_output_path(path, option)


def store_on_disk(path: str | Path) -> str | None:
    """Why writing a file at ``path`` (links resolved) would destroy a store found on disk,
    whoever owns it, as the end of a sentence starting with the path; None when it would
    not. Reads without changing anything: an SQLite file's header and tables through a
    read-only connection (:func:`ltr_bench.tracking.sqlite_read.mlflow_store_kind`), a
    results folder's record files (:func:`ltr_bench.results.layout.results_folder_of`)."""
    from ltr_bench.results.layout import is_record_file, results_folder_of
    from ltr_bench.tracking.sqlite_read import SQLITE_SIDE_FILES, mlflow_store_kind

    real = Path(os.path.realpath(path))
    kind = mlflow_store_kind(real)
    if kind == "mlflow":
        return (
            "is an MLflow store (an SQLite database with MLflow's tables): writing the "
            "output would replace it and every run it holds"
        )
    if kind == "unreadable":
        return (
            "is an SQLite database whose tables cannot be read now (it may be an MLflow "
            "store): writing the output would replace it"
        )
    for suffix in SQLITE_SIDE_FILES:
        if not real.name.endswith(suffix) or real.name == suffix:
            continue
        db = real.with_name(real.name[: -len(suffix)])
        if mlflow_store_kind(db) is not None:
            return (
                f"is the {suffix[1:]} file SQLite keeps beside the MLflow store {db}: "
                "replacing it would damage the store"
            )
    folder = results_folder_of(real)
    if folder is None:
        return None
    if is_record_file(real):
        return (
            f"is a finished record of the results folder {folder}: writing the output "
            "would replace it (its cell would have to be computed again)"
        )
    return (
        f"would be written into the results folder {folder} (it holds finished records, "
        "and every file there is the store's)"
    )


def store_inputs(tracking_uri: str | None, results_dir: str | Path | None = None) -> list:
    """``(path, description)`` of the stores a command must never write into: the results
    folder (``results_dir``, default ``<cwd>/mlflow_runs/results``) and the MLflow store of
    ``tracking_uri`` (resolved as every command resolves it: an SQLite file and its
    ``artifacts`` folder; a server has no local files)."""
    from ltr_bench.tracking.store import resolve_tracking_uri, sqlite_path

    results = Path(results_dir) if results_dir else Path.cwd() / "mlflow_runs" / "results"
    out: list = [(results, "the results store")]
    try:
        db = sqlite_path(resolve_tracking_uri(tracking_uri))
    except UsageError:  # a bad --tracking-uri is the command's own error to raise
        db = None
    if db is not None:
        out += [(db, "the MLflow store"), (db.parent / "artifacts", "the MLflow artifacts")]
    return out


def model_inputs(
    model_ref: str, tracking_uri: str | None, data: Path | None = None, data_option: str = "--data"
) -> list:
    """``(path, description)`` of what a command that takes ``--model`` (``predict``,
    ``export``) reads or must not touch: the model's folder (when ``--model`` is a path) and
    the results store holding it (a kept model ``<results>/<key>.model.<token>``), the
    data file or dataset folder ``data`` (given as ``data_option``), and the stores
    (:func:`store_inputs`)."""
    from ltr_bench.cli.model_ref import is_model_uri
    from ltr_bench.run.keep import MODEL_SUFFIX

    out: list = []
    folder = Path(model_ref).expanduser()
    if not is_model_uri(model_ref) and folder.exists():
        out.append((folder, "the model's folder (--model)"))
        real = Path(os.path.realpath(folder))
        if MODEL_SUFFIX in real.name:
            out.append((real.parent, "the results store that holds the model"))
    if data is not None:
        out.append((data, f"the data ({data_option})"))
    return out + store_inputs(tracking_uri)
