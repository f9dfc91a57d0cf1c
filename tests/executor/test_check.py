"""``check_plan`` (:mod:`gensolver.executor.check`) against an independent sweep: random plans
on integer times, every half step of the horizon checked by summing what each device holds."""

from __future__ import annotations

import random

import pytest

from gensolver.executor import check_plan, plan_from_dict

GIB = 2**30


def _random_doc(rng: random.Random) -> dict:
    tasks = [f"t{k}" for k in range(rng.randint(1, 5))]
    devices = []
    for d in range(rng.randint(1, 3)):
        entries = []
        for _ in range(rng.randint(0, 5)):
            start = rng.randint(0, 8)
            entries.append({"task": rng.choice(tasks), "start": start, "end": start + rng.randint(1, 4),
                            "memory": rng.choice([2, 4, 6]) * GIB, "compute": rng.choice([0.25, 0.5, 1.0])})
        devices.append({"id": f"d{d}", "memory": 8 * GIB, "compute": 1.0, "entries": entries})
    return {"schema": "gensolver.plan/v1", "time_unit": "s", "horizon": 12,
            "tasks": [{"id": t} for t in tasks], "devices": devices}


def _sweep(doc: dict) -> set[tuple[str, str]]:
    """``(device, kind)`` of every broken capacity or double booking, at every half step."""
    bad = set()
    for dev in doc["devices"]:
        for half in range(0, 2 * 12):
            t = half / 2
            active = [e for e in dev["entries"] if e["start"] <= t < e["end"]]
            if sum(e["memory"] for e in active) > dev["memory"]:
                bad.add((dev["id"], "memory"))
            if sum(e["compute"] for e in active) > dev["compute"] + 1e-9:
                bad.add((dev["id"], "compute"))
            names = [e["task"] for e in active]
            if len(names) != len(set(names)):
                bad.add((dev["id"], "overlap"))
    return bad


@pytest.mark.parametrize("seed", range(40))
def test_check_plan_flags_what_a_sweep_of_every_instant_finds(seed: int) -> None:
    doc = _random_doc(random.Random(seed))
    check = check_plan(plan_from_dict(doc))
    found = {(v.device, v.kind) for v in check.violations}
    assert found == _sweep(doc)
    assert bool(check) == check.ok == (not found)
    for v in check.violations:
        assert v.device in str(v) and (v.kind in str(v) or v.kind == "overlap")


def test_the_sweep_sees_an_overfilled_device() -> None:
    """The reference can fail: two 6 GiB tasks at once on an 8 GiB device."""
    doc = {"schema": "gensolver.plan/v1", "time_unit": "s", "horizon": 12, "tasks": [{"id": "a"}, {"id": "b"}],
           "devices": [{"id": "d0", "memory": 8 * GIB, "compute": 1.0, "entries": [
               {"task": "a", "start": 0, "end": 2, "memory": 6 * GIB, "compute": 0.5},
               {"task": "b", "start": 1, "end": 3, "memory": 6 * GIB, "compute": 0.5}]}]}
    assert _sweep(doc) == {("d0", "memory")}
    (v,) = check_plan(plan_from_dict(doc)).violations
    assert (v.time, v.used, v.capacity, v.tasks) == (1.0, 12 * GIB, 8 * GIB, ("a", "b"))


def test_capacities_given_to_the_check_replace_the_plans() -> None:
    doc = {"schema": "gensolver.plan/v1", "time_unit": "s", "horizon": 4, "tasks": [{"id": "a"}],
           "devices": [{"id": "d0", "memory": 8 * GIB, "entries": [
               {"task": "a", "start": 0, "end": 2, "memory": 6 * GIB, "compute": 0.75}]}]}
    plan = plan_from_dict(doc)
    assert check_plan(plan).ok
    assert [v.kind for v in check_plan(plan, 4 * GIB).violations] == ["memory"]
    assert [v.kind for v in check_plan(plan, {"d0": 4 * GIB}).violations] == ["memory"]
    assert [v.kind for v in check_plan(plan, device_compute=0.5).violations] == ["compute"]
