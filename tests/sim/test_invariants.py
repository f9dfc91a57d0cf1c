"""Conservation invariants on every policy, checked by the independent audit; the audit can fail."""

from __future__ import annotations

import dataclasses

import pytest

from gensolver.sim import audit_log, parse_synthetic, simulate, synthetic_workload

POLICIES = ["fcfs-whole-gpu", "fcfs-packing", "elastic", "finish-time-fair", "market", "market-solver",
            "time-slicing", "mps", "mig"]


@pytest.fixture(scope="module")
def runs():
    w = synthetic_workload(40, seed=7, rate=1.5, gang_share=0.15, preemptible_share=0.6)
    faults = ["gpu:gpu2@6-20", "node:node1@15-40"]
    return {p: simulate(w, faults=faults, lease=4, **_policy(p)) for p in POLICIES}


def _policy(name: str) -> dict:
    """``simulate`` arguments of a row name (``market-solver``: the market cleared by the solver layer)."""
    if name == "market-solver":
        return {"policy": "market", "policy_options": {"clearing": "solver"}}
    return {"policy": name}


@pytest.mark.parametrize("policy", POLICIES)
def test_audit_passes_on_every_policy(runs, policy):
    r = runs[policy]
    rep = audit_log(r.events, require_complete=True)
    rep.raise_if_failed()
    assert r.complete and set(rep.finished) == set(r.tasks)
    # the audit's executed work agrees with the simulator's own bookkeeping of overheads/losses
    for _tid, rec in r.tasks.items():
        assert rec.first_start >= rec.arrival
    if policy.startswith("market"):  # credits: rebuilt balances == reported; spent == given - final
        assert dict(rep.balances) == pytest.approx(dict(r.balances))
        given = sum(e.amount for e in r.events if e.kind == "credit" and e.note in ("budget", "refill", "income"))
        assert given - sum(r.balances.values()) == pytest.approx(r.metrics.credits_spent)


def _corrupt(events, index, **changes):
    ev = list(events)
    ev[index] = dataclasses.replace(ev[index], **changes)
    return ev


def test_audit_fails_on_corrupted_logs(runs):
    ev = runs["fcfs-packing"].events
    assert audit_log(ev).ok
    first_start = next(i for i, e in enumerate(ev) if e.kind == "start")
    # a start with more memory than the GPU has
    bad = audit_log(_corrupt(ev, first_start, memory=1e6))
    assert not bad.ok and any("over capacity" in v for v in bad.violations)
    # a task whose speed is misreported runs the wrong amount of work
    bad = audit_log(_corrupt(ev, first_start, speed=ev[first_start].speed * 0.5))
    assert any("executed" in v for v in bad.violations)
    # a start before the task arrives
    e = ev[first_start]
    arrive = next(i for i, x in enumerate(ev) if x.kind == "arrive" and x.task == e.task)
    bad = audit_log(_corrupt(ev, arrive, time=e.time + 1.0))
    assert any("before it arrives" in v or "backwards" in v for v in bad.violations)
    # dropping a finish leaves a task running / unfinished
    fin = next(i for i, x in enumerate(ev) if x.kind == "finish")
    bad = audit_log(ev[:fin] + ev[fin + 1:], require_complete=True)
    assert not bad.ok
    # a credit overdraft
    from gensolver.sim import Event

    bad = audit_log(list(ev) + [Event(ev[-1].time, "credit", tenant="t", amount=-5.0, note="payment")])
    assert any("balance" in v for v in bad.violations)
    with pytest.raises(AssertionError, match="audit violation"):
        bad.raise_if_failed()


def test_audit_catches_a_preempted_fixed_task(runs):
    ev = list(runs["market"].events)
    i = next(i for i, x in enumerate(ev) if x.kind == "arrive")
    ev[i] = dataclasses.replace(ev[i], note="fixed")
    stops = [x for x in ev if x.kind == "stop" and x.task == ev[i].task and x.note == "preempt"]
    rep = audit_log(ev)
    if stops:
        assert any("non-preemptible task was preempted" in v for v in rep.violations)


@pytest.mark.parametrize("policy", POLICIES)
def test_deterministic_for_a_seed(policy):
    w = parse_synthetic("synthetic:n=25,seed=11,rate=1")
    a = simulate(w, seed=3, **_policy(policy))
    b = simulate(w, seed=3, **_policy(policy))
    assert a.events == b.events and a.metrics == dataclasses.replace(b.metrics, solver_seconds_total=a.metrics.solver_seconds_total,
                                                                     solver_seconds_mean=a.metrics.solver_seconds_mean,
                                                                     solver_seconds_max=a.metrics.solver_seconds_max)


def test_metrics_definitions():
    from gensolver.sim import jain_index

    assert jain_index([1, 1, 1]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0]) == pytest.approx(1 / 3)
    r = simulate(parse_synthetic("synthetic:n=12,seed=2,rate=batch"), policy="fcfs-packing")
    m = r.metrics
    jct = sorted(r.jct().values())
    assert m.avg_jct == pytest.approx(sum(jct) / len(jct))
    assert m.makespan == pytest.approx(max(rec.finish for rec in r.tasks.values()))
    assert 0 < m.memory_used <= m.memory_held + 1e-12 and m.memory_held <= 1 and 0 < m.compute_utilisation <= 1
    assert m.rho_max >= 1 - 1e-9


def test_bad_inputs():
    from gensolver.sim import FaultError, WorkloadError

    w = parse_synthetic("synthetic:n=3")
    with pytest.raises(FaultError, match="expected gpu:ID@T1-T2"):
        simulate(w, faults=["gpu0@3"])
    with pytest.raises(Exception, match="unknown GPU 'nope'"):
        simulate(w, faults=["gpu:nope@3-4"])
    with pytest.raises(WorkloadError, match="unknown key 'colour'"):
        parse_synthetic("synthetic:colour=red")
    with pytest.raises(ValueError, match="lease"):
        simulate(w, lease=0)
