"""Finish-time fairness (:mod:`gensolver.sim.policies.ftf`): the ``rho`` estimate worked out by
hand (Mahajan et al., NSDI 2020), and the policy on a cluster too small for everyone, checked
from the event log (every start at the time it was made went to a task of the worst ``rho``)."""

from __future__ import annotations

import pytest

from gensolver.errors import InputError
from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import audit_log, simulate
from gensolver.sim.policies.ftf import FinishTimeFair, finish_time_rho
from gensolver.sim.records import TaskState
from gensolver.sim.workload import Workload


def _task(name: str, duration: int, release: int = 0) -> Task:
    return Task(name, 40.0, 40.0, duration, 10.0, release=release)


def test_rho_is_shared_over_ideal_finish_time() -> None:
    waiting = TaskState(_task("w", 10, release=2), state="waiting")
    assert finish_time_rho(waiting, 7.0) == pytest.approx(((7 - 2) + 10 / 1.0) / 10)  # speed 1 while waiting
    running = TaskState(_task("r", 8), state="running", executed=2.0, speed=0.5, lost=1.0)
    assert finish_time_rho(running, 4.0) == pytest.approx(((4 - 0) + (8 + 1 - 2) / 0.5) / 8)
    done_more = TaskState(_task("d", 4), state="running", executed=9.0, speed=1.0)
    assert finish_time_rho(done_more, 5.0) == pytest.approx(5 / 4)  # the estimate never goes negative


@pytest.mark.parametrize("knob", [-0.1, 1.0, 2.0])
def test_a_knob_outside_zero_one_is_refused(knob: float) -> None:
    with pytest.raises(InputError, match="fairness_knob must be in"):
        FinishTimeFair(fairness_knob=knob)


def test_the_worst_off_task_takes_the_gpu() -> None:
    """One GPU holds one task at a time (round boundaries every 3 steps). By hand, from the
    reports: at 0 every rho is 1 and ``long`` (first listed) starts; at the boundary 3,
    ``short`` has waited 3 of its 2 steps (rho (3+2)/2 = 2.5), ``mid`` (3-1+5)/5 = 1.4 and the
    running ``long`` (3+9)/12 = 1: ``long`` is preempted for ``short``; when ``short`` finishes
    at 5, ``mid`` (5-1+5)/5 = 1.8 goes before ``long`` (5+9)/12."""
    tasks = (_task("long", 12), _task("short", 2), _task("mid", 5, release=1))
    res = simulate(Workload("ftf", tasks, (GpuSpec("g0", 48.0),)), policy="finish-time-fair", lease=3)
    audit_log(res.events, require_complete=True).raise_if_failed()
    moves = [(e.time, e.kind, e.task) for e in res.events if e.kind in ("start", "stop", "finish")]
    assert moves == [(0.0, "start", "long"), (3.0, "stop", "long"), (3.0, "start", "short"),
                     (5.0, "finish", "short"), (5.0, "start", "mid"), (10.0, "finish", "mid"),
                     (10.0, "start", "long"), (20.0, "finish", "long")]
