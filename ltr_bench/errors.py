"""The one root of ltr-bench's user-facing errors, carrying the exit code.

Every error the command line reports derives from :class:`LtrBenchError`; ``str(err)`` is
the complete message (no traceback is ever shown for these) and ``err.exit_code`` the exit
status: :class:`UsageError` (a bad invocation: unknown name, option, parameter or plan key)
exits 2, everything else (missing or malformed data, a broken plugin, an unusable MLflow
store, results that cannot be compared) exits 1. The CLI has exactly one handler for them.

The families live beside what raises them (:mod:`ltr_bench.run.plan`, :mod:`ltr_bench.registry`,
:mod:`ltr_bench.data.errors`, :mod:`ltr_bench.tracking`, :mod:`ltr_bench.report.tables`) and derive
from these two classes.
"""

from __future__ import annotations

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "LtrBenchError",
    "UsageError",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class LtrBenchError(Exception):
    """A failure the user must act on; ``str(err)`` says what and how (exit code 1)."""

    exit_code: int = EXIT_FAILED

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UsageError(LtrBenchError):
    """A bad invocation: the command as typed cannot run (exit code 2)."""

    exit_code = EXIT_USAGE
