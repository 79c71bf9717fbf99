"""Datasets: specs, the LETOR reader, the parsed-data cache, generated and query-by-example data.

Public API (the harness and the CLI code against these names)::

    DataError, DatasetNotFoundError, UnknownDatasetError, DataWarning
    DatasetSpec, list_datasets(), get_spec(name)
    resolve_data_dir(data_dir=None), resolve_cache_dir(cache_dir=None)
    dataset_present(spec_or_name, data_dir=None) -> (bool, Path)
    available_folds(dataset, *, data_dir=None, options=None) -> list[int]
    load_fold(dataset, fold, *, data_dir=None, cache_dir=None, seed=0, options=None,
              progress=None) -> ltr_bench.folds.Fold
    dataset_identity(dataset, *, data_dir=None, seed=0, options=None) -> dict

Modules: :mod:`.specs` (registry, data home), :mod:`.errors`, :mod:`.reader` (parsing and
validation), :mod:`.cache` (memory-mapped cache), :mod:`.generated` (``synthetic``,
``gauss-*``), :mod:`.qbe` (``wine``, ``wdbc``), :mod:`.loading` (``load_fold`` and friends),
:mod:`.download` (resumable, checksummed downloads).

May import the root contract only (``ltr_bench.folds``, ``ltr_bench.errors``, ...); evaluates
nothing and knows neither the harness nor MLflow.
"""

from ltr_bench.data.errors import DataError, DatasetNotFoundError, DataWarning, UnknownDatasetError
from ltr_bench.data.specs import (
    DatasetSpec,
    get_spec,
    list_datasets,
    resolve_cache_dir,
    resolve_data_dir,
)

__all__ = [
    "DataError",
    "DataWarning",
    "DatasetNotFoundError",
    "DatasetSpec",
    "UnknownDatasetError",
    "available_folds",
    "dataset_identity",
    "dataset_present",
    "get_spec",
    "list_datasets",
    "load_fold",
    "resolve_cache_dir",
    "resolve_data_dir",
]

#: names of :mod:`.loading`, imported on first use: the reader imports scikit-learn (~1 s),
#: which what only needs the specs (the report's published table, ``datasets``) never pays
_LOADING = ("available_folds", "dataset_identity", "dataset_present", "load_fold")


def __getattr__(name: str):
    if name in _LOADING:
        from ltr_bench.data import loading

        return getattr(loading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
