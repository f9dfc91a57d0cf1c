"""The one speed law (task_speed, task_steps) against a step-by-step count."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gensolver.model.tasks import Task, task_speed, task_steps


def _count_steps(work: float, pref: float, mem: float, elasticity: float) -> int:
    """Steps until the accumulated progress reaches ``work``, one step at a time."""
    per_step = (min(mem, pref) / pref) ** elasticity
    done, n = 0.0, 0
    while done < work - 1e-9 * max(1.0, per_step * 1e3):
        done += per_step
        n += 1
    return max(1, n)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(pref=st.sampled_from([4.0, 8.0, 16.0]), frac=st.sampled_from([0.5, 0.75, 1.0, 1.5]),
       elasticity=st.sampled_from([0.0, 0.5, 1.0, 2.0]), duration=st.integers(1, 30), work=st.integers(1, 40))
def test_steps_match_a_step_by_step_count(pref, frac, elasticity, duration, work):
    t = Task("t", pref, pref / 2, duration, 1.0, elasticity=elasticity)
    mem = max(pref * frac, pref / 2)
    assert task_steps(t, mem) == _count_steps(duration, pref, mem, elasticity)
    assert task_steps(t, mem, work=work) == _count_steps(work, pref, mem, elasticity)


def test_memory_beyond_preferred_does_not_speed_up():
    t = Task("t", 8.0, 4.0, 10, 1.0, elasticity=1.0)
    assert task_speed(t, 16.0) == 1.0 and task_steps(t, 16.0) == 10
    assert task_speed(t, 4.0) == 0.5 and task_steps(t, 4.0) == 20
