"""Where the Optuna studies of ``ltr-bench tune`` live: opening the storage named by
``--optuna-storage`` (a journal file by default)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["open_storage"]


def open_storage(spec: str):
    """An Optuna storage from a URL or file name. A path ending in ``.journal`` (the default
    of ``ltr-bench tune``) is Optuna's append-only journal file: each write is one appended
    line under a file lock, cheap enough that reporting a GBDT's validation curve for
    pruning costs next to nothing (an SQLite store commits a transaction per write, about
    tens of milliseconds each). Any other text is passed to Optuna as a storage URL
    (``sqlite:///...``, ``postgresql://...``)."""
    if spec.endswith(".journal"):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        path = spec[len("journal:") :] if spec.startswith("journal:") else spec
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    return spec
