"""Progress on the terminal: a status line that updates in place, and a harness listener
that prints one line per finished cell. Everything goes to stderr (results go to stdout)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

__all__ = ["Console", "ConsoleListener"]


class Console:
    """Progress on stderr: one updating line on a terminal, throttled lines otherwise."""

    def __init__(self, stream=None, *, min_interval: float | None = None):
        self._lock = threading.RLock()  # MLflow's logging process speaks from a thread
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.min_interval = min_interval if min_interval is not None else (0.1 if self.tty else 2.0)
        self._last = 0.0
        self._open_line = False

    def line(self, text: str) -> None:
        with self._lock:
            self.clear()
            print(text, file=self.stream, flush=True)

    def status(self, text: str, *, force: bool = False) -> None:
        with self._lock:
            self._status(text, force)

    def _status(self, text: str, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        if self.tty:
            width = 119
            print("\r" + text[:width].ljust(width), end="", file=self.stream, flush=True)
            self._open_line = True
        else:
            print(text, file=self.stream, flush=True)

    def clear(self) -> None:
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self._open_line:
            print("\r" + " " * 119 + "\r", end="", file=self.stream, flush=True)
            self._open_line = False


def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:.{digits}f}"


class ConsoleListener:
    """A harness listener that prints progress and one line per finished cell to stderr."""

    def __init__(
        self, console: Console, *, headline: str, failure_log: Path, keep_models: bool = False
    ):
        self.console = console
        self.headline = headline
        self.failure_log = failure_log
        self.keep_models = keep_models  # a skipped cell without its model then says so

    def fold_loading(self, dataset: str, fold: int) -> None:
        self.console.status(f"loading {dataset} fold {fold} ...", force=True)

    def fold_progress(self, dataset: str, fold: int, done: int, total: int, message: str) -> None:
        pct = f" {100.0 * done / total:5.1f}%" if total > 0 else ""
        self.console.status(f"loading {dataset} fold {fold}: {done}/{total}{pct} {message}")

    def cell_started(self, cell, index: int, total: int) -> None:
        self.console.status(
            f"[{index}/{total}] {cell.row_name} on {cell.dataset} fold {cell.fold}: fitting ...",
            force=True,
        )

    def _no_model(self, record) -> str | None:
        """Why a skipped cell has no model to use although this run keeps models."""
        if not self.keep_models:
            return None
        if not record.model_dir:
            return (
                "it has no kept model (it was run with --keep-models none, or its model "
                "could not be saved)"
            )
        if not Path(record.model_dir).is_dir():
            return f"its kept model {record.model_dir} is gone"
        return None

    def cell_progress(self, cell, done: int, total: int, message: str) -> None:
        pct = f" {100.0 * done / total:5.1f}%" if total > 0 else ""
        extra = f" {message}" if message else ""
        self.console.status(
            f"[{cell.row_name} {cell.dataset} fold {cell.fold}] {done}/{total}{pct}{extra}"
        )

    def cell_finished(self, record, index: int, total: int, *, skipped: bool) -> None:
        head = f"[{index}/{total}] {record.summary_line().replace(' / ', ' on ')}"
        if skipped:
            missing = self._no_model(record)
            self.console.line(
                f"{head}: finished earlier, skipped (use --force to re-run)"
                + (f"; {missing}: --force refits it and keeps its model" if missing else "")
            )
        elif record.ok:
            m = record.metrics
            self.console.line(
                f"{head}: {self.headline} {_fmt(m.get(self.headline))}  fit "
                f"{record.fit_seconds:.2f} s  score {record.score_us_per_doc:.3g} us/doc  "
                f"peak {record.peak_rss_mb:.0f} MiB"
            )
            for warning in record.warnings:
                self.console.line(f"{head}: warning: {warning}")
        else:
            self.console.line(
                f"{head}: FAILED in {record.error_stage}: {record.error} "
                f"(traceback in {self.failure_log})"
            )
