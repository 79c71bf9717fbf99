"""The output of the run's helper processes, relayed through the run: :func:`relayed_output`.

Why. ``ltr-bench run`` starts the MLflow logging process (and with it multiprocessing's
resource tracker), which may outlive the run (it finishes the logging in the background). A
process that inherits the run's stdout or stderr keeps them open: whoever reads the run's
output (``ltr-bench run ... | tee log``, a script, the benchmark) sees its end only when
every holder has closed them, not when the run exits. The logging process lets go of them
when it notices the run is gone, but on a loaded machine that took 1.2-2.0 s after the run's
exit (measured, docs/performance.md), and a stopped or starved logging process never lets go.

How. The helpers are started with a pipe of the run as their stdout and stderr; a thread of
the run copies what they write to the run's stderr. Their messages (MLflow's and Alembic's
log lines, a traceback) still reach the terminal while the run lives, and the run's output
ends when the run does. After the run's exit their writes fail quietly (Python ignores
SIGPIPE; the logging process also replaces them with /dev/null then).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

__all__ = ["relayed_output"]


@contextlib.contextmanager
def relayed_output() -> Iterator[None]:
    """Processes started inside the block write their stdout and stderr into a pipe that a
    daemon thread copies to this process's stderr (see the module). Where the descriptors
    cannot be redirected (no POSIX, stdout or stderr closed), the block runs unchanged."""
    if os.name != "posix":
        yield
        return
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # stdout or stderr closed: nothing to keep open
        yield
        return
    read, write = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    started = False
    try:
        os.dup2(write, 1)
        os.dup2(write, 2)
        try:
            yield
            started = True
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
    finally:
        for fd in (*saved, write):
            os.close(fd)
        if not started:
            os.close(read)
    threading.Thread(target=_copy, args=(read,), name="ltr-bench-relay", daemon=True).start()


def _copy(read: int) -> None:
    """Copy everything from ``read`` to stderr (descriptor 2) until every writer closed it."""
    with contextlib.suppress(OSError):
        while data := os.read(read, 65536):
            with contextlib.suppress(OSError):  # a closed stderr: keep draining, drop it
                while data:
                    data = data[os.write(2, data) :]
    os.close(read)
