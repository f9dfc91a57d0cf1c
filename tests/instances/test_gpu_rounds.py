"""GPU rounds: statistics, and the compact form and its expansion share one optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gensolver import solve
from gensolver.instances import GPU_MEMORIES, generate, gpu_round, trace_round
from gensolver.model import GpuRound, task_steps, task_value
from gensolver.verify import check_allocation


def _options(rnd: GpuRound, k: int) -> list[tuple[tuple[int, ...], float, int, int, float]]:
    """Every (gpus, memory, start, length, value) of task ``k``, enumerated here from the
    documented utility model (not from GpuRound.options)."""
    task = rnd.tasks[k]
    if task.min_memory == task.preferred_memory or rnd.memory_levels <= 1:
        levels = [task.preferred_memory]
    else:
        levels = sorted(set(np.linspace(task.min_memory, task.preferred_memory, rnd.memory_levels).tolist()))
    nodes: dict[str, list[int]] = {}
    for g, spec in enumerate(rnd.gpus):
        nodes.setdefault(spec.node, []).append(g)
    if task.gpus == 1:
        groups = [(g,) for g in range(len(rnd.gpus))]
    else:
        groups = [tuple(m[i:i + task.gpus]) for m in nodes.values() for i in range(0, len(m) - task.gpus + 1, task.gpus)]
    end = rnd.steps if task.deadline is None else min(rnd.steps, task.deadline)
    out = []
    for mem in levels:
        length = task_steps(task, mem)
        for group in groups:
            if any(rnd.gpus[g].memory < mem - 1e-9 or rnd.gpus[g].compute < task.compute - 1e-9 for g in group):
                continue
            for start in range(task.release, end - length + 1):
                v = task_value(task, start + length)
                if v > 0:
                    out.append((group, mem, start, length, v))
    return out


def _brute_force_compact(rnd: GpuRound) -> float:
    opts = [[None, *_options(rnd, k)] for k in range(len(rnd.tasks))]
    best = 0.0
    for choice in itertools.product(*opts):
        mem = np.zeros((len(rnd.gpus), rnd.steps))
        comp = np.zeros((len(rnd.gpus), rnd.steps))
        total = 0.0
        for k, opt in enumerate(choice):
            if opt is None:
                continue
            group, m, start, length, v = opt
            for g in group:
                mem[g, start:start + length] += m
                comp[g, start:start + length] += rnd.tasks[k].compute
            total += v
        caps_m = np.array([g.memory for g in rnd.gpus])[:, None]
        caps_c = np.array([g.compute for g in rnd.gpus])[:, None]
        if np.all(mem <= caps_m + 1e-9) and np.all(comp <= caps_c + 1e-9):
            best = max(best, total)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_compact_and_expansion_have_the_same_optimum(seed: int) -> None:
    rnd = gpu_round(2, 3, 3, seed=seed, gpu_memories=(24.0, 40.0), per_node=2, max_duration=2,
                    gang_prob=0.3, memory_levels=2)
    expected = _brute_force_compact(rnd)
    inst = rnd.expand()
    alloc = solve(inst, method="cpsat")
    cert = check_allocation(inst, alloc.winners, welfare=alloc.welfare)
    assert cert.feasible, cert.violations
    assert alloc.welfare == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # the number of XOR bids equals the options enumerated from the utility model
    assert inst.n_bids == sum(len(_options(rnd, k)) for k in range(len(rnd.tasks)))


def test_gpu_round_statistics() -> None:
    rnd = gpu_round(16, 400, 8, seed=3, per_node=4)
    assert {g.memory for g in rnd.gpus} <= set(GPU_MEMORIES)
    for node in {g.node for g in rnd.gpus}:
        assert len({g.memory for g in rnd.gpus if g.node == node}) == 1
    pref = np.array([t.preferred_memory for t in rnd.tasks])
    assert pref.min() >= 2 and pref.max() <= 0.9 * max(GPU_MEMORIES)
    assert 12 < np.median(pref) < 21  # log-normal, median 16 GiB
    ratio = np.array([t.min_memory / t.preferred_memory for t in rnd.tasks])
    assert ratio.min() >= 0.45 and ratio.max() <= 1.0
    assert all(1 <= t.duration <= 3 and 0 <= t.release <= 8 // 3 for t in rnd.tasks)
    assert {t.compute for t in rnd.tasks} == {0.25, 0.5, 1.0}
    assert 0.05 < np.mean([t.gpus == 2 for t in rnd.tasks]) < 0.16
    assert 0.4 < np.mean([t.deadline is not None for t in rnd.tasks]) < 0.6
    inst = generate("gpu", seed=3, n_gpus=4, n_tasks=6, steps=4)
    assert inst.metadata["family"] == "gpu" and inst.n_bidders <= 6
    assert all(set(dict(s.capacity)) == {"memory", "compute"} for s in inst.slots)


@pytest.mark.parametrize("source", ["alibaba", "philly"])
def test_trace_rounds(shared_dir, source: str) -> None:
    a = trace_round(source, 8, 10, 4, seed=4, trace_dir=shared_dir / "traces")
    b = trace_round(source, 8, 10, 4, seed=4, trace_dir=shared_dir / "traces")
    assert a.to_dict() == b.to_dict()
    assert 1 <= len(a.tasks) <= 10 and len(a.gpus) == 8
    prefix = "openb-pod-" if source == "alibaba" else "philly-"
    assert all(t.id.startswith(prefix) for t in a.tasks)
    assert all(0 < t.min_memory <= t.preferred_memory <= max(g.memory for g in a.gpus) for t in a.tasks)
    assert all(1 <= t.duration <= 4 and 0 <= t.release < 4 for t in a.tasks)
    inst = a.expand()
    alloc = solve(inst, method="cpsat", time_limit=20)
    assert check_allocation(inst, alloc.winners).feasible


def test_trace_round_missing_folder(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="GENSOLVER_TRACES"):
        trace_round("alibaba", seed=0, trace_dir=tmp_path / "none")
    with pytest.raises(ValueError, match="source"):
        trace_round("google", seed=0)
