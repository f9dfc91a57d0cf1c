"""Round boundaries jumped while the market proves them no-ops (``Cluster.quiet``).

The certificate is the step-by-step run of the same policy with the jump switched off
(``cluster.quiet = None``): the event log must be the same, byte for byte, and the results too.
A policy whose promise is false (always quiet) shows the comparison can fail.
"""

from __future__ import annotations

import pytest

from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import audit_log, simulate
from gensolver.sim.engine import Cluster
from gensolver.sim.policies.market import MarketPolicy
from gensolver.sim.workload import synthetic_workload


class _Market(MarketPolicy):
    """The market policy keeping its cluster, with the jump on (``jump=True``) or off."""

    def __init__(self, jump: bool = True, **options) -> None:
        super().__init__(**options)
        self.jump = jump
        self.cluster: Cluster | None = None

    def attach(self, cluster: Cluster) -> None:
        super().attach(cluster)
        self.cluster = cluster
        if not self.jump:
            cluster.quiet = None


class _Reckless(_Market):
    """A false promise: every boundary declared a no-op (the comparison must catch it)."""

    def attach(self, cluster: Cluster) -> None:
        super().attach(cluster)
        cluster.quiet = lambda: not cluster.waiting()


def _log(result) -> list[str]:
    return [repr(e) for e in result.events]


def _pair(workload, faults=(), gpus=None, **options):
    jump, step = _Market(True, **options), _Market(False, **options)
    a = simulate(workload, policy=jump, faults=list(faults), gpus=gpus)
    b = simulate(workload, policy=step, faults=list(faults), gpus=gpus)
    return a, b, jump.cluster, step.cluster


#: ``smoothing=1``: a price falls to exactly 0 at the first round without a loser, so rounds after
#: contention are no-ops sooner (at the default 0.25 the price decays geometrically: every round
#: charges, and is held, until it underflows to 0, about 2,600 rounds later)
CASES = [(seed, {"smoothing": 1.0, **extra}) for seed in range(4)
         for extra in ({}, {"between": False}, {"income": "active", "forfeit": False}, {"backfill": "preferred"},
                       {"smith": 0.5, "tail": 2.0})] + [(1, {}), (2, {})]


def _workload(seed: int):
    return synthetic_workload(12, seed=seed, rate=0.01, duration_min=100, duration_max=3000, gpus=(40.0, 80.0),
                              per_node=2, tenants=3)


@pytest.mark.parametrize(("seed", "options"), CASES,
                         ids=[f"{s}-" + (",".join(f"{k}={v}" for k, v in o.items()) or "default") for s, o in CASES])
def test_the_event_log_is_that_of_the_step_by_step_run(seed: int, options: dict) -> None:
    faults = ["gpu:gpu0@300-420"] if seed % 2 else []
    a, b, ca, cb = _pair(_workload(seed), faults, **options)
    assert _log(a) == _log(b)
    assert a.tasks == b.tasks and a.balances == b.balances and a.end_time == b.end_time
    audit_log(a.events, require_complete=True).raise_if_failed()
    # the same boundaries, fewer of them held: the jump did happen
    assert ca.boundaries_held + ca.boundaries_jumped == cb.boundaries_held + cb.boundaries_jumped
    assert ca.boundaries_held < cb.boundaries_held


def test_a_false_promise_is_caught_by_the_comparison() -> None:
    """Declaring every boundary with nobody waiting a no-op skips the income rounds: the logs differ."""
    wl = _workload(0)
    reckless, step = _Reckless(True), _Market(False)
    a = simulate(wl, policy=reckless)
    b = simulate(wl, policy=step)
    assert _log(a) != _log(b)


YEAR = 365 * 24 * 60  # steps of 60 s


def test_a_year_long_task_costs_a_few_rounds() -> None:
    """A 365-day task beside a few short ones: the rounds held are counted, not timed. Step by step it
    would hold one round per lease (105,120); jumped, a round per change plus the rounds until the
    tenants' balances reach their cap."""
    gpus = [GpuSpec("g0", 80.0, node="n0"), GpuSpec("g1", 40.0, node="n0")]
    tasks = [Task("year", 48.0, 32.0, YEAR, 100.0, tenant="a"),
             Task("day", 16.0, 12.0, 24 * 60, 10.0, release=1000, tenant="b"),
             Task("week", 30.0, 20.0, 7 * 24 * 60, 10.0, release=100_000, tenant="c")]
    pol = _Market(True)
    r = simulate(tasks, policy=pol, gpus=gpus)
    assert r.complete and r.tasks["year"].finish == YEAR
    cl = pol.cluster
    assert cl is not None
    total = cl.boundaries_held + cl.boundaries_jumped
    assert total == YEAR // 5  # every boundary up to the last finish is accounted for
    assert cl.boundaries_held < 200, cl.boundaries_held
    assert len(r.rounds) <= cl.boundaries_held
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_the_jump_stops_before_an_arrival_and_a_fault() -> None:
    """A long task, then an arrival that preempts it and a fault under it: byte-identical to the
    step-by-step run, with progress, checkpoints and lost work replayed exactly."""
    gpus = [GpuSpec("g0", 40.0, node="n0")]
    tasks = [Task("long", 40.0, 40.0, 5000, 10.0, tenant="a", urgency=0.1),
             Task("urgent", 40.0, 40.0, 50, 500.0, release=2003, tenant="b", urgency=0.9)]
    a, b, ca, _ = _pair(tasks, ["gpu:g0@3501-3600"], gpus=gpus, smoothing=1.0)
    assert _log(a) == _log(b)
    assert a.tasks["long"].lost == b.tasks["long"].lost > 0
    assert ca.boundaries_jumped > 500
