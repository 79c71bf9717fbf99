"""What a ranker reports from inside ``fit``, without knowing who listens.

* :func:`report_progress` (``done`` of ``total`` steps, e.g. once per boosting round): the
  harness installs a handler with :func:`progress_handler` for the duration of a fit and the
  CLI shows it.
* :func:`report_intermediate` (a validation value at a step, e.g. NDCG after round ``step``):
  ``ltr-bench tune`` installs a handler with :func:`intermediate_handler` during a trial and
  prunes hopeless trials (the handler raises ``optuna.TrialPruned``: let it propagate).

With no handler installed each call costs one context-variable lookup and does nothing.
Rankers and plugins depend only on these functions, never on the CLI or the tuner.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

ProgressHandler = Callable[[int, int, str], None]
IntermediateHandler = Callable[[int, float], None]

_handler: contextvars.ContextVar[ProgressHandler | None] = contextvars.ContextVar(
    "ltr_bench_progress_handler", default=None
)


def report_progress(done: int, total: int, message: str = "") -> None:
    """Tell whoever listens that ``done`` of ``total`` steps of the current work are done."""
    handler = _handler.get()
    if handler is not None:
        handler(int(done), int(total), str(message))


@contextlib.contextmanager
def progress_handler(handler: ProgressHandler | None) -> Iterator[None]:
    """Install ``handler`` for progress reports made inside the ``with`` block."""
    token = _handler.set(handler)
    try:
        yield
    finally:
        _handler.reset(token)


def current_handler() -> ProgressHandler | None:
    """The handler installed here (None: nobody listens). For work that reports on its own
    terms: it takes the handler, then silences its inner steps with ``progress_handler(None)``
    (``ltr_bench.tune.cell.TuneJob`` reports trials, not each trial's boosting rounds)."""
    return _handler.get()


_intermediate: contextvars.ContextVar[IntermediateHandler | None] = contextvars.ContextVar(
    "ltr_bench_intermediate_handler", default=None
)


def report_intermediate(step: int, value: float) -> None:
    """Report a validation value at ``step`` (e.g. NDCG after boosting round ``step``) during
    ``fit``. Outside a tuning trial: nothing. Inside one the handler may raise
    ``optuna.TrialPruned`` to stop a hopeless trial: let it propagate out of ``fit``."""
    handler = _intermediate.get()
    if handler is not None:
        handler(int(step), float(value))


@contextlib.contextmanager
def intermediate_handler(handler: IntermediateHandler | None) -> Iterator[None]:
    """Install ``handler`` for :func:`report_intermediate` calls made inside the block."""
    token = _intermediate.set(handler)
    try:
        yield
    finally:
        _intermediate.reset(token)
