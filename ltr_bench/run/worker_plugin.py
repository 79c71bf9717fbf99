"""The warm-up of a Dask cluster's workers as a Dask worker plugin: :class:`ImportModules`.

Registered by :class:`~ltr_bench.run.dask_executor.DaskExecutor`, it imports the unit of work
and the rankers' modules (:func:`~ltr_bench.run.dask_workers.import_modules`) on every worker
of the cluster: on those there when it is registered, and on each that joins later (one
restarted after a death, a new one of an external cluster), which Dask hands its plugins as
it registers, before it takes a task. Imported by the client only when it warms a cluster
(Dask's plugin base class comes with it); unpickled on the workers.
"""

from __future__ import annotations

from distributed.diagnostics.plugin import WorkerPlugin

from ltr_bench.run.dask_workers import import_modules

__all__ = ["ImportModules"]


class ImportModules(WorkerPlugin):
    """Import ``modules`` on a worker when the plugin is set up there (those that fail are
    left to the cell that needs them, which records the error)."""

    def __init__(self, modules):
        self.modules = sorted(modules)

    def setup(self, worker) -> None:
        import_modules(self.modules)
