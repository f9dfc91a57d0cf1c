"""The plan format end to end (:mod:`gensolver.executor.plan_model`,
:mod:`gensolver.executor.plan_io`, :mod:`gensolver.executor.plan_build`): random documents read,
written and read again unchanged (plain and gzip), every entry kept, runs cut where the device
set changes or time jumps (worked out by hand), a round's lease plan holding what was committed,
and bad documents refused by JSON pointer."""

from __future__ import annotations

import copy
import json
import random

import pytest

from gensolver.executor import PlanError, plan_from_dict, read_plan, write_plan
from gensolver.executor.plan_build import lease_plan
from gensolver.model.tasks import Task

GIB = 2**30


def _doc(seed: int) -> dict:
    rng = random.Random(seed)
    tasks = [{"id": f"t{k}", "value": rng.randint(1, 9), "preemptible": rng.random() < 0.5,
              "command": ["python", "-c", f"print({k})"]} for k in range(rng.randint(1, 4))]
    devices = [{"id": f"d{d}", "memory": 16 * GIB, "compute": 1.0,
                "entries": [{"task": t["id"], "start": s, "end": s + rng.randint(1, 3), "memory": rng.randint(1, 4) * GIB,
                             "compute": 0.5} for t in tasks for s in sorted(rng.sample(range(0, 12, 4), 2))]}
               for d in range(rng.randint(1, 3))]
    return {"schema": "gensolver.plan/v1", "time_unit": "s", "name": f"p{seed}", "horizon": 16,
            "tasks": tasks, "devices": devices, "preemptions": [], "metadata": {"seed": seed}}


def _entries(doc: dict) -> set[tuple]:
    return {(d["id"], e["task"], float(e["start"]), float(e["end"]), int(e["memory"]), float(e["compute"]))
            for d in doc["devices"] for e in d["entries"]}


@pytest.mark.parametrize("seed", range(12))
def test_a_plan_reads_writes_and_reads_back_unchanged(tmp_path, seed: int) -> None:
    doc = _doc(seed)
    plan = plan_from_dict(doc)
    assert {(e.device, e.task, e.start, e.end, e.memory, e.compute) for e in plan.entries} == _entries(doc)
    again = plan_from_dict(json.loads(plan.to_json()))
    assert again.to_dict() == plan.to_dict() and again.digest == plan.digest
    for name in ("p.json", "p.json.gz"):
        write_plan(plan, tmp_path / name)
        assert read_plan(tmp_path / name).digest == plan.digest
    assert {t.id for t in plan.tasks} == {t["id"] for t in doc["tasks"]}


def test_runs_are_cut_where_the_devices_or_the_time_change() -> None:
    doc = {"schema": "gensolver.plan/v1", "time_unit": "s", "tasks": [{"id": "a"}], "devices": [
        {"id": "d0", "entries": [{"task": "a", "start": 0, "end": 2, "memory": GIB, "compute": 1.0},
                                 {"task": "a", "start": 2, "end": 4, "memory": 2 * GIB, "compute": 1.0},
                                 {"task": "a", "start": 6, "end": 8, "memory": GIB, "compute": 1.0}]},
        {"id": "d1", "entries": [{"task": "a", "start": 3, "end": 4, "memory": GIB, "compute": 0.5}]}]}
    runs = plan_from_dict(doc).runs("a")
    # by hand: [0,3) on d0 alone; [3,4) on d0 and d1; a gap; [6,8) on d0 again
    assert [(r.start, r.end, r.devices) for r in runs] == [(0, 3, ("d0",)), (3, 4, ("d0", "d1")), (6, 8, ("d0",))]
    assert runs[0].memory == GIB and runs[1].compute == 0.5


@pytest.mark.parametrize(("change", "pointer"), [
    (lambda d: d.update(time_unit="ms"), "/time_unit"),
    (lambda d: d["tasks"].append({"id": d["tasks"][0]["id"]}), "/tasks"),
    (lambda d: d["tasks"][0].update(urgency=2), "/tasks/0/urgency"),
    (lambda d: d["tasks"][0].update(command="python -c 1"), "/tasks/0/command"),
    (lambda d: d["devices"][0]["entries"][0].update(task="ghost"), "/devices/0/entries/0/task"),
    (lambda d: d["devices"][0]["entries"][0].update(end=-1), "/devices/0/entries/0/end"),
    (lambda d: d["devices"][0]["entries"][0].update(end=d["devices"][0]["entries"][0]["start"]),
     "/devices/0/entries/0"),
    (lambda d: d.update(preemptions=[{"task": "t0", "kind": "jump", "mode": "suspend", "time": 1, "resume": 2}]),
     "/preemptions/0/kind"),
])
def test_a_bad_document_is_refused_by_pointer(change, pointer: str) -> None:
    doc = copy.deepcopy(_doc(1))
    change(doc)
    with pytest.raises(PlanError) as err:
        plan_from_dict(doc)
    assert err.value.pointer == pointer


def test_a_lease_plan_holds_what_the_round_committed() -> None:
    tasks = {"a": Task("a", 20.0, 10.0, 5, 3.0, command=("run-a",)), "b": Task("b", 30.0, 30.0, 5, 4.0, gpus=2)}
    plan = lease_plan({"a": (["g0"], 16.0, 300.0), "b": (["g1", "g2"], 30.0, 120.0)},
                      {"g0": (80.0, 1.0), "g1": (40.0, 1.0), "g2": (40.0, 1.0)}, tasks)
    held = {(e.task, e.device, e.start, e.end, e.memory) for e in plan.entries}
    assert held == {("a", "g0", 0.0, 300.0, 16 * GIB), ("b", "g1", 0.0, 120.0, 30 * GIB),
                    ("b", "g2", 0.0, 120.0, 30 * GIB)}
    assert plan.task("a").command == ("run-a",) and plan.task("b").value == 4.0
