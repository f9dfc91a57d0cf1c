"""Each sharing-mode policy on a tiny case computed by hand (the models are in sharing.py)."""

from __future__ import annotations

import pytest

from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import audit_log, simulate
from gensolver.sim.policies import Mig, Mps, TimeSlicing, mig_profiles

GPU80 = (GpuSpec("g0", 80.0, 1.0, "n0", "A100"),)


def _finish(result):
    return {e.task: e.time for e in result.events if e.kind == "finish"}


def test_time_slicing_by_hand():
    # two 10-step tasks share one GPU from step 0: each runs at (1 - 0.1) / 2 = 0.45 until the
    # first finishes at 10 / 0.45; they are identical, so both finish then
    tasks = [Task("a", 8, 8, 10, 1.0, compute=0.3), Task("b", 8, 8, 10, 1.0, compute=0.3)]
    r = simulate(tasks, gpus=GPU80, policy=TimeSlicing(replicas=4, switch_cost=0.1))
    assert _finish(r) == pytest.approx({"a": 10 / 0.45, "b": 10 / 0.45})
    # a third task of 2 steps arriving at step 1 slows both to 0.9 / 3 = 0.3 until it ends:
    # c: 2 / 0.3 = 6.667 steps -> ends at 7.667; a and b then have 10 - 0.45 - 6.667 * 0.3 = 7.55
    # left at 0.45 -> finish at 7.667 + 7.55 / 0.45 = 24.444
    tasks.append(Task("c", 8, 8, 2, 1.0, compute=0.3, release=1))
    r = simulate(tasks, gpus=GPU80, policy=TimeSlicing(replicas=4, switch_cost=0.1))
    f = _finish(r)
    assert f["c"] == pytest.approx(1 + 2 / 0.3)
    assert f["a"] == pytest.approx(1 + 2 / 0.3 + (10 - 0.45 - 2) / 0.45)
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_time_slicing_replicas_cap_residents():
    tasks = [Task(f"t{i}", 4, 4, 5, 1.0, compute=0.1) for i in range(3)]
    r = simulate(tasks, gpus=GPU80, policy=TimeSlicing(replicas=2, switch_cost=0.0))
    # two run at 1/2 (finish at 10); the third then runs alone (speed 1) from 10 to 15
    assert _finish(r) == pytest.approx({"t0": 10.0, "t1": 10.0, "t2": 15.0})


def test_mps_by_hand():
    # two tasks with compute 0.5: each sees 0.5 of others' compute -> speed 1 / (1 + 0.2 * 0.5)
    tasks = [Task("a", 8, 8, 10, 1.0, compute=0.5), Task("b", 8, 8, 20, 1.0, compute=0.5)]
    r = simulate(tasks, gpus=GPU80, policy=Mps(interference=0.2))
    f = _finish(r)
    assert f["a"] == pytest.approx(11.0)
    # b did 10 steps of work by 11, then runs alone at speed 1 for its last 10
    assert f["b"] == pytest.approx(21.0)
    # compute is a hard share: a third 0.5 task must wait for a to finish
    tasks.append(Task("c", 8, 8, 1, 1.0, compute=0.5))
    r = simulate(tasks, gpus=GPU80, policy=Mps(interference=0.2))
    assert [e.time for e in r.events if e.kind == "start" and e.task == "c"] == pytest.approx([11.0])


def test_mig_profiles_by_hand():
    assert mig_profiles(80.0) == ((1, 10.0), (2, 20.0), (3, 40.0), (4, 40.0), (7, 80.0))
    assert mig_profiles(40.0)[0] == (1, 5.0)
    assert Mig.profile(80.0, 15.0, 0.25) == (2, 20.0)  # 2g.20gb: 20 GiB, 2/7 = 0.286 >= 0.25
    assert Mig.profile(80.0, 5.0, 0.5) == (4, 40.0)  # compute needs 4g
    assert Mig.profile(80.0, 50.0, 0.1) == (7, 80.0)
    assert Mig.profile(40.0, 50.0, 0.1) is None


def test_mig_by_hand():
    # a: 15 GiB, compute 0.25 -> 2g.20gb, a new instance: 1 step set-up + 10 -> finishes at 11;
    # b (same profile, arrives at 12) reuses a's idle instance: no set-up -> 12 + 10 = 22;
    # c (3 GiB, compute 0.1 -> 1g.10gb) at 12: a new instance -> 12 + 1 + 4 = 17
    tasks = [Task("a", 15, 15, 10, 1.0, compute=0.25), Task("b", 15, 15, 10, 1.0, compute=0.25, release=12),
             Task("c", 3, 3, 4, 1.0, compute=0.1, release=12)]
    r = simulate(tasks, gpus=GPU80, policy=Mig(reconfig_steps=1.0))
    assert _finish(r) == pytest.approx({"a": 11.0, "b": 22.0, "c": 17.0})
    starts = {e.task: (e.memory, e.compute, e.work) for e in r.events if e.kind == "start"}
    assert starts["a"] == pytest.approx((20.0, 2 / 7, 1.0))  # the whole instance is allocated
    assert starts["b"] == pytest.approx((20.0, 2 / 7, 0.0))
    audit_log(r.events, require_complete=True).raise_if_failed()
    # the 7 compute slices bound the instances: four 2g tasks cannot all run at once
    many = [Task(f"m{i}", 15, 15, 10, 1.0, compute=0.25) for i in range(4)]
    r = simulate(many, gpus=GPU80, policy=Mig(reconfig_steps=0.0))
    assert sorted(_finish(r).values()) == pytest.approx([10.0, 10.0, 10.0, 20.0])


def test_sharing_modes_refuse_bad_options():
    with pytest.raises(ValueError, match="replicas"):
        TimeSlicing(replicas=0)
    with pytest.raises(ValueError, match="interference"):
        Mps(interference=-1)
    with pytest.raises(ValueError, match="reconfig_steps"):
        Mig(reconfig_steps=float("nan"))


def test_interference_for_every_policy_by_hand():
    # packing co-locates a (compute 0.5) and b (compute 0.5): each runs at 1 / (1 + 0.2 * 0.5)
    # until a finishes at 11; b then runs alone at speed 1 for its remaining 10 steps
    tasks = [Task("a", 8, 8, 10, 1.0, compute=0.5), Task("b", 8, 8, 20, 1.0, compute=0.5)]
    for policy in ("fcfs-packing", "market"):
        r = simulate(tasks, gpus=GPU80, policy=policy, interference=0.2)
        assert _finish(r) == pytest.approx({"a": 11.0, "b": 21.0})
        audit_log(r.events, require_complete=True).raise_if_failed()
    r = simulate(tasks, gpus=GPU80, policy="fcfs-packing")  # default: no interference
    assert _finish(r) == pytest.approx({"a": 10.0, "b": 20.0})
    with pytest.raises(ValueError, match="interference"):
        simulate(tasks, gpus=GPU80, interference=-1.0)
