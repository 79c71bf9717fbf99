"""Which executor runs a plan's cells: in this process, a local Dask cluster or a running one.

Its own module so that :mod:`ltr_bench.run.executors` (the executor contract and the
in-process executor) never imports :mod:`ltr_bench.run.dask_executor`, which builds on it.
"""

from __future__ import annotations

from ltr_bench.errors import UsageError
from ltr_bench.run.executors import Executor, InProcessExecutor


def make_executor(
    *, workers: int | None = None, scheduler: str | None = None, threads: int | None = None
) -> Executor:
    """The executor for ``ltr-bench run``: a cluster when ``scheduler`` (an address) or
    ``workers`` (a local cluster) is given, else in process. Both at once is a usage error
    (``workers`` of an existing cluster are the cluster's business)."""
    if scheduler is not None and workers is not None:
        raise UsageError(
            "give --workers (start a local Dask cluster) or --scheduler (use a "
            "running one), not both"
        )
    from ltr_bench.run.dask_executor import DaskExecutor

    if scheduler is not None:
        scheduler = scheduler.strip()
        if not scheduler:
            raise UsageError("--scheduler: empty address (expected e.g. tcp://host:8786)")
        return DaskExecutor(scheduler=scheduler, threads=threads)
    if workers is not None:
        return DaskExecutor(workers=workers, threads=threads)
    return InProcessExecutor()
