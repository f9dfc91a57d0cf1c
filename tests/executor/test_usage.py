"""Whose memory counts for a task (:mod:`gensolver.executor.usage`): a process counts when it is
the task's process or below it in the process tree, checked on a real tree against the parent
links the operating system reports (``ps``), not the module's own reading of ``/proc``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gensolver.executor.usage import _is_descendant

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

TREE = ("import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n")


def _parent_by_ps(pid: int) -> int:
    out = subprocess.run(["ps", "-o", "ppid=", "-p", str(pid)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_a_grandchild_counts_for_its_ancestors_only() -> None:
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    grandchild = int(proc.stdout.readline())  # type: ignore[union-attr]
    try:
        assert _parent_by_ps(grandchild) == proc.pid and _parent_by_ps(proc.pid) == os.getpid()  # the tree, by ps
        assert _is_descendant(grandchild, proc.pid) and _is_descendant(grandchild, os.getpid())
        assert _is_descendant(proc.pid, proc.pid)  # the task's own process counts
        assert not _is_descendant(proc.pid, grandchild) and not _is_descendant(os.getpid(), proc.pid)
        assert not _is_descendant(grandchild, 10**9)  # no such process above it
    finally:
        for pid in (grandchild, proc.pid):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        proc.wait(timeout=30)
