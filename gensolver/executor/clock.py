"""Clocks for :class:`~gensolver.executor.PlanRunner`: the system clock, or one a caller moves.

The runner reads plan time from its clock (``clock.time()``, epoch seconds) and waits between
polls with ``clock.sleep(seconds)``. :data:`SYSTEM_CLOCK` is the wall clock. A
:class:`ManualClock` stands still until :meth:`ManualClock.advance` (or :meth:`~ManualClock.set`)
moves it, while the runner keeps polling its real processes (each ``sleep`` waits a little real
time and does not move the clock). A plan run on a manual clock therefore reaches each start,
end and preemption point exactly when its caller says so, however slow the machine is: tests
use it to wait on events (a process started, exited, reported its usage) instead of racing a
window of wall time, and a caller can step a plan by hand.

Processes still run in real time: a manual clock decides *when the plan's windows open and
close*, not how long a process takes.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "SystemClock", "ManualClock", "SYSTEM_CLOCK"]


class Clock(Protocol):
    """What the runner needs from a clock."""

    def time(self) -> float:
        """Now, in seconds since the epoch (or any fixed origin: the runner uses differences)."""

    def sleep(self, seconds: float) -> None:
        """Wait about ``seconds`` between two polls."""


class SystemClock:
    """The wall clock: :func:`time.time` and :func:`time.sleep`."""

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


#: the default clock of :class:`~gensolver.executor.PlanRunner`
SYSTEM_CLOCK = SystemClock()


class ManualClock:
    """A clock that moves only when told to; thread-safe.

    Parameters
    ----------
    start : float
        The initial time (seconds; default 0).
    real_sleep : float
        The most real seconds one :meth:`sleep` waits (default 0.01): the runner's polls keep
        watching real processes while the clock stands still.

    Examples
    --------
    >>> clock = ManualClock(100.0)
    >>> clock.sleep(5.0); clock.time()
    100.0
    >>> clock.advance(2.5)
    102.5
    >>> clock.set(101.0)
    Traceback (most recent call last):
    ...
    ValueError: a clock cannot go back (now 102.5, asked 101.0)
    """

    def __init__(self, start: float = 0.0, *, real_sleep: float = 0.01) -> None:
        self._now = float(start)
        self._real_sleep = float(real_sleep)
        self._lock = threading.Lock()
        self._polled = threading.Condition(self._lock)
        self._polls = 0

    def time(self) -> float:
        with self._lock:
            return self._now

    @property
    def polls(self) -> int:
        """How many times :meth:`sleep` was called (the runner sleeps once per poll)."""
        with self._lock:
            return self._polls

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self._real_sleep)))
        with self._lock:
            self._polls += 1
            self._polled.notify_all()

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (>= 0); returns the new time."""
        if not seconds >= 0:
            raise ValueError(f"a clock cannot go back (advance by {seconds!r})")
        with self._lock:
            self._now += float(seconds)
            return self._now

    def set(self, now: float) -> float:
        """Move the clock forward to ``now``; returns it."""
        with self._lock:
            if not now >= self._now:
                raise ValueError(f"a clock cannot go back (now {self._now}, asked {now})")
            self._now = float(now)
            return self._now

    def wait_polls(self, count: int = 2, timeout: float = 60.0) -> None:
        """Block until the runner has slept ``count`` more times (so it has seen the current time).

        Raises
        ------
        TimeoutError
            Fewer polls happened within ``timeout`` real seconds.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            target = self._polls + count
            while self._polls < target:
                left = deadline - time.monotonic()
                if left <= 0 or not self._polled.wait(left):
                    if self._polls >= target:
                        break
                    raise TimeoutError(f"the runner did not poll {count} times within {timeout} s")
