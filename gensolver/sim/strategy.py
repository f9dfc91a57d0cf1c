"""Tenants' reporting strategies, and the gain of a lie measured in true utility.

A :class:`Strategy` turns a tenant's true tasks into the reports the scheduler sees; the
simulator runs the truth (:mod:`gensolver.sim.engine`). :func:`apply_strategies` builds the
reported :class:`~gensolver.sim.workload.Workload` (reports in ``tasks``, true types in
``truths``); :func:`tenant_utility` and :func:`lie_gain` measure what a lie earned.

Strategies (all deterministic)
------------------------------
- ``value``, ``urgency``: scale the reported value and urgency (urgency capped at 0.99).
- ``memory``: scale the reported preferred and minimum memory (capped at the largest GPU's
  memory: a report no GPU can hold would only get the task rejected).
- ``duration``: scale the reported duration (rounded up; at least 1 step).
- ``names``: split the tenant into ``names`` false-name tenants (``tenant~0``, ``tenant~1``,
  ...; its tasks dealt round robin in arrival order).
- ``delay``: report each task ``delay`` steps after it truly arrives (hold it back).

Utility in true terms
---------------------
A tenant's utility is the true value of its tasks' work done (the true value at the finish,
0 after a deadline or unfinished; :attr:`gensolver.sim.metrics.TaskRecord.achieved`) minus
the credits it spent, net of the credits it received, times their *worth*: the value a credit buys in the truthful run (total
welfare over all credits issued in it, fixed before any lie so a lie cannot move it).
Whatever a tenant spends now is also missing from its later bids, so a run long enough to
contain those later rounds already counts that cost once; the ``credit_worth`` term prices
credits still spent by the end (0 for policies without credits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from ..errors import InputError
from ..model.tasks import Task
from .workload import Workload

__all__ = ["Strategy", "STRATEGIES", "apply_strategies", "tenant_utility", "credit_worth", "run_end", "lie_gain", "LieOutcome"]


@dataclass(frozen=True)
class Strategy:
    """How a tenant reports its tasks (see the module docstring); the default is truthful."""

    value: float = 1.0
    urgency: float = 1.0
    memory: float = 1.0
    duration: float = 1.0
    names: int = 1
    delay: int = 0

    def __post_init__(self) -> None:
        for name in ("value", "urgency", "memory", "duration"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise InputError(f"Strategy.{name} must be a finite positive factor, got {v!r}")
        for name, low in (("names", 1), ("delay", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InputError(f"Strategy.{name} must be an integer >= {low}, got {v!r}")

    @property
    def truthful(self) -> bool:
        return self == Strategy()

    def label(self) -> str:
        """Short description (``truthful``, ``value x10``, ``names 3``...)."""
        parts = [f"{k} x{getattr(self, k):g}" for k in ("value", "urgency", "memory", "duration")
                 if getattr(self, k) != 1.0]
        if self.names > 1:
            parts.append(f"names {self.names}")
        if self.delay:
            parts.append(f"delay {self.delay}")
        return ", ".join(parts) or "truthful"

    def report(self, task: Task, *, index: int = 0, max_memory: float = math.inf) -> Task:
        """The report of the true ``task`` (``index``: its rank among the tenant's tasks)."""
        if self.truthful:
            return task
        pref = min(task.preferred_memory * self.memory, max(max_memory, task.min_memory))
        mini = min(task.min_memory * self.memory, pref)
        release = task.release + self.delay
        deadline = task.deadline
        if deadline is not None and deadline <= release:
            deadline = release + 1
        tenant = f"{task.tenant}~{index % self.names}" if self.names > 1 else task.tenant
        return replace(task, value=task.value * self.value, urgency=min(0.99, task.urgency * self.urgency)
                       if self.urgency != 1.0 else task.urgency,
                       preferred_memory=pref, min_memory=mini,
                       duration=max(1, math.ceil(task.duration * self.duration - 1e-9)),
                       release=release, deadline=deadline, tenant=tenant)


#: the lies the benchmark tries, by family (each strategy's best variant is reported)
STRATEGIES: dict[str, tuple[Strategy, ...]] = {
    "scale value": (Strategy(value=2.0), Strategy(value=10.0), Strategy(value=0.5)),
    "scale urgency": (Strategy(urgency=2.0), Strategy(urgency=0.5)),
    "inflate memory": (Strategy(memory=1.25), Strategy(memory=2.0)),
    "deflate memory": (Strategy(memory=0.75), Strategy(memory=0.5)),
    "inflate duration": (Strategy(duration=2.0), Strategy(duration=4.0)),
    "deflate duration": (Strategy(duration=0.5), Strategy(duration=0.25)),
    "false names": (Strategy(names=2), Strategy(names=4)),
    "delay": (Strategy(delay=2), Strategy(delay=5)),
}


def apply_strategies(workload: Workload, strategies: Mapping[str, Strategy]) -> Workload:
    """``workload`` as reported when each named tenant follows its strategy (others truthful).

    The result's ``tasks`` are the reports and its ``truths`` the true types of the tasks
    whose report differs. Strategies apply to the *true* tasks (a workload that already
    holds reports is first reset to its truth).
    """
    for name, s in strategies.items():
        if not isinstance(s, Strategy):
            raise InputError(f"strategy for tenant {name!r} must be a Strategy, got {type(s).__name__}")
    true = workload.true_tasks()
    known = {t.tenant for t in true}
    unknown = sorted(set(strategies) - known)
    if unknown:
        raise InputError(f"no tenant {unknown[0]!r} in the workload; tenants: {', '.join(sorted(known))}")
    max_mem = max((g.memory for g in workload.gpus), default=math.inf)
    seen: dict[str, int] = {}
    reports, truths = [], {}
    for t in sorted(true, key=lambda t: (t.release, t.id)):
        how = strategies.get(t.tenant)
        k = seen.get(t.tenant, 0)
        seen[t.tenant] = k + 1
        r = how.report(t, index=k, max_memory=max_mem) if how is not None else t
        reports.append(r)
        if r != t:
            truths[t.id] = t
    order = {t.id: i for i, t in enumerate(workload.tasks)}
    reports.sort(key=lambda t: order[t.id])
    label = ", ".join(f"{k}: {v.label()}" for k, v in sorted(strategies.items()) if not v.truthful)
    return replace(workload, tasks=tuple(reports), truths=truths,
                   name=workload.name + (f" [{label}]" if label else ""))


def credit_worth(result: Any) -> float:
    """Value one credit buys in ``result``: welfare over the credits issued (0 without credits)."""
    issued = sum(e.amount for e in result.events if e.kind == "credit" and e.amount > 0)
    return result.metrics.welfare / issued if issued > 0 else 0.0


def tenant_utility(result: Any, tenant: str, *, worth: float = 0.0, until: float = math.inf) -> float:
    """True utility of ``tenant`` in ``result``: value achieved minus ``worth`` x net credits spent.

    Net credits spent are the payments minus the credits received (income, budgets, refills)
    by the tenant and its false names (``tenant~k``): the credits it has *less* at the end for
    the rounds after the run. A lie that pays less but also earns less (a capped balance
    discards income) saves nothing. Credits received after ``until`` are not counted (a common
    horizon for runs of different lengths: :func:`lie_gain`); payments always are.
    """
    m = result.metrics
    net = 0.0
    for e in result.events:
        if e.kind == "credit" and (e.tenant == tenant or e.tenant.startswith(tenant + "~")) \
                and (e.amount <= 0 or e.time <= until):
            net -= e.amount
    return float(m.tenant_value.get(tenant, 0.0) - worth * net)


def run_end(result: Any) -> float:
    """When ``result``'s run ended: the time of its last event (0 for none)."""
    return max((float(e.time) for e in result.events), default=0.0)


@dataclass(frozen=True)
class LieOutcome:
    """The gain of one lie: utilities in true terms, and the gain relative to the truthful one."""

    tenant: str
    strategy: Strategy
    truthful_utility: float
    lie_utility: float
    truthful_value: float = 0.0
    lie_value: float = 0.0

    @property
    def value_gain(self) -> float:
        """``(lie - truthful value achieved) / truthful value achieved``: the gain with the cost
        of credits left inside the run (spent credits are missing from later bids)."""
        if self.truthful_value == 0:
            return 0.0 if self.lie_value == 0 else math.inf
        return (self.lie_value - self.truthful_value) / abs(self.truthful_value)

    @property
    def gain(self) -> float:
        """``(lie - truthful utility) / truthful value achieved`` (0 when nothing changed).

        The utility difference is measured against the value at stake (the liar's true value
        achieved when truthful): dividing by the truthful *utility* is ill-conditioned when a
        tenant spends about what its work is worth (utility near 0)."""
        diff = self.lie_utility - self.truthful_utility
        base = abs(self.truthful_value) or abs(self.truthful_utility)
        if base == 0:
            return 0.0 if diff == 0 else math.copysign(math.inf, diff)
        return diff / base


def lie_gain(run: Callable[[Workload], Any], workload: Workload, tenant: str, strategy: Strategy, *,
             truthful: Any | None = None) -> LieOutcome:
    """Run ``workload`` truthfully and with ``tenant`` lying; the lie's :class:`LieOutcome`.

    ``run(workload) -> SimResult`` runs one policy (e.g. ``lambda w: simulate(w, policy=...)``);
    ``truthful`` reuses a truthful result already at hand. The credit worth is the truthful
    run's (:func:`credit_worth`). Credits received are counted in both runs up to the earlier
    of their ends (:func:`run_end`): income accrues per round whatever anyone reports, so a
    lie that makes the whole run one round shorter or longer must not read as the income of
    that round (every tenant's, 100 / 4 credits on a four-tenant workload).
    """
    base = truthful if truthful is not None else run(workload)
    worth = credit_worth(base)
    lied = run(apply_strategies(workload, {tenant: strategy}))
    until = min(run_end(base), run_end(lied))
    return LieOutcome(tenant, strategy, tenant_utility(base, tenant, worth=worth, until=until),
                      tenant_utility(lied, tenant, worth=worth, until=until),
                      float(base.metrics.tenant_value.get(tenant, 0.0)), float(lied.metrics.tenant_value.get(tenant, 0.0)))
