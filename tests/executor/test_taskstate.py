"""The runner's task state (:mod:`gensolver.executor.taskstate`): what follows each run of a task,
the plan's own preemption point where it has one, else a checkpoint worked out from the next
run (a gap on the same devices, a move to others); nothing after the last run."""

from __future__ import annotations

from gensolver.executor import plan_from_dict
from gensolver.executor.taskstate import _Task

GIB = 2**30


def test_the_point_after_each_run() -> None:
    plan = plan_from_dict({
        "schema": "gensolver.plan/v1", "time_unit": "s", "tasks": [{"id": "a"}],
        "devices": [{"id": "d0", "memory": 8 * GIB, "entries": [
                        {"task": "a", "start": 0, "end": 3, "memory": GIB, "compute": 1.0},
                        {"task": "a", "start": 6, "end": 8, "memory": GIB, "compute": 1.0}]},
                    {"id": "d1", "memory": 8 * GIB, "entries": [
                        {"task": "a", "start": 9, "end": 10, "memory": GIB, "compute": 1.0}]}],
        "preemptions": [{"task": "a", "time": 3, "resume": 6, "from": ["d0"], "to": ["d0"], "kind": "gap",
                         "mode": "suspend"}]})
    ts = _Task("a", plan.runs("a"), plan.preemptions_of("a"))
    assert len(ts.runs) == 3
    first = ts.point_after(0)
    assert first is not None and (first.time, first.resume, first.kind, first.mode) == (3, 6, "gap", "suspend")
    second = ts.point_after(1)  # not in the plan: a checkpoint, moving from d0 to d1
    assert second is not None and (second.time, second.resume, second.from_devices, second.to_devices,
                                   second.kind, second.mode) == (8, 9, ("d0",), ("d1",), "move", "checkpoint")
    assert ts.point_after(2) is None
