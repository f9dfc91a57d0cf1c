"""The cluster as the engine plans on it: memory reports corrected by what was observed.

An honest estimate a few percent low is not a lie (:class:`gensolver.market.evidence.ReportAudit`
never proves it false), but a task planned at its report is placed, packed and scored as
smaller than it is, and then grows once it runs: every placement after it sees a different
cluster than the truth would have made, so the tenant's outcome moves by the scheduler's noise
(the error table of ``benchmarks/bench_market.py``). :class:`CalibratedPool` shows the engine
each task of a tenant whose estimates were seen low with its preferred (and minimum) memory
multiplied by that tenant's factor (:meth:`~gensolver.market.evidence.ReportAudit.factor`: the largest need
over report seen on its tasks, within the band), so its next tasks are planned at what they
need (the task that showed it is grown by the engine, as before). Tenants whose reports were
never seen low are shown as they are: a truthful run is unchanged.

This is the per-tenant calibration of reported durations (Themis-style finish-time estimates,
:meth:`~gensolver.market.evidence.ReportAudit.kappas`) applied to memory: the scheduler learns
each tenant's estimation error from what it observes, as a mechanism with verification does.

References
----------
.. [1] K. Mahajan et al., "Themis: Fair and efficient GPU cluster scheduling", NSDI 2020.
.. [2] N. Nisan and A. Ronen, "Algorithmic mechanism design", *Games and Economic Behavior*
   35(1-2), 166-196, 2001 (Sec. 5: mechanisms with verification).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator, Mapping

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
    ``audit``'s per-tenant factors (module docstring); every other attribute is ``inner``'s.

    Parameters
    ----------
    inner : Pool
    audit : ReportAudit

    Examples
    --------
    >>> from gensolver.market.pool import TablePool
    >>> from gensolver.model.tasks import GpuSpec, Task
    >>> audit = ReportAudit(tolerance=0.05, evidence=True, calibrate="max", verify_memory=True)
    >>> audit.memory["E"] = 1.02  # E's estimates were seen 2% low
    >>> pool = TablePool([GpuSpec("g", 16.0)], now=0, lease=5)
    >>> pool.add(Task("e", 10.0, 5.0, 4, 1.0, tenant="E"), remaining=4)
    >>> pool.add(Task("t", 10.0, 5.0, 4, 1.0, tenant="T"), remaining=4)
    >>> [(round(s.task.preferred_memory, 6), s.task.min_memory) for s in CalibratedPool(pool, audit).waiting()]
    [(10.2, 5.1), (10.0, 5.0)]
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

    # the Pool interface: the task views corrected, everything else (now, gpus, start, ...) as is
    @property
    def tasks(self) -> Mapping[str, Any]:
        return _Tasks(self)

    def waiting(self) -> list[Any]:
        return [self.view(s) for s in self.inner.waiting()]

    def running(self) -> list[Any]:
        return [self.view(s) for s in self.inner.running()]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
