"""Errors and warnings of the dataset layer.

Every message is complete on its own: the CLI prints ``str(err)`` (no traceback) and exits 1
(:class:`DataError`, :class:`DatasetNotFoundError`) or 2 (:class:`UnknownDatasetError`, a bad
invocation). Messages about file contents start with ``<file>:<line>:``, then say what is
wrong and how to fix it.
"""

from __future__ import annotations

from ltr_bench.errors import LtrBenchError, UsageError

__all__ = [
    "DatasetOptionError",
    "DataError",
    "FeatureIndexError",
    "DataWarning",
    "DatasetNotFoundError",
    "UnknownDatasetError",
]


class DataError(LtrBenchError):
    """Bad or unreadable input data. ``str(err)`` is the complete user-facing message.

    ``path`` and ``line`` (1-based) are set when the problem is at a known place in a file.
    """

    def __init__(self, message: str, *, path=None, line: int | None = None):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.line = line

    def __str__(self) -> str:
        return self.args[0] if self.args else ""


class FeatureIndexError(DataError):
    """A line has a feature index beyond the expected feature count: ``index`` (the one
    written), ``n_features`` (the count), ``path`` and ``line``. A reader of data for a
    fitted model (``predict``) turns it into a mismatch with the model (exit 2)."""

    def __init__(self, message: str, *, path, line: int, index: int, n_features: int):
        super().__init__(message, path=path, line=line)
        self.index = index
        self.n_features = n_features


class DatasetNotFoundError(DataError):
    """A dataset's files or folder are missing; the message says where to download the data and
    exactly where to put each file."""


class UnknownDatasetError(DataError, UsageError):
    """No dataset has that name. ``suggestions`` holds close matches (difflib), ``known`` all
    known names; both are also in the message."""

    def __init__(self, message: str, *, name: str = "", suggestions=(), known=()):
        super().__init__(message)
        self.name = name
        self.suggestions = list(suggestions)
        self.known = list(known)


class DatasetOptionError(DataError, UsageError):
    """A dataset option is unknown, of the wrong type, not finite or out of range, or asks
    for more memory than the machine has (exit code 2: nothing was generated)."""


class DataWarning(UserWarning):
    """Data was readable but not as expected (e.g. a query's rows came in separate blocks and
    were regrouped). The message names the file and line."""
