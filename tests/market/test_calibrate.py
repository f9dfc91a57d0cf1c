"""Memory estimates corrected per tenant (:mod:`gensolver.market.calibrate`).

Certificates: a tenant whose memory reports are all 2% low, once one of its tasks was seen
short, must get exactly the schedule its truthful reports get (an independent run on the
true reports, compared event by event); the comparison fails without the correction.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import gensolver.market.engine as engine_module
from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import simulate, synthetic_workload
from gensolver.sim.strategy import Strategy, apply_strategies
from gensolver.sim.workload import Workload


def _starts(res) -> dict[str, float]:
    return {e.task: e.memory for e in reversed(res.events) if e.kind == "start"}  # first start of each


def test_a_tenants_next_task_starts_at_the_memory_its_first_showed_it_needs():
    # E's estimates are 4% low (3.84 GiB reported, 4 needed; elasticity 1: speed 0.96 at 3.84)
    truths = [Task("e1", 4, 4, 20, 1.0, compute=0.3, tenant="E"),
              Task("e2", 4, 4, 5, 1.0, compute=0.3, tenant="E", release=2),
              Task("t1", 4, 4, 5, 1.0, compute=0.3, tenant="T", release=2)]
    reports = [replace(t, preferred_memory=3.84, min_memory=3.84) if t.tenant == "E" else t for t in truths]
    w = Workload("est", tuple(reports), (GpuSpec("g", 16.0),), truths={t.id: t for t in truths if t.tenant == "E"})
    res = simulate(w, policy="market", lease=1)
    first = _starts(res)
    # nothing was known of E at its first start: e1 starts at its report, then is corrected
    assert first["e1"] == pytest.approx(3.84)
    assert [e.memory for e in res.events if e.task == "e1" and e.kind == "resize"] == [pytest.approx(4.0)]
    # e2 starts at what e1 showed E's estimates need (4 GiB, a hair above by design), never short
    assert 4.0 <= first["e2"] <= 4.0 * (1 + 1e-9)
    assert not [e for e in res.events if e.task == "e2" and e.kind == "resize"]
    # the truthful tenant is planned as it reported
    assert first["t1"] == 4.0
    fin = {e.task: e.time for e in res.events if e.kind == "finish"}
    assert fin["e2"] - 2 == pytest.approx(5.0)  # full speed from its start


def _shifted_with_probe(seed: int, liar: str) -> Workload:
    """A synthetic workload one step later, after a probe task of ``liar`` alone at step 0 on an
    idle cluster (so its first task is placed as its truth would be, and seen at once)."""
    # memory sizes with no exact coincidences: the correction plans a corrected task a relative
    # 1e-12 above its truth, which breaks an *exact* best-fit tie between two GPUs differently;
    # away from exact ties every decision must be the truth's
    w = synthetic_workload(60, seed=seed, rate=2.0, tenants=3, memory_choices=(3.3, 5.7, 9.1, 13.9, 21.7))
    tasks = tuple(replace(t, release=t.release + 1, deadline=None if t.deadline is None else t.deadline + 1)
                  for t in w.tasks)
    probe = Task("probe", 4.0, 3.0, 1, 1.0, elasticity=1.0, compute=0.1, tenant=liar)
    return replace(w, tasks=(probe, *tasks))


def _schedule(res) -> list[tuple]:
    """Who runs where and when (memory and charges left out, times to 1e-6 steps: they differ by
    the correction's rounding, and a task started below its preferred memory runs at a speed
    that follows its memory)."""
    return [(round(e.time, 6), e.kind, e.task, tuple(e.gpus)) for e in res.events
            if e.kind not in ("credit", "resize") and e.task != "probe"]


def _lied_and_truthful(seed: int) -> tuple[list[tuple], list[tuple]]:
    w = _shifted_with_probe(seed, "tenant0")
    lied = apply_strategies(w, {"tenant0": Strategy(memory=0.98)})
    assert sum(1 for t in lied.tasks if t.tenant == "tenant0") > 5 and lied.truths  # the reports are low
    return _schedule(simulate(lied, policy="market")), _schedule(simulate(w, policy="market"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_two_percent_memory_under_estimate_once_seen_changes_no_decision(seed):
    lied, truthful = _lied_and_truthful(seed)
    assert lied == truthful


def test_the_schedule_comparison_fails_without_the_correction(monkeypatch):
    # the same certificate on the engine that plans on the reports as they are: decisions differ
    monkeypatch.setattr(engine_module, "calibrated", lambda cluster, audit: cluster)
    pairs = [_lied_and_truthful(seed) for seed in (0, 1, 2)]
    assert any(lied != truthful for lied, truthful in pairs)


def test_a_factor_is_learned_only_within_the_band():
    # a report 10% low is a lie (caught, no factor); 3% low is an estimate (factor 1/0.97)
    truths = [Task("a", 10, 10, 20, 1.0, compute=0.3, tenant="A"), Task("b", 10, 10, 20, 1.0, compute=0.3, tenant="B")]
    reports = [replace(truths[0], preferred_memory=9.0, min_memory=9.0),
               replace(truths[1], preferred_memory=9.7, min_memory=9.7)]
    w = Workload("band", tuple(reports), (GpuSpec("g", 40.0),), truths={t.id: t for t in truths})
    from gensolver.sim.engine import Cluster
    from gensolver.sim.policies.market import MarketPolicy

    c = Cluster(list(w.gpus), list(w.tasks), truths=dict(w.truths))
    pol = MarketPolicy()
    pol.attach(c)
    for st in c.tasks.values():
        st.state = "waiting"
    c.start("a", ["g"], 9.0)
    c.start("b", ["g"], 9.7)
    c.env.run(until=1.0)
    pol.audit.observe([c.tasks["a"], c.tasks["b"]])
    assert "a" in pol.audit.slow and "b" in pol.audit.short
    assert set(pol.audit.memory) == {"B"}
    assert pol.audit.factor("B") == pytest.approx(10 / 9.7) and pol.audit.factor("B") >= 10 / 9.7
    assert pol.audit.factor("A") == 1.0
    # and it survives the engine's state round trip (the service restarts from it)
    fresh = MarketPolicy()
    fresh.load_state(pol.state())
    assert fresh.audit.factor("B") == pol.audit.factor("B")
