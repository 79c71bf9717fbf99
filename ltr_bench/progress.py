"""Progress reporting that rankers can use without knowing who listens.

A ranker calls :func:`report_progress` from inside ``fit`` (e.g. once per boosting round or
per batch of local metrics). The harness installs a handler with :func:`progress_handler`
for the duration of a fit; with no handler installed the call costs one context-variable
lookup and does nothing. Plugins depend only on this function, never on the CLI.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

ProgressHandler = Callable[[int, int, str], None]

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
    (``ltr_bench.tuning.TuneJob`` reports trials, not each trial's boosting rounds)."""
    return _handler.get()
