"""simulate() checks every argument up front: a ValueError naming it, never a deep TypeError."""

from __future__ import annotations

import pytest

from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import SimError, simulate

GPUS = [GpuSpec("g0", 80.0, node="n0"), GpuSpec("g1", 80.0, node="n0")]
TASKS = [Task("t0", 10.0, 10.0, 2, value=1.0, release=0)]


def test_good_arguments_still_run() -> None:
    r = simulate(TASKS, gpus=GPUS, seed=0, until=50, checkpoint_steps=0, faults=["gpu:g1@1-2"],
                 policy="fcfs-packing", policy_options={"fit": "best"})
    assert r.complete


@pytest.mark.parametrize("kw,arg", [
    ({"checkpoint_steps": -1}, "checkpoint_steps"),
    ({"checkpoint_steps": float("nan")}, "checkpoint_steps"),
    ({"checkpoint_steps": None}, "checkpoint_steps"),
    ({"seed": "x"}, "seed"), ({"seed": None}, "seed"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"until": True}, "until"), ({"until": "5"}, "until"), ({"until": float("nan")}, "until"),
    ({"gpus": [None]}, "gpus"), ({"gpus": "80"}, "gpus"), ({"gpus": [80]}, "gpus"),
    ({"policy": None}, "policy"), ({"policy": 5}, "policy"),
    ({"faults": None}, "faults"), ({"faults": [5]}, "faults"), ({"faults": "gpu:g0@1-2"}, "faults"),
    ({"policy_options": {"bogus": 1}}, "policy_options"), ({"policy_options": [1]}, "policy_options"),
])
def test_bad_argument_is_a_value_error_naming_it(kw: dict, arg: str) -> None:
    args = {"gpus": GPUS, **kw}
    with pytest.raises(ValueError, match=arg):
        simulate(TASKS, **args)


@pytest.mark.parametrize("workload", [None, 5, [None], [{}], "abc"])
def test_bad_workload_is_a_value_error_naming_it(workload: object) -> None:
    with pytest.raises(ValueError, match="workload"):
        simulate(workload, gpus=GPUS)  # type: ignore[arg-type]


def test_unknown_fault_target_names_the_fault() -> None:
    with pytest.raises(SimError, match=r"fault 'gpu:nosuch@1-2'.*unknown GPU 'nosuch'"):
        simulate(TASKS, gpus=GPUS, faults=["gpu:nosuch@1-2"])
