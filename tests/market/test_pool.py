"""The placement pre-check of the engine's backfill: ``may_fit`` never skips a task that
``find_placement`` would place (checked against it and a brute-force count), and says no."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gensolver.market.pool import Steer, TablePool, find_placement, free_by_node, may_fit, place
from gensolver.model.tasks import GpuSpec, Task


def _pool(used: list[tuple[float, float]], down: list[bool]) -> TablePool:
    """Four GPUs of 16 GiB on two nodes; GPU ``i`` holds ``used[i]`` (memory, compute) of one
    running task, and is down where ``down[i]``."""
    pool = TablePool([GpuSpec(f"g{i}", 16.0, node=f"n{i // 2}") for i in range(4)], now=0.0, lease=5)
    for i, (m, c) in enumerate(used):
        if m > 0:
            pool.add(Task(f"r{i}", m, m, 10, 1.0, compute=c), remaining=10.0, gpus=(f"g{i}",), memory=m)
    for i, d in enumerate(down):
        pool.gpus[f"g{i}"].up = not d
    return pool


def _brute(pool: TablePool, gpus: int, memory: float, compute: float) -> bool:
    for members in pool.nodes.values():
        ok = [g for g in members if pool.gpus[g].up and pool.gpus[g].fits(memory, compute)]
        if len(ok) >= gpus:
            return True
    return False


@settings(max_examples=60, deadline=None, derandomize=True)
@given(used=st.lists(st.tuples(st.sampled_from([0.0, 4.0, 8.0, 12.0, 16.0]), st.sampled_from([0.25, 0.5, 1.0])),
                     min_size=4, max_size=4),
       down=st.lists(st.booleans(), min_size=4, max_size=4),
       memory=st.sampled_from([2.0, 4.0, 8.0, 12.0, 16.0]), gpus=st.sampled_from([1, 2]),
       compute=st.sampled_from([0.25, 0.5, 1.0]))
def test_may_fit_is_necessary_for_a_placement(used, down, memory, gpus, compute):
    pool = _pool(used, down)
    task = Task("w", memory, memory, 5, 1.0, gpus=gpus, compute=compute)
    pool.add(task, remaining=5.0)
    free = free_by_node(pool)
    assert may_fit(free, gpus, memory, compute) == _brute(pool, gpus, memory, compute)
    if find_placement(pool, pool.tasks["w"], memory) is not None:
        assert may_fit(free, gpus, memory, compute)


def test_may_fit_says_no():
    pool = _pool([(12.0, 0.5), (16.0, 1.0), (4.0, 0.5), (0.0, 0.0)], [False, False, False, True])
    free = free_by_node(pool)
    assert may_fit(free, 1, 12.0, 0.5)  # g2: 12 GiB and half a GPU free
    assert not may_fit(free, 1, 12.0, 1.0)  # compute short everywhere up
    assert not may_fit(free, 2, 4.0, 0.5)  # no node has two GPUs up with 4 GiB free (g3 is down)
    assert not may_fit(free, 1, 13.0, 0.1)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(used=st.lists(st.tuples(st.sampled_from([0.0, 4.0, 8.0, 12.0, 16.0]), st.sampled_from([0.25, 0.5, 1.0])),
                     min_size=4, max_size=4),
       down=st.lists(st.booleans(), min_size=4, max_size=4),
       memory=st.sampled_from([2.0, 4.0, 8.0, 12.0, 16.0]), gpus=st.sampled_from([1, 2]),
       compute=st.sampled_from([0.25, 0.5, 1.0]), steered=st.booleans())
# best fit alone picks n1 (no memory left over there) where n0 fits as well: steering moves it
@example(used=[(0.0, 0.25)] * 2 + [(8.0, 0.25)] * 2, down=[False] * 4, memory=8.0, gpus=2, compute=0.25, steered=True)
@example(used=[(0.0, 0.25)] * 2 + [(8.0, 0.25)] * 2, down=[False] * 4, memory=8.0, gpus=1, compute=0.25, steered=True)
def test_steering_prefers_other_nodes_and_never_strands_a_task(used, down, memory, gpus, compute, steered):
    """``place`` under a :class:`Steer` of node ``n1``: a steered task goes off ``n1`` whenever
    a node off it fits (brute force on ``n0`` alone), else wherever ``find_placement`` goes; an
    unsteered task goes where ``find_placement`` goes."""
    pool = _pool(used, down)
    t = Task("w", memory, memory, 5, 1.0, gpus=gpus, compute=compute)
    pool.add(t, remaining=5.0)
    st_ = pool.tasks["w"]
    steer = Steer(frozenset({"g2", "g3"}), frozenset({"w"} if steered else set()))
    got = place(pool, st_, memory, steer=steer)
    plain = find_placement(pool, st_, memory)
    assert (got is None) == (plain is None)  # steering never leaves a task waiting that fits
    if not steered:
        assert got == plain
        return
    off = [g for g in pool.nodes["n0"] if pool.gpus[g].up and pool.gpus[g].fits(memory, compute)]
    if len(off) >= gpus:
        assert got is not None and set(got) <= {"g0", "g1"}
        if used[2][0] == 8.0 == used[3][0] == memory and not any(down):
            assert set(plain) & {"g2", "g3"}  # the example is one where steering matters
    else:
        assert got == plain
