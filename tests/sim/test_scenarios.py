"""Acceptance scenarios (a)-(d) and tiny hand-computed runs, one per policy."""

from __future__ import annotations

import pytest

from gensolver import GensolverDeprecationWarning
from gensolver.errors import InputError
from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import audit_log, list_policies, simulate, synthetic_workload
from gensolver.sim.workload import with_deadlines

POLICIES = ["fcfs-whole-gpu", "fcfs-packing", "elastic", "finish-time-fair", "market"]


def T(tid, pref, mini=None, dur=4, release=0, compute=1.0, preemptible=True, **kw):
    return Task(tid, float(pref), float(mini or pref), dur, value=dur * pref / 10, release=release, compute=compute,
                preemptible=preemptible, **kw)


def starts(result):
    return {e.task: (e.time, e.gpus) for e in result.events if e.kind == "start"}


@pytest.mark.parametrize("policy", POLICIES)
def test_a_two_tasks_start_at_once_on_the_right_cards(policy):
    gpus = [GpuSpec("g16", 16.0, 1.0, "n0"), GpuSpec("g8", 8.0, 1.0, "n0")]
    r = simulate([T("t12", 12), T("t4", 4)], policy=policy, gpus=gpus)
    s = starts(r)
    assert s["t12"] == (0.0, ("g16",)) and s["t4"] == (0.0, ("g8",))
    audit_log(r.events, require_complete=True).raise_if_failed()


@pytest.mark.parametrize("policy", POLICIES)
def test_b_small_task_joins_instead_of_waiting(policy):
    gpus = [GpuSpec("g24", 24.0, 1.0, "n0")]
    tasks = [T("t15", 15, dur=10, compute=0.5), T("t5", 5, dur=4, release=1, compute=0.5)]
    r = simulate(tasks, policy=policy, gpus=gpus)
    s = starts(r)
    if policy == "fcfs-whole-gpu":  # the Kubernetes whole-GPU baseline makes it wait
        assert s["t5"][0] == 10.0
    else:
        assert s["t5"] == (1.0, ("g24",))
        assert r.tasks["t5"].jct == pytest.approx(4.0)
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_c_market_beats_fcfs_on_a_mixed_batch():
    # one documented batch; the count over 100 batches is in benchmarks/bench_sim_batches.py
    w = synthetic_workload(10, seed=3, rate=None, gpus=(24.0, 16.0))
    a = simulate(w, policy="market", policy_options={"clearing": "solver"}).metrics
    f = simulate(w, policy="fcfs-whole-gpu").metrics
    assert a.makespan < f.makespan and a.avg_jct < f.avg_jct


@pytest.mark.slow
def test_c_over_100_batches():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("bench", Path(__file__).parents[2] / "benchmarks" / "bench_sim_batches.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.run(100)
    assert out["wins"]["fcfs-whole-gpu"] >= 50


@pytest.mark.parametrize("policy", POLICIES)
def test_d_node_failure_requeues_and_tasks_finish_elsewhere(policy):
    gpus = [GpuSpec("a0", 16.0, 1.0, "na"), GpuSpec("a1", 16.0, 1.0, "na"), GpuSpec("b0", 16.0, 1.0, "nb")]
    tasks = [T("x", 8, dur=10, compute=1.0), T("y", 8, dur=10, compute=1.0, preemptible=False)]
    r = simulate(tasks, policy=policy, gpus=gpus, faults=["node:na@3-100"])
    victims = {e.task for e in r.events if e.kind == "stop" and e.note == "fault"}
    assert victims, "the failure must hit a running task"
    assert r.complete
    last_start = {}
    for e in r.events:
        if e.kind == "start":
            last_start[e.task] = e.gpus
    for v in victims:
        assert last_start[v] == ("b0",) or r.tasks[v].finish >= 100
    assert r.metrics.lost_work > 0
    rep = audit_log(r.events, require_complete=True)
    rep.raise_if_failed()


# --- tiny hand-computed scenarios -------------------------------------------------------------
# One 16 GiB GPU, compute 0.5 each: A (8 GiB, min 4, 4 steps, t=0), B (8 GiB, min 4, 2 steps,
# t=1), C (12 GiB, min 6, 3 steps, t=1); elasticity 1, lease 5.
TINY = [T("A", 8, 4, dur=4, compute=0.5), T("B", 8, 4, dur=2, release=1, compute=0.5),
        T("C", 12, 6, dur=3, release=1, compute=0.5)]
TINY_GPU = [GpuSpec("g", 16.0, 1.0, "n")]

HAND = {
    # whole GPUs: A 0-4, then B 4-6, then C 6-9  -> JCT A=4, B=6-1=5, C=9-1=8
    "fcfs-whole-gpu": {"A": 4, "B": 5, "C": 8},
    # packing: A 0-4 (8 GiB); B joins at 1, runs 1-3; C (12 GiB) fits only when A leaves: 4-7
    "fcfs-packing": {"A": 4, "B": 2, "C": 6},
    # elastic: as packing until 3; at 3 B leaves 8 GiB free and C starts with 8 of its 12 GiB
    # (speed 8/12); at 4 A leaves and C grows to 12 GiB having done 2/3 step of work: the
    # remaining 7/3 steps at speed 1 end at 4 + 7/3 -> JCT C = 19/3 - 1 = 16/3
    "elastic": {"A": 4, "B": 2, "C": 16 / 3},
    # Themis-like: at 1, rho_B = rho_C = 1 (tie by arrival/id): B fits and starts 1-3; C waits
    # until A leaves at 4 and runs 4-7; at the boundary t=5 C (the only candidate) keeps its GPU
    "finish-time-fair": {"A": 4, "B": 2, "C": 6},
    # market: at 1 Smith's rule ranks B (2 steps) before C (3 steps), B runs 1-3; at 3 C is
    # backfilled with the 8 free GiB (speed 8/12); A leaves at 4, between round boundaries,
    # and C grows to 12 GiB then (not at the boundary at 5): as "elastic", JCT C = 16/3
    "market": {"A": 4, "B": 2, "C": 16 / 3},
}


@pytest.mark.parametrize("policy", sorted(HAND))
def test_tiny_hand_computed(policy):
    r = simulate(TINY, policy=policy, gpus=TINY_GPU)
    assert r.jct() == pytest.approx(HAND[policy])
    audit_log(r.events, require_complete=True).raise_if_failed()


@pytest.mark.parametrize("clearing", ["greedy", "solver"])
def test_tiny_hand_computed_market(clearing):
    # One 16 GiB GPU, compute 1 (no sharing), fixed memory, non-preemptible: A (8 GiB, 4 steps,
    # t=0) is the only bidder at 0 and wins; B (2 steps, t=1) cannot fit until A leaves at 4,
    # starts on the freed GPU then (backfill between rounds) and runs 4-6  -> JCT A = 4, B = 5.
    # Prices: at the boundaries (0, 5) no task of another tenant was left out, so nobody pays.
    tasks = [T("A", 8, dur=4, preemptible=False), T("B", 8, dur=2, release=1, preemptible=False)]
    r = simulate(tasks, policy="market", gpus=TINY_GPU, policy_options={"clearing": clearing})
    assert r.jct() == pytest.approx({"A": 4, "B": 5})
    assert not [e for e in r.events if e.kind == "credit" and e.note == "payment"]


def test_the_retired_auction_name_runs_the_one_market():
    """``auction`` is a deprecated alias: the same event log as the market cleared by the solver
    layer, byte for byte (one code path), and the welfare auction's options are refused."""
    w = with_deadlines(synthetic_workload(30, seed=2, rate=2.0, tenants=3), seed=2)
    with pytest.warns(GensolverDeprecationWarning, match="'auction' is deprecated"):
        alias = simulate(w, policy="auction")
    market = simulate(w, policy="market", policy_options={"clearing": "solver"})
    assert alias.events == market.events and alias.policy == "market-solver"
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(ValueError, match="'mechanism' belonged to the retired"):
        simulate(w, policy="auction", policy_options={"mechanism": "vcg"})


def test_policy_registry_lists_valid_names():
    from gensolver.sim import UnknownPolicyError

    assert set(POLICIES) <= set(list_policies())
    with pytest.raises(UnknownPolicyError, match="valid policies: elastic, fcfs-packing"):
        simulate(TINY, policy="lottery", gpus=TINY_GPU)


@pytest.mark.parametrize("steer", [True, False])
def test_a_waiting_gang_keeps_its_node_clear_of_long_starts(steer):
    # Two nodes of two GPUs (GiB): n0 = g0 20, g1 24; n1 = g2 18, g3 16; compute 1 each, so a
    # GPU runs one task. Non-preemptible Y (18 GiB, 4 steps) and X (20 GiB, 10 steps) start at
    # 0 on g2 and g0 (best fit). At 1 the gang G (2 GPUs x 16 GiB, 2 steps) and the long
    # non-preemptible L (16 GiB, 20 steps) arrive; G fits no node yet. Planned as a reservation,
    # G's node is n1 (free at 4, when Y ends; n0 only at 10). L would outlast that, so it is
    # steered to g1 (n0), although g3 fits it better: G starts at 4 when Y ends (JCT 6 - 1 =
    # 5). Without steering L takes g3 (best fit), and G waits for n0 until X ends at 10 (JCT 11).
    gpus = [GpuSpec("g0", 20.0, 1.0, "n0"), GpuSpec("g1", 24.0, 1.0, "n0"),
            GpuSpec("g2", 18.0, 1.0, "n1"), GpuSpec("g3", 16.0, 1.0, "n1")]
    tasks = [T("X", 20, dur=10, preemptible=False), T("Y", 18, dur=4, preemptible=False),
             T("G", 16, dur=2, release=1, gpus=2), T("L", 16, dur=20, release=1, preemptible=False)]
    r = simulate(tasks, policy="market", gpus=gpus, policy_options={"steer": steer})
    s = {t: (at, tuple(sorted(g))) for t, (at, g) in starts(r).items()}
    assert s["X"] == (0.0, ("g0",)) and s["Y"] == (0.0, ("g2",))
    if steer:
        assert s["L"] == (1.0, ("g1",)) and s["G"] == (4.0, ("g2", "g3"))
        assert r.jct() == pytest.approx({"X": 10, "Y": 4, "G": 5, "L": 20})
    else:
        assert s["L"] == (1.0, ("g3",)) and s["G"] == (10.0, ("g0", "g1"))
        assert r.jct() == pytest.approx({"X": 10, "Y": 4, "G": 11, "L": 20})
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_steer_must_be_a_flag():
    with pytest.raises(InputError, match="steer must be true or false"):
        simulate(TINY, policy="market", gpus=TINY_GPU, policy_options={"steer": "yes"})
