"""The market engine's fast paths against their straightforward references: each must change
no decision, so every comparison is exact (winners, their order, statuses, event logs byte for
byte), and each run checks that the fast path was actually taken."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import gensolver.market.clearing as clearing
import gensolver.market.engine as engine
import gensolver.market.pool as market_pool
from gensolver.market.clearing import RoundTask
from gensolver.market.pool import TablePool, free_by_node, may_fit, may_fit_many
from gensolver.model.tasks import GpuSpec, Task
from gensolver.model.tolerances import boundary_guard, capacity_limit
from gensolver.sim import simulate, synthetic_workload
from gensolver.sim.strategy import Strategy, apply_strategies
from gensolver.sim.workload import with_deadlines


def _solver_layer(raw, free):
    """The reference: the round's instance solved by :func:`gensolver.solve` (greedy on value)."""
    won, method, status = clearing._solve_instance(raw, free, "greedy", None)
    assert method == "greedy"
    return won, status


def _random_bids(seed: int):
    """The XOR bids of a random round, as ``clear_round`` builds them: tight capacities whose
    sums sit on the tolerance boundary (0.1 + 0.2 > 0.3 in floating point), tied scores,
    running candidates, gangs, several levels and up to 12 options (option index 10 sorts
    before 2 by bid id)."""
    rng = np.random.default_rng(seed)
    n, gpus = int(rng.integers(2, 14)), int(rng.integers(1, 7))
    tight = seed % 2 == 1
    cands = []
    for i in range(n):
        pref = float(rng.choice([0.1, 0.2, 0.3, 1 / 3, 0.6, 1.0])) if tight else float(rng.integers(8, 40))
        gang = 2 if i % 5 == 4 and gpus >= 2 else 1
        t = Task(f"t{i}", tenant=f"u{i % 3}", gpus=gang, min_memory=pref * 0.5, preferred_memory=pref,
                 compute=float(rng.choice([0.1, 0.2, 0.25, 0.5, 1.0])), duration=int(rng.integers(2, 20)), value=1.0,
                 elasticity=0.7)
        score = float(rng.choice([1.0, 2.0])) if seed % 3 == 0 else float(rng.uniform(0.5, 3))
        home = (f"g{2 * (i % max(1, gpus // 2))}",) if gang == 1 and i % 4 == 3 else None
        cands.append(RoundTask(t, score, home, pref if home else None))
    caps = [0.3, 0.6, 0.9, 1.0, 0.30000000000000004] if tight else [20.0, 40.0, 80.0]
    free = {f"g{j}": (float(rng.choice(caps)), float(rng.choice([1.0, 0.6, 0.3]))) for j in range(gpus)}
    nodes = {"n0": [f"g{j}" for j in range(0, gpus, 2)], "n1": [f"g{j}" for j in range(1, gpus, 2)]}
    levels, options = int(rng.integers(1, 4)), int(rng.integers(1, 13))
    most = max(m for m, _ in free.values())
    raw = [(f"{rank:02d}|{li}|{oi}", c.task, grp, mem, v) for rank, c in enumerate(cands)
           for li, oi, grp, mem, v in clearing._task_bids(c, free, nodes, levels, options, 0.05, 0.2, most, None)]
    return raw, free


@pytest.mark.parametrize("seed", range(60))
def test_the_direct_greedy_answers_as_the_solver_layer(seed):
    raw, free = _random_bids(seed)  # seed 49 draws a round where no bid fits: both answer nothing, optimal
    won, status = clearing._greedy_on_value(raw, free)
    ref_won, ref_status = _solver_layer(raw, free)
    assert list(won.items()) == list(ref_won.items())  # the same winners, listed in the same order
    assert status == ref_status


def test_the_direct_greedy_decides_the_boundary_by_the_exact_sum():
    """Three 0.1 GiB bids fill 0.3 GiB (their floating-point sum exceeds 0.3, their exact sum
    does not); a fourth does not fit; the tie in value goes to the smaller bid id."""
    ts = [Task(f"t{i}", tenant="u", min_memory=0.1, preferred_memory=0.1, compute=0.1, duration=5, value=1.0)
          for i in range(4)]
    raw = [(f"{i}|0|0", t, ("g0",), 0.1, 1.0) for i, t in enumerate(ts)]
    free = {"g0": (0.3, 1.0)}
    won, status = clearing._greedy_on_value(raw, free)
    assert list(won) == ["t0", "t1", "t2"] and status == "feasible"  # t3's bid alone would fit: bound 4
    assert (won, status) == _solver_layer(raw, free)


def _bids(*memory: float) -> list:
    """One bid per task on GPU ``g0``, worth less and less in the given order."""
    ts = [Task(f"t{i}", tenant="u", min_memory=m, preferred_memory=m, compute=0.1, duration=5, value=1.0)
          for i, m in enumerate(memory)]
    return [(f"{i}|0|0", t, ("g0",), m, float(len(ts) - i)) for i, (t, m) in enumerate(zip(ts, memory))]


def test_the_direct_greedy_decides_near_the_limit_by_the_exact_sum():
    """Where the floating-point residual cannot decide, the exact sum does: after 0.1 and 0.2 GiB
    of 0.3 (plus the capacity tolerance), a demand that fits by the exact sum but not by the
    residual ``fl(fl(limit - 0.1) - 0.2)`` is accepted; after 0.5 of 1, a demand one ulp above
    the exact room is refused though the residual misses it by less than the guard."""
    residual = (capacity_limit(0.3) - 0.1) - 0.2
    room = float(np.nextafter(residual, np.inf))  # the residual alone would refuse it
    assert math.fsum([0.1, 0.2, room]) <= capacity_limit(0.3)  # the exact sum fits it
    raw, free = _bids(0.1, 0.2, room), {"g0": (0.3, 1.0)}
    won, status = clearing._greedy_on_value(raw, free)
    assert list(won) == ["t0", "t1", "t2"] and (won, status) == _solver_layer(raw, free)
    over = float(np.nextafter(float(Fraction(capacity_limit(1.0)) - Fraction(0.5)), np.inf))
    assert math.fsum([0.5, over]) > capacity_limit(1.0)
    assert -boundary_guard(capacity_limit(1.0)) < (capacity_limit(1.0) - 0.5) - over < 0
    raw, free = _bids(0.5, over), {"g0": (1.0, 1.0)}
    won, status = clearing._greedy_on_value(raw, free)
    assert list(won) == ["t0"] and (won, status) == _solver_layer(raw, free)


def test_the_uncontended_and_direct_paths_answer_as_the_solver_layer(monkeypatch):
    """``clear_round`` end to end (greedy), against the same rounds with both shortcuts off."""
    rounds = [_random_bids(seed) for seed in range(40)]
    fast = [clearing._greedy_on_value(raw, free) for raw, free in rounds if raw]
    monkeypatch.setattr(clearing, "_greedy_on_value", _solver_layer)
    assert fast == [clearing._greedy_on_value(raw, free) for raw, free in rounds if raw]


@pytest.mark.parametrize("seed", range(30))
def test_may_fit_many_is_may_fit_task_by_task(seed):
    rng = np.random.default_rng(seed)
    gpus = [GpuSpec(f"g{i}", float(rng.choice([16.0, 24.0])), node=f"n{i % 3}") for i in range(7)]
    pool = TablePool(gpus, now=0.0, lease=5)
    for i in range(7):  # some memory and compute held, some GPUs down
        m = float(rng.choice([0.0, 4.0, 8.0, 16.0]))
        if m > 0:
            pool.add(Task(f"r{i}", m, m, 10, 1.0, compute=float(rng.choice([0.25, 0.5, 1.0]))),
                     remaining=10.0, gpus=(f"g{i}",), memory=m)
        pool.gpus[f"g{i}"].up = bool(rng.random() > 0.2)
    free = free_by_node(pool)
    k = rng.integers(1, 4, size=50)
    mem = rng.choice([4.0, 8.0, 8.0 + 1e-9, 8.0 + 2e-9, 12.0, 16.0, 24.0], size=50)  # on and off the tolerance
    comp = rng.choice([0.25, 0.5, 0.75, 1.0], size=50)
    expect = [may_fit(free, int(a), float(b), float(c)) for a, b, c in zip(k, mem, comp)]
    assert may_fit_many(free, k, mem, comp).tolist() == expect
    assert any(expect) and not all(expect)


@pytest.mark.parametrize("n", [5, 20])
@pytest.mark.parametrize("fit", range(21))
def test_may_start_any_is_any_may_fit(fit, n):
    """The queue check is ``may_fit`` over the whole queue, at minimum memory with ``elastic``:
    a queue where at most one task fits, at each place, the one-by-one head or the rest."""
    pool = TablePool([GpuSpec(f"g{i}", 16.0, node=f"n{i % 2}") for i in range(4)], now=0.0, lease=5)
    pool.add(Task("r0", 12.0, 12.0, 10, 1.0, compute=0.5), remaining=10.0, gpus=("g0",), memory=12.0)
    for i in range(n):  # 20 GiB fits nowhere; task `fit` asks 8 (or 8 at least, 20 preferred)
        low = 8.0 if i == fit else 20.0
        pool.add(Task(f"w{i}", min_memory=low, preferred_memory=20.0, duration=10, value=1.0, compute=0.25),
                 remaining=10.0)
    waiting = pool.waiting()
    free = free_by_node(pool)
    for elastic in (False, True):
        expect = any(may_fit(free, s.task.gpus, s.task.min_memory if elastic else s.task.preferred_memory,
                             s.task.compute) for s in waiting)
        assert market_pool.may_start_any(pool, waiting, elastic=elastic) == expect
        assert expect == (elastic and fit < n)


def _log(result) -> bytes:
    return json.dumps([e.to_dict() for e in result.events], sort_keys=True).encode()


@pytest.mark.parametrize(("lie", "reserve"), [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("clearing_name", ["greedy", "solver"])
def test_the_engine_fast_paths_change_no_event(clearing_name, lie, reserve, monkeypatch):
    """An overloaded run (queues longer than the backfill's pre-check threshold, contended
    solver rounds) gives the same event log with every fast path on as with the references: the
    backfill checking each task in turn, every pass between boundaries scored, and the solver
    layer's greedy; also with a tenant under-reporting memory (its tasks run slow, which scoring
    observes), and with planned starts (the backfill keeps a reservation). Spies check that
    each fast path was taken and made a difference."""
    w = with_deadlines(synthetic_workload(90, seed=4, rate=6.0, gang_share=0.15, tenants=3,
                                          gpus=(24, 24, 40, 40, 80, 80)), seed=4)
    if lie:
        w = apply_strategies(w, {w.tasks[0].tenant: Strategy(memory=0.6)})
    opts = {"clearing": clearing_name, **({"reserve": 0.0, "reserve_long": 4.0} if reserve else {})}
    taken = {"greedy": 0, "many": 0, "idle": 0}
    real_greedy, real_many, real_may_start = clearing._greedy_on_value, market_pool.may_fit_many, \
        engine.CreditEngine._may_start

    def greedy(raw, free):
        taken["greedy"] += 1
        return real_greedy(raw, free)

    def many(*a):
        out = real_many(*a)
        taken["many"] += int(not out.all())  # some task skipped without its one-by-one check
        return out

    def may_start(self, cluster, waiting):
        out = real_may_start(self, cluster, waiting)
        taken["idle"] += int(not out)
        return out

    memory: list = []  # the engine's memory of slow tasks and its reservation after every pass
    real_round = engine.CreditEngine.round

    def round_(self, cluster, boundary):
        real_round(self, cluster, boundary)
        memory.append((cluster.now, boundary, sorted(self.audit.slow), sorted(self.audit.short), self._held))

    monkeypatch.setattr(engine.CreditEngine, "round", round_)
    monkeypatch.setattr(clearing, "_greedy_on_value", greedy)
    monkeypatch.setattr(market_pool, "may_fit_many", many)
    monkeypatch.setattr(engine.CreditEngine, "_may_start", may_start)
    fast = _log(simulate(w, policy="market", policy_options=opts))
    fast_memory, memory[:] = list(memory), []
    assert taken["many"] > 0 and (taken["idle"] > 0) != reserve  # planned starts score every pass
    assert any(held for *_, held in fast_memory) == reserve
    assert taken["greedy"] > 0 or clearing_name == "greedy"
    assert any(slow for _, _, slow, _, _ in fast_memory) == lie

    monkeypatch.setattr(clearing, "_greedy_on_value", _solver_layer)
    monkeypatch.setattr(market_pool, "SCAN", 10**9)
    monkeypatch.setattr(engine.CreditEngine, "_may_start", lambda self, cluster, waiting: True)
    assert fast == _log(simulate(w, policy="market", policy_options=opts))
    assert fast_memory == memory
