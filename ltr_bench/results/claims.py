"""Per-cell claims: one process computes (and logs) a cell while others wait for it.

A claim is an exclusive ``flock`` on ``<results>/.claims/<key>.lock``: the kernel drops it
when the holder closes it or ends, however it ends (a crash or ``kill -9`` frees the cell at
once). The holder writes ``<pid> <hostname>`` into the lock file, so a process that waits can
say whom it waits for and notice that the holder is stopped (Ctrl-Z, ``SIGSTOP``): a stopped
process keeps its lock forever, and :func:`wait_for_claim` gives up on it after a bounded
time (:func:`stopped_wait_seconds`) with a message that names the process and what to do.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ltr_bench.errors import LtrBenchError

__all__ = [
    "STOPPED_WAIT_ENV",
    "CellClaim",
    "ClaimHolder",
    "ClaimWaitError",
    "acquire",
    "claim_holder",
    "stopped_wait_seconds",
    "wait_for_claim",
]

#: seconds a run waits for a cell whose holder is stopped before it gives up (default 60)
STOPPED_WAIT_ENV = "LTR_BENCH_STOPPED_WAIT"
_DEFAULT_STOPPED_WAIT = 60.0
_POLL = 0.2


class ClaimWaitError(LtrBenchError):
    """Waiting for another process's claim on a cell was given up (exit code 1)."""


class CellClaim:
    """A held claim on a cell (see :meth:`ltr_bench.results.ResultStore.claim`).
    :meth:`release` may be called more than once."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> CellClaim:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def acquire(path: Path, *, wait: bool = False) -> CellClaim | None:
    """Lock ``path`` (created if missing) for this process and write its pid and host into
    it; None when another process holds it (``wait``: block until it is free). Raises
    :class:`OSError` when the file cannot be created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    try:  # who holds it, for those who wait (informative only: the lock is the flock)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    except OSError:
        pass
    return CellClaim(fd)


@dataclass(frozen=True)
class ClaimHolder:
    """Who holds a claim: ``pid`` and ``host`` as the holder wrote them; ``state`` is the
    process state letter of ``/proc/<pid>/stat`` (``T``: stopped) when the holder runs on
    this machine and it can be read, else None."""

    pid: int
    host: str
    state: str | None

    @property
    def stopped(self) -> bool:
        return self.state in ("T", "t")

    def describe(self) -> str:
        here = self.host == socket.gethostname()
        return f"process {self.pid}" + ("" if here else f" on {self.host}")


def claim_holder(path: Path) -> ClaimHolder | None:
    """The holder written in the lock file ``path``, or None when unknown."""
    try:
        pid_text, _, host = path.read_text(encoding="utf-8").strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    state = None
    if host == socket.gethostname():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            state = stat[stat.rindex(")") + 2 :].split()[0]  # the field after "(comm)"
        except (OSError, ValueError, IndexError):
            state = None
    return ClaimHolder(pid, host, state)


def stopped_wait_seconds() -> float:
    """:data:`STOPPED_WAIT_ENV` if set to a number >= 0, else 60."""
    text = os.environ.get(STOPPED_WAIT_ENV)
    try:
        value = float(text) if text else _DEFAULT_STOPPED_WAIT
    except ValueError:
        return _DEFAULT_STOPPED_WAIT
    return value if value >= 0 and value == value else _DEFAULT_STOPPED_WAIT


def wait_for_claim(
    path: Path,
    what: str,
    *,
    say: Callable[[str], None] | None = None,
    stopped_wait: float | None = None,
    timeout: float | None = None,
) -> CellClaim:
    """Wait until the claim ``path`` is free and take it.

    ``what`` names the cell in messages. ``say`` hears what the wait is for: once when the
    holder is known, and whenever it stops or resumes. A holder stopped for more than
    ``stopped_wait`` seconds in a row (default :func:`stopped_wait_seconds`) ends the wait
    with :class:`ClaimWaitError`; so does ``timeout`` seconds of waiting in all (default:
    none: a running holder may compute for hours). Ctrl-C interrupts the wait."""
    say = say or (lambda message: None)
    stopped_wait = stopped_wait_seconds() if stopped_wait is None else stopped_wait
    start = time.monotonic()
    told: ClaimHolder | None = None
    announced = False
    stopped_since: float | None = None
    while True:
        claim = acquire(path)
        if claim is not None:
            return claim
        now = time.monotonic()
        holder = claim_holder(path)
        if not announced or (holder is not None and (told is None or holder.pid != told.pid)):
            announced, told = True, holder
            who = "" if holder is None else f" ({holder.describe()})"
            say(f"{what}: another process is computing this cell{who}; waiting for it")
        if holder is not None and holder.stopped:
            if stopped_since is None:
                stopped_since = now
                say(
                    f"{what}: {holder.describe()} is stopped (Ctrl-Z or SIGSTOP); waiting up "
                    f"to {stopped_wait:.0f} s for it to resume"
                )
            elif now - stopped_since > stopped_wait:
                raise ClaimWaitError(
                    f"{what}: gave up waiting for {holder.describe()}, which holds this cell "
                    f"and has been stopped (Ctrl-Z or SIGSTOP) for {now - stopped_since:.0f} "
                    f"s; resume it (`fg` in its terminal, or `kill -CONT {holder.pid}`) or end "
                    f"it, then re-run this command ({STOPPED_WAIT_ENV} sets the wait)"
                )
        elif stopped_since is not None:
            stopped_since = None
            if holder is not None:
                say(f"{what}: {holder.describe()} resumed; waiting for it")
        if timeout is not None and now - start > timeout:
            who = told.describe() if told is not None else "another process"
            raise ClaimWaitError(
                f"{what}: gave up after {timeout:.0f} s waiting for {who}, which holds this cell"
            )
        time.sleep(_POLL)
