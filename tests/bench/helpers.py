"""Module-level (picklable) solver methods for runner tests."""

from __future__ import annotations

import time

from gensolver import solve


def slow_greedy(instance, *, time_limit, threads, seed, options):  # noqa: ANN001, ANN201
    """The greedy method, after a 0.4 s pause (so a run can be killed between cells)."""
    time.sleep(0.4)
    return solve(instance, method="greedy")


def greedy_killing_its_worker(instance, *, time_limit, threads, seed, options):  # noqa: ANN001, ANN201
    """The greedy method, except that it kills its own process (SIGKILL, as the OOM killer would)
    on the instance named by ``$GENSOLVER_TEST_KILL``; with ``$GENSOLVER_TEST_KILL_ONCE`` set to a
    file name, only the first time (the file records that it happened)."""
    import os
    import signal

    if instance.name == os.environ.get("GENSOLVER_TEST_KILL"):
        once = os.environ.get("GENSOLVER_TEST_KILL_ONCE")
        if not once or not os.path.exists(once):
            if once:
                open(once, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
    return solve(instance, method="greedy")
