"""Strategies change reports, never the truth; a lie's gain is measured in true utility."""

from __future__ import annotations

import math

import pytest

from gensolver.model.tasks import GpuSpec, Task, task_value
from gensolver.sim import simulate, synthetic_workload
from gensolver.sim.strategy import STRATEGIES, Strategy, apply_strategies, credit_worth, lie_gain, tenant_utility
from gensolver.sim.workload import Workload

ALL = [s for variants in STRATEGIES.values() for s in variants]


@pytest.fixture(scope="module")
def work():
    return synthetic_workload(30, seed=3, rate=1.0, tenants=3)


@pytest.mark.parametrize("strategy", ALL, ids=lambda s: s.label())
def test_strategy_changes_reports_never_the_truth(work, strategy):
    lied = apply_strategies(work, {"tenant1": strategy})
    assert lied.true_tasks() == work.tasks  # the truth is untouched
    changed = [t for t in lied.tasks if t.id in lied.truths]
    assert changed and all(lied.truths[t.id].tenant == "tenant1" for t in changed)
    assert all(t == work.tasks[i] for i, t in enumerate(lied.tasks) if t.id not in lied.truths)
    for r in changed:
        true = lied.truths[r.id]
        if strategy.value != 1:
            assert r.value == pytest.approx(true.value * strategy.value)
        if strategy.duration != 1:
            assert r.duration == max(1, math.ceil(true.duration * strategy.duration - 1e-9))
        if strategy.delay:
            assert r.release == true.release + strategy.delay
        if strategy.names > 1:
            assert r.tenant.startswith("tenant1~")
    # the engine runs the truth: the logged work of every task is its true duration
    res = simulate(lied, policy="finish-time-fair")
    arrive = {e.task: e for e in res.events if e.kind == "arrive"}
    for t in work.tasks:
        assert arrive[t.id].work == t.duration
        assert res.tasks[t.id].tenant == t.tenant  # metrics count the true owner
        assert res.tasks[t.id].arrival == t.release  # JCT from the true arrival


def test_truthful_strategy_is_the_identity(work):
    same = apply_strategies(work, {"tenant0": Strategy()})
    assert same.tasks == work.tasks and not same.truths


def test_bad_strategies_are_refused(work):
    with pytest.raises(ValueError, match="Strategy.value"):
        Strategy(value=0)
    with pytest.raises(ValueError, match="Strategy.names"):
        Strategy(names=0)
    with pytest.raises(ValueError, match="no tenant 'nobody'"):
        apply_strategies(work, {"nobody": Strategy(value=2)})


def _true_value_from_log(result, tasks):
    """Independent certificate: the true value of each finished task from the finish events."""
    finish = {e.task: e.time for e in result.events if e.kind == "finish"}
    out = {}
    for t in tasks:
        if t.id in finish and (t.deadline is None or finish[t.id] <= t.deadline + 1e-9):
            out[t.tenant] = out.get(t.tenant, 0.0) + task_value(t, finish[t.id])
    return out


def test_lie_gain_is_in_true_utility():
    gpus = (GpuSpec("g0", 16.0, 1.0, "n0"),)
    tasks = (Task("a", 8, 8, 4, 10.0, urgency=0.5, tenant="A"), Task("b", 8, 8, 4, 10.0, urgency=0.5, tenant="B"),
             Task("c", 16, 16, 2, 4.0, urgency=0.9, tenant="B", release=1))
    w = Workload("tiny", tasks, gpus)
    run = lambda wl: simulate(wl, policy="fcfs-packing")  # noqa: E731
    out = lie_gain(run, w, "B", Strategy(value=100.0, urgency=1.5))
    base = run(w)
    lied = run(apply_strategies(w, {"B": Strategy(value=100.0, urgency=1.5)}))
    # utilities are the true values achieved (no credits under packing), not the reported ones
    assert out.truthful_utility == pytest.approx(_true_value_from_log(base, tasks)["B"])
    assert out.lie_utility == pytest.approx(_true_value_from_log(lied, tasks)["B"])
    assert out.gain == pytest.approx(0.0)  # packing ignores values: the lie changes nothing
    # a lie that does change the schedule: the gain is the true-value difference
    slow = lie_gain(run, w, "A", Strategy(delay=3))
    truth_a = _true_value_from_log(base, tasks)["A"]
    lied_a = _true_value_from_log(run(apply_strategies(w, {"A": Strategy(delay=3)})), tasks)["A"]
    assert slow.gain == pytest.approx((lied_a - truth_a) / truth_a) and slow.gain < 0


def test_utility_subtracts_credits_at_their_worth(work):
    r = simulate(work, policy="market")
    worth = credit_worth(r)
    issued = sum(e.amount for e in r.events if e.kind == "credit" and e.amount > 0)
    assert worth == pytest.approx(r.metrics.welfare / issued)
    for tenant in r.metrics.tenant_value:
        # net credits spent = what the tenant ends with less: here its final balance, negated
        assert tenant_utility(r, tenant, worth=worth) == pytest.approx(r.metrics.tenant_value[tenant]
                                                                       + worth * r.balances.get(tenant, 0.0))
    # false names: the pseudonyms' credits count for their true owner
    lied = simulate(apply_strategies(work, {"tenant1": Strategy(names=2)}), policy="market")
    held = sum(v for k, v in lied.balances.items() if k.startswith("tenant1~"))
    assert held > 0 and "tenant1" not in lied.balances
    assert tenant_utility(lied, "tenant1", worth=worth) == pytest.approx(lied.metrics.tenant_value["tenant1"]
                                                                         + worth * held)


def _run_with_rounds(end: float, rounds: tuple[float, ...], value: float = 100.0):
    """A run's log as :func:`lie_gain` reads it: tenant A earns 25 credits per round, pays 10
    once, and its last task finishes at ``end``."""
    from types import SimpleNamespace as NS

    events = [NS(kind="credit", tenant="A", amount=25.0, time=t) for t in rounds]
    events += [NS(kind="credit", tenant="A", amount=-10.0, time=2.0), NS(kind="finish", tenant="A", amount=0.0, time=end)]
    return NS(events=events, metrics=NS(tenant_value={"A": value}, welfare=value))


def test_income_counts_up_to_the_earlier_end_of_the_two_runs():
    # the lie changes nothing for A but ends the whole run one round sooner (rounds at 0, 5
    # instead of 0, 5, 10): the income of the round the truthful run has on top is not a cost
    w = Workload("one", (Task("a", 4, 4, 3, 1.0, tenant="A"),), (GpuSpec("g", 8.0),))
    truthful, shorter = _run_with_rounds(12.0, (0.0, 5.0, 10.0)), _run_with_rounds(8.0, (0.0, 5.0))
    out = lie_gain(lambda wl: shorter, w, "A", Strategy(urgency=2.0), truthful=truthful)
    assert out.value_gain == 0.0 and out.gain == pytest.approx(0.0)
    # the same two logs without the common horizon: the shorter run reads as a loss of one
    # round's income at the truthful run's worth (100 value / 75 credits issued)
    worth = credit_worth(truthful)
    assert worth == pytest.approx(100 / 75)
    assert tenant_utility(shorter, "A", worth=worth) - tenant_utility(truthful, "A", worth=worth) == \
        pytest.approx(-25 * worth)
    # payments count whenever they fall: a payment after the horizon is still a cost
    later = _run_with_rounds(8.0, (0.0, 5.0))
    later.events.append(type(later.events[0])(kind="credit", tenant="A", amount=-7.0, time=11.0))
    assert tenant_utility(later, "A", worth=1.0, until=8.0) == pytest.approx(100 - (10 + 7 - 50))
