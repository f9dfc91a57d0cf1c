"""Module-level (picklable) solver methods for runner tests."""

from __future__ import annotations

import time

from gensolver import solve


def slow_greedy(instance, *, time_limit, threads, seed, options):  # noqa: ANN001, ANN201
    """The greedy method, after a 0.4 s pause (so a run can be killed between cells)."""
    time.sleep(0.4)
    return solve(instance, method="greedy")
