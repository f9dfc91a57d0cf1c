"""The round-by-round market engine: finish-time fairness priced in credits (Themis x Karma).

One engine, :class:`CreditEngine`, clears every round; the simulator's ``market`` policy
(:mod:`gensolver.sim.policies.market`) and the service call it unchanged. It sees the cluster
through :class:`gensolver.market.pool.Pool` and imports nothing from the simulator.

Each round boundary (every ``lease`` steps):

1. **Income.** The round's income is shared by every task seen so far, finished or not
   (``income="arrivals"``; :class:`gensolver.market.credit.CreditBank`): a tenant's share is
   its share of the tasks, which no report, false name or lingering task changes.
2. **Bids.** Every active task bids credits: its tenant's committed credits split in
   proportion to how much value each of its tasks loses by waiting one more round (reported
   value, urgency and deadline; :func:`gensolver.market.credit.deferral_cost`), computed with
   numpy over all candidates at once.
3. **Clearing.** Waiting and running preemptible tasks are scored ``rho ** rho_power * (bid /
   mean bid) ** credit_power * (median remaining / remaining) ** smith`` (``rho``: Themis'
   finish-time fairness estimate from the reports; the last factor is Smith's rule on the
   calibrated remaining work) and the round is cleared, on the capacity that non-preemptible
   running tasks leave, by the solver layer (``clearing="solver"``:
   :func:`gensolver.market.clearing.clear_round`; each candidate bids XOR over best-fit
   placements, worth its score times :func:`gensolver.model.tasks.task_speed`, a running
   task's own placement ``1 + stay_bonus`` times as much; greedy on value under
   ``method="greedy"``), or (``clearing="greedy"``, the default) in decreasing score
   order, each at its preferred memory, a running task keeping its GPUs when they still fit.
   Running preemptible tasks left out are preempted (checkpoint cost).
4. **Backfill (work-conserving).** Waiting tasks still left out then start, in score order, on
   whatever is free now: at preferred memory where it fits; then (``backfill="elastic"``, the
   default) those still waiting with less memory, at least their minimum, on the GPUs with the
   most free memory (a long non-preemptible task keeps off the node a waiting gang is planned
   on where another node fits it: ``steer``); running tasks
   below their preferred memory grow into freed memory. Starts go through
   :meth:`Pool.start`, which refuses any placement over capacity.
5. **Payment.** A tenant's price per GiB-step this round is the bid per GiB-step of the
   best-scored task *of another tenant* left out for lack of capacity (0 when none was), kept
   within a factor ``spread`` of the mean bid per GiB-step of the other tenants' tasks (so one
   outlier cannot set a wild price): a tenant's own bids never set its price. Every task
   holding GPUs after the round pays ``price x memory x gpus x lease`` credits
   (:attr:`CreditEngine.payments`), at most its income share of the round (``limit``), so
   shading a bid buys no discount.

Progress is what the scheduler observes: a running task's attained work counts its progress
since its last event (:func:`attained`), whatever it reported. A report is *proved false*
only beyond a tolerance band (``tolerance``: a report at least 95% of the truth is never
caught): estimation errors are not lies (:class:`gensolver.market.evidence.ReportAudit` holds
what was observed and decides). Four rules act on reports proved false (a truthful
task is never caught, so they change nothing in a truthful run):

- **Calibration.** Reported durations are scaled, per tenant, by the largest ratio observed
  work / reported duration over its finished tasks and its unfinished tasks already past their
  reports (``evidence``; ``calibrate="max"``): the smallest factor that would have made every
  report seen so far honest (``calibrate="mean"``: total work / total reported).
- **Overrun.** A task that has run past its reported duration, or (``verify_memory``) ran below
  full speed at its reported preferred memory, is caught: its score is multiplied by
  ``overrun`` (default 0.001), so a false report buys a head start that the rest of the run
  pays back.
- **Pay-back.** While a non-preemptible task runs caught (it cannot be preempted), its
  tenant's other tasks are scored as caught (``pay_back``).
- **Forfeit.** With ``income="active"``, a caught task earns its tenant no income
  (``forfeit``): income is the fair share of a task whose report holds.

Between boundaries (arrivals, completions, recoveries; ``between``), waiting tasks start in
score order on free capacity and running tasks below their preferred memory then grow into
what is still free (step 4 only, no preemption, no payment): memory freed between boundaries
never sits idle beside a slowed task until the next boundary.

Every choice is a deterministic function of the reports and the state (ties broken by arrival
and id): reruns give the same event log, byte for byte.

**State** (:meth:`CreditEngine.state`): per tenant, plus per task not yet gone. A boundary
round's pool holds every unfinished task; a task absent from it is forgotten (also on
:meth:`CreditEngine.learn` and :meth:`CreditEngine.forget`), so the state stays bounded.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Any, Mapping

import numpy as np

from .._deprecation import method_alias
from ..errors import InputError, check_choice, check_number
from .calibrate import calibrated
from .credit import CreditBank, CreditConfig, deferral_cost, loser_prices, smith_factor, split_relative
from .evidence import ReportAudit
from .pool import TOL, Pool, Steer, TaskView, attained, greedy_round, may_start_any, pinned_free_capacity, remaining
from .reservation import Reservation, backfill, gang_steer, hold_capacity, reserve_first, room

__all__ = ["CreditEngine", "CREDIT_POWER"]

#: the engine's default ``credit_power`` (see :class:`CreditEngine`, ``**options``)
CREDIT_POWER = 0.25
logger = logging.getLogger(__name__)


class CreditEngine:
    """The credit market's round engine (see the module docstring).

    Call :meth:`learn` when a task finishes and :meth:`round` at every scheduling pass
    (``boundary=True`` every ``lease`` steps); set :attr:`lease` to the round length.

    Parameters
    ----------
    backfill : {"elastic", "preferred", "none"}, keyword-only
        Left-out tasks start on free capacity at preferred memory, then those still waiting at
        less, at least their minimum (``"elastic"``: work-conserving); or only at preferred
        memory, or never (kept to compare).
    density : {"work", "size"}, keyword-only
        Bids are per GiB-step of remaining work (``"work"``: Smith's rule, the deferral cost
        per unit of work, short urgent tasks first) or per GiB (``"size"``).
    overrun : float, keyword-only
        Score factor of a task that proved its report false (ran past its reported duration, or
        below full speed at its reported preferred memory).
    evidence : bool, keyword-only
        Duration calibration also counts the tenant's unfinished tasks already past their
        reports (their work so far), so an understating tenant is caught at its first overrun
        rather than at its first finish.
    calibrate : {"max", "mean"}, keyword-only
        The per-tenant duration factor: the largest ratio observed work / reported duration
        over the evidence (``"max"``), or total observed work / total reported duration
        (``"mean"``, the earlier rule, diluted by the lower bounds of unfinished tasks). A
        truthful tenant's ratios are all 1 under both rules.
    pay_back : bool, keyword-only
        While a non-preemptible task of a tenant runs caught (past its reported duration, or
        slower than its memory report allows), every other task of that tenant is scored as
        caught too (``overrun``): the overrun penalty cannot stop the task itself, so the head
        start its false report bought is paid back by its tenant's other tasks.
    verify_memory : bool, keyword-only
        A task seen running below full speed at its reported preferred memory (it needs more
        than it reported) is caught, like an overrun, for the rest of its run.
    income : {"arrivals", "active"}, keyword-only
        Who earns each round's income: every task that has arrived so far, finished or not
        (``"arrivals"``: a tenant's share is its share of the tasks, which no report, delay of
        the run or false name changes), or every active task (``"active"``: a task earns for
        as long as it waits or runs, so a lie that keeps tasks active longer earns more).
    forfeit : bool, keyword-only
        With ``income="active"``, a caught task earns its tenant no income (its share is not
        issued).
    tail : float, keyword-only
        Makespan rule, off at 0: a task whose remaining (calibrated) work is at least ``tail``
        times the drain time (all active tasks' remaining GiB-steps over the up GPUs' memory)
        goes first, since its waiting delays the last finish. It trades JCT for memory
        utilisation over the makespan; it trusts reported durations until calibration
        corrects them, so inflating one's durations can buy this priority.
    reserve : float, keyword-only
        Planned starts (:mod:`gensolver.market.reservation`), off at ``inf`` (the default): a
        waiting non-preemptible task whose calibrated reported duration spans at least
        ``reserve_long`` rounds, once it has waited ``reserve`` times that duration, goes first
        and holds a reservation, its earliest start on the GPUs its pinned neighbours free first;
        other tasks may take the memory it reserves only if they end by then (EASY backfilling),
        so its start no longer depends on when a gap opens. A tenant one of whose finished tasks
        worked less than ``1 - tolerance`` of its report has its durations counted at the
        smallest such ratio here (and only here): an inflated duration buys no reservation.
    reserve_long : float, keyword-only
        Rounds (leases) a task's reported duration must span to get a planned start (default 20).
    reserve_hold : bool, keyword-only
        Such a long task not yet due does not start while another task waits (default False).
    limit : {"share", "balance"}, keyword-only
        A running task pays ``price x GiB x lease`` per round, at most its income share of the
        round (``"share"``: ``income / tasks seen so far``, so no payment depends on which
        account or false name pays it), or at most its tenant's balance (``"balance"``, the
        earlier rule). :attr:`payments` holds the uncapped amounts of the last round.
    smith : float, keyword-only
        Exponent of Smith's rule in the score: each score is multiplied by ``(median remaining
        / remaining) ** smith`` over the round's candidates (remaining: calibrated remaining
        work over current speed); ``rho`` keeps long waiters from starving. Default 1 (with
        ``credit_power`` 0.25, below). Measured (``benchmarks/bench_market.py --policy-seeds``
        and ``benchmarks/bench_market_levers.py``, 6 seeds, Alibaba list and synthetic, 12 and
        28 GPUs x16): average JCT 0.92-0.93x finish-time-fair's on the Alibaba list and
        0.83-0.84x on synthetic (0.98-1.01x and 0.92-0.94x at ``smith=0``), deadline hit rate
        up; at full ``credit_power`` Smith's rule let urgency lies gain up to 18% on the
        Alibaba list at 12 GPUs (6 seeds), hence the smaller credit power. ``smith=0`` is the
        earlier rule.
    tolerance : float, keyword-only
        Estimation errors are not lies: a report at least ``1 - tolerance`` times the truth
        (default 0.05: off by up to 5%) is never proved false. With ``band = 1 / (1 -
        tolerance)``, a task is caught when its work exceeds ``band`` times its reported
        duration, or (``verify_memory``) when it runs at its reported preferred memory slower
        than ``band ** -elasticity`` (it needs more than ``band`` times the memory it
        reported); calibration counts a ratio observed work / reported duration within the
        band as 1; a task seen slower than its report predicts but within the band grows into
        free memory up to ``band`` times its reported preferred memory (the estimate is
        corrected), and its tenant's next tasks are planned at their reports times the largest
        such need over report seen (:mod:`gensolver.market.calibrate`).
    clearing : {"solver", "greedy"}, keyword-only
        How a boundary round is cleared: in score order at preferred memory, best fit
        (``"greedy"``, the default), or by the solver layer (``"solver"``:
        :func:`gensolver.market.clearing.clear_round`, XOR bids over placement and memory level
        valued ``score x task_speed``).
    method : str, keyword-only
        With ``clearing="solver"``: the :func:`gensolver.solve` method (``"greedy"`` on value,
        ``"lp"``, or ``"auto"`` with a deterministic ``budget`` of work units).
    budget : float, keyword-only
        Work units per round for ``method="auto"`` (never wall-clock seconds: reruns are
        byte-identical).
    levels : int, keyword-only
        Memory levels per task, preferred down to minimum (``clearing="solver"``; default 1:
        measured, smaller levels in the clearing cost JCT on the Alibaba lists; the elastic
        backfill and growth still use the range).
    stay_bonus : float, keyword-only
        Relative bonus of a running task's bid on its current GPUs (``clearing="solver"``).
    max_options : int, keyword-only
        Placements (best fit first) each task bids on per memory level (``clearing="solver"``).
    between : bool, keyword-only
        Passes between boundaries (arrivals, completions) start waiting tasks on free capacity
        (``True``, the default: work-conserving between rounds), or change nothing
        (``False``: decisions only at round boundaries, as ``gensolver serve`` clears them; what
        makes a simulation comparable round by round with the service).
    steer : bool, keyword-only
        Gang-aware placement (default ``True``): while a multi-GPU task waits, the node it
        would get first as a reservation (:func:`gensolver.market.reservation.gang_steer`) is
        kept clear of non-preemptible starts that would outlast its planned start, as a
        preference: they take that node only where no other fits, so no task waits that fits.
        Measured (6 seeds, ``benchmarks/bench_market.py --policy-seeds 6``): on the Alibaba list
        at 28 GPUs x4, where a 1-step 8-GPU pod waited 80+ steps, average JCT and p95 within
        1% of the best other policy on every seed (before: 1.012 and 1.077 at worst);
        unchanged at 12 GPUs x16; at 28 GPUs x16 JCT 0.910x FTF either way, p95 / best 1.099
        -> 1.106. ``False``: the earlier placement.
    switch_penalty : float, keyword-only
        Relative discount of a running task's bids that move it or change its memory level
        (``clearing="solver"``).
    solver : str, keyword-only
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).
    keep : float, keyword-only
        Tail guard, off at 0: a running task keeps its place against Smith's rule (factor at
        least 1, times ``1 + keep``; :func:`gensolver.market.credit.smith_factor`). ``keep=0.5``,
        seeds 3-5: p95 JCT / best other policy 1.18 -> 1.15 on synthetic 28 GPUs x16, average
        JCT within 0.4%; mixed on the Alibaba list, and false names gain 3.9% on synthetic 12
        GPUs x16 (3 seeds; ``docs/explanation/market.md``).
    **options
        :class:`gensolver.market.credit.CreditConfig` fields (``income``, ``spend``,
        ``rho_power``, ``credit_power``, ``spread``, ``cap``). The engine's ``credit_power``
        defaults to :data:`CREDIT_POWER` (0.25: credits and urgency move a score by at most
        ``spread ** 0.25``, 1.107 at the default spread, either way): measured over 6 seeds
        with Smith's rule on, the best urgency or false-name lie of the largest tenant gains at
        most 1.9% on synthetic workloads at 12 and 28 GPUs x16 under both clearings; at 0.5
        urgency lies gained 3.0% there (greedy clearing), and at 1 up to 18% on the Alibaba
        list at 12 GPUs x16. (The solver clearing's earlier default, 0.5 without Smith's rule,
        let false names gain 3.6% on synthetic, 3 seeds.) Urgency lies still gain 6.1% on the
        Alibaba list at 12 GPUs x16 (noise floor 4.1%; 7.1% under the earlier rule, whose
        noise floor was 17%).
    """

    def __init__(self, *, backfill: str = "elastic", density: str = "work", overrun: float = 1e-3,
                 evidence: bool = True, verify_memory: bool = True, income: str = "arrivals",
                 forfeit: bool = True, tail: float = 0.0, limit: str = "share", calibrate: str = "max",
                 pay_back: bool = True, tolerance: float = 0.05, smith: float = 1.0, clearing: str = "greedy",
                 method: str = "greedy", budget: float | None = None, levels: int = 1, stay_bonus: float = 0.05,
                 switch_penalty: float = 0.2, max_options: int = 8, between: bool = True,
                 solver: str | None = None, reserve: float = math.inf, reserve_long: float = 20.0,
                 keep: float = 0.0, reserve_hold: bool = False, steer: bool = True, **options: Any) -> None:
        self.rounds: list[dict[str, Any]] = []
        #: per task holding GPUs after the last boundary round: ``price x GiB x GPUs x lease``
        self.payments: dict[str, float] = {}
        for name, flag in (("between", between), ("steer", steer)):
            if not isinstance(flag, bool):
                raise InputError(f"{name} must be true or false, got {flag!r}")
        self.between, self.steer = between, steer
        self.clearing = check_choice("clearing", clearing, ("greedy", "solver"))
        method = method_alias(method, solver, where="CreditEngine", default="greedy")
        if not isinstance(method, str) or not method:
            raise InputError(f"method must be a method name, got {method!r}")
        if method == "auto" and budget is None:
            raise InputError("method='auto' needs a deterministic work budget (budget=...)")
        self.method, self.budget = method, budget
        for name, v in (("levels", levels), ("max_options", max_options)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be an integer >= 1, got {v!r}")
        self.levels, self.max_options = levels, max_options
        self.stay_bonus = check_number("stay_bonus", stay_bonus, 0.0, math.inf)
        self.switch_penalty = check_number("switch_penalty", switch_penalty, 0.0, 1.0, open_top=True)
        self.tolerance = check_number("tolerance", tolerance, 0.0, 1.0, open_top=True)
        self.smith, self.keep = check_number("smith", smith, 0.0, math.inf), check_number("keep", keep, 0.0, math.inf)
        self.reserve = math.inf if reserve == math.inf else check_number("reserve", reserve, 0.0, math.inf)
        self.reserve_long = check_number("reserve_long", reserve_long, 0.0, math.inf)
        self.reserve_hold = check_choice("reserve_hold", {1: "True", 0: "False"}.get(reserve_hold, reserve_hold), ("False", "True")) == "True"
        self.calibrate, self.pay_back = check_choice("calibrate", calibrate, ("max", "mean")), pay_back
        self.overrun = check_number("overrun", overrun, 0.0, 1.0)
        self.mode, self.smoothing = options.pop("mode", "density"), options.pop("smoothing", 0.25)
        self.evidence, self.verify_memory, self.forfeit = evidence, verify_memory, forfeit
        self.tail = check_number("tail", tail, 0.0, math.inf)
        self.income, self.limit = check_choice("income", income, ("arrivals", "active")), check_choice("limit", limit, ("share", "balance"))
        self._seen: set[str] = set()  # the tasks seen and not yet gone (see _forget)
        self._arrived: dict[str, int] = {}  # tasks seen so far per tenant, in order of first arrival
        self._price: dict[str, float] = {}
        self.density, self.backfill = (check_choice("density", density, ("work", "size")),
                                       check_choice("backfill", backfill, ("elastic", "preferred", "none")))
        options.setdefault("credit_power", CREDIT_POWER)  # measured: more lets urgency lies pay (docstring)
        self.bank = CreditBank(CreditConfig(), **options)
        self.lease = 5
        #: what was observed against the reports (calibration, overruns, slow tasks)
        self.audit = ReportAudit(tolerance=self.tolerance, evidence=evidence, calibrate=self.calibrate,
                                 verify_memory=verify_memory)
        self._held: Reservation | None = None  # this pass's reservation (reservation.py), with the duration
        self._kap: Mapping[str, float] = {}  # factors it was planned with
        self._hold: frozenset[str] = frozenset()  # long tasks held back until due (reserve_hold)
        self._steer: Steer | None = None  # this pass's placement steering for a waiting gang (steer)

    @property
    def balances(self) -> dict[str, float]:
        return self.bank.balances

    @property
    def prices(self) -> dict[str, float]:
        """Each tenant's price per GiB-step after the last boundary round (0 when absent)."""
        return dict(self._price)

    _STATE = ("_seen", "_arrived", "_price")  # see state(); then the audit's (ReportAudit.STATE)

    def state(self) -> dict[str, Any]:
        """The engine's memory between rounds, balances included, JSON-ready: what a restarted
        engine needs (:meth:`load_state`) to clear the next round as this one would. A task gone
        leaves only its tenant's task count (income) and calibration sums."""
        out: dict[str, Any] = {k: sorted(v) if isinstance(v, set) else v for k, v in
                               ((k.lstrip("_"), getattr(self, k)) for k in self._STATE)}
        return {**out, **self.audit.state(), "balances": dict(self.bank.balances)}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state` returned (``arrived`` may be the earlier list of owners)."""
        for k in self._STATE:
            v = state.get(k.lstrip("_"))
            if k == "_arrived" and isinstance(v, list):  # stored before counts: one owner per task seen
                v = dict(Counter(map(str, v)))
            if v is not None:
                setattr(self, k, set(v) if isinstance(getattr(self, k), set) else type(getattr(self, k))(v))
        self.audit.load_state(state)
        self.bank.balances.update({str(t): float(b) for t, b in state.get("balances", {}).items()})

    def forget(self, task_id: str) -> None:
        """``task_id`` is gone for good (finished, failed or cancelled): drop what the engine
        kept about it. Its tenant's task count (income) and calibration sums stay."""
        self._forget((task_id,))

    def _forget(self, ids: Any) -> None:
        gone = set(ids)
        self._seen -= gone
        self.audit.forget(gone)

    def _retain(self, active: set[str]) -> None:  # a boundary pool holds every task not yet gone
        self._forget([tid for tid in (self._seen | self.audit.tracked()) if tid not in active])

    def _payers(self) -> list[str]:  # one owner per task seen (income="arrivals")
        return [t for t, k in self._arrived.items() for _ in range(k)]

    def learn(self, st: TaskView) -> None:
        """A task finished: its observed work against its reported duration, per tenant
        (:meth:`~gensolver.market.evidence.ReportAudit.learn`, the evidence calibration uses); the task itself is then
        forgotten (:meth:`forget`)."""
        self.audit.learn(st)
        self._forget((st.id,))

    def calibration(self, tenant: str) -> float:
        """:meth:`~gensolver.market.evidence.ReportAudit.calibration` of ``tenant``."""
        return self.audit.calibration(tenant)

    # ------------------------------------------------------------ scoring (vectorised)
    def _scores(self, cluster: Pool, states: list[TaskView], active: list[TaskView] | None = None,
                running: list[TaskView] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(score, beta)`` arrays for ``states`` from their reports (``beta``: bid per GiB-step
        of this round's lease). ``active`` (the cluster's waiting then running tasks) and
        ``running``, when the caller has them, spare asking the cluster again."""
        n = len(states)
        if n == 0:
            return np.zeros(0), np.zeros(0)
        now = cluster.now
        cfg = self.bank.config
        rep = [s.task for s in states]
        running = cluster.running() if running is None else running
        kap = self.audit.kappas(now, cluster.waiting() + running if active is None else active)
        # one pass over the states, one fresh contiguous array per column
        arrival, reported, kappa, done, speed, value, urg, dl, release, size = (np.array(c, dtype=float) for c in zip(*[
            (s.arrival, t.duration, kap.get(t.tenant, 1.0), attained(s, now),
             s.speed if s.state == "running" and s.speed > 0 else 1.0, t.value, t.urgency,
             math.inf if t.deadline is None else t.deadline, t.release, t.preferred_memory * t.gpus)
            for s, t in zip(states, rep)]))
        dur = reported * kappa
        rem = np.maximum(0.0, dur - done)
        rho = ((now - arrival) + rem / speed) / dur
        ideal = release + dur  # calibrated, like rho
        d = deferral_cost(value, urg, dur, ideal, now + rem / speed, dl, float(self.lease))
        work = size * np.maximum(rem / speed, 1.0) if self.density == "work" else size
        tenants = [t.tenant for t in rep]
        bids = self.bank.bids(tenants, d / work)
        if self.mode == "split":
            rel = split_relative(tenants, d / work, self.bank.balances, spread=cfg.spread)
        else:
            density = bids / work
            mean = density.mean()
            rel = density / mean if mean > 0 else np.ones(n)
            rel = np.clip(rel, 1.0 / cfg.spread, cfg.spread)
        score = np.power(np.maximum(rho, 1e-9), cfg.rho_power) * np.power(rel, cfg.credit_power)
        # a task that ran past its reported duration proved its report false: it keeps only
        # what nobody else wants (served last; preempted when others wait)
        over = self.audit.caught(states, done)
        if self.pay_back:  # a lie that cannot be stopped is paid back by its tenant's other tasks
            owing = self.audit.owing(now, running)
            if owing:
                over |= np.fromiter((t.tenant in owing for t in rep), bool, n)
        if self.smith > 0 or self.keep > 0:  # Smith's rule: shorter remaining (calibrated) work first
            holding = np.fromiter((s.state == "running" for s in states), bool, n)
            score = score * smith_factor(rem / speed, over, holding, self.smith, self.keep)
        if self.tail > 0:  # makespan-critical tasks first (a factor above any other score)
            score = np.where(rem / speed >= self.tail * self._drain(cluster, kap), score * 1e6, score)
        score = np.where(over, score * self.overrun, score)
        if not math.isinf(self.reserve):  # a planned start for a long task, not a gap lottery
            self._held, self._kap, self._hold = reserve_first(
                cluster, states, score, np.where(over, math.inf, dur), kap, wait=self.reserve,
                long=self.reserve_long * self.lease, low=self.audit.low, hold=self.reserve_hold)
        if self.steer:
            self._steer = gang_steer(cluster, states, kap)
        return score, bids / (size * self.lease)

    def _drain(self, cluster: Pool, kap: dict[str, float]) -> float:
        """Steps the active tasks' remaining (calibrated) GiB-steps take on the up GPUs' memory."""
        cap = sum(g.spec.memory for g in cluster.up_gpus())
        work = 0.0
        for s in cluster.waiting() + cluster.running():
            t = s.task
            work += remaining(s, cluster.now, kap.get(t.tenant, 1.0)) * t.gpus * t.preferred_memory
        return work / cap if cap > 0 else math.inf

    @staticmethod
    def _order(states: list[TaskView], score: np.ndarray) -> list[int]:
        return sorted(range(len(states)), key=lambda k: (-float(score[k]), states[k].arrival, states[k].id))

    # ------------------------------------------------------------ one pass
    def _arrive(self, states: list[TaskView]) -> None:
        """Count the tasks of ``states`` not seen before (every task is seen at its arrival pass)."""
        for s in states:
            if s.id not in self._seen:
                self._seen.add(s.id)
                self._arrived[s.task.tenant] = self._arrived.get(s.task.tenant, 0) + 1

    def round(self, cluster: Pool, boundary: bool) -> None:
        """One scheduling pass on ``cluster``: a full clearing with income, preemption and
        charges at a round boundary (``boundary=True``), else starts of waiting tasks on free
        capacity only. Its decisions are ``cluster.start/stop/resize`` calls; its charges and
        income are ``cluster.emit("credit", ...)`` calls."""
        if not boundary and not self.between:
            return
        cluster = calibrated(cluster, self.audit)  # estimates seen low, corrected
        self._held, self._hold, self._steer = None, frozenset(), None
        if boundary:
            self._clear(cluster)
            return
        waiting = cluster.waiting()
        self._arrive(waiting)
        if not waiting:
            self._grow(cluster)
            return
        if self._may_start(cluster, waiting):
            running = cluster.running()
            score, _ = self._scores(cluster, waiting, waiting + running, running)
            self._backfill(cluster, [waiting[k] for k in self._order(waiting, score)])
        elif self.pay_back:  # what scoring would have observed: running tasks slower than reported
            self.audit.owing(cluster.now, cluster.running())
        self._grow(cluster)

    def _may_start(self, cluster: Pool, waiting: list[TaskView]) -> bool:
        """Whether scoring ``waiting`` could start any of them now: with planned starts off
        (scoring then plans nothing), only when the backfill could
        (:func:`~gensolver.market.pool.may_start_any`)."""
        return not math.isinf(self.reserve) or (
            self.backfill != "none" and may_start_any(cluster, waiting, elastic=self.backfill == "elastic"))

    def _clear(self, cluster: Pool) -> None:
        now = cluster.now
        running = cluster.running()
        waiting = cluster.waiting()
        active = waiting + running
        self._retain({s.id for s in active})
        if not active:
            return
        self._arrive(active)
        if self.income == "arrivals":
            self.bank.pay_income(self._payers())
        elif self.forfeit:  # a task that proved its report false earns no share of the income
            caught = self.audit.caught(active, np.fromiter((attained(s, now) for s in active), float, len(active)))
            self.bank.pay_income([s.task.tenant for s, c in zip(active, caught) if not c], shares=len(active))
        else:
            self.bank.pay_income([s.task.tenant for s in active])
        score, beta = self._scores(cluster, active, active, running)
        tenant_of = [s.task.tenant for s in active]
        idx = {s.id: k for k, s in enumerate(active)}
        cands = [s for s in active if (s.state == "waiting" or s.task.preemptible) and s.id not in self._hold]
        cap = hold_capacity(self._held, pinned_free_capacity(cluster))
        order = sorted(cands, key=lambda s: (-float(score[idx[s.id]]), s.arrival, s.id))
        if self.clearing == "solver":
            plan, memory = self._solve_round(cluster, order, score, idx, cap)
        else:
            plan, memory = greedy_round(cluster, order, cap, steer=self._steer), {}
        losers: list[int] = []  # best-scored tasks left out, of distinct tenants, in score order
        for st in order:
            k = idx[st.id]
            if st.id not in plan and len(losers) < 2 and all(tenant_of[j] != tenant_of[k] for j in losers):
                losers.append(k)
        for st in cands:
            if st.state == "running" and plan.get(st.id) != st.gpus:
                cluster.stop(st.id, reason="preempt")
        for st in cands:  # kept tasks shrink first, then grow (the solver may change a memory level)
            m = memory.get(st.id)
            if st.state == "running" and m is not None and m < st.memory - TOL:
                cluster.resize(st.id, m)
        for st in order:
            m = memory.get(st.id, st.task.preferred_memory)
            if st.state == "running" and st.id in memory and m > st.memory + TOL \
                    and all(cluster.gpus[g].free_memory + TOL >= m - st.memory for g in st.gpus):
                cluster.resize(st.id, m)
            if st.state == "waiting" and st.id in plan:
                place = plan[st.id]
                if all(cluster.gpus[g].fits(m, st.task.compute) for g in place):
                    cluster.start(st.id, place, m)
        self._backfill(cluster, [s for s in order if s.state == "waiting"])
        self._grow(cluster)
        self._charge(cluster, now, active, waiting, cands, plan, tenant_of, beta, losers)

    def _solve_round(self, cluster: Pool, order: list[TaskView], score: np.ndarray, idx: dict[str, int],
                     cap: dict[str, tuple[float, float]]) -> tuple[dict[str, tuple[str, ...]], dict[str, float]]:
        """The round cleared by the solver layer (:func:`gensolver.market.clearing.clear_round`):
        the credit rule's scores valued by the one speed law, XOR over placement and memory."""
        from .clearing import RoundTask, clear_round

        cands = [RoundTask(st.task, float(score[idx[st.id]]), st.gpus if st.state == "running" else None,
                           st.memory if st.state == "running" else None) for st in order]
        nodes = {n: [g for g in members if g in cap] for n, members in cluster.nodes.items()}
        res = clear_round(cands, cap, nodes, levels=self.levels, stay_bonus=self.stay_bonus,
                          switch_penalty=self.switch_penalty, max_options=self.max_options,
                          method=self.method, budget=self.budget, allowed=cluster.model_ok)
        return ({tid: grp for tid, (grp, _) in res.winners.items()},
                {tid: mem for tid, (_, mem) in res.winners.items()})

    def _charge(self, cluster: Pool, now: float, active: list[TaskView], waiting: list[TaskView],
                cands: list[TaskView], plan: dict[str, tuple[str, ...]], tenant_of: list[str],
                beta: np.ndarray, losers: list[int]) -> None:
        """Prices from the round's losers (set by others only) and the charges of running tasks."""
        raw = self._prices(tenant_of, beta, losers)
        a = self.smoothing
        prices = {t: (1 - a) * self._price.get(t, 0.0) + a * raw.get(t, 0.0) for t in set(tenant_of) | set(self._price)}
        self._price = prices
        charged = 0
        self.payments = {}
        shares = sum(self._arrived.values()) if self.income == "arrivals" else len(active)  # who shared this round's income
        share = self.bank.config.income / shares if self.limit == "share" else math.inf
        for s in active:
            price = prices.get(s.task.tenant, 0.0)
            if s.state == "running" and price > 0:
                amt = self.payments[s.id] = price * s.memory * len(s.gpus) * self.lease
                charged += self.bank.charge(s.task.tenant, s.id, amt, limit=share) > 0
        price = max(prices.values(), default=0.0)
        self.rounds.append(row := {"time": now, "boundary": True, "waiting": len(waiting), "candidates": len(cands),
                                   "bids": len(active), "price": price, "winners": len(plan), "charged": charged})
        logger.info("round at step %g: %s", now, ", ".join(f"{k} {v:g}" for k, v in row.items() if k != "boundary"))
        self._flush(cluster)

    def _prices(self, tenant_of: list[str], beta: np.ndarray, losers: list[int]) -> dict[str, float]:
        return loser_prices(tenant_of, beta, losers, spread=self.bank.config.spread)

    def _backfill(self, cluster: Pool, order: list[TaskView]) -> None:
        """Left-out tasks start on free capacity in ``order``: every one at its preferred memory
        first, then (``"elastic"``) those still waiting at less, at least their minimum."""
        if self.backfill != "none":
            backfill(cluster, [s for s in order if s.id not in self._hold], elastic=self.backfill == "elastic",
                     res=self._held, kappa=self._kap, steer=self._steer)

    def _grow(self, cluster: Pool) -> None:
        """Running tasks below their preferred memory grow into free memory; a task seen slow
        at its reported preferred memory, within the tolerance band (an honest under-estimate),
        grows to what its speed says it needs, at most ``band`` times its report
        (:meth:`~gensolver.market.evidence.ReportAudit.target`), so the estimate is corrected,
        not punished.

        The running tasks are observed first and again once grown to their reports
        (:meth:`~gensolver.market.evidence.ReportAudit.observe`), so a task started or grown in
        this pass is corrected in this pass, from the speed its start reported, not a pass
        later: an honest under-estimate costs no time where its GPUs have the memory."""
        running = cluster.running()
        self.audit.observe(running)
        for st in running:
            for _ in range(2):  # a task grown to its report may show the shortfall only there
                target = self.audit.target(st)
                if st.memory + TOL >= target:
                    break
                free = min(room(cluster, g, self._held, self._kap) for g in st.gpus)
                if free <= TOL:
                    break
                cluster.resize(st.id, min(target, st.memory + free))
                self.audit.observe([st])

    def _flush(self, cluster: Pool) -> None:
        for tenant, amount, reason, task in self.bank.drain():
            cluster.emit("credit", tenant=tenant, amount=amount, note=reason, task=task)

    # ------------------------------------------------------------ time jumps
    def quiet(self, cluster: Pool) -> bool:
        """Whether a boundary round on ``cluster`` is a no-op now and while time alone passes,
        so the simulator may jump its boundaries (:func:`gensolver.market.quiet.round_is_quiet`
        states and checks the sufficient conditions)."""
        from .quiet import round_is_quiet

        return round_is_quiet(self, calibrated(cluster, self.audit))
