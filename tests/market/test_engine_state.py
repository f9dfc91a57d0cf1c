"""The credit engine's stored state: bounded by the tasks not yet gone, and forgetting finished
tasks changes no decision.

The reference is an engine that forgets nothing and pays the ``arrivals`` income from the full
list of owners of every task seen, as the engine did before its state was bounded: the two must
write the same event log, byte for byte, on workloads whose rules read per-task state (lies
caught by calibration and by the memory check, estimation errors within the tolerance band),
under both clearings, and with GPU failures. The size check reads the JSON of :meth:`CreditEngine.state` after every
boundary round and compares it with the tasks waiting or running then; it is shown to fail on
the reference.
"""

from __future__ import annotations

import json

import pytest

from gensolver.market.engine import CreditEngine
from gensolver.market.pool import TablePool
from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import simulate, synthetic_workload
from gensolver.sim.policies.market import MarketPolicy
from gensolver.sim.strategy import Strategy, apply_strategies
from gensolver.sim.workload import with_deadlines


class Sized(MarketPolicy):
    """The market policy, recording after each boundary round the size of its stored state and
    how many tasks were then waiting or running."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.sizes: list[tuple[int, int, int]] = []  # (bytes of state(), ids in state(), active tasks)

    def _clear(self, cluster) -> None:
        super()._clear(cluster)
        st = self.state()
        ids = len(set(st["seen"]) | set(st["slow"]) | set(st["short"]))
        self.sizes.append((len(json.dumps(st)), ids, len(cluster.waiting()) + len(cluster.running())))


class Unbounded(Sized):
    """The reference: nothing forgotten, income paid from the list of every task's owner."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.owners: list[str] = []

    def _forget(self, ids) -> None:
        pass

    def _arrive(self, states) -> None:
        for s in states:
            if s.id not in self._seen:
                self.owners.append(s.task.tenant)
        super()._arrive(states)

    def _payers(self) -> list[str]:
        return list(self.owners)


def _workload(seed: int, *, lies: bool):
    """300 tasks, 3 tenants, a third with deadlines; with ``lies``, one tenant understates its
    durations (caught by calibration), one its memory (caught by the memory check), and one
    under-estimates its memory by 3% (within the tolerance band: corrected, not caught)."""
    w = with_deadlines(synthetic_workload(300, seed=seed, rate=2.0, tenants=3), seed=seed)
    if not lies:
        return w
    tenants = sorted({t.tenant for t in w.tasks})
    return apply_strategies(w, {tenants[0]: Strategy(duration=0.5), tenants[1]: Strategy(memory=0.6),
                                tenants[2]: Strategy(memory=0.97)})


def _run(policy: Sized, workload, faults=()):
    gpus = [GpuSpec(f"g{i}", 80.0) for i in range(4)]
    return simulate(workload, policy=policy, gpus=gpus, lease=5, faults=faults)


@pytest.mark.parametrize(("seed", "lies", "clearing", "faults"), [
    (0, True, "greedy", ()), (1, False, "greedy", ()), (2, True, "solver", ()), (3, True, "greedy", ()),
    (4, True, "greedy", ("gpu:g0@20-80", "gpu:g2@50-120")),  # tasks on a failed GPU wait again
])
def test_forgetting_finished_tasks_changes_no_decision(seed, lies, clearing, faults):
    w = _workload(seed, lies=lies)
    bounded, reference = Sized(clearing=clearing), Unbounded(clearing=clearing)
    a, b = _run(bounded, w, faults), _run(reference, w, faults)
    assert a.complete and b.complete
    assert len(a.events) > 1000
    assert [repr(e) for e in a.events] == [repr(e) for e in b.events]
    if lies:  # the rules that read per-task state were exercised
        assert reference.audit.slow and any(r > 1.05 for r in reference.audit.ratio.values())
    # bounded: no more task ids than tasks then waiting or running; at the end none at all
    assert all(ids <= active for _, ids, active in bounded.sizes)
    assert bounded.sizes[-1][1] == 0 and not bounded.state()["seen"]
    assert sum(bounded.state()["arrived"].values()) == len(w.tasks)


def test_the_size_stays_bounded_over_many_rounds_and_the_check_can_fail():
    """1,200 tasks through 4 GPUs at a steady load: the task ids in the state never outnumber the
    tasks present, and the rest (per tenant) does not grow with the rounds; the reference holds
    every task seen and fails the first check by hundreds."""
    w = synthetic_workload(1200, seed=5, rate=0.5, tenants=4)
    bounded, reference = Sized(), Unbounded()
    _run(bounded, w), _run(reference, w)
    assert len(bounded.sizes) > 200
    assert all(ids <= active for _, ids, active in bounded.sizes)
    per_tenant = [size - 12 * ids for size, ids, _ in bounded.sizes]  # an id is at most 12 bytes of JSON here
    half = len(per_tenant) // 2
    assert max(per_tenant[half:]) <= max(per_tenant[:half]) + 64 and max(per_tenant) < 2000
    assert max(ids - active for _, ids, active in reference.sizes) > 500
    assert reference.sizes[-1][0] > 10 * max(size for size, _, _ in bounded.sizes)


def test_a_stored_state_restores_the_same_next_round():
    """Round by round through ``TablePool`` (as ``gensolver serve`` and ``run --market``): an
    engine restored from the JSON of another's state after each round clears the next one the
    same (actions and charges), including from the earlier list form of ``arrived``; a fresh
    engine in its place (no state) clears some round differently."""
    tasks = [Task(f"t{i}", 20.0 + 10 * (i % 3), 10.0, 4 + i % 5, 1.0 + i, tenant="ab"[i % 2]) for i in range(12)]
    gpus = [GpuSpec("g0", 80.0)]
    live = CreditEngine(between=False)
    live.lease = 2
    left = {t.id: float(t.duration) for t in tasks}
    placed: dict[str, tuple[tuple[str, ...], float]] = {}
    differs = 0
    for n in range(40):
        if not left:
            break
        stored = json.loads(json.dumps(live.state()))
        if n == 3:  # the earlier form: one owner per task seen
            stored["arrived"] = [t for t, k in stored["arrived"].items() for _ in range(k)]
        restored = CreditEngine(between=False)
        restored.lease = 2
        restored.load_state(stored)
        fresh = CreditEngine(between=False)
        fresh.lease = 2
        pools = []
        for engine in (live, restored, fresh):
            pool = TablePool(gpus, now=2.0 * n, lease=2)
            for t in tasks:
                if t.id in left:
                    g, m = placed.get(t.id, ((), 0.0))
                    pool.add(t, remaining=left[t.id], gpus=g, memory=m)
            engine.round(pool, True)
            pools.append(pool)
        assert pools[0].actions == pools[1].actions, n
        differs += pools[0].actions != pools[2].actions
        assert live.state() == restored.state()
        placed = {s.id: (tuple(s.gpus), s.memory) for s in pools[0].running()}
        for tid in placed:
            left[tid] -= 2.0
            if left[tid] <= 0:
                del left[tid]
        placed = {k: v for k, v in placed.items() if k in left}
    assert not left and differs > 0
