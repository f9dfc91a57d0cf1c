"""The credit market's round cleared by the solver layer: feasibility, optimality on tiny rounds
(brute force), the stay bonus, and the policy option end to end (audited log, reruns)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from gensolver.market.clearing import RoundTask, clear_round, fitting_groups
from gensolver.model.tasks import Task, task_speed
from gensolver.sim import audit_log, simulate, synthetic_workload
from gensolver.sim.workload import with_deadlines


def _task(i: int, rng: np.random.Generator, *, gpus: int = 1) -> Task:
    pref = float(rng.integers(8, 40))
    return Task(f"t{i}", tenant=f"u{i % 2}", gpus=gpus, min_memory=pref * 0.5, preferred_memory=pref,
                compute=float(rng.choice([0.25, 0.5])), duration=int(rng.integers(2, 20)), value=1.0, elasticity=0.7)


def _violations(winners, cands, free, nodes) -> list[str]:
    """Independent checker: capacity per GPU, gang sizes, one node per gang, levels in range."""
    by_id = {c.task.id: c.task for c in cands}
    node_of = {g: n for n, members in nodes.items() for g in members}
    used = {g: [0.0, 0.0] for g in free}
    bad = []
    for tid, (grp, mem) in winners.items():
        t = by_id[tid]
        if len(set(grp)) != t.gpus or len({node_of[g] for g in grp}) != 1:
            bad.append(f"{tid}: bad group {grp}")
        if not t.min_memory - 1e-9 <= mem <= t.preferred_memory + 1e-9:
            bad.append(f"{tid}: memory {mem} out of range")
        for g in grp:
            used[g][0] += mem
            used[g][1] += t.compute
    for g, (m, c) in used.items():
        if m > free[g][0] + 1e-6 or c > free[g][1] + 1e-6:
            bad.append(f"{g} over capacity")
    return bad


def _round(seed: int, n: int, gpus: int):
    rng = np.random.default_rng(seed)
    cands = [RoundTask(_task(i, rng, gpus=2 if i % 5 == 4 else 1), float(rng.uniform(0.5, 3))) for i in range(n)]
    free = {f"g{j}": (float(rng.integers(20, 81)), 1.0) for j in range(gpus)}
    nodes = {"n0": [f"g{j}" for j in range(0, gpus, 2)], "n1": [f"g{j}" for j in range(1, gpus, 2)]}
    return cands, free, nodes


@pytest.mark.parametrize("seed", range(6))
def test_every_clearing_is_feasible(seed):
    cands, free, nodes = _round(seed, 12, 4)
    res = clear_round(cands, free, nodes, levels=3, max_options=2)
    assert _violations(res.winners, cands, free, nodes) == []
    assert set(res.winners).isdisjoint(res.losers)
    assert set(res.winners) | set(res.losers) == {c.task.id for c in cands}


def test_the_checker_catches_an_overfill():
    cands, free, nodes = _round(0, 4, 2)
    t = cands[0].task
    bad = {c.task.id: (("g0",) * c.task.gpus, c.task.preferred_memory) for c in cands}
    bad[t.id] = (("g0",) * t.gpus, 1e6)
    assert _violations(bad, cands, free, nodes)


def _idle_fits(winners, cands, free, nodes) -> list[str]:
    """Independent certificate of work conservation: the losers that would still fit, at their
    minimum memory, in the capacity the winners left (``k`` GPUs of one node with the memory
    and compute free). Empty when the clearing left nothing that any loser could use."""
    by_id = {c.task.id: c.task for c in cands}
    left = {g: [m, c] for g, (m, c) in free.items()}
    for tid, (grp, mem) in winners.items():
        for g in grp:
            left[g][0] -= mem
            left[g][1] -= by_id[tid].compute
    out = []
    for c in cands:
        t = c.task
        if t.id in winners:
            continue
        for members in nodes.values():
            room = [g for g in members if left[g][0] + 1e-9 >= t.min_memory and left[g][1] + 1e-9 >= t.compute]
            if len(room) >= t.gpus:
                out.append(t.id)
                break
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("method", ["greedy", "highs"])
def test_no_loser_fits_what_the_winners_left(seed, method):
    """Few placements per bid (``max_options=1``) crowd every task onto the same best-fit GPU;
    the fill after the solve still leaves no loser that the free capacity could host."""
    cands, free, nodes = _round(seed, 10, 4)
    res = clear_round(cands, free, nodes, levels=3, max_options=1, method=method)
    assert _violations(res.winners, cands, free, nodes) == []
    assert _idle_fits(res.winners, cands, free, nodes) == []


def test_the_idle_certificate_fails_without_the_fill():
    """Three empty identical GPUs, three one-GPU tasks and one placement per bid: every bid
    names the same GPU, so the solve alone starts one task and leaves two GPUs idle."""
    tasks = [Task(f"t{i}", tenant=f"u{i}", min_memory=30, preferred_memory=30, compute=1.0, duration=5, value=1.0)
             for i in range(3)]
    cands = [RoundTask(t, 3.0 - i) for i, t in enumerate(tasks)]
    free = {f"g{j}": (40.0, 1.0) for j in range(3)}
    nodes = {"n": ["g0", "g1", "g2"]}
    alone = clear_round(cands, free, nodes, max_options=1, fill=False)
    assert len(alone.winners) == 1 and sorted(_idle_fits(alone.winners, cands, free, nodes)) == ["t1", "t2"]
    res = clear_round(cands, free, nodes, max_options=1)
    assert len(res.winners) == 3 and _idle_fits(res.winners, cands, free, nodes) == []
    assert _violations(res.winners, cands, free, nodes) == []


def test_a_running_loser_stays_home_when_it_still_fits():
    a = Task("a", tenant="x", min_memory=40, preferred_memory=40, compute=0.5, duration=10, value=1.0)
    b = Task("b", tenant="y", min_memory=40, preferred_memory=40, compute=0.5, duration=10, value=1.0)
    free = {"g0": (40.0, 1.0), "g1": (40.0, 1.0)}
    # one placement per bid: b (higher score) takes the best fit g0... a runs on g1 and keeps it
    res = clear_round([RoundTask(b, 5.0), RoundTask(a, 1.0, ("g1",), 40.0)], free, {"n": ["g0", "g1"]},
                      max_options=1, stay_bonus=0.0, switch_penalty=0.5)
    assert res.winners["a"] == (("g1",), 40.0) and res.winners["b"][0] == ("g0",)


def _brute_force(cands, free, levels):
    """Best welfare over every choice of (nothing, or one GPU and memory level) per task."""
    best = 0.0
    choices = [[None] + [(g, m) for g in free for m in np.linspace(c.task.min_memory, c.task.preferred_memory,
                                                                  levels)] for c in cands]
    for pick in itertools.product(*choices):
        used = {g: [0.0, 0.0] for g in free}
        value = 0.0
        for c, p in zip(cands, pick):
            if p is None:
                continue
            used[p[0]][0] += p[1]
            used[p[0]][1] += c.task.compute
            value += c.score * task_speed(c.task, p[1])
        if all(used[g][0] <= free[g][0] + 1e-9 and used[g][1] <= free[g][1] + 1e-9 for g in free):
            best = max(best, value)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_an_exact_method_matches_brute_force_on_tiny_rounds(seed):
    rng = np.random.default_rng(100 + seed)
    cands = [RoundTask(_task(i, rng), float(rng.uniform(0.5, 3))) for i in range(4)]
    free = {"g0": (float(rng.integers(30, 70)), 1.0), "g1": (float(rng.integers(30, 70)), 1.0)}
    nodes = {"n0": ["g0", "g1"]}
    res = clear_round(cands, free, nodes, levels=2, max_options=2, method="highs")
    by_id = {c.task.id: c for c in cands}
    welfare = sum(by_id[t].score * task_speed(by_id[t].task, m) for t, (_, m) in res.winners.items())
    assert welfare == pytest.approx(_brute_force(cands, free, 2), rel=1e-6)
    # greedy on value never beats the optimum and is feasible
    greedy = clear_round(cands, free, nodes, levels=2, max_options=2)
    gw = sum(by_id[t].score * task_speed(by_id[t].task, m) for t, (_, m) in greedy.winners.items())
    assert gw <= welfare + 1e-9
    assert _violations(greedy.winners, cands, free, nodes) == []


def test_a_running_task_keeps_its_gpu_against_an_equal_bid():
    a = Task("a", tenant="x", min_memory=40, preferred_memory=40, duration=10, value=1.0)
    b = Task("b", tenant="y", min_memory=40, preferred_memory=40, duration=10, value=1.0)
    free = {"g0": (40.0, 1.0)}
    nodes = {"n": ["g0"]}
    # b is listed first (wins every tie), but a runs there now: the stay bonus keeps it
    res = clear_round([RoundTask(b, 1.0), RoundTask(a, 1.0, ("g0",), 40.0)], free, nodes)
    assert set(res.winners) == {"a"}
    res = clear_round([RoundTask(b, 1.0), RoundTask(a, 1.0, ("g0",), 40.0)], free, nodes, stay_bonus=0.0)
    assert set(res.winners) == {"b"}


def test_a_smaller_memory_level_is_priced_by_the_speed_law():
    t = Task("t", tenant="x", min_memory=10, preferred_memory=40, duration=10, value=1.0, elasticity=1.0)
    res = clear_round([RoundTask(t, 2.0)], {"g0": (20.0, 1.0)}, {"n": ["g0"]}, levels=4)
    (grp, mem), = res.winners.values()
    assert grp == ("g0",) and mem == pytest.approx(20.0)  # the largest level that fits


def test_fitting_groups_takes_one_node_per_gang():
    free = {"a0": (40.0, 1.0), "a1": (10.0, 1.0), "b0": (40.0, 1.0), "b1": (40.0, 1.0)}
    nodes = {"a": ["a0", "a1"], "b": ["b0", "b1"]}
    assert fitting_groups(free, nodes, 2, 20.0, 0.5, limit=5) == [("b0", "b1")]
    assert fitting_groups(free, nodes, 1, 5.0, 0.5, limit=2) == [("a1",), ("a0",)]


@pytest.mark.parametrize("bad", [{"clearing": "lp"}, {"method": "auto"}, {"levels": 0}, {"stay_bonus": -1},
                                 {"switch_penalty": 1.0}, {"max_options": 0}])
def test_bad_clearing_options_are_refused(bad):
    with pytest.raises(ValueError):
        simulate(synthetic_workload(3, seed=0), policy="market", policy_options={"clearing": "solver", **bad})


def _log(result) -> bytes:
    return json.dumps([e.to_dict() for e in result.events], sort_keys=True).encode()


@pytest.mark.parametrize("clearing", ["solver", "greedy"])
@pytest.mark.parametrize("seed", [1, 2])
def test_both_clearings_finish_everything_within_capacity(seed, clearing):
    w = with_deadlines(synthetic_workload(50, seed=seed, rate=4.0, gang_share=0.2, preemptible_share=0.5,
                                          tenants=3), seed=seed)
    opts = {"clearing": clearing}
    a = simulate(w, policy="market", policy_options=opts, faults=["gpu:gpu1@5-15"])
    audit_log(a.events, require_complete=True).raise_if_failed()  # capacity, from the log alone
    assert a.metrics.completed == a.metrics.tasks == 50
    assert _log(a) == _log(simulate(w, policy="market", policy_options=opts, faults=["gpu:gpu1@5-15"]))


@pytest.mark.parametrize("opts", [{"method": "auto", "budget": 0.2}, {"method": "lp"}])
def test_other_methods_rerun_byte_identical_under_a_work_budget(opts):
    """``auto`` runs under work units, not seconds: a loaded machine changes no decision."""
    w = with_deadlines(synthetic_workload(20, seed=3, rate=4.0, gang_share=0.2, tenants=3), seed=3)
    full = {"clearing": "solver", **opts}
    a = simulate(w, policy="market", policy_options=full)
    audit_log(a.events, require_complete=True).raise_if_failed()
    assert _log(a) == _log(simulate(w, policy="market", policy_options=full))


def _score_ratio(**opts) -> float:
    """Score of a rich tenant's task over a poor tenant's identical task, in one round."""
    from gensolver.market.engine import CreditEngine
    from gensolver.market.pool import TablePool
    from gensolver.model.tasks import GpuSpec

    pool = TablePool([GpuSpec("g0", 80.0, node="n0")], now=0.0, lease=5)
    for tenant in ("rich", "poor"):
        pool.add(Task(f"{tenant}-t", tenant=tenant, min_memory=20, preferred_memory=20, duration=10, value=1.0,
                      urgency=0.1), remaining=10.0)
    eng = CreditEngine(**opts)
    eng.bank.balances.update({"rich": 1000.0, "poor": 1.0})
    waiting = pool.waiting()
    score, _ = eng._scores(pool, waiting)
    by_id = {s.id: float(v) for s, v in zip(waiting, score)}
    return by_id["rich-t"] / by_id["poor-t"]


@pytest.mark.parametrize("clearing", ["greedy", "solver"])
def test_the_engine_bounds_what_credits_and_urgency_move(clearing):
    """Under either clearing, by default, credits (hence urgency, which only splits a
    tenant's credits) move a score by at most ``spread ** 0.25`` each way: two identical tasks
    differ by at most ``sqrt(spread)`` however unequal their tenants' balances. Full credit
    power exceeds that bound (the check can fail), and an explicit ``credit_power`` is kept."""
    spread = 1.5
    assert 1.0 < _score_ratio(clearing=clearing) <= math.sqrt(spread) + 1e-9
    assert _score_ratio(clearing=clearing, credit_power=1.0) > math.sqrt(spread) + 1e-6
    assert _score_ratio(clearing=clearing, credit_power=1.0) <= spread ** 2 + 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_the_uncontended_shortcut_answers_as_the_solver_layer(seed, monkeypatch):
    """When every task's most valuable bid fits together, the round skips the solve: its
    winners must be the solver layer's greedy's, which the same round without the shortcut
    runs (contended and uncontended rounds, running candidates, tied scores, 2 levels)."""
    import gensolver.market.clearing as clearing

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    cands, free, nodes = _round(seed, n, 4)
    if seed % 2:  # roomy GPUs: everything fits, the shortcut answers
        free = {g: (400.0, 4.0) for g in free}
    if seed % 3 == 0:  # tied scores and a running candidate on its own GPU
        cands = [RoundTask(c.task, 1.0) for c in cands]
        t = cands[0].task
        cands[0] = RoundTask(t, 1.0, tuple(f"g{j}" for j in range(0, 2 * t.gpus, 2)), t.preferred_memory)
    taken = []
    real = clearing._tops_if_they_fit

    def spy(raw, fr):
        out = real(raw, fr)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(clearing, "_tops_if_they_fit", spy)
    fast = clear_round(cands, free, nodes, levels=2, max_options=3, fill=False)
    monkeypatch.setattr(clearing, "_tops_if_they_fit", lambda raw, fr: None)
    monkeypatch.setattr(clearing, "_greedy_on_value",  # the solver layer itself, not the direct greedy
                        lambda raw, fr: clearing._solve_instance(raw, fr, "greedy", None)[::2])
    slow = clear_round(cands, free, nodes, levels=2, max_options=3, fill=False)
    assert dict(fast.winners) == dict(slow.winners) and fast.losers == slow.losers
    if seed % 2:
        assert taken == [True]  # roomy rounds take the shortcut
    if taken[0]:
        assert fast.status == "optimal" and set(fast.winners) == {c.task.id for c in cands}


def test_the_shortcut_declines_a_contended_round():
    a = Task("a", tenant="x", min_memory=40, preferred_memory=40, compute=0.5, duration=10, value=1.0)
    b = Task("b", tenant="y", min_memory=40, preferred_memory=40, compute=0.5, duration=10, value=1.0)
    from gensolver.market.clearing import _tops_if_they_fit

    # both tasks' best bid is g0 (best fit of 40 GiB): together 80 GiB on a 60 GiB GPU
    raw = [("0|0|0", a, ("g0",), 40.0, 2.0), ("0|0|1", a, ("g1",), 40.0, 2.0),
           ("1|0|0", b, ("g0",), 40.0, 1.0), ("1|0|1", b, ("g1",), 40.0, 1.0)]
    assert _tops_if_they_fit(raw, {"g0": (60.0, 1.0), "g1": (60.0, 1.0)}) is None
    assert _tops_if_they_fit(raw, {"g0": (80.0, 1.0), "g1": (60.0, 1.0)}) == {"a": (("g0",), 40.0), "b": (("g0",), 40.0)}
    # ties go to the smaller bid id (the canonical order), as in the greedy's scan
    assert _tops_if_they_fit(raw[2:], {"g0": (60.0, 1.0), "g1": (60.0, 1.0)}) == {"b": (("g0",), 40.0)}
