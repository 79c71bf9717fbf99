"""Imported once by the forkserver of a local Dask cluster's workers (never by the client;
see :mod:`ltr_bench.run.dask_workers`): imports the modules named in
``$LTR_BENCH_WORKER_IMPORTS`` (the unit of work and the rankers' modules), so that every
worker forked from the forkserver starts with scikit-learn, LightGBM and XGBoost imported. A
module that fails to import is skipped whatever it raises (the forkserver must come up); the
cell that needs it records the error on its worker."""

from __future__ import annotations

import os

from ltr_bench.run.dask_workers import WORKER_IMPORTS, import_modules

import_modules([name.strip() for name in os.environ.get(WORKER_IMPORTS, "").split(",") if name])
