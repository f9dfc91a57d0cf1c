"""What the market engine observes against tasks' reports: calibration, overruns, slow tasks.

The engine (:class:`gensolver.market.engine.CreditEngine`) schedules on reports and watches
progress; :class:`ReportAudit` holds what it has seen and decides, from that alone, when a
report is *proved false*. Estimation errors are not lies: a report at least ``1 - tolerance``
times the truth is never caught (the tolerance *band*). What the engine does with a caught
report (its score factor, pay-back, forfeit) stays in the engine.

This is a mechanism with verification in the sense of Nisan and Ronen: the mechanism sees the
work a task actually did after it ran, and penalises reports that the observation contradicts,
so an understated duration or memory buys a head start that the rest of the run pays back.

References
----------
.. [1] N. Nisan and A. Ronen, "Algorithmic mechanism design", *Games and Economic Behavior*
   35(1-2), 166-196, 2001 (Sec. 5: mechanisms with verification).
.. [2] K. Mahajan et al., "Themis: Fair and efficient GPU cluster scheduling", NSDI 2020
   (finish-time fairness from reported durations, which calibration corrects).

Examples
--------
>>> audit = ReportAudit(tolerance=0.05, evidence=True, calibrate="max", verify_memory=True)
>>> round(audit.band, 4), audit.beyond_band(1.03), audit.beyond_band(1.5)
(1.0526, 1.0, 1.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .pool import TOL, TaskView, attained

__all__ = ["ReportAudit", "report"]


def report(s: TaskView) -> Any:
    """What task ``s`` reported: its ``task``, or the report behind a corrected view
    (:class:`gensolver.market.calibrate.CalibratedPool`)."""
    return getattr(s, "report", s.task)


class ReportAudit:
    """Per tenant, observed work against reported durations; per task, whether it ran slower
    than its memory report allows. Options as :class:`~gensolver.market.engine.CreditEngine`'s.

    Parameters
    ----------
    tolerance : float, keyword-only
        A report at least ``1 - tolerance`` times the truth is never proved false.
    evidence : bool, keyword-only
        Calibration also counts unfinished tasks already past their reports.
    calibrate : {"max", "mean"}, keyword-only
        The per-tenant duration factor: the largest ratio of observed work to reported duration,
        or total work over total reported.
    verify_memory : bool, keyword-only
        A task seen running below full speed at its reported preferred memory is caught.

    Attributes
    ----------
    worked, reported : dict[str, float]
        Per tenant, the work its finished tasks did and the durations they reported.
    ratio : dict[str, float]
        Per tenant, the largest observed work / reported duration of a finished task, 1 within
        the band.
    low : dict[str, float]
        Per tenant, the smallest such ratio below ``1 - tolerance`` (an over-reported duration);
        absent when none.
    slow, short : set[str]
        Tasks seen running slower than their memory report allows: beyond the band (``slow``:
        caught for the rest of their run) or within it (``short``: an estimate, corrected).
    memory : dict[str, float]
        Per tenant whose memory estimates were seen low (within the band), the factor its next
        tasks are planned with (:meth:`factor`); absent: 1.
    """

    #: the attributes that are state (:meth:`gensolver.market.engine.CreditEngine.state`), in order
    STATE = ("worked", "reported", "ratio", "low", "slow", "short", "memory")

    def __init__(self, *, tolerance: float, evidence: bool, calibrate: str, verify_memory: bool) -> None:
        self.tolerance, self.evidence, self.calibrate = tolerance, evidence, calibrate
        self.verify_memory = verify_memory
        self.worked: dict[str, float] = {}
        self.reported: dict[str, float] = {}
        self.ratio: dict[str, float] = {}
        self.low: dict[str, float] = {}
        self.slow: set[str] = set()
        self.short: set[str] = set()
        self.memory: dict[str, float] = {}

    @property
    def band(self) -> float:
        """Largest observed / reported ratio of an honest estimate: a report at least ``1 -
        tolerance`` times the truth."""
        return 1.0 / (1.0 - self.tolerance)

    def beyond_band(self, ratio: float) -> float:
        """An observed work / reported duration ratio as evidence: 1 (an honest estimate) within
        the band, the ratio itself beyond it."""
        return ratio if ratio > self.band + 1e-9 else 1.0

    def learn(self, st: TaskView) -> None:
        """``st`` finished: its observed work against its reported duration, per tenant."""
        done = st.executed - st.overhead - st.lost
        t = st.task
        self.worked[t.tenant] = self.worked.get(t.tenant, 0.0) + done
        self.reported[t.tenant] = self.reported.get(t.tenant, 0.0) + t.duration
        if t.duration > 0:
            self.ratio[t.tenant] = max(self.ratio.get(t.tenant, 0.0), self.beyond_band(done / t.duration))
            if done / t.duration < 1.0 - self.tolerance - 1e-9:
                self.low[t.tenant] = min(self.low.get(t.tenant, 1.0), done / t.duration)

    def forget(self, gone: set[str]) -> None:
        """Drop the per-task marks of the tasks ``gone``; the per-tenant sums stay."""
        self.slow -= gone
        self.short -= gone

    def tracked(self) -> set[str]:
        """The tasks with a per-task mark."""
        return self.slow | self.short

    def calibration(self, tenant: str) -> float:
        """Observed work / reported duration over the tenant's finished tasks, in total (1 before
        any; the ``calibrate="mean"`` factor without running evidence)."""
        rep = self.reported.get(tenant, 0.0)
        return self.worked.get(tenant, 0.0) / rep if rep > 0 else 1.0

    def kappas(self, now: float, active: list[TaskView]) -> dict[str, float]:
        """Per tenant, the duration factor from its finished tasks *and* (``evidence``) its tasks
        of ``active`` already past their reports at ``now`` (work done so far: a lower bound on
        their true work); absent (1) without evidence. ``calibrate="max"``: the largest ratio
        work / report among them; ``"mean"``: total work / total reported. A truthful tenant's
        unfinished tasks never overrun, so its factor comes from its finished tasks (ratio 1);
        an understating tenant is caught as soon as one of its tasks outlives its report."""
        worked, rep, top = dict(self.worked), dict(self.reported), dict(self.ratio)
        if self.evidence:
            band = self.band
            for s in active:
                done = attained(s, now)
                if done > s.task.duration * band + 1e-6:
                    t = s.task.tenant
                    worked[t] = worked.get(t, 0.0) + done
                    rep[t] = rep.get(t, 0.0) + s.task.duration
                    top[t] = max(top.get(t, 0.0), done / s.task.duration)
        if self.calibrate == "max":
            return {t: top[t] for t, r in rep.items() if r > 0}
        return {t: worked[t] / r for t, r in rep.items() if r > 0}

    def observe(self, states: list[TaskView]) -> None:
        """(``verify_memory``) Mark the running tasks of ``states`` seen below full speed at
        their reported preferred memory: ``slow`` when they need more than the band allows
        (remembered: a proved lie), ``short`` within it (an estimate, which the engine corrects
        by growing the task to :meth:`target`, and whose need over report raises its tenant's
        :meth:`factor`)."""
        if not self.verify_memory:
            return
        band = self.band
        for s in states:
            if self.shortfall(s):
                t = report(s)
                ratio = self.need(s) / t.preferred_memory
                if ratio > band * (1 + 1e-6):
                    self.slow.add(s.id)
                else:
                    self.short.add(s.id)
                    # rounded up (a relative 1e-12, far inside the capacity tolerance): a factor an
                    # ulp short of the truth would plan the tenant's next tasks a hair below full speed
                    self.memory[t.tenant] = max(self.memory.get(t.tenant, 1.0), min(ratio, band) * (1 + 1e-12))

    @staticmethod
    def shortfall(s: TaskView) -> bool:
        """Whether ``s`` runs below full speed at (at least) its reported preferred memory: it
        needs more memory than it reported (what :meth:`observe` marks)."""
        return s.state == "running" and s.memory + TOL >= report(s).preferred_memory \
            and s.speed < s.factor * s.inter * (1 - 1e-6)

    @staticmethod
    def need(s: TaskView) -> float:
        """The memory per GPU running task ``s`` needs for full speed, from its observed speed at
        its memory (the speed law ``(m / P) ** e`` solved for ``P``); its memory when at full
        speed (or when its speed does not depend on memory)."""
        full, e = s.factor * s.inter, s.task.elasticity
        if e > 0 and 0 < s.speed < full * (1 - 1e-6):
            return s.memory * (full / s.speed) ** (1.0 / e)
        return s.memory

    def factor(self, tenant: str) -> float:
        """The memory factor of ``tenant``'s reports: the largest need / report ratio seen on its
        tasks within the band, a relative 1e-12 above (1 before any): the engine plans the
        tenant's next tasks at their reports times this (:mod:`gensolver.market.calibrate`).

        >>> from gensolver.market.pool import TableTask
        >>> from gensolver.model.tasks import Task
        >>> audit = ReportAudit(tolerance=0.05, evidence=True, calibrate="max", verify_memory=True)
        >>> s = TableTask(Task("a", 9.8, 5.0, 4, 1.0, tenant="E"), remaining=4, now=0, gpus=("g",), memory=9.8)
        >>> s.speed = 0.98  # the truth: 10 GiB, 2% above the report (elasticity 1)
        >>> audit.observe([s]); round(audit.factor("E"), 9), audit.factor("other")
        (1.020408163, 1.0)
        """
        return self.memory.get(tenant, 1.0)

    def target(self, s: TaskView) -> float:
        """The memory per GPU running task ``s`` should grow to: its reported preferred memory;
        for a task marked ``short``, what its observed speed says it needs (the speed law
        ``(m / P) ** e`` solved for ``P`` at its memory ``m``), at most ``band`` times its
        report, and what it holds once it runs at full speed.

        >>> from gensolver.market.pool import TableTask
        >>> from gensolver.model.tasks import Task
        >>> audit = ReportAudit(tolerance=0.05, evidence=True, calibrate="max", verify_memory=True)
        >>> s = TableTask(Task("a", 10.0, 5.0, 4, 1.0), remaining=4, now=0, gpus=("g",), memory=10.0)
        >>> s.speed = 10.0 / 10.2  # the truth: 10.2 GiB, 2% above the report
        >>> audit.observe([s]); sorted(audit.short), round(audit.target(s), 6)
        (['a'], 10.2)
        """
        t = report(s)
        want = float(t.preferred_memory)
        if s.id not in self.short:
            return want * self.factor(t.tenant)
        full, e = s.factor * s.inter, t.elasticity
        if e > 0 and 0 < s.speed < full * (1 - 1e-6):
            # rounded up (a relative 1e-9): the need recovered in floating point may fall an ulp
            # short of the truth, which would leave the task a hair below full speed
            return min(want * self.band, self.need(s) * (1 + 1e-9))
        return max(want * self.factor(t.tenant), s.memory)

    def caught(self, states: list[TaskView], done: np.ndarray) -> np.ndarray:
        """Which of ``states`` proved their reports false: ran past their reported duration
        (``done``: their attained work) beyond the band, or (``verify_memory``) ran below full
        speed at their reported preferred memory, needing more than the band allows
        (:meth:`observe`)."""
        n = len(states)
        over = done > np.fromiter((s.task.duration for s in states), float, n) * self.band + 1e-6
        if self.verify_memory:
            self.observe(states)
            over |= np.fromiter((s.id in self.slow for s in states), bool, n)
        return over

    def owing(self, now: float, running: list[TaskView]) -> set[str]:
        """Tenants with a task of ``running`` that cannot be preempted and proved its report
        false at ``now`` (the engine's ``pay_back`` rule scores their other tasks as caught)."""
        fixed = [s for s in running if not s.task.preemptible]
        if not fixed:
            return set()
        done = np.fromiter((attained(s, now) for s in fixed), float, len(fixed))
        return {s.task.tenant for s, c in zip(fixed, self.caught(fixed, done)) if c}

    def state(self) -> dict[str, Any]:
        """The attributes of :attr:`STATE` (sets as sorted lists), JSON-ready."""
        return {k: sorted(v) if isinstance(v, set) else v
                for k, v in ((k, getattr(self, k)) for k in self.STATE)}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore the keys of :attr:`STATE` present in ``state``."""
        for k in self.STATE:
            v = state.get(k)
            if v is not None:
                setattr(self, k, set(v) if isinstance(getattr(self, k), set) else dict(v))
