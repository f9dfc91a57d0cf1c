"""Behaviour of :mod:`gensolver.market.quiet`: when a boundary round provably changes nothing.

Certificates: for :func:`keeps_all`, :func:`~gensolver.market.pool.greedy_round` itself run in
every order of the running tasks; for :func:`round_is_quiet`, the rounds actually run on a copy
of the pool while time passes (no start, stop, resize or credit movement may follow).
"""

from __future__ import annotations

import copy
import itertools

import pytest

from gensolver.market.engine import CreditEngine
from gensolver.market.pool import greedy_round, pinned_free_capacity
from gensolver.market.quiet import keeps_all, round_is_quiet
from gensolver.model.tasks import GpuSpec, Task

from .test_engine import _Pool


def _advance(pool: _Pool) -> None:
    """One lease of time: running tasks progress (none finishes here)."""
    pool.now += pool.lease
    for s in pool.running():
        s.executed += (pool.now - s.since) * s.speed
        s.since = pool.now


def _rounds_change_nothing(engine: CreditEngine, pool: _Pool, rounds: int = 4) -> bool:
    """Run ``rounds`` boundary rounds on copies while time passes: whether nothing happened."""
    engine, pool = copy.deepcopy(engine), copy.deepcopy(pool)
    before = len(pool.actions)
    placed = {s.id: (s.gpus, s.memory) for s in pool.running()}
    balances = dict(engine.bank.balances)
    for _ in range(rounds):
        _advance(pool)
        engine.round(pool, True)
    return (pool.actions[before:] == [] and {s.id: (s.gpus, s.memory) for s in pool.running()} == placed
            and engine.bank.balances == balances)


def _workload(seed: int, n: int) -> list[Task]:
    """``n`` single-GPU tasks of a quarter GPU's compute: room for all on four 16 GiB GPUs."""
    return [Task(f"t{k}", preferred_memory=float(2 + 2 * ((seed + k) % 3)), min_memory=2.0, duration=1000 + k,
                 value=10.0 + k, tenant=f"a{(seed + k) % 3}", compute=0.25) for k in range(n)]


def _cluster() -> list[GpuSpec]:
    return [GpuSpec(f"g{i}", 16.0, node=f"n{i // 2}") for i in range(4)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", [{}, {"income": "active", "forfeit": False}, {"backfill": "preferred"}])
def test_a_round_declared_quiet_changes_nothing(seed, options):
    pool = _Pool(_cluster(), _workload(seed, 3 + seed))
    engine = CreditEngine(**options)
    declared = 0
    for _ in range(200):  # income stops moving once every tenant is at its cap (about 60 rounds)
        engine.round(pool, True)
        if round_is_quiet(engine, pool):
            declared += 1
            assert _rounds_change_nothing(engine, pool)
            if declared == 3:
                break
        else:
            assert declared == 0, "quiet, then not, while nothing happened"
        _advance(pool)
    assert declared == 3, "no quiet round on an uncontended pool: the test checks nothing"


def test_a_waiting_task_or_the_solver_clearing_is_never_quiet():
    pool = _Pool(_cluster(), _workload(0, 3))
    engine = CreditEngine()
    engine.round(pool, True)
    for _ in range(200):
        _advance(pool)
        engine.round(pool, True)
        if round_is_quiet(engine, pool):
            break
    assert round_is_quiet(engine, pool)
    late = Task("late", preferred_memory=4.0, min_memory=2.0, duration=10, value=5.0, tenant="a0")
    busy = copy.deepcopy(pool)
    busy.tasks["late"] = type(pool.tasks["t0"])(late)
    assert not round_is_quiet(engine, busy)
    assert not _rounds_change_nothing(engine, busy)  # the check sees the start it would make
    assert not round_is_quiet(CreditEngine(clearing="solver"), pool)


def test_the_round_check_can_fail():
    # a pool with a task not yet seen by the engine: a round starts it, and the check says so
    pool = _Pool(_cluster(), _workload(1, 2))
    assert not _rounds_change_nothing(CreditEngine(), pool)


class _Fake:
    """The least of a pool :func:`keeps_all` and :func:`greedy_round` read (no node: a task that
    does not fit on its own GPUs is simply not served)."""

    def __init__(self, gpus: dict[str, float], running: list[tuple[str, tuple[str, ...], float, bool]]) -> None:
        from .test_engine import _Gpu, _Task

        self.gpus = {g: _Gpu(GpuSpec(g, mem)) for g, mem in gpus.items()}
        self.nodes: dict[str, list[str]] = {}
        self.tasks = {}
        for tid, on, mem, preemptible in running:
            t = Task(tid, preferred_memory=mem, min_memory=mem, duration=10, value=1.0, preemptible=preemptible,
                     compute=0.25)
            s = _Task(t, state="running", gpus=on, memory=mem, compute=t.compute, speed=1.0)
            self.tasks[tid] = s
            for g in on:
                self.gpus[g].tasks.add(tid)
                self.gpus[g].used += mem
                self.gpus[g].used_compute += t.compute

    def running(self):
        return list(self.tasks.values())


def _kept_in_every_order(pool: _Fake) -> bool:
    movable = [s for s in pool.running() if s.task.preemptible]
    for order in itertools.permutations(movable):
        plan = greedy_round(pool, order, dict(pinned_free_capacity(pool)))
        if any(plan.get(s.id) != s.gpus for s in movable):
            return False
    return True


POOLS = [
    ({"a": 16.0, "b": 16.0}, [("x", ("a",), 8.0, True), ("y", ("a",), 8.0, True), ("z", ("b",), 4.0, True)]),
    ({"a": 16.0}, [("x", ("a",), 6.0, False), ("y", ("a",), 6.0, True), ("z", ("a",), 4.0, True)]),
    ({"a": 16.0, "b": 16.0}, [("x", ("a", "b"), 8.0, True), ("y", ("b",), 8.0, True)]),
    ({"a": 16.0}, [("x", ("a",), 12.0, False)]),
    # five tasks of 0.25 compute on one GPU: compute over capacity, so some order drops one
    ({"a": 80.0}, [(f"t{k}", ("a",), 4.0, True) for k in range(5)]),
]


@pytest.mark.parametrize("gpus, running", POOLS)
def test_keeps_all_agrees_with_greedy_round_in_every_order(gpus, running):
    pool = _Fake(gpus, running)
    assert keeps_all(pool, pool.running()) == _kept_in_every_order(pool)


def test_keeps_all_is_false_when_a_gpu_is_down_and_the_brute_force_can_fail():
    pool = _Fake({"a": 16.0, "b": 16.0}, [("x", ("a",), 8.0, True)])
    pool.gpus["a"].up = False
    assert not keeps_all(pool, pool.running())
    over = _Fake({"a": 80.0}, [(f"t{k}", ("a",), 4.0, True) for k in range(5)])
    assert not _kept_in_every_order(over)
