"""What the round-by-round market engine sees of a cluster: a structural interface.

:class:`gensolver.market.engine.CreditEngine` clears rounds against any object with this shape
(:class:`Pool`): the simulator's :class:`gensolver.sim.engine.Cluster` is one, and a service
can present its task table as another. Nothing here imports the simulator.

The placement helpers (:func:`find_placement`, :func:`pinned_free_capacity`) and the observed
progress (:func:`attained`) live here because the engine needs them; the simulator's policies
import them from :mod:`gensolver.sim.policies.base`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Protocol, Sequence

import numpy as np

from ..model.tasks import GpuSpec, Task, TaskIds, task_speed
from ..model.tolerances import CAPACITY_ABS_TOL

__all__ = ["TOL", "Pool", "TaskView", "GpuView", "TablePool", "attained", "remaining", "find_placement", "pinned_free_capacity",
           "Steer", "place", "free_by_node", "greedy_round", "may_fit", "may_fit_many", "may_start_any", "backfill_queue"]

#: capacity tolerance of placements (the simulator's, :data:`gensolver.sim.records.TOL`; both are
#: :data:`gensolver.model.tolerances.CAPACITY_ABS_TOL`)
TOL = CAPACITY_ABS_TOL
#: queues longer than this are checked at once (:func:`may_fit_many`) by :func:`backfill_queue` and
#: :func:`may_start_any`, shorter ones task by task (the same answers either way)
SCAN = 8


class TaskView(Protocol):
    """One task as the engine sees it: its report (``task``), its state (``"waiting"`` or
    ``"running"``), its placement and what the scheduler has observed of its progress."""

    @property
    def task(self) -> Task: ...
    @property
    def id(self) -> str: ...
    @property
    def arrival(self) -> float: ...
    @property
    def state(self) -> str: ...
    @property
    def gpus(self) -> tuple[str, ...]: ...
    @property
    def memory(self) -> float: ...
    @property
    def compute(self) -> float: ...
    @property
    def speed(self) -> float: ...
    @property
    def since(self) -> float: ...
    @property
    def executed(self) -> float: ...
    @property
    def overhead(self) -> float: ...
    @property
    def lost(self) -> float: ...
    @property
    def factor(self) -> float: ...
    @property
    def inter(self) -> float: ...


class GpuView(Protocol):
    """One GPU: its spec, whether it is up, the tasks on it and its free capacity."""

    @property
    def spec(self) -> GpuSpec: ...
    @property
    def up(self) -> bool: ...
    @property
    def tasks(self) -> Collection[str]: ...
    @property
    def free_memory(self) -> float: ...
    @property
    def free_compute(self) -> float: ...
    def fits(self, memory: float, compute: float) -> bool: ...


class Pool(Protocol):
    """The cluster a round is cleared on, and the three actions the engine takes on it
    (``start``, ``stop``, ``resize``; each refuses a placement over capacity) plus ``emit``
    (credit movements: ``emit("credit", tenant=..., amount=..., note=..., task=...)``)."""

    @property
    def now(self) -> float: ...
    @property
    def lease(self) -> int: ...
    @property
    def gpus(self) -> Mapping[str, Any]: ...
    @property
    def nodes(self) -> Mapping[str, Sequence[str]]: ...
    @property
    def tasks(self) -> Mapping[str, Any]: ...
    def waiting(self) -> list[Any]: ...
    def running(self) -> list[Any]: ...
    def up_gpus(self) -> Sequence[Any]: ...
    def model_ok(self, task_id: str, gpu: str) -> bool: ...
    def start(self, task_id: str, gpus: Sequence[str], memory: float) -> None: ...
    def stop(self, task_id: str, *, reason: str = "preempt") -> None: ...
    def resize(self, task_id: str, memory: float) -> None: ...
    def emit(self, kind: str, **kw: Any) -> None: ...


Finish = Callable[[TaskView], None]


def attained(st: TaskView, now: float) -> float:
    """Useful work ``st`` has done by ``now`` (steps at speed 1; restore and rolled-back work
    excluded), counting the progress of a running task since its last event: what the
    scheduler observes, whatever the task reported."""
    run = (now - st.since) * st.speed if st.state == "running" else 0.0
    return st.executed + max(0.0, run) - st.overhead - st.lost


def remaining(st: TaskView, now: float, kappa: float) -> float:
    """Work (steps at speed 1) task ``st`` has left at ``now`` if its report, calibrated by its
    tenant's duration factor ``kappa``, holds (0 once it is past it)."""
    return max(0.0, st.task.duration * kappa - attained(st, now))


def pinned_free_capacity(cluster: Pool) -> dict[str, tuple[float, float]]:
    """``{gpu: (memory, compute)}`` left on each up GPU by its non-preemptible tasks: what a
    policy that may preempt can re-plan (preemptible tasks' shares count as free)."""
    cap: dict[str, tuple[float, float]] = {}
    for g, gs in cluster.gpus.items():
        if not gs.up:
            continue
        m, c = gs.spec.memory, gs.spec.compute
        for tid in sorted(gs.tasks):  # a fixed order: float sums must not follow string hashes
            s = cluster.tasks[tid]
            if not s.task.preemptible:
                m -= s.memory
                c -= s.compute
        cap[g] = (m, c)
    return cap


def find_placement(cluster: Pool, st: TaskView, memory: float, *, fit: str = "best", whole: bool = False,
                   capacity: Mapping[str, tuple[float, float]] | None = None) -> tuple[str, ...] | None:
    """GPUs (one node, ``st.task.gpus`` of them) that can host ``memory`` GiB each, or ``None``.

    ``fit="best"`` picks the group with the least memory left over (best fit), ``"first"`` the
    first in GPU order, ``"most"`` the one with the most free memory (leftovers compared to
    1e-9 GiB, so float noise in memory sums never decides between GPUs). ``whole`` needs idle GPUs
    with at least the task's minimum memory. ``capacity`` (gpu -> free memory, compute)
    overrides the cluster's free capacity (used for planning).
    """
    t = st.task
    k = t.gpus
    best: tuple[float, tuple[str, ...]] | None = None
    for members in cluster.nodes.values():
        ok: list[tuple[float, str]] = []
        for g in members:
            gs = cluster.gpus[g]
            if not gs.up or not cluster.model_ok(t.id, g):
                continue
            fm, fc = capacity[g] if capacity is not None else (gs.free_memory, gs.free_compute)
            if whole:
                if gs.tasks or gs.spec.memory + TOL < t.min_memory or fm + TOL < gs.spec.memory:
                    continue
                ok.append((gs.spec.memory - t.preferred_memory if gs.spec.memory >= t.preferred_memory
                           else 1e6 + t.preferred_memory - gs.spec.memory, g))
            elif fm + TOL >= memory and fc + TOL >= t.compute:
                # leftover to 1e-9 GiB: float noise in memory sums (or a correction planned a relative
                # 1e-12 above the truth) must not decide between GPUs; ties: the smaller card
                ok.append((round(fm - memory, 9) + 1e-6 * gs.spec.memory, g))
        if whole and k > 1:  # a whole-GPU gang takes identical devices
            buckets: dict[float, list[tuple[float, str]]] = {}
            for sc, g in ok:
                buckets.setdefault(cluster.gpus[g].spec.memory, []).append((sc, g))
            ok = min((b for b in buckets.values() if len(b) >= k), key=lambda b: b[0][0], default=[])
        if len(ok) < k:
            continue
        if fit == "first":
            group = tuple(g for _, g in ok[:k])
            return group
        ok.sort(key=lambda p: -p[0] if fit == "most" else p[0])
        chosen = ok[:k]
        score = sum(s for s, _ in chosen)
        if fit == "most":
            score = -score
        if best is None or score < best[0] - 1e-12:
            best = (score, tuple(g for _, g in chosen))
    if best is None:
        return None
    return best[1]


@dataclass(frozen=True)
class Steer:
    """One pass's placement steering (made by :func:`gensolver.market.reservation.gang_steer`):
    a task of ``tasks`` takes a group with a GPU of ``gpus`` only where no group off them fits.

    Attributes
    ----------
    gpus : frozenset of str
        The GPUs to keep clear (the node a waiting gang is planned on).
    tasks : frozenset of str
        The waiting tasks steered off them.
    """

    gpus: frozenset[str]
    tasks: frozenset[str]


def place(cluster: Pool, st: TaskView, memory: float, *, fit: str = "best",
          capacity: Mapping[str, tuple[float, float]] | None = None, steer: Steer | None = None
          ) -> tuple[str, ...] | None:
    """:func:`find_placement` under ``steer``: a steered task looks off ``steer.gpus`` first,
    then (nothing fitting there) anywhere, so steering never leaves a task waiting that fits."""
    if steer is not None and st.id in steer.tasks:
        base = capacity if capacity is not None else {g: (gs.free_memory, gs.free_compute)
                                                      for g, gs in cluster.gpus.items()}
        away = {g: ((-1.0, -1.0) if g in steer.gpus else c) for g, c in base.items()}
        gpus = find_placement(cluster, st, memory, fit=fit, capacity=away)
        if gpus is not None:
            return gpus
    return find_placement(cluster, st, memory, fit=fit, capacity=capacity)


def greedy_round(cluster: Pool, order: Sequence[TaskView], cap: dict[str, tuple[float, float]], *,
                 steer: Steer | None = None) -> dict[str, tuple[str, ...]]:
    """A round cleared in ``order`` on ``cap`` (``{gpu: (memory, compute)}`` free to plan;
    updated in place), each task at its preferred memory, best fit (:func:`place` under
    ``steer``), a running task keeping its GPUs when they still fit: ``{task id: gpus}`` of the
    tasks served (the credit engine's ``clearing="greedy"``).

    The score order decides *who* is served. Where it also moves a served running task (a
    better-scored task took its GPU first, so it would restart elsewhere in the same instant
    and lose the work since its last checkpoint), the served tasks are seated again: every
    served running task on its own GPUs first, the others best fit around them in score order;
    a task that then finds no room is seated first, on the GPUs the score order gave it, and
    the rest again. The first such placement that seats every served task is kept if it moves
    fewer running tasks (at most one try per served task); otherwise the score order's. So the
    same tasks are served, and never more of them move.
    """
    plan = _seat(cluster, order, dict(cap), steer, {}, keep=False)
    served = [st for st in order if st.id in plan]

    def moves(p: Mapping[str, tuple[str, ...]]) -> int:
        return sum(1 for st in served if st.state == "running" and p.get(st.id) != st.gpus)

    pinned: dict[str, tuple[str, ...]] = {}
    while moves(plan) and len(pinned) < len(served):
        again = _seat(cluster, served, dict(cap), steer, pinned, keep=True)
        short = [st.id for st in served if st.id not in again]
        if not short:
            if moves(again) < moves(plan):
                plan = again
            break
        if all(t in pinned for t in short):  # pinned tasks fit (a subset of the first plan, seated
            break  # first); only a summation-order ulp could refuse one: never loop on it
        pinned.update((t, plan[t]) for t in short)
    for st in served:  # what the plan takes from cap
        mem = _holds(st, plan[st.id])
        for g in plan[st.id]:
            cap[g] = (cap[g][0] - mem, cap[g][1] - st.task.compute)
    return plan


def _holds(st: TaskView, group: tuple[str, ...]) -> float:
    """Memory per GPU a served task holds on ``group``: its own where it stays, else its preferred."""
    return st.memory if st.state == "running" and group == st.gpus else st.task.preferred_memory


def _seat(cluster: Pool, order: Sequence[TaskView], cap: dict[str, tuple[float, float]], steer: Steer | None,
          pinned: Mapping[str, tuple[str, ...]], *, keep: bool) -> dict[str, tuple[str, ...]]:
    """:func:`greedy_round`'s placement on ``cap`` (a copy, spent here): the ``pinned`` tasks on
    their GPUs, then in ``order`` (with ``keep``: every running task that fits on its own GPUs
    before the others) each running task on its GPUs where they fit, else best fit."""
    plan: dict[str, tuple[str, ...]] = {}

    def take(st: TaskView, group: tuple[str, ...], mem: float) -> None:
        plan[st.id] = group
        for g in group:
            cap[g] = (cap[g][0] - mem, cap[g][1] - st.task.compute)

    def stays(st: TaskView) -> bool:
        return st.state == "running" and all(cap[g][0] + TOL >= st.memory and cap[g][1] + TOL >= st.compute
                                             for g in st.gpus)

    for st in order:
        group = pinned.get(st.id)
        if group is not None:
            mem = _holds(st, group)
            if all(cap[g][0] + TOL >= mem and cap[g][1] + TOL >= st.task.compute for g in group):
                take(st, group, mem)
    if keep:
        for st in order:
            if st.id not in plan and st.id not in pinned and stays(st):
                take(st, st.gpus, st.memory)
    for st in order:
        if st.id in plan or st.id in pinned:
            continue
        if stays(st):
            take(st, st.gpus, st.memory)
        else:
            found = place(cluster, st, st.task.preferred_memory, capacity=cap, steer=steer)
            if found is not None:
                take(st, found, st.task.preferred_memory)
    return plan


def free_by_node(cluster: Pool) -> list[list[tuple[float, float]]]:
    """Per node, ``(free memory, free compute)`` of each of its up GPUs: a snapshot for
    :func:`may_fit`."""
    return [[(gs.free_memory, gs.free_compute) for gs in (cluster.gpus[g] for g in members) if gs.up]
            for members in cluster.nodes.values()]


def may_fit(free: list[list[tuple[float, float]]], gpus: int, memory: float, compute: float) -> bool:
    """Whether some node of the snapshot ``free`` (:func:`free_by_node`) has ``gpus`` GPUs with
    ``memory`` and ``compute`` free each: necessary for :func:`find_placement` to find a group
    (it checks the GPU models too), so a ``False`` skips its search."""
    return any(sum(1 for m, c in node if m + TOL >= memory and c + TOL >= compute) >= gpus for node in free)


def may_fit_many(free: list[list[tuple[float, float]]], gpus: np.ndarray, memory: np.ndarray,
                 compute: np.ndarray) -> np.ndarray:
    """:func:`may_fit` of many tasks at once: ``out[i] == may_fit(free, gpus[i], memory[i],
    compute[i])``, the same floating-point comparisons, vectorised over tasks and GPUs.

    Parameters
    ----------
    free : list of list of (float, float)
        The snapshot of :func:`free_by_node`.
    gpus, memory, compute : numpy.ndarray
        Per task: GPUs, memory per GPU and compute per GPU asked.

    Returns
    -------
    numpy.ndarray
        ``bool[n]``.
    """
    out = np.zeros(len(gpus), dtype=bool)
    for node in free:
        if not node:
            continue
        m, c = np.asarray(node, dtype=np.float64).T
        count = ((m[None, :] + TOL >= memory[:, None]) & (c[None, :] + TOL >= compute[:, None])).sum(axis=1)
        out |= count >= gpus
    return out


def backfill_start(cluster: Pool, st: TaskView, *, elastic: bool, steer: Steer | None = None) -> bool:
    """Start waiting task ``st`` on what is free now; ``True`` when it started.

    At its preferred memory where a group fits it (best fit); else, with ``elastic``, on the
    group with the most free memory, with what that group has, at least the task's minimum;
    each search under ``steer`` (:func:`place`). The work-conserving step shared by the market
    engine and the auction policy.
    """
    t = st.task
    gpus = place(cluster, st, t.preferred_memory, steer=steer)
    if gpus is not None:
        cluster.start(st.id, gpus, t.preferred_memory)
        return True
    if not elastic or t.min_memory >= t.preferred_memory:
        return False
    gpus = place(cluster, st, t.min_memory, fit="most", steer=steer)
    if gpus is None:
        return False
    free = min(cluster.gpus[g].free_memory for g in gpus)
    cluster.start(st.id, gpus, max(t.min_memory, min(t.preferred_memory, free)))
    return True


def _needs(order: Sequence[TaskView], elastic: bool) -> tuple[np.ndarray, list[float], np.ndarray]:
    """Per task of ``order``: GPUs, the least memory per GPU the backfill tries (its minimum
    with ``elastic``, else its preferred memory) and compute."""
    n = len(order)
    need = [min(st.task.min_memory, st.task.preferred_memory) if elastic else st.task.preferred_memory for st in order]
    return (np.fromiter((st.task.gpus for st in order), np.int64, n), need,
            np.fromiter((st.task.compute for st in order), float, n))


def may_start_any(cluster: Pool, waiting: Sequence[TaskView], *, elastic: bool) -> bool:
    """Whether :func:`backfill_queue` could start any of ``waiting`` now: some task fits some
    node of the free snapshot (:func:`may_fit`) at the least memory the backfill tries. When
    none does, the backfill starts nothing, whatever the order of the queue. The first
    :data:`SCAN` tasks are checked one by one (a fit is usually found early), the rest at once."""
    free = free_by_node(cluster)
    if any(may_fit(free, st.task.gpus, min(st.task.min_memory, st.task.preferred_memory) if elastic
                   else st.task.preferred_memory, st.task.compute) for st in waiting[:SCAN]):
        return True
    rest = waiting[SCAN:]
    if not rest:
        return False
    gpus, need, compute = _needs(rest, elastic)
    return bool(may_fit_many(free, gpus, np.asarray(need, dtype=float), compute).any())


def backfill_queue(cluster: Pool, order: Sequence[TaskView], *, elastic: bool,
                   start: Callable[..., bool] | None = None) -> None:
    """Start the waiting tasks of ``order`` on free capacity, in order: every one at its
    preferred memory first, then (``elastic``) those still waiting at less, at least their
    minimum, each by ``start(cluster, task, elastic=...)`` (default :func:`backfill_start`;
    whatever it is, it only starts tasks: it never frees capacity).

    A task that fits no node of the free snapshot (:func:`may_fit`, taken again after each
    start) skips the placement search. Starts only take capacity, so a task that fits nowhere
    at some point of a pass fits nowhere later in it: one vectorised check
    (:func:`may_fit_many`) drops those at once at the start of a pass, and again after a start
    once more than :data:`SCAN` tasks in a row were checked in vain (while more than
    :data:`SCAN` are left); the rest are checked one by one.
    """
    start = backfill_start if start is None else start
    for el in (False, True) if elastic else (False,):
        gpus, need, compute = _needs(order, el)
        need_a = np.asarray(need, dtype=float)
        free = free_by_node(cluster)
        scan = np.arange(len(order))
        stale, misses, pos = True, 0, 0
        while pos < scan.size:
            if stale and scan.size - pos > SCAN and (pos == 0 or misses > SCAN):  # drop those that fit nowhere now
                scan = scan[pos:][may_fit_many(free, gpus[scan[pos:]], need_a[scan[pos:]], compute[scan[pos:]])]
                stale, misses, pos = False, 0, 0
                continue
            j = int(scan[pos])
            pos += 1
            st = order[j]
            if st.state == "waiting" and may_fit(free, st.task.gpus, need[j], st.task.compute) \
                    and start(cluster, st, elastic=el):
                free = free_by_node(cluster)
                stale, misses = True, 0
            else:
                misses += 1


class TableTask:
    """A task of a :class:`TablePool`: its report, state, placement and observed progress."""

    def __init__(self, task: Task, *, remaining: float, now: float, gpus: tuple[str, ...] = (),
                 memory: float = 0.0, executed: float | None = None) -> None:
        self.task = task
        self.id = task.id
        self.arrival = float(task.release)
        self.state = "running" if gpus else "waiting"
        self.gpus = tuple(gpus)
        self.memory = float(memory)
        self.compute = task.compute if gpus else 0.0
        self.speed = task_speed(task, memory) if gpus else 0.0
        self.since = float(now)
        # attained work (steps at speed 1): as observed when given (past the report for a task that
        # outran it), else what the remaining work implies
        self.executed = max(0.0, float(task.duration) - float(remaining)) if executed is None else float(executed)
        self.overhead = self.lost = 0.0
        self.factor = self.inter = 1.0


class TableGpu:
    """A GPU of a :class:`TablePool` with the memory and compute its tasks hold."""

    def __init__(self, spec: GpuSpec) -> None:
        self.spec = spec
        self.up = True
        self.tasks = TaskIds()  # iterates in arrival order, not by string hash
        self.memory_used = self.compute_used = 0.0

    @property
    def free_memory(self) -> float:
        return self.spec.memory - self.memory_used

    @property
    def free_compute(self) -> float:
        return self.spec.compute - self.compute_used

    def fits(self, memory: float, compute: float) -> bool:
        return self.free_memory + TOL >= memory and self.free_compute + TOL >= compute


class TablePool:
    """A :class:`Pool` built from a table of tasks (a service's database rows): GPUs, the
    waiting tasks and the running ones with their placement; the engine's actions are applied
    to it and recorded in :attr:`actions` (``("start", id, gpus, memory)``, ``("stop", id)``,
    ``("resize", id, memory)``, ``("credit", fields)``) for the caller to commit.

    Raises
    ------
    ValueError
        A start or resize over a GPU's capacity (the engine never asks for one).
    """

    def __init__(self, gpus: Sequence[GpuSpec], *, now: float, lease: int) -> None:
        self.now = float(now)
        self.lease = int(lease)
        self.gpus: dict[str, TableGpu] = {g.id: TableGpu(g) for g in gpus}
        self.nodes: dict[str, list[str]] = {}
        for g in gpus:
            self.nodes.setdefault(g.node, []).append(g.id)
        self.tasks: dict[str, TableTask] = {}
        self.actions: list[tuple[Any, ...]] = []

    def add(self, task: Task, *, remaining: float, gpus: Sequence[str] = (), memory: float = 0.0,
            executed: float | None = None) -> None:
        """A waiting task (no ``gpus``) or a running one on ``gpus`` with ``memory`` GiB each;
        ``executed``: its observed work so far (default ``duration - remaining``)."""
        st = TableTask(task, remaining=remaining, now=self.now, gpus=tuple(gpus), memory=memory, executed=executed)
        self.tasks[task.id] = st
        for g in st.gpus:
            self._hold(g, st, memory, task.compute)

    def _hold(self, g: str, st: TableTask, memory: float, compute: float) -> None:
        gs = self.gpus[g]
        if memory > 0 and not gs.fits(memory, compute):
            raise ValueError(f"task {st.id!r}: {memory:g} GiB over GPU {g!r}'s free {gs.free_memory:g} GiB")
        gs.memory_used += memory
        gs.compute_used += compute
        gs.tasks.add(st.id)

    def waiting(self) -> list[Any]:
        return [s for s in self.tasks.values() if s.state == "waiting"]

    def running(self) -> list[Any]:
        return [s for s in self.tasks.values() if s.state == "running"]

    def up_gpus(self) -> list[Any]:
        return [g for g in self.gpus.values() if g.up]

    def model_ok(self, task_id: str, gpu: str) -> bool:
        return True

    def start(self, task_id: str, gpus: Sequence[str], memory: float) -> None:
        st = self.tasks[task_id]
        for g in gpus:
            self._hold(g, st, memory, st.task.compute)
        st.state, st.gpus, st.memory, st.compute = "running", tuple(gpus), float(memory), st.task.compute
        st.speed = task_speed(st.task, memory)
        self.actions.append(("start", task_id, tuple(gpus), float(memory)))

    def stop(self, task_id: str, *, reason: str = "preempt") -> None:
        st = self.tasks[task_id]
        for g in st.gpus:
            gs = self.gpus[g]
            gs.memory_used -= st.memory
            gs.compute_used -= st.compute
            gs.tasks.discard(task_id)
        st.state, st.gpus, st.memory, st.compute, st.speed = "waiting", (), 0.0, 0.0, 0.0
        self.actions.append(("stop", task_id))

    def resize(self, task_id: str, memory: float) -> None:
        st = self.tasks[task_id]
        for g in st.gpus:
            self._hold(g, st, memory - st.memory, 0.0)
        st.memory = float(memory)
        st.speed = task_speed(st.task, memory)
        self.actions.append(("resize", task_id, float(memory)))

    def emit(self, kind: str, **kw: Any) -> None:
        self.actions.append((kind, kw))
