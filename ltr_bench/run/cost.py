"""How long a cell will take, from the cells of the same configuration that finished before:
:class:`CellCosts`, which lets a Dask run start the longest cells first.

On a cluster of N slots, a plan whose cells differ in size ends with the last long cell
running alone while the other slots idle; starting the longest first (LPT scheduling) leaves
the short ones to fill the gaps at the end. A cell's cost is the mean wall time of the
finished records of its configuration (``config_key``) on its dataset: the sum of their stage
times (load, setup, fit, score, evaluate), from the results folder (earlier runs, other folds
and seeds) and from this run as its cells finish. A configuration never seen has no estimate
(None): those cells go first, in plan order, so that every configuration is measured early.
"""

from __future__ import annotations

from collections.abc import Iterable

from ltr_bench.results import ResultRecord

__all__ = ["CellCosts", "longest_first"]


def _seconds(record: ResultRecord) -> float:
    return float(sum(v for v in record.stage_seconds.values() if isinstance(v, (int, float))))


class CellCosts:
    """``costs(cell)``: the estimated seconds of ``cell`` or None (see the module);
    :meth:`add` counts a record that finished."""

    def __init__(self, records: Iterable[ResultRecord] = ()):
        self._seen: dict[tuple[str, str], list[float]] = {}
        for record in records:
            self.add(record)

    def add(self, record: ResultRecord) -> None:
        if record.ok and record.config_key and record.stage_seconds:
            self._seen.setdefault((record.config_key, record.dataset), []).append(_seconds(record))

    def __call__(self, cell) -> float | None:
        seen = self._seen.get((cell.config_key, cell.dataset))
        return sum(seen) / len(seen) if seen else None


def longest_first(estimates: list[float | None]) -> int:
    """Which of the waiting cells (their ``estimates``, in plan order) to start next: one
    without an estimate first (the earliest), else the longest (the earliest of equals)."""
    best, best_key = 0, None
    for pos, c in enumerate(estimates):
        key = (1, 0.0) if c is None else (0, c)
        if best_key is None or key > best_key:
            best, best_key = pos, key
    return best
