"""The round-by-round engine on a cluster that is not the simulator's (a plain pool)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from gensolver.market.engine import CreditEngine
from gensolver.model.tasks import GpuSpec, Task


@dataclass
class _Task:
    task: Task
    state: str = "waiting"
    gpus: tuple[str, ...] = ()
    memory: float = 0.0
    compute: float = 0.0
    speed: float = 0.0
    since: float = 0.0
    executed: float = 0.0
    overhead: float = 0.0
    lost: float = 0.0
    factor: float = 1.0
    inter: float = 1.0

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def arrival(self) -> float:
        return float(self.task.release)


@dataclass
class _Gpu:
    spec: GpuSpec
    up: bool = True
    tasks: set[str] = field(default_factory=set)
    used: float = 0.0
    used_compute: float = 0.0

    @property
    def free_memory(self) -> float:
        return self.spec.memory - self.used

    @property
    def free_compute(self) -> float:
        return self.spec.compute - self.used_compute

    def fits(self, memory: float, compute: float) -> bool:
        return self.free_memory + 1e-9 >= memory and self.free_compute + 1e-9 >= compute


class _Pool:
    """A minimal cluster: a dict of tasks and GPUs, starts and stops recorded, nothing simulated."""

    def __init__(self, gpus: list[GpuSpec], tasks: list[Task], *, lease: int = 5) -> None:
        self.now = 0.0
        self.lease = lease
        self.gpus = {g.id: _Gpu(g) for g in gpus}
        self.nodes: dict[str, list[str]] = {}
        for g in gpus:
            self.nodes.setdefault(g.node, []).append(g.id)
        self.tasks = {t.id: _Task(t) for t in tasks}
        self.actions: list[tuple[Any, ...]] = []

    def waiting(self) -> list[_Task]:
        return [s for s in self.tasks.values() if s.state == "waiting"]

    def running(self) -> list[_Task]:
        return [s for s in self.tasks.values() if s.state == "running"]

    def up_gpus(self) -> list[_Gpu]:
        return list(self.gpus.values())

    def model_ok(self, task_id: str, gpu: str) -> bool:
        return True

    def start(self, task_id: str, gpus: Any, memory: float) -> None:
        s = self.tasks[task_id]
        s.state, s.gpus, s.memory, s.compute, s.speed, s.since = "running", tuple(gpus), memory, s.task.compute, 1.0, self.now
        for g in gpus:
            self.gpus[g].tasks.add(task_id)
            self.gpus[g].used += memory
            self.gpus[g].used_compute += s.task.compute
        self.actions.append(("start", task_id, tuple(gpus), memory))

    def stop(self, task_id: str, *, reason: str = "preempt") -> None:
        s = self.tasks[task_id]
        s.executed += (self.now - s.since) * s.speed
        for g in s.gpus:
            self.gpus[g].tasks.discard(task_id)
            self.gpus[g].used -= s.memory
            self.gpus[g].used_compute -= s.compute
        s.state, s.gpus, s.memory, s.speed = "waiting", (), 0.0, 0.0
        self.actions.append(("stop", task_id))

    def resize(self, task_id: str, memory: float) -> None:
        s = self.tasks[task_id]
        for g in s.gpus:
            self.gpus[g].used += memory - s.memory
        s.memory = memory
        self.actions.append(("resize", task_id, memory))

    def emit(self, kind: str, **kw: Any) -> None:
        self.actions.append((kind, kw))


def _over_capacity(pool: _Pool) -> list[str]:
    """GPUs whose running tasks hold more memory or compute than the GPU has (recomputed from
    the tasks, not from the pool's counters)."""
    bad = []
    for g, gs in pool.gpus.items():
        held = [s for s in pool.running() if g in s.gpus]
        if sum(s.memory for s in held) > gs.spec.memory + 1e-9 or sum(s.task.compute for s in held) > gs.spec.compute + 1e-9:
            bad.append(g)
    return bad


def _fits_somewhere(pool: _Pool, t: Task) -> bool:
    """Brute force: some node has ``t.gpus`` GPUs each with the free memory and compute for ``t``."""
    for members in pool.nodes.values():
        free = [g for g in members if pool.gpus[g].fits(t.preferred_memory, t.compute)]
        if len(free) >= t.gpus:
            return True
    return False


def _cluster() -> list[GpuSpec]:
    return [GpuSpec(f"g{i}", 16.0, node=f"n{i // 2}") for i in range(4)]


def _tasks(n: int) -> list[Task]:
    return [Task(f"t{k}", preferred_memory=float(4 + 4 * (k % 3)), min_memory=4.0, duration=5 + k, value=10.0 + k,
                 tenant=f"a{k % 3}", gpus=1 + (k % 5 == 4)) for k in range(n)]


@pytest.mark.parametrize("clearing", ["greedy", "solver"])
def test_a_round_on_a_plain_pool_is_feasible_and_work_conserving(clearing: str) -> None:
    pool = _Pool(_cluster(), _tasks(14))
    eng = CreditEngine(clearing=clearing)
    eng.round(pool, True)
    assert pool.running(), "nothing started on an idle cluster"
    assert _over_capacity(pool) == []
    # work-conserving: no waiting task still fits at its preferred memory
    assert [s.id for s in pool.waiting() if _fits_somewhere(pool, s.task)] == []
    assert eng.rounds and eng.rounds[-1]["winners"] >= 1


def test_the_checkers_can_fail() -> None:
    pool = _Pool(_cluster(), _tasks(3))
    pool.start("t0", ("g0",), 12.0)
    pool.tasks["t1"].state, pool.tasks["t1"].gpus, pool.tasks["t1"].memory = "running", ("g0",), 12.0
    assert _over_capacity(pool) == ["g0"]
    assert _fits_somewhere(pool, pool.tasks["t2"].task)


def test_later_rounds_stay_feasible_and_charge_by_the_engines_rules() -> None:
    pool = _Pool(_cluster(), _tasks(14))
    eng = CreditEngine()
    eng.round(pool, True)
    for _ in range(3):  # time passes: running tasks progress, then the next boundary
        pool.now += pool.lease
        for s in pool.running():
            s.executed += (pool.now - s.since) * s.speed
            s.since = pool.now
        eng.round(pool, True)
        assert _over_capacity(pool) == []
    payments = [a[1] for a in pool.actions if a[0] == "credit" and a[1]["note"] == "payment"]
    assert payments and all(kw["amount"] < 0 for kw in payments)  # overloaded: others' losers set prices
    share = eng.bank.config.income / len(pool.tasks)
    assert all(-kw["amount"] <= share + 1e-9 for kw in payments)  # limit="share"


def test_the_engine_does_not_import_the_simulator() -> None:
    code = "import sys, gensolver.market.engine; print('gensolver.sim' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_the_table_pool_refuses_a_start_over_capacity() -> None:
    from gensolver.market.pool import TablePool

    pool = TablePool(_cluster(), now=0.0, lease=5)
    t = _tasks(2)
    pool.add(t[0], remaining=5.0, gpus=("g0",), memory=12.0)
    pool.add(t[1], remaining=6.0)
    with pytest.raises(ValueError, match="g0"):
        pool.start("t1", ("g0",), 8.0)
    pool.start("t1", ("g1",), 8.0)
    assert [s.id for s in pool.running()] == ["t0", "t1"] and pool.tasks["t0"].executed == 0.0


def test_between_false_decides_at_boundaries_only() -> None:
    with pytest.raises(ValueError, match="between"):
        CreditEngine(between="no")  # type: ignore[arg-type]
    pool = _Pool(_cluster(), _tasks(6))
    CreditEngine(between=False).round(pool, False)
    assert pool.actions == []
    CreditEngine().round(pool, False)  # the default starts waiting tasks between boundaries
    assert pool.running() and _over_capacity(pool) == []
