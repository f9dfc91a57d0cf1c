"""Time jumps: when a boundary round of the market engine provably changes nothing.

:func:`round_is_quiet` is :meth:`gensolver.market.engine.CreditEngine.quiet`: the simulator
asks it before each round boundary and, when it holds, jumps the boundaries to one lease
before the next arrival, fault or finish (:meth:`gensolver.sim.engine.Cluster.ticks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .credit import CreditBank
from .pool import TOL, Pool, TaskView, pinned_free_capacity

if TYPE_CHECKING:
    from .engine import CreditEngine

__all__ = ["round_is_quiet", "keeps_all"]


def round_is_quiet(engine: CreditEngine, cluster: Pool) -> bool:
    """Whether a boundary round on ``cluster`` is a no-op now and while time alone passes
    (running tasks progress; no arrival, finish, fault or pass): no start, stop, resize or
    credit movement, and no state a later round reads. The simulator then jumps its
    boundaries (:meth:`gensolver.sim.engine.Cluster.ticks`).

    Sufficient conditions, each closing steps of :meth:`CreditEngine._clear`:

    1. No task waits, every running task was seen and no other task is remembered: nothing
       to count, forget, start or backfill.
    2. ``clearing="greedy"`` and every running preemptible task keeps its GPUs in any score
       order: on each of its GPUs, its allocation plus every other preemptible running
       task's (as :func:`~gensolver.market.pool.greedy_round` subtracts them) fits what
       non-preemptible tasks leave, with half the tolerance to spare for summation order. So nobody is left out, nobody
       is preempted, and the scores, which change with time, decide nothing.
    3. Income moves nothing: ``income="arrivals"`` (or ``"active"`` without ``forfeit``, so
       overrun detection, which changes with time, decides no share) and a dry run of
       :meth:`CreditBank.pay_income` on a copy of the balances moves nothing (every earning
       tenant is at its cap).
    4. Every running task's tenant has a price, all prices are exactly 0 and nothing was
       charged: with no loser the smoothed price stays 0, so nothing is charged.
    5. No running task grows (:meth:`CreditEngine._grow`: at its target memory, or no free
       memory on its GPUs) and every running task :meth:`~gensolver.market.evidence.ReportAudit.caught` would mark
       slow or short is marked.

    Time changes only the scores, the finish-time estimates and overrun detection, which
    under 1-5 decide nothing.
    """
    running = cluster.running()
    if cluster.waiting() or not running or engine.clearing != "greedy" or engine.payments:
        return False
    ids = {s.id for s in running}
    if engine._seen != ids or not engine.audit.tracked() <= ids:  # _arrive, _retain change nothing
        return False
    if not keeps_all(cluster, running):
        return False
    if engine.income == "arrivals":
        earners, shares = engine._payers(), None
    elif not engine.forfeit:
        earners, shares = [s.task.tenant for s in running], None
    else:
        return False
    probe = CreditBank(engine.bank.config)
    probe.balances = dict(engine.bank.balances)
    probe.pay_income(earners, shares=shares)
    if probe.entries:
        return False
    if any(engine._price.get(s.task.tenant) != 0.0 for s in running) or any(engine._price.values()):
        return False
    audit = engine.audit
    for s in running:
        if s.memory + TOL < audit.target(s) and min(cluster.gpus[g].free_memory for g in s.gpus) > TOL:
            return False
        if engine.verify_memory and audit.shortfall(s) and s.id not in audit.tracked():
            return False
    return True


def keeps_all(cluster: Pool, running: list[TaskView]) -> bool:
    """Whether :func:`~gensolver.market.pool.greedy_round` keeps every running preemptible task on its GPUs in any
    order (see :func:`round_is_quiet`, condition 2)."""
    cap = pinned_free_capacity(cluster)
    movable = [s for s in running if s.task.preemptible]
    used: dict[str, list[float]] = {}
    for s in movable:
        for g in s.gpus:
            u = used.setdefault(g, [0.0, 0.0])
            u[0] += s.memory
            u[1] += s.task.compute
    for s in movable:
        for g in s.gpus:
            if g not in cap:
                return False
            mem, comp = used[g]
            others_m, others_c = mem - s.memory, comp - s.task.compute
            if cap[g][0] - others_m - s.memory < -TOL / 2 or cap[g][1] - others_c - s.compute < -TOL / 2:
                return False
    return True
