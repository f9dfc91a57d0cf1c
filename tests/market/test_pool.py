"""Placement: the backfill's pre-check ``may_fit`` never skips a task that ``find_placement``
would place (checked against it and a brute-force count), and says no; steering; and the
greedy clearing, which serves whom the score order serves and moves no running task it need
not (checked against the plain score-order loop and a capacity sum from the tasks)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gensolver.market.pool import (
    Steer,
    TablePool,
    find_placement,
    free_by_node,
    greedy_round,
    may_fit,
    pinned_free_capacity,
    place,
)
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


# --- greedy_round: the score order decides who is served; no needless move -------------------

def _score_order_loop(pool, order, cap):
    """The score-order loop with no second seating (the rule before moves were avoided): each
    task in ``order`` on its own GPUs where they still fit, else best fit at preferred memory."""
    plan = {}
    for s in order:
        if s.state == "running" and all(cap[g][0] + 1e-9 >= s.memory and cap[g][1] + 1e-9 >= s.compute for g in s.gpus):
            group, mem = s.gpus, s.memory
        else:
            mem = s.task.preferred_memory
            group = find_placement(pool, s, mem, capacity=cap)
        if group is None:
            continue
        plan[s.id] = group
        for g in group:
            cap[g] = (cap[g][0] - mem, cap[g][1] - s.task.compute)
    return plan


def _overfull(pool, plan) -> list[str]:
    """GPUs a plan overfills, summed from the tasks themselves: non-preemptible running tasks
    stay; a served running task on its own GPUs keeps its memory, any other served task holds
    its preferred memory; preemptible running tasks left out hold nothing."""
    held = {g: [0.0, 0.0] for g in pool.gpus}
    for s in pool.tasks.values():
        if s.state == "running" and not s.task.preemptible:
            group, mem = s.gpus, s.memory
        elif s.id in plan:
            group = plan[s.id]
            mem = s.memory if s.state == "running" and group == s.gpus else s.task.preferred_memory
        else:
            continue
        for g in group:
            held[g][0] += mem
            held[g][1] += s.task.compute
    return [g for g, (m, c) in held.items()
            if m > pool.gpus[g].spec.memory + 1e-6 or c > pool.gpus[g].spec.compute + 1e-6]


def _moves(pool, plan) -> int:
    return sum(1 for s in pool.tasks.values() if s.state == "running" and s.id in plan and plan[s.id] != s.gpus)


def _swap_pool() -> TablePool:
    """GPU ``a`` (12 GiB) runs preemptible ``x`` (6 GiB); ``b`` (16 GiB) is idle; ``w`` (10 GiB)
    waits. Best fit puts ``w`` on ``a`` (2 GiB left, against 6 on ``b``)."""
    pool = TablePool([GpuSpec("a", 12.0, node="n"), GpuSpec("b", 16.0, node="n")], now=10.0, lease=5)
    pool.add(Task("x", 6.0, 6.0, 50, 1.0, compute=0.25), remaining=40.0, gpus=("a",), memory=6.0)
    pool.add(Task("w", 10.0, 10.0, 5, 1.0, compute=0.25), remaining=5.0)
    return pool


def test_a_running_task_is_not_moved_to_make_room_that_exists_elsewhere():
    pool = _swap_pool()
    order = [pool.tasks["w"], pool.tasks["x"]]
    old = _score_order_loop(pool, order, dict(pinned_free_capacity(pool)))
    assert old == {"w": ("a",), "x": ("b",)}  # the loop alone restarts x on b in the same instant
    cap = dict(pinned_free_capacity(pool))
    plan = greedy_round(pool, order, cap)
    assert plan == {"w": ("b",), "x": ("a",)}
    assert _overfull(pool, plan) == []
    assert cap == {"a": (6.0, 0.75), "b": (6.0, 0.75)}  # what the plan took, and nothing else


def test_the_overfill_check_can_fail():
    pool = _swap_pool()
    assert _overfull(pool, {"w": ("a",), "x": ("a",)}) == ["a"]
    assert _overfull(pool, {"w": ("b",), "x": ("a",)}) == []


def _mixed_pool(gpus, running, waiting) -> TablePool:
    """GPUs of the given memories on two nodes; running tasks placed while they fit (some
    non-preemptible); the waiting tasks, some of them gangs of two."""
    pool = TablePool([GpuSpec(f"g{i}", m, node=f"n{i % 2}") for i, m in enumerate(gpus)], now=10.0, lease=5)
    for k, (gi, mem, pre) in enumerate(running):
        g = f"g{gi % len(gpus)}"
        if pool.gpus[g].fits(mem, 0.25):
            pool.add(Task(f"r{k}", mem, mem, 50, 1.0, compute=0.25, preemptible=pre), remaining=30.0, gpus=(g,), memory=mem)
    for k, (mem, two) in enumerate(waiting):
        pool.add(Task(f"w{k}", mem, mem, 5, 1.0, compute=0.25, gpus=2 if two else 1), remaining=5.0)
    return pool


@settings(max_examples=150, deadline=None, derandomize=True)
@given(gpus=st.lists(st.sampled_from([12.0, 16.0, 24.0]), min_size=2, max_size=5),
       running=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([4.0, 6.0, 8.0, 12.0]), st.booleans()),
                        max_size=7),
       waiting=st.lists(st.tuples(st.sampled_from([4.0, 6.0, 10.0, 12.0]), st.booleans()), max_size=5),
       seed=st.randoms(use_true_random=False))
def test_greedy_round_serves_the_score_orders_tasks_and_moves_no_more(gpus, running, waiting, seed):
    """Against the plain score-order loop: the same tasks served, no more running tasks moved,
    and no GPU overfilled (summed again from the tasks)."""
    pool = _mixed_pool(gpus, running, waiting)
    order = [s for s in pool.tasks.values() if s.state == "waiting" or s.task.preemptible]
    seed.shuffle(order)
    old = _score_order_loop(pool, order, dict(pinned_free_capacity(pool)))
    plan = greedy_round(pool, order, dict(pinned_free_capacity(pool)))
    assert set(plan) == set(old)
    assert _moves(pool, plan) <= _moves(pool, old)
    assert _overfull(pool, plan) == []
