"""The size model of a round (issue 32): :meth:`GpuRound.expansion_size` is computed in closed
form, before anything is allocated, and is checked here against a count of the expansion
itself; limits come from documented environment variables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gensolver.errors import InputError
from gensolver.instances import gpu_round
from gensolver.model import GpuRound, Task
from gensolver.model.inputs import SizeLimitError
from gensolver.model.tasks import MAX_MEMORY_GIB, GpuSpec, task_steps
from gensolver.model.validate import InstanceError


def _counted(rnd: GpuRound) -> int:
    """Slots, bids and demand entries of the expansion, counted on the expansion itself."""
    inst = rnd.expand()
    return len(inst.slots) + sum(1 + len(b.demand) for b in inst.bids)


@pytest.mark.parametrize("seed", range(8))
def test_expansion_size_equals_a_count_of_the_expansion(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rnd = gpu_round(n_gpus=int(rng.integers(1, 9)), n_tasks=int(rng.integers(1, 12)), steps=int(rng.integers(2, 14)),
                    seed=seed, memory_levels=int(rng.integers(1, 5)), max_duration=int(rng.integers(1, 5)),
                    gang_prob=0.4)
    # values are positive and urgency < 1 in these rounds, so every option is a bid: the bound is exact
    assert all(t.value > 0 and t.urgency < 1 for t in rnd.tasks)
    assert rnd.expansion_size() == _counted(rnd)


def test_expansion_size_bounds_rounds_where_late_options_are_worthless() -> None:
    base = gpu_round(n_gpus=3, n_tasks=6, steps=10, seed=3)
    tasks = tuple(Task(**{**t.to_dict(), "urgency": 1.0}) for t in base.tasks)
    rnd = GpuRound(base.gpus, tasks, base.steps, base.step_seconds, base.memory_levels)
    assert rnd.expansion_size() >= _counted(rnd)


def test_the_check_can_fail() -> None:
    """The count above is not the bound's own arithmetic: a round with one more step differs."""
    rnd = gpu_round(n_gpus=2, n_tasks=3, steps=6, seed=1)
    longer = GpuRound(rnd.gpus, rnd.tasks, rnd.steps + 1, rnd.step_seconds, rnd.memory_levels)
    assert longer.expansion_size() != _counted(rnd)


def test_expansion_over_the_limit_is_refused_before_expanding(monkeypatch) -> None:
    rnd = gpu_round(n_gpus=2, n_tasks=3, steps=6, seed=1)
    size = rnd.expansion_size()
    monkeypatch.setenv("GENSOLVER_MAX_ROUND_ENTRIES", str(size - 1))
    with pytest.raises(SizeLimitError, match="GENSOLVER_MAX_ROUND_ENTRIES") as info:
        rnd.expand()
    assert info.value.amount == size and info.value.field == "/steps"
    monkeypatch.setenv("GENSOLVER_MAX_ROUND_ENTRIES", str(size))
    assert len(rnd.expand().bids) > 0


def test_a_huge_step_count_costs_nothing_to_refuse() -> None:
    """10**12 steps: the bound is arithmetic, not an enumeration of the starts."""
    t = Task("t", 40.0, 10.0, 1, 5.0)
    rnd = GpuRound((GpuSpec("g", 80.0),), (t,), 10**12, 60.0, 3)
    assert rnd.expansion_size() > 10**12
    with pytest.raises(SizeLimitError):
        rnd.expand()


def test_memory_levels_limit_follows_its_variable(monkeypatch) -> None:
    g = (GpuSpec("g", 80.0),)
    with pytest.raises(SizeLimitError, match="GENSOLVER_MAX_MEMORY_LEVELS"):
        GpuRound(g, (), 4, 60.0, 10**9)
    monkeypatch.setenv("GENSOLVER_MAX_MEMORY_LEVELS", "5")
    GpuRound(g, (), 4, 60.0, 5)
    with pytest.raises(SizeLimitError):
        GpuRound(g, (), 4, 60.0, 6)
    monkeypatch.setenv("GENSOLVER_MAX_MEMORY_LEVELS", "zero")
    with pytest.raises(InputError, match="GENSOLVER_MAX_MEMORY_LEVELS"):
        GpuRound(g, (), 4, 60.0, 1)


@pytest.mark.parametrize("elasticity, ok", [(1.0, True), (500.0, True), (505.0, False), (1e308, False)])
def test_elasticity_is_bounded_by_the_slowest_speed(elasticity: float, ok: bool) -> None:
    """min/pref = 1/4: ln 4 * e <= 700 iff e <= 504.9."""
    if ok:
        t = Task("t", 40.0, 10.0, 1, 5.0, elasticity=elasticity)
        speed = (t.min_memory / t.preferred_memory) ** t.elasticity
        assert speed > 0 and math.isfinite(1 / speed)
    else:
        with pytest.raises(InstanceError, match="elasticity"):
            Task("t", 40.0, 10.0, 1, 5.0, elasticity=elasticity)


def test_equal_memories_take_any_elasticity() -> None:
    t = Task("t", 40.0, 40.0, 1, 5.0, elasticity=1e308)
    assert task_steps(t, 40.0) == 1


def test_task_steps_saturates_instead_of_overflowing() -> None:
    t = Task("t", 40.0, 1e-300, 10**300, 5.0, elasticity=1.0)
    assert task_steps(t, 1e-300) >= 2**62  # never offered, no OverflowError


def test_memories_are_bounded() -> None:
    with pytest.raises(InstanceError, match="/gpus/0/memory"):
        GpuRound((GpuSpec("g", MAX_MEMORY_GIB * 2),), (), 4)
    GpuRound((GpuSpec("g", MAX_MEMORY_GIB),), (), 4)
    with pytest.raises(InstanceError, match="preferred_memory"):
        Task("t", MAX_MEMORY_GIB * 2, 1.0, 1, 5.0)


def test_values_whose_sum_overflows_are_refused_on_expansion() -> None:
    g = (GpuSpec("g0", 80.0), GpuSpec("g1", 80.0))
    tasks = (Task("a", 40.0, 40.0, 1, 1e308), Task("b", 40.0, 40.0, 1, 1e308))
    with pytest.raises(InstanceError, match="overflow"):
        GpuRound(g, tasks, 2).expand()
