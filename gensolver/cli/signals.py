"""SIGTERM and SIGINT for the command line: stop every child, keep journals whole, exit 143 / 130.

:func:`install` (called first thing by :func:`gensolver.cli.main`) makes SIGTERM raise
:class:`Terminated`, a :class:`KeyboardInterrupt`, so that a command unwinds on SIGTERM exactly as on
Ctrl-C: ``finally`` blocks close journals (each line is written whole, flushed and fsync'd before the
next), output folders are tidied. Before raising, the handler sends SIGTERM to every descendant
process (the bench worker pool, the tasks ``run`` launched in their own sessions, their children), so
that no ``shutdown(wait=True)`` on the way out waits for a cell that would run on. :func:`reap`, called
by ``main`` on the way out, waits ``grace`` seconds for them and SIGKILLs what is left, except this
process's multiprocessing resource tracker, which ignores SIGTERM and SIGINT by design and exits by
itself once this process has gone (end of file on its pipe), after unlinking what the pool leaked.

A signal can land while Python runs a ``__del__`` method or a weakref callback, where an exception is
*unraisable*: Python prints "Exception ignored in ..." and goes on, so the command would run on with its
signal spent (``serve`` did, 2 times in 20 under ``benchmarks/stress_sigterm.py``). :func:`install` also
sets :data:`sys.unraisablehook`: a :class:`KeyboardInterrupt` lost that way is raised again in the main
thread (:func:`_thread.interrupt_main` with the same signal, from a helper thread), once it has left
that context.

Descendants are found through ``/proc`` (each process's parent), or :mod:`psutil` where it is installed
and ``/proc`` is not; a task that daemonised itself (re-parented to init) is out of reach, as it is for
any supervisor that does not use cgroups.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

__all__ = ["Terminated", "install", "uninstall", "descendants", "reap", "exit_status"]

#: exit status of a command stopped by a signal: 128 + the signal's number, as a shell reports it
_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives (a :class:`KeyboardInterrupt`, so that every
    cleanup written for Ctrl-C runs for SIGTERM too)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_received: list[int] = []
_previous: dict[int, object] = {}
#: the signal whose exception was lost in an unraisable context, to raise again (see the module docstring)
_lost: list[int] = []
_previous_hook: list[Any] = []


def _handler(signum: int, frame: FrameType | None) -> None:
    first = not _received
    if _lost:  # raised again after the first one was lost (``_unraisable``)
        if _within(frame, _unraisable.__code__):  # not yet out of the hook: raising here is lost again
            _retry()
            return
        signum = _lost.pop()
    else:
        _received.append(signum)
        if not first:  # a second signal while unwinding: the children already had theirs
            return
        _signal_all(descendants(), signal.SIGTERM)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _unraisable(info: Any) -> None:
    """:data:`sys.unraisablehook`: a stop signal's exception lost in a ``__del__`` or a weakref
    callback is raised again in the main thread; anything else goes to the previous hook."""
    if isinstance(info.exc_value, KeyboardInterrupt) and _received and not _lost:
        _lost.append(_received[0])
        _retry()
        return
    (_previous_hook[0] if _previous_hook else sys.__unraisablehook__)(info)


def _retry() -> None:
    """Signal the main thread again from another thread, so that the handler runs once the main
    thread has left the unraisable context (the handler defers again while it has not)."""
    def again() -> None:
        time.sleep(0.01)  # spacing between tries, not a bound: it retries until the exception is raised
        if _lost:
            _thread.interrupt_main(signal.Signals(_lost[0]))

    threading.Thread(target=again, name="gensolver-signal-again", daemon=True).start()


def _within(frame: FrameType | None, code: Any) -> bool:
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def install() -> None:
    """Handle SIGTERM and SIGINT as described above (main thread only; elsewhere a no-op)."""
    _received.clear()
    _lost.clear()
    for sig in _EXIT:
        try:
            _previous[sig] = signal.signal(sig, _handler)
        except ValueError:  # not the main thread (a test calling main() from a worker thread)
            return
    if not _previous_hook:
        _previous_hook.append(sys.unraisablehook)
        sys.unraisablehook = _unraisable


def uninstall() -> None:
    """Restore the handlers :func:`install` replaced."""
    for sig, old in list(_previous.items()):
        try:
            signal.signal(sig, old)  # type: ignore[arg-type]
        except (ValueError, TypeError):
            pass
        del _previous[sig]
    if _previous_hook:
        sys.unraisablehook = _previous_hook.pop()


def exit_status(exc: BaseException | None = None) -> int | None:
    """130 or 143 when a signal stopped the command (the first one received), else ``None``;
    ``exc``, a :class:`KeyboardInterrupt` or one wrapping one, counts as SIGINT when no
    signal was recorded (an interrupt raised by other means)."""
    if _received:
        return _EXIT.get(signal.Signals(_received[0]), 128 + _received[0])
    while exc is not None:
        if isinstance(exc, Terminated):
            return _EXIT[signal.SIGTERM]
        if isinstance(exc, KeyboardInterrupt):
            return _EXIT[signal.SIGINT]
        exc = exc.__cause__ or exc.__context__
    return None


def _proc_children() -> dict[int, list[int]] | None:
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    kids: dict[int, list[int]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and fields[0] != b"Z":
            kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def descendants(pid: int | None = None) -> list[int]:
    """Process ids of the living descendants of ``pid`` (default: this process), parents first."""
    root = os.getpid() if pid is None else pid
    kids = _proc_children()
    if kids is None:
        try:
            import psutil
        except ImportError:  # pragma: no cover - neither /proc nor psutil: the pool's own children
            import multiprocessing

            return [p.pid for p in multiprocessing.active_children() if p.pid is not None]
        try:
            return [p.pid for p in psutil.Process(root).children(recursive=True)]
        except psutil.Error:  # pragma: no cover
            return []
    found: list[int] = []
    todo = [root]
    while todo:
        for child in kids.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:  # already gone, or not ours
            pass


def reap(grace: float = 3.0) -> None:
    """SIGTERM every descendant, wait up to ``grace`` seconds for them to exit (collecting
    those that are this process's children), then SIGKILL the rest and collect them.

    This process's own multiprocessing resource tracker is spared: it ignores SIGTERM by design,
    unlinks what the pool leaked, and exits by itself when this process exits (end of file on its
    pipe). Killing it would only make the next semaphore finaliser on the way out start a fresh
    one (with a "process died unexpectedly" warning) that outlives the command for a moment.
    """
    spare = _own_tracker()
    pids = [p for p in descendants() if p != spare]
    if not pids:
        return
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _collect()
        left = [p for p in descendants() if p in pids]
        if not left or all(_ignores_sigterm(p) for p in left):
            break
        time.sleep(0.05)
    _signal_all([p for p in descendants() if p != spare], signal.SIGKILL)
    for _ in range(100):
        _collect()
        if not [p for p in descendants() if p != spare]:
            break
        time.sleep(0.02)


def _own_tracker() -> int | None:
    """The pid of this process's multiprocessing resource tracker, if it started one."""
    import sys

    tracker = sys.modules.get("multiprocessing.resource_tracker")
    pid = getattr(getattr(tracker, "_resource_tracker", None), "_pid", None)
    return pid if isinstance(pid, int) else None


def _collect() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _ignores_sigterm(pid: int) -> bool:
    """Whether ``pid`` ignores SIGTERM (the resource tracker does): waiting for it is pointless."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"SigIgn:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    except (OSError, ValueError, IndexError):
        pass
    return False
