"""The offline bound against brute force on tiny traces and against every policy's runs; the
checks can fail (invalid "bounds" are caught)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math

import numpy as np
import pytest

from gensolver.model.tasks import GpuSpec, Task, task_speed, task_value
from gensolver.sim import list_policies, offline_bound, parse_synthetic, simulate, synthetic_workload
from gensolver.sim.strategy import STRATEGIES, apply_strategies
from gensolver.sim.workload import Workload, with_deadlines

TOL = 1e-7


def _tiny(seed: int) -> tuple[list[Task], list[GpuSpec]]:
    """2-4 tasks with integer arrivals and durations on 1-2 GPUs of one node."""
    rng = np.random.default_rng(seed)
    n_gpus = int(rng.integers(1, 3))
    gpus = [GpuSpec(f"g{i}", 16.0, 1.0, "n0") for i in range(n_gpus)]
    tasks = []
    for i in range(int(rng.integers(2, 5))):
        pref = float(rng.choice([6.0, 8.0, 12.0, 16.0]))
        release, dur = int(rng.integers(0, 3)), int(rng.integers(1, 4))
        deadline = release + dur + int(rng.integers(0, 4)) if rng.random() < 0.4 else None
        tasks.append(Task(f"t{i}", pref, pref / 2 if rng.random() < 0.5 else pref, dur, float(rng.integers(5, 20)),
                          urgency=float(rng.choice([0.0, 0.3, 0.8, 1.0])), elasticity=float(rng.choice([0.0, 1.0])),
                          compute=float(rng.choice([0.4, 0.5, 1.0])), release=release, deadline=deadline,
                          gpus=2 if n_gpus == 2 and rng.random() < 0.25 else 1))
    return tasks, gpus


def brute_force_sum_c(tasks: list[Task], gpus: list[GpuSpec], cost=lambda task, c: c) -> float:
    """Least sum of ``cost(task, completion time)`` (default: the completion time) over every
    schedule that decides at integer steps: in each
    step each task runs on one GPU (or a gang on all GPUs) at its minimum or preferred memory, or
    waits; GPU memory and compute hold; a task finishing inside a step frees nothing before the
    next one. Each such schedule is one the simulator's model allows (lease 1, no checkpoint
    cost), so the bound must be at most this value."""
    n, G = len(tasks), len(gpus)
    options = []
    for t in tasks:
        opts = []
        for m in sorted({t.min_memory, t.preferred_memory}):
            s = task_speed(t, m)
            for place in ([tuple(range(G))] if t.gpus == 2 else [(g,) for g in range(G)]):
                opts.append((place, m, s))
        options.append(opts)
    horizon = max(t.release for t in tasks) + sum(t.duration / task_speed(t, t.min_memory) for t in tasks) + 2

    def fits(choice) -> bool:
        mem, comp = [0.0] * G, [0.0] * G
        for t, c in zip(tasks, choice):
            if c is None:
                continue
            place, m, _ = c
            for g in place:
                mem[g] += m
                comp[g] += t.compute
        return all(mem[g] <= gpus[g].memory + 1e-9 and comp[g] <= gpus[g].compute + 1e-9 for g in range(G))

    @functools.cache
    def best(t: int, rems: tuple[float, ...]) -> float:
        live = [i for i in range(n) if rems[i] > 1e-9]
        if not live:
            return 0.0
        if t > horizon:
            return math.inf
        ready = [i for i in live if tasks[i].release <= t]
        out = math.inf
        menus = [[None] + options[i] if i in ready else [None] for i in range(n)]
        for choice in itertools.product(*menus):
            if not fits(choice):
                continue
            # only maximal choices: adding work never hurts when preemption is free at each step
            if any(choice[i] is None and any(fits(choice[:i] + (o,) + choice[i + 1:]) for o in options[i])
                   for i in ready):
                continue
            new, total = list(rems), 0.0
            for i, c in enumerate(choice):
                if c is None:
                    continue
                s = c[2]
                if new[i] <= s + 1e-12:
                    total += cost(tasks[i], t + new[i] / s)
                    new[i] = 0.0
                else:
                    new[i] = round(new[i] - s, 9)
            out = min(out, total + best(t + 1, tuple(new)))
        return out

    return best(0, tuple(float(t.duration) for t in tasks))


def bound_holds(bound_sum_c: float, achieved_sum_c: float) -> bool:
    """The check every test applies: a lower bound never exceeds what a schedule achieved."""
    return bound_sum_c <= achieved_sum_c + TOL * (1 + abs(achieved_sum_c))


def _sum_c(b, tasks) -> float:
    return b.avg_jct * b.tasks + sum(t.release for t in tasks)


@pytest.mark.parametrize("seed", range(12))
def test_bound_below_brute_force_optimum(seed):
    tasks, gpus = _tiny(seed)
    b = offline_bound(tasks, gpus=gpus)
    assert b.status == "optimal" and b.tasks == len(tasks)
    opt = brute_force_sum_c(tasks, gpus)
    assert math.isfinite(opt)
    assert bound_holds(_sum_c(b, tasks), opt), (b, opt)
    assert b.avg_jct >= b.avg_jct_trivial - 1e-12  # the max of both


def _value(task: Task, finish: float) -> float:
    """The welfare the simulator counts for a task finishing at ``finish`` (0 past its deadline)."""
    if task.deadline is not None and finish > task.deadline + 1e-9:
        return 0.0
    return task_value(task, finish)


@pytest.mark.parametrize("seed", range(12))
def test_welfare_bound_above_brute_force_optimum(seed):
    tasks, gpus = _tiny(seed)
    b = offline_bound(tasks, gpus=gpus)
    best = -brute_force_sum_c(tasks, gpus, cost=lambda t, c: -_value(t, c))
    assert b.welfare >= best - 1e-7 * (1 + best), (b, best)
    assert b.welfare <= b.welfare_trivial + 1e-9


def test_welfare_check_catches_an_invalid_bound():
    # a task due one step after its ideal finish on a GPU another whole-card task holds first:
    # a "bound" that forgets the value decay after the ideal finish claims too much
    g = [GpuSpec("g0", 16.0, 1.0, "n0")]
    a = Task("a", 16.0, 16.0, 2, 10.0, compute=1.0, urgency=0.9)
    c = Task("c", 16.0, 16.0, 2, 10.0, compute=1.0, urgency=0.9)
    best = -brute_force_sum_c([a, c], g, cost=lambda t, x: -_value(t, x))
    assert best == pytest.approx(10.0 + 10.0 * 0.1)  # one of them is two steps late
    b = offline_bound([a, c], gpus=g)
    assert b.welfare_trivial == pytest.approx(20.0) and not b.welfare_trivial <= best  # caught
    assert best - 1e-9 <= b.welfare < 20.0  # the LP bound holds and sees the decay


def test_bound_is_tight_where_the_optimum_is_known():
    # one task alone: the bound is its run time at full speed, which the simulator achieves
    t = Task("a", 8.0, 4.0, 5, 10.0, release=3)
    g = [GpuSpec("g0", 16.0, 1.0, "n0")]
    b = offline_bound([t], gpus=g)
    assert b.avg_jct == pytest.approx(5.0, abs=1e-6)
    assert simulate([t], policy="fcfs-packing", gpus=g).metrics.avg_jct == pytest.approx(5.0)
    # two whole-GPU tasks of 4 steps on one GPU at time 0: the optimum is (4 + 8) / 2 = 6
    two = [Task(x, 16.0, 16.0, 4, 10.0, compute=1.0) for x in "ab"]
    b = offline_bound(two, gpus=g)
    assert 5.0 <= b.avg_jct <= 6.0 + 1e-9  # the LP relaxes preemption: mean busy gives >= 5


def test_checker_catches_an_invalid_bound():
    # two tasks that share one GPU (memory 8 + 8, compute 0.5 + 0.5) both finish at step 4;
    # a "bound" that forbids sharing (each task holds the whole GPU) claims 4 + 8 and is wrong
    share = [Task(x, 8.0, 8.0, 4, 10.0, compute=0.5) for x in "ab"]
    g = [GpuSpec("g0", 16.0, 1.0, "n0")]
    opt = brute_force_sum_c(share, g)
    assert opt == pytest.approx(8.0)
    whole = [dataclasses.replace(t, preferred_memory=16.0, min_memory=16.0, compute=1.0) for t in share]
    invalid = offline_bound(whole, gpus=g)
    assert not bound_holds(_sum_c(invalid, whole), opt)
    assert bound_holds(_sum_c(offline_bound(share, gpus=g), share), opt)


def _workloads():
    out = []
    for seed in (1, 3):
        w = synthetic_workload(14, seed=seed, rate=1.5, gpus=(24.0, 24.0, 16.0), per_node=3, gang_share=0.15,
                               duration_max=12, tenants=3)
        out.append(with_deadlines(w, seed=seed))
    return out


@pytest.fixture(scope="module")
def runs():
    res = {}
    for w in _workloads():
        b = offline_bound(w)
        res[w.name] = (w, b, {p: simulate(w, policy=p, lease=2, policy_options=_opts(p)) for p in list_policies()})
    return res


def _opts(policy: str):
    return {"time_limit": 0.2} if policy == "auction" else None


def test_every_policy_is_at_least_the_bound(runs):
    checked = 0
    for _name, (_w, b, results) in runs.items():
        assert b.status == "optimal"
        for p, r in results.items():
            if not r.complete:  # a stranded task is not a schedule of the trace; the metrics count it
                continue
            m = r.metrics
            assert m.avg_jct >= b.avg_jct - 1e-9, (p, m.avg_jct, b)
            assert m.welfare <= b.welfare + 1e-9, (p, m.welfare, b)
            checked += 1
    assert checked >= 2 * (len(list_policies()) - 1)  # every policy that finishes its work


def test_policy_check_catches_a_bound_that_forbids_sharing(runs):
    # the bound of the same trace with every task holding whole GPUs is no bound for packing
    w, b, results = next(iter(runs.values()))
    whole = Workload(w.name, tuple(dataclasses.replace(t, compute=1.0) for t in w.tasks), w.gpus)
    invalid = offline_bound(whole)
    assert invalid.avg_jct > b.avg_jct
    beaten = [p for p, r in results.items() if r.complete and r.metrics.avg_jct < invalid.avg_jct - 1e-9]
    assert beaten, "some sharing policy should beat the no-sharing 'bound'"


def test_welfare_bound_counts_deadlines():
    # a task that cannot meet its deadline is worth nothing in the bound; one that can, its value
    g = [GpuSpec("g0", 16.0, 1.0, "n0")]
    late = Task("late", 16.0, 16.0, 5, 10.0, compute=1.0, deadline=4)
    ok = Task("ok", 16.0, 16.0, 3, 7.0, compute=1.0, deadline=3)
    b = offline_bound([late, ok], gpus=g)
    assert b.welfare_trivial == pytest.approx(task_value(ok, 3))
    # two tasks due at step 3 that each need the whole GPU for 3 steps: only one can make it
    rival = dataclasses.replace(ok, id="rival")
    b = offline_bound([ok, rival], gpus=g)
    assert b.welfare == pytest.approx(7.0, rel=1e-6) and b.welfare_trivial == pytest.approx(14.0)


def test_rejected_tasks_and_bad_arguments():
    g = [GpuSpec("g0", 16.0, 1.0, "n0")]
    big = Task("big", 32.0, 32.0, 2, 1.0)
    b = offline_bound([big, Task("a", 8.0, 8.0, 2, 1.0)], gpus=g)
    assert (b.tasks, b.rejected) == (1, 1)
    assert offline_bound([big], gpus=g).avg_jct is None
    with pytest.raises(ValueError, match="max_buckets"):
        offline_bound([big], gpus=g, max_buckets=0)
    with pytest.raises(ValueError, match="gpus"):
        offline_bound([big])


def test_simulate_command_prints_each_policy_distance_to_the_bound(capsys):
    from gensolver.cli import main

    args = ["simulate", "synthetic:n=12,seed=4,rate=2", "-p", "fcfs-whole-gpu", "-p", "elastic"]
    assert main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    b = offline_bound(parse_synthetic("synthetic:n=12,seed=4,rate=2"))
    for row in rows:
        assert row["jct_over_bound"] == pytest.approx(row["avg_jct"] / b.avg_jct)
        assert row["jct_over_bound"] >= 1.0 - 1e-9 and row["welfare_over_bound"] <= 1.0 + 1e-9
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "jct_over_bound" in out and "offline bound" in out
    assert main([*args, "--no-bound", "--json"]) == 0
    assert "jct_over_bound" not in capsys.readouterr().out


@pytest.mark.parametrize("family", sorted(STRATEGIES))
def test_bound_holds_when_a_tenant_lies(family):
    # reports differ from the truth (memory, duration, arrival, names): the bound reads the
    # reports the engine enforces and the true work it executes, and still holds
    w = synthetic_workload(12, seed=5, rate=1.5, gpus=(24.0, 16.0), per_node=2, duration_max=10, tenants=3)
    lied = apply_strategies(w, {"tenant0": STRATEGIES[family][-1]})
    b = offline_bound(lied)
    for p in ("fcfs-packing", "elastic", "finish-time-fair", "mig", "time-slicing"):
        m = simulate(lied, policy=p, lease=2).metrics
        assert m.unfinished == 0
        assert m.avg_jct >= b.avg_jct - 1e-9 and m.welfare <= b.welfare + 1e-9, (family, p, m.avg_jct, b)


def test_bound_holds_under_faults_and_interference():
    # faults take capacity away and interference slows tasks: the bound, which assumes neither,
    # stays below every run
    w = synthetic_workload(14, seed=6, rate=2.0, gpus=(24.0, 24.0, 16.0), per_node=3, gang_share=0.2, duration_max=10)
    b = offline_bound(w)
    for p in ("fcfs-packing", "elastic", "finish-time-fair", "mps"):
        m = simulate(w, policy=p, lease=2, faults=["gpu:gpu0@2-9"], interference=0.3).metrics
        assert m.unfinished == 0 and m.avg_jct >= b.avg_jct - 1e-9, (p, m.avg_jct, b)
