"""Ending a task's processes (:mod:`gensolver.executor.launch`) on real processes: a signal to
the task reaches a grandchild that left its process group with ``setsid``, which a signal to the
group alone misses; every process is reaped, waits bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from gensolver.executor.launch import _killpg, _signal_tree
from gensolver.executor.procs import is_alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

SPAWN = ("import subprocess, sys, time\n"
         "p = subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(120)'])\n"
         "print(p.pid, flush=True)\n"
         "time.sleep(120)\n")


def _start(run_id: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-c", SPAWN], stdout=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "GENSOLVER_RUN_ID": run_id})
    grandchild = int(proc.stdout.readline())  # type: ignore[union-attr]
    end = time.monotonic() + 30.0  # setsid runs just after the print: wait for it, bounded
    while os.getpgid(grandchild) == os.getpgid(proc.pid) and time.monotonic() < end:
        time.sleep(0.02)
    return proc, grandchild


def _gone(pid: int, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not is_alive(pid):
            return True
        time.sleep(0.05)
    return False


def _cleanup(*pids: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_the_signal_reaches_a_grandchild_that_left_the_group() -> None:
    proc, grandchild = _start("run-left-group")
    try:
        assert os.getpgid(grandchild) != os.getpgid(proc.pid)  # it did leave
        _signal_tree(proc.pid, "run-left-group", signal.SIGKILL)
        proc.wait(timeout=30)
        assert _gone(grandchild)
    finally:
        _cleanup(proc.pid, grandchild)


def test_the_group_alone_misses_it() -> None:
    """What the test above guards against: ``killpg`` ends the task's group, not the process
    that called ``setsid``."""
    proc, grandchild = _start("run-group-only")
    try:
        _killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert is_alive(grandchild)
    finally:
        _cleanup(proc.pid, grandchild)
        _gone(grandchild)
