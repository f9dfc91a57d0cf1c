"""The one module that touches gensolver's market, mechanisms and solvers.

Everything the service needs from the rest of the package goes through here, using only public
API: :class:`gensolver.market.engine.CreditEngine` (the market, ``engine: credit``, the
default: the same engine as the simulator's ``market`` policy), the deprecated welfare auction
:class:`gensolver.market.Market` (``clear``, ``refill``, ``observe``, ``forget``,
``balances``, ``weights``, ``ledger``; ``engine: auction``), :func:`gensolver.mechanisms.run_mechanism`,
:func:`gensolver.solve`, :func:`gensolver.executor.to_plan` and the JSON builder of
``gensolver solve --json`` (:func:`gensolver.mechanisms.result_to_dict`). When those change,
this module is the one to adapt.

Payments. A credit round's ``payment`` of a task holding GPUs is what its tenant's price asks
for the round, ``price x GiB x GPUs x lease`` (the price per GiB-step is set by other tenants'
left-out bids only; :mod:`gensolver.market.engine`); its ``charge`` is what was debited, the
payment capped by the task's income share of the round. Both are computed, not estimated:
``exact`` is true and the interval is ``[payment, payment]``. With the deprecated auction,
:meth:`Market.clear` runs the configured mechanism through ``run_mechanism`` and keeps its
:class:`~gensolver.mechanisms.Outcome`, so payments come with ``exact`` and the certified
``[low, high]`` interval of every payment.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from .._deprecation import GensolverDeprecationWarning
from ..executor.plan import lease_plan, to_plan
from ..market import Assignment, Candidate, Clearing, CreditEntry, Market, MarketConfig, Reservation
from ..market.engine import CreditEngine
from ..market.market import work_budget_options
from ..market.pool import TablePool
from ..mechanisms import Outcome, UnknownMechanismError, get_mechanism, result_to_dict, run_mechanism
from ..model import from_dict
from ..model.instance import Instance, Slot
from ..model.io import json_safe
from ..model.tasks import GpuSpec, Task, task_speed, task_steps
from ..solvers import BackendUnavailableError, UnknownMethodError, get_method, solve
from .errors import BadRequest

logger = logging.getLogger(__name__)

#: what ``engine: auction`` says when a service starts with it
AUCTION_DEPRECATED = ("market engine 'auction' (the welfare auction) is deprecated and will be removed in the next "
                      "release; the market is engine 'credit' (the default, the simulator's 'market' policy)")

__all__ = ["AUCTION_DEPRECATED", "MarketGlue", "RoundResult", "lavi_swamy_options", "solve_budget", "solve_document", "task_from_dict"]


def task_from_dict(doc: Mapping[str, Any]) -> Task:
    """A :class:`Task` from its :meth:`Task.to_dict` form (as stored)."""
    fields = dict(doc)
    fields["command"] = tuple(fields.get("command") or ())
    return Task(**fields)


@dataclass(frozen=True)
class RoundResult:
    """What one clearing produced.

    Attributes
    ----------
    clearing : Clearing
        The market's result (committed assignments, preemptions, charges).
    outcome : Outcome or None
        The mechanism's outcome (``None`` for an empty round).
    instance : Instance or None
        The round's auction (``None`` when nobody could bid).
    ledger : tuple of CreditEntry
        Credit changes of this round (budgets of new tenants, refills, payments).
    plan : dict or None
        ``gensolver.plan/v1`` of the committed assignments (times in seconds from the round).
    mechanism : str
    payments : Mapping[str, tuple[float | None, float | None, float | None]]
        Per committed task, ``(payment, low, high)``: the round's payment and its certified
        interval (``None`` where the mechanism gave none).
    exact : bool
        Whether every payment is exact (its interval is a point).
    prices : Mapping[str, float]
        The credit engine's price per GiB-step of each tenant after the round (empty for the
        auction).
    """

    clearing: Clearing
    outcome: Outcome | None
    instance: Instance | None
    ledger: tuple[CreditEntry, ...]
    plan: dict[str, Any] | None
    mechanism: str
    payments: Mapping[str, tuple[float | None, float | None, float | None]] = field(default_factory=dict)
    exact: bool = True
    prices: Mapping[str, float] = field(default_factory=dict)


class MarketGlue:
    """The service's market engine, its GPUs, and the recording of each round's outcome."""

    def __init__(self, config: MarketConfig, gpus: Sequence[GpuSpec], *, step_seconds: float) -> None:
        self.config = config
        self.gpus = tuple(gpus)
        self.step_seconds = float(step_seconds)
        self.market = Market(config)
        self._seen = 0
        #: the credit market's round engine (``config.engine == "credit"``), else ``None``
        self.engine: CreditEngine | None = self._new_engine()

    def _new_engine(self) -> CreditEngine | None:
        if self.config.engine != "credit":
            return None
        eng = CreditEngine(**self.config.credit)
        eng.lease = self.config.lease
        return eng

    def warn_deprecated(self) -> None:
        """Warn (:class:`~gensolver.GensolverDeprecationWarning` and the log) when this market runs the deprecated auction."""
        if self.config.engine == "auction":
            warnings.warn(AUCTION_DEPRECATED, GensolverDeprecationWarning, stacklevel=2)
            logger.warning(AUCTION_DEPRECATED)

    def engine_state(self) -> dict[str, Any] | None:
        """The credit engine's memory between rounds (:meth:`CreditEngine.state`), to store
        with each round; ``None`` for the auction."""
        return None if self.engine is None else self.engine.state()

    # -------------------------------------------------------------- state
    def restore(self, *, now: float, balances: Mapping[str, float], weights: Mapping[str, float],
                observations: Sequence[tuple[str, float | None, float | None]],
                engine_state: Mapping[str, Any] | None = None) -> None:
        """Rebuild the market from stored state: balances, weights, the refill schedule up to
        ``now`` (the time of the last cleared round), the executors' last observations and the
        credit engine's memory (``engine_state``, :meth:`engine_state`)."""
        market = Market(self.config)
        if balances:
            market.refill(now)  # moves the refill schedule to ``now``; the balances are replaced below
        market.balances.clear()
        market.balances.update({k: float(v) for k, v in balances.items()})
        market.weights.clear()
        market.weights.update({k: float(v) for k, v in weights.items()})
        for task_id, memory, progress in observations:
            market.observe(task_id, memory_gib=memory, progress=progress)
        self.market = market
        self._seen = len(market.ledger)
        self.engine = self._new_engine()
        if self.engine is not None:
            if engine_state:
                self.engine.load_state(dict(engine_state))
            self.engine.bank.balances.update({k: float(v) for k, v in balances.items()})

    def balances(self) -> dict[str, float]:
        if self.engine is not None:
            return dict(self.engine.bank.balances)
        return dict(self.market.balances)

    def weights(self) -> dict[str, float]:
        return dict(self.market.weights)

    def observe(self, task_id: str, *, memory_gib: float | None, progress: float | None) -> None:
        self.market.observe(task_id, memory_gib=memory_gib, progress=progress)

    def forget(self, task_id: str) -> None:
        """``task_id`` finished or was cancelled: neither market keeps anything of it."""
        self.market.forget(task_id)
        if self.engine is not None:
            self.engine.forget(task_id)

    # -------------------------------------------------------------- rounds
    def clear(self, now: float, *, waiting: Sequence[tuple[Task, float, float]],
              running: Sequence[tuple[Task, float, float, tuple[str, ...], float]]) -> RoundResult:
        """Clear one round at step ``now``.

        Parameters
        ----------
        waiting : sequence of (task, remaining work, steps waited)
        running : sequence of (task, remaining work, steps waited, GPUs, memory)
            Preemptible running tasks bid again to keep (or move) their GPUs; the others hold
            their capacity as reservations until they finish.
        """
        if self.engine is not None:
            return self._clear_credit(now, waiting=waiting, running=running)
        candidates = [Candidate(t, rem, waited, None, None) for t, rem, waited in waiting]
        reservations: list[Reservation] = []
        for t, rem, waited, gpus, memory in running:
            if t.preemptible:
                candidates.append(Candidate(t, rem, waited, tuple(gpus), memory))
            else:
                steps = rem / max(task_speed(t, memory), 1e-12)
                reservations.extend(Reservation(g, memory, t.compute, steps) for g in gpus)
        name = self.config.mechanism
        recorded: dict[str, Any] = {}

        def recording_mechanism(instance: Instance, **kw: Any) -> Outcome:
            recorded["instance"] = instance
            if name == "lavi-swamy":  # as Market does: alpha fixed by the settings, never by the reports
                kw.update(lavi_swamy_options(self.config))
            work = work_budget_options(name, kw.get("method"), self.config)
            if work is not None:  # vcg, core: pivots and separation solves on the work budget too
                kw.update(method="auto", options=work)
            recorded["outcome"] = out = run_mechanism(instance, mechanism=name, **kw)
            return out

        # Market.clear hands ``mechanism`` to run_mechanism, which takes a name or a callable;
        # its annotation says str only, hence the ignore (the one non-name use of the API)
        clearing = self.market.clear(now, gpus=self.gpus, candidates=candidates, reservations=reservations,
                                     mechanism=recording_mechanism)  # type: ignore[arg-type]
        ledger = tuple(self.market.ledger[self._seen:])
        self._seen = len(self.market.ledger)
        instance = recorded.get("instance")
        outcome = recorded.get("outcome")
        plan = None
        if instance is not None and outcome is not None and clearing.assignments:
            tasks = {c.task.id: c.task for c in candidates}
            committed = [w for w in outcome.allocation.winners if _bidder(instance, w) in clearing.assignments]
            plan = to_plan(self._in_seconds(instance, now), committed, tasks,
                           name=f"round@{now:g}").to_dict()
        payments = {tid: (outcome.payments.get(tid), *outcome.payment_bounds.get(tid, (None, None)))
                    for tid in clearing.assignments} if outcome is not None else {}
        return RoundResult(clearing, outcome, instance, ledger, plan, name, MappingProxyType(payments),
                           True if outcome is None else bool(outcome.exact))

    def _clear_credit(self, now: float, *, waiting: Sequence[tuple[Task, float, float]],
                      running: Sequence[tuple[Task, float, float, tuple[str, ...], float]]) -> RoundResult:
        """One round of :class:`CreditEngine` (the simulator's ``market`` policy) on the stored
        tasks: a boundary round (income, clearing, backfill, prices, charges)."""
        assert self.engine is not None
        pool = TablePool(self.gpus, now=now, lease=self.config.lease)
        for t, rem, _ in waiting:
            pool.add(t, remaining=rem)
        before: dict[str, tuple[str, ...]] = {}
        left: dict[str, float] = {t.id: rem for t, rem, *_ in waiting}
        for t, rem, _, gpus, memory in running:
            pool.add(t, remaining=rem, gpus=gpus, memory=memory)
            before[t.id] = tuple(gpus)
            left[t.id] = rem
        t0 = time.perf_counter()
        self.engine.round(pool, True)
        seconds = time.perf_counter() - t0
        assignments = {}
        for st in pool.running():
            length = max(1, math.ceil(left[st.id] / max(st.speed, 1e-12) - 1e-9))
            assignments[st.id] = Assignment(st.id, st.gpus, st.memory, length, float(st.task.value),
                                            before.get(st.id) == st.gpus)
        preempted = tuple(tid for tid in before if tid not in assignments)
        charges: dict[str, float] = {}
        ledger = []
        for act in pool.actions:
            if act[0] == "credit":
                kw = act[1]
                ledger.append(CreditEntry(float(now), kw["tenant"], float(kw["amount"]), kw["note"], kw.get("task") or ""))
                if kw["note"] == "payment" and kw.get("task"):
                    charges[kw["task"]] = charges.get(kw["task"], 0.0) - float(kw["amount"])
        n = len(pool.tasks)
        clearing = Clearing(float(now), MappingProxyType(assignments), preempted, MappingProxyType(charges), n, n,
                            "credit", self.engine.clearing, "empty" if n == 0 else "feasible",
                            float(sum(a.value for a in assignments.values())), seconds, 0.0)
        tasks = {w[0].id: w[0] for w in waiting} | {r[0].id: r[0] for r in running}
        plan = self._credit_plan(now, assignments, tasks)
        asked = self.engine.payments
        payments = {tid: (asked.get(tid, 0.0),) * 3 for tid in assignments}
        return RoundResult(clearing, None, None, tuple(ledger), plan, "credit", MappingProxyType(payments), True,
                           MappingProxyType(self.engine.prices))

    def _credit_plan(self, now: float, assignments: Mapping[str, Assignment],
                     tasks: Mapping[str, Task]) -> dict[str, Any] | None:
        """``gensolver.plan/v1`` of a credit round: each committed task on its GPUs from the
        round's start to its finish or the end of the lease (seconds from the round)."""
        if not assignments:
            return None
        s = self.step_seconds
        held = {tid: (a.gpus, a.memory, min(a.length, self.config.lease) * s) for tid, a in assignments.items()}
        devices = {g.id: (g.memory, g.compute) for g in self.gpus}
        return lease_plan(held, devices, tasks, value={t: a.value for t, a in assignments.items()},
                          name=f"round@{now:g}").to_dict()

    def _in_seconds(self, instance: Instance, now: float) -> Instance:
        """The round's instance with slot windows in seconds from the round's start."""
        s = self.step_seconds
        slots = tuple(Slot(x.id, x.capacity, x.gpu, None if x.start is None else x.start * s,
                           None if x.end is None else x.end * s) for x in instance.slots)
        return replace(instance, slots=slots)

    @staticmethod
    def steps(task: Task, memory: float) -> int:
        return task_steps(task, memory)


def lavi_swamy_options(config: MarketConfig) -> dict[str, Any]:
    """``run_mechanism`` arguments of a ``lavi-swamy`` round: the decomposition oracle (``greedy``
    or ``auto``) and ``alpha`` fixed by the configuration before any report is read, which is what
    makes the lottery truthful in expectation (:mod:`gensolver.mechanisms.lavi_swamy`)."""
    return {"method": "greedy" if config.method == "greedy" else "auto",
            "options": {"alpha": config.alpha, "threads": config.threads, "deterministic": config.deterministic}}


def _bidder(instance: Instance, bid_id: str) -> str:
    return instance.bids[instance.bid_index[bid_id]].bidder


def check_solve_options(method: str, mechanism: str | None) -> None:
    """Refuse an unknown or unusable ``method`` / ``mechanism`` (fields ``query.*``)."""
    try:
        m = get_method(method)
    except UnknownMethodError as exc:
        raise BadRequest(str(exc), field="query.method") from None
    ok, why = m.available()
    if not ok:
        raise BadRequest(f"method {method!r} is not available on this server: {why}", field="query.method")
    if mechanism is not None:
        try:
            get_mechanism(mechanism)
        except (UnknownMechanismError, ValueError) as exc:
            raise BadRequest(str(exc), field="query.mechanism") from None


#: the mechanisms whose ``time_limit`` is a budget of work units by default (with method ``auto``
#: for ``vcg`` and ``core``); see their docstrings and CHANGELOG.md
_WORK_MECHANISMS = {"vcg": "auto", "core": "auto", "lavi-swamy": None}

#: share of a wall-clock ``time_limit`` handed to a wall-clock method: the rest is for reading
#: the instance, pricing and writing the answer, which the solver's own limit does not count
WALL_SHARE = 0.8


def solve_budget(method: str, mechanism: str | None) -> str:
    """``"work"`` when the solve's answer depends on the input only (a work budget, or a method
    whose answer never depends on time), else ``"wall clock"``."""
    if mechanism is None:
        return "work" if method == "auto" or get_method(method).deterministic else "wall clock"
    needs = _WORK_MECHANISMS.get(mechanism, "")
    return "work" if needs is None or needs == method else "wall clock"


def solve_document(doc: Any, *, method: str, time_limit: float, mechanism: str | None,
                   work: float | None = None, alpha: float | None = None) -> dict[str, Any]:
    """``POST /v1/solve``: the answer ``gensolver solve --json`` prints for the same instance.

    ``work`` (work units) is the budget of method ``auto`` (``options={"deterministic": True}``)
    and of the mechanisms that read ``time_limit`` as work units by default (``vcg`` with
    ``auto``, ``lavi-swamy``): the answer is then the same on an idle and on a loaded machine.
    Other methods get ``WALL_SHARE * time_limit`` wall-clock seconds. The caller bounds the
    whole call by ``time_limit`` wall-clock seconds. The answer's ``limits`` says which budget ran.
    ``alpha`` (``lavi-swamy`` only, a finite number >= 1) fixes the lottery's scaling before the
    reports, as ``gensolver solve --alpha`` does; the answer's ``truthful`` says whether it held.

    Raises
    ------
    InstanceError
        A document the instance reader refuses (pointer into the body).
    BadRequest
        An unknown or unusable method or mechanism, options a mechanism refuses, or a bad
        ``alpha`` (field ``query.alpha``).
    """
    check_solve_options(method, mechanism)
    if alpha is not None and mechanism != "lavi-swamy":
        raise BadRequest(f"alpha is only for mechanism lavi-swamy (got mechanism {mechanism!r})", field="query.alpha")
    if alpha is not None and not (math.isfinite(alpha) and alpha >= 1.0):
        raise BadRequest(f"alpha must be a finite number >= 1, got {alpha!r}", field="query.alpha")
    instance = from_dict(doc)
    budget = solve_budget(method, mechanism)
    units = time_limit if work is None else work
    uses_work = budget == "work" and (mechanism is not None or method == "auto")
    limit = units if uses_work else WALL_SHARE * time_limit
    outcome = None
    try:
        if mechanism is not None:
            opts = None if alpha is None else {"alpha": float(alpha)}
            outcome = run_mechanism(instance, mechanism=mechanism, method=method, time_limit=limit, options=opts)
            result = outcome.allocation
        elif method == "auto":
            result = solve(instance, method=method, time_limit=limit, options={"deterministic": True})
        else:
            result = solve(instance, method=method, time_limit=limit)
    except (UnknownMethodError, BackendUnavailableError) as exc:
        raise BadRequest(str(exc), field="query.method") from None
    except UnknownMechanismError as exc:
        raise BadRequest(str(exc), field="query.mechanism") from None
    out = json_safe(result_to_dict(result, outcome=outcome, mechanism=mechanism))
    out["limits"] = {"budget": budget, "work": units if uses_work else None, "time_limit": time_limit}
    return out
