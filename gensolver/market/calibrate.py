"""The cluster as the engine plans on it: memory reports corrected by what was observed.

An honest estimate a few percent low is not a lie (:class:`gensolver.market.evidence.ReportAudit`
never proves it false), but a task planned at its report is placed, packed and scored as
smaller than it is, and then grows once it runs: every placement after it sees a different
cluster than the truth would have made, so the tenant's outcome moves by the scheduler's noise
(the error table of ``benchmarks/bench_market.py``). :class:`CalibratedPool` shows the engine
each task of a tenant whose estimates were seen low with its preferred (and minimum) memory
multiplied by that tenant's factor (:meth:`~gensolver.market.evidence.ReportAudit.factor`: the largest need
over report seen on its tasks, within the band), so its next tasks are planned at what they
need; and it corrects a task at its start (``start`` observes it and grows it into what its
GPUs have free), before the pass places anything else. Tenants whose reports were never seen
low are shown as they are: a truthful run is unchanged.

This is the duration calibration of Themis-style finish-time estimates applied to memory: the
scheduler learns each tenant's estimation error from what it observes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator, Mapping, Sequence

from ..model.tasks import Task
from .evidence import ReportAudit
from .pool import Pool

__all__ = ["CalibratedPool", "calibrated"]


def calibrated(cluster: Pool, audit: ReportAudit) -> Pool:
    """``cluster`` as the engine plans on it: a :class:`CalibratedPool` once ``audit`` has seen
    some tenant's memory estimates low; ``cluster`` itself before (a truthful run is unchanged)."""
    return CalibratedPool(cluster, audit) if audit.memory else cluster  # type: ignore[return-value]


class _View:
    """A task view whose ``task`` is the corrected report; ``report`` is what it reported."""

    __slots__ = ("_inner", "task")

    def __init__(self, inner: Any, task: Task) -> None:
        self._inner, self.task = inner, task

    @property
    def report(self) -> Task:
        return self._inner.task

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Tasks(Mapping[str, Any]):
    def __init__(self, pool: CalibratedPool) -> None:
        self._pool = pool

    def __getitem__(self, key: str) -> Any:
        return self._pool.view(self._pool.inner.tasks[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._pool.inner.tasks)

    def __len__(self) -> int:
        return len(self._pool.inner.tasks)


class CalibratedPool:
    """``inner`` (a :class:`~gensolver.market.pool.Pool`) with memory reports corrected by
    ``audit``'s per-tenant factors, and tasks corrected at their start (module docstring).

    Parameters
    ----------
    inner : Pool
    audit : ReportAudit
    """

    def __init__(self, inner: Pool, audit: ReportAudit) -> None:
        self.inner, self.audit = inner, audit
        self._cache: dict[str, tuple[float, Task]] = {}
        self._top = max((g.spec.memory for g in inner.gpus.values()), default=0.0)

    def view(self, st: Any) -> Any:
        t = st.task
        f = self.audit.factor(t.tenant)
        if f <= 1.0:
            return st
        hit = self._cache.get(t.id)
        if hit is None or hit[0] != f:
            # never above the largest GPU: a correction must not make a task unplaceable
            pref = max(t.preferred_memory, min(t.preferred_memory * f, self._top))
            mini = max(t.min_memory, min(t.min_memory * f, pref))  # the same estimate, the same error
            hit = self._cache[t.id] = (f, replace(t, preferred_memory=pref, min_memory=mini))
        return _View(st, hit[1])

    # the Pool interface
    @property
    def now(self) -> float:
        return self.inner.now

    @property
    def lease(self) -> int:
        return self.inner.lease

    @property
    def gpus(self) -> Mapping[str, Any]:
        return self.inner.gpus

    @property
    def nodes(self) -> Mapping[str, Sequence[str]]:
        return self.inner.nodes

    @property
    def tasks(self) -> Mapping[str, Any]:
        return _Tasks(self)

    def waiting(self) -> list[Any]:
        return [self.view(s) for s in self.inner.waiting()]

    def running(self) -> list[Any]:
        return [self.view(s) for s in self.inner.running()]

    def up_gpus(self) -> Sequence[Any]:
        return self.inner.up_gpus()

    def model_ok(self, task_id: str, gpu: str) -> bool:
        return self.inner.model_ok(task_id, gpu)

    def start(self, task_id: str, gpus: Sequence[str], memory: float) -> None:
        self.inner.start(task_id, gpus, memory)

    def stop(self, task_id: str, *, reason: str = "preempt") -> None:
        self.inner.stop(task_id, reason=reason)

    def resize(self, task_id: str, memory: float) -> None:
        self.inner.resize(task_id, memory)

    def emit(self, kind: str, **kw: Any) -> None:
        self.inner.emit(kind, **kw)
