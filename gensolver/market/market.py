"""The welfare auction, deprecated: one release more behind ``gensolver serve --market
'{"engine": "auction"}'``. The market is :class:`gensolver.market.engine.CreditEngine`.

At every round the market turns the tasks that want GPUs (waiting ones, and running
preemptible ones that must win again to keep their GPUs) into a combinatorial auction over the
free capacity of the next ``horizon`` steps, clears it with a registered mechanism, charges
payments in *credits* per tenant, refills budgets on a schedule and adjusts each tenant's weight
from what it obtained.

Auction of one round (documented model)
---------------------------------------
- **Supply.** The horizon is ``blocks`` blocks of ``lease`` steps. Each up GPU gives one slot
  per block, with its memory and compute minus what tasks that keep their GPUs (non-preemptible
  running ones, :class:`Reservation`) hold during that block.
- **Bids.** Each :class:`Candidate` task bids, XOR, on bundles (GPU group, memory level, start
  block) as in :meth:`gensolver.model.tasks.GpuRound.options`: a bundle holds its group with
  the level's memory and the task's compute for ``task_steps(task, m, work=residual)`` steps
  (the residual work; plus ``checkpoint_steps`` when a running task would move or pause),
  truncated at the horizon. At most ``max_gpu_options`` groups (best fit first, plus the current one) are offered
  per level and block.
- **Values.** A bundle finishing at absolute step ``f`` is worth
  ``task_value(task, f) * weight[tenant] * (1 + aging * waited / duration)``
  (:func:`gensolver.model.tasks.task_value`); the second factor is the tenant weight, the third
  ages tasks that waited, so no task starves (its bid grows without bound while it waits).
  With ``bid_model="deferral"`` (default) the first factor is replaced by the *cost of
  deferral* ``task_value(task, f) - (1 - deferral_floor) * task_value(task, now + horizon +
  length)``: what the task loses if it is served a horizon later instead (an outside option the
  finite horizon cannot express); without it, tasks too long for the horizon look as if they
  lose everything by waiting, and welfare-optimal rounds favour long tasks over short ones.
  ``bid_model="absolute"`` bids the plain utility.
  **No task left behind:** the first factor is at least ``late_value * value`` (default 5% of
  the reported value), also past the deadline (where :func:`worth`, the utility, is 0): a late
  task keeps a positive bid that ages like any other, so it is served when capacity frees
  (and the simulator's policy backfills idle capacity with the tasks the round left out).
  A running task's bundles that move or pause it are worth ``1 - switch_penalty`` as much.
  Bids are then scaled down, per task, so that no *charge* (see Charging) exceeds
  ``balance[tenant] / (number of the tenant's bidding tasks)``: a tenant can always pay.
- **Clearing.** ``run_mechanism(instance, mechanism=..., method=..., time_limit=...)`` of
  :mod:`gensolver.mechanisms` when present; ``"pay-as-bid"`` is built in (``solve`` + each
  winner pays its bid) so the market works without it, and so is ``"others-price"``
  (:mod:`gensolver.market.pricing`: ``solve`` + each winner pays, per GiB-step, the best value
  per GiB-step among the losing bids of *other* tenants, at most its bid; no tenant's report
  sets its own price). Instances with more than
  ``greedy_above`` bids are solved with ``"greedy"`` to keep rounds fast.
- **Commitment.** Only winning bundles that start in block 0 are committed (the rest is a
  plan, re-auctioned next round). A running task whose winning bundle is on its current GPUs
  keeps running (its memory may change); any other outcome preempts it.
- **Charging.** A committed non-preemptible task pays its whole payment now (it keeps its
  GPUs to the end); a preemptible one pays ``payment * min(1, lease / length)`` per round, the
  share of its bundle that the lease covers.
- **Budgets.** A tenant starts with ``budget`` credits and receives ``refill`` credits every
  ``refill_every`` steps, its balance capped at ``budget_cap``.
- **Fairness rule (weights).** After each round, every tenant that bid gets its *share*
  ``s_i = won memory / asked memory`` (over its candidates); with ``s̄`` the mean share,
  ``w_i <- clip(w_i * exp(eta * (s̄ - s_i)), w_min, w_max)``: tenants served less than average
  bid more next round, tenants served more bid less.
- **Feedback.** :meth:`Market.observe` records a task's observed memory use and progress (e.g.
  from :mod:`gensolver.executor`); the next round bids with ``preferred = max(min, observed)``
  and the residual work ``(1 - progress) * duration``.

References
----------
.. [1] Lehmann, O'Callaghan & Shoham, J. ACM 49(5), 2002 (greedy winner determination).
.. [2] K. Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020
   (rounds of leases, finish-time fairness).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np

from .._deprecation import method_alias, option_alias
from ..errors import InputError
from ..model.instance import Bid, Bidder, Instance, Slot
from ..model.tasks import GpuSpec, Task, aligned_blocks, task_steps, task_value
from ..model.validate import mark_validated
from ..solvers import solve
from .pricing import others_payments
from .records import Assignment, Candidate, Clearing, CreditEntry, MarketConfig, Reservation

logger = logging.getLogger(__name__)

#: the mechanisms whose own ``deterministic`` option puts every solve they make (the main solve,
#: VCG's pivots, the core's separation solves) on the work budget of method ``auto``
WORK_BUDGET_MECHANISMS = frozenset({"vcg", "core"})


def work_budget_options(mechanism: Any, method: Any, config: MarketConfig) -> dict[str, Any] | None:
    """The ``run_mechanism`` options of a deterministic round of ``mechanism`` (a name), or ``None``.

    With ``config.deterministic`` and method ``auto`` (the name, or a callable named so), the
    mechanisms of :data:`WORK_BUDGET_MECHANISMS` are run with ``method="auto"`` by name and
    these options, so that their pivots or separation solves read ``time_limit`` as work units
    too; handed a callable method they would read it as wall-clock seconds.
    """
    if not (config.deterministic and isinstance(mechanism, str) and mechanism in WORK_BUDGET_MECHANISMS):
        return None
    if getattr(method, "__name__", method) != "auto":
        return None
    return {"threads": config.threads, "deterministic": True}


__all__ = ["WORK_BUDGET_MECHANISMS", "work_budget_options", "MarketConfig", "Candidate", "Reservation",
           "Assignment", "Clearing", "CreditEntry", "Market", "MECHANISMS_BUILTIN", "worth"]

#: mechanisms the market implements itself when :mod:`gensolver.mechanisms` is absent
MECHANISMS_BUILTIN = ("pay-as-bid", "others-price")


@dataclass
class _Obs:
    memory: float | None = None
    progress: float | None = None


class _Grid:
    """The round's GPUs as arrays: capacity per block (reservations taken off) and the aligned groups per size."""

    def __init__(self, gpus: Sequence[GpuSpec], reservations: Sequence[Reservation], *, blocks: int,
                 lease: int) -> None:
        B, L = blocks, lease
        self.gpu_ids = [g.id for g in gpus]
        node_of = {g.id: g.node for g in gpus}
        model_of = {g.id: g.model for g in gpus}
        cap = {g.id: np.array([[g.memory, g.compute]] * B, dtype=float) for g in gpus}
        for r in reservations:
            if r.gpu in cap:
                nb = min(B, max(1, math.ceil(r.steps / L - 1e-9)))
                cap[r.gpu][:nb] -= (r.memory, r.compute)
        for c in cap.values():
            np.maximum(c, 0.0, out=c)
        self.cap = cap
        self.by_node: dict[str, list[str]] = {}
        for g in self.gpu_ids:
            self.by_node.setdefault(node_of[g], []).append(g)
        self.gindex = {g: i for i, g in enumerate(self.gpu_ids)}
        self.capm = np.array([cap[g][:, 0] for g in self.gpu_ids]).T  # (B, n_gpus)
        self.capc = np.array([cap[g][:, 1] for g in self.gpu_ids]).T
        self.models = np.array([model_of[g] for g in self.gpu_ids], dtype=object)
        self._by_k: dict[int, tuple[list[tuple[str, ...]], np.ndarray, np.ndarray]] = {}

    def groups(self, k: int) -> tuple[list[tuple[str, ...]], np.ndarray, np.ndarray]:
        """The aligned groups of ``k`` GPUs, their GPU indices and their lexicographic ranks (built once per k)."""
        if k not in self._by_k:
            groups_k = aligned_blocks(self.by_node, k)
            idx_k = np.array([[self.gindex[g] for g in grp] for grp in groups_k], dtype=int).reshape(-1, k)
            lex = np.empty(len(groups_k), dtype=int)  # tie-break: the group ids in lexicographic order
            lex[sorted(range(len(groups_k)), key=lambda i: groups_k[i])] = np.arange(len(groups_k))
            self._by_k[k] = (groups_k, idx_k, lex)
        return self._by_k[k]


class Market:
    """A stateful market (tenants' balances and weights, observations, ledger).

    Parameters
    ----------
    config : MarketConfig, optional
    **options
        Overrides of :class:`MarketConfig` fields (keyword-only; ``solver`` is the deprecated
        alias of ``method``).
    """

    def __init__(self, config: MarketConfig | None = None, **options: Any) -> None:
        cfg = config or MarketConfig(engine="auction")
        if options:
            options = option_alias(options, "solver", "method", where="Market")
            unknown = set(options) - set(MarketConfig.__dataclass_fields__)
            if unknown:
                raise InputError(f"unknown market option(s) {sorted(unknown)}; valid: {sorted(MarketConfig.__dataclass_fields__)}")
        if options or cfg.engine != "auction":  # this class is the auction engine, whatever the config says
            cfg = replace(cfg, **{"engine": "auction", "credit": {}, **options})
        self.config = cfg
        self.balances: dict[str, float] = {}
        self.weights: dict[str, float] = {}
        self.ledger: list[CreditEntry] = []
        self.observations: dict[str, _Obs] = {}
        self._refills_done = 0
        #: solver failures the market recovered from (fell back to greedy)
        self.errors: list[str] = []
        self._check_mechanism(cfg.mechanism)

    @staticmethod
    def _check_mechanism(name: str) -> None:
        names = set(MECHANISMS_BUILTIN)
        try:
            from ..mechanisms import MECHANISMS

            names |= set(MECHANISMS)
        except ImportError:  # pragma: no cover - mechanisms ship with the package
            pass
        if name not in names:
            raise InputError(f"unknown mechanism {name!r}; valid mechanisms: {', '.join(sorted(names))}")

    # ------------------------------------------------------------ credits
    def tenant(self, name: str, now: float = 0.0) -> None:
        """Open an account for ``name`` with the initial budget (idempotent)."""
        if name not in self.balances:
            self.balances[name] = 0.0
            self.weights[name] = 1.0
            self._credit(now, name, self.config.budget, "budget")

    def _credit(self, now: float, tenant: str, amount: float, reason: str, task: str = "") -> None:
        if amount == 0:
            return
        self.balances[tenant] += amount
        self.ledger.append(CreditEntry(float(now), tenant, float(amount), reason, task))

    def refill(self, now: float) -> None:
        """Apply every scheduled refill due by ``now`` (one per ``refill_every`` steps).

        Once every balance is at the cap (or the refill is 0), the refills still due credit
        nothing and are counted in one step: the work is bounded by ``budget_cap / refill``
        refills, never by the time elapsed (an outage of 10**15 steps costs no more).
        """
        due = int(math.floor(now / self.config.refill_every + 1e-9))
        while self._refills_done < due:
            if self.config.refill <= 0 or all(b >= self.config.budget_cap for b in self.balances.values()):
                self._refills_done = due
                break
            self._refills_done += 1
            for name in sorted(self.balances):
                room = max(0.0, self.config.budget_cap - self.balances[name])
                self._credit(now, name, min(self.config.refill, room), "refill")

    # ------------------------------------------------------------ feedback
    def observe(self, task_id: str, *, memory_gib: float | None = None, progress: float | None = None) -> None:
        """Record what a task was seen to use (memory per GPU, GiB) and its progress in [0, 1].

        The next round bids for ``max(min_memory, memory_gib)`` as the task's preferred memory
        and for the residual work ``(1 - progress) * duration``.
        """
        if memory_gib is not None and (not math.isfinite(memory_gib) or memory_gib <= 0):
            raise InputError(f"memory_gib must be positive and finite, got {memory_gib!r}")
        if progress is not None and not 0 <= progress <= 1:
            raise InputError(f"progress must be in [0, 1], got {progress!r}")
        obs = self.observations.setdefault(task_id, _Obs())
        if memory_gib is not None:
            obs.memory = float(memory_gib)
        if progress is not None:
            obs.progress = float(progress)

    def forget(self, task_id: str) -> None:
        """Drop the observations of a finished task."""
        self.observations.pop(task_id, None)

    def _adjusted(self, cand: Candidate) -> Candidate:
        obs = self.observations.get(cand.task.id)
        if obs is None:
            return cand
        task, remaining = cand.task, cand.remaining
        if obs.memory is not None:
            pref = min(task.preferred_memory, max(task.min_memory, obs.memory))
            task = replace(task, preferred_memory=pref)
        if obs.progress is not None:
            remaining = (1.0 - obs.progress) * cand.task.duration
        return replace(cand, task=task, remaining=remaining)

    # ------------------------------------------------------------ the auction
    def build(self, now: float, gpus: Sequence[GpuSpec], candidates: Sequence[Candidate],
              reservations: Sequence[Reservation] = ()
              ) -> tuple[Instance | None, dict[str, tuple[Candidate, tuple[str, ...], float, int, int, float]]]:
        """The round's instance and, per bid id, ``(candidate, gpus, memory, start block, length, value)``."""
        cfg = self.config
        B, L = cfg.blocks, cfg.lease
        grid = _Grid(gpus, reservations, blocks=B, lease=L)
        slots = [Slot(f"{g}@b{b}", {"memory": float(grid.cap[g][b, 0]), "compute": float(grid.cap[g][b, 1])}, g,
                      float(b * L), float((b + 1) * L)) for g in grid.gpu_ids for b in range(B)]
        bids: list[Bid] = []
        meta: dict[str, tuple[Candidate, tuple[str, ...], float, int, int, float]] = {}
        for cand in candidates:
            cand = self._adjusted(cand)
            options = self._options(now, cand, grid)
            if not options:
                continue
            self._add_bids(cand, options, candidates, bids, meta)
        if not bids:
            return None, meta
        bidders = tuple(Bidder(tid, None) for tid in dict.fromkeys(b.bidder for b in bids))
        inst = mark_validated(Instance(tuple(slots), tuple(bids), bidders, f"market@{now:g}",
                              {"family": "market-round", "time": now, "lease": L, "blocks": B}))
        return inst, meta

    def _options(self, now: float, cand: Candidate, grid: _Grid) -> list[tuple[tuple[str, ...], float, int, int, float]]:
        """Every ``(gpus, memory, start block, length, value)`` the candidate may bid for, before the budget cap.

        Per memory level and start block: the aligned GPU groups where it fits, the least memory
        left over first (ties by group ids), at most ``max_gpu_options`` of them plus the task's
        current placement at block 0; the value of finishing then, aged, weighted and deferred.
        """
        cfg = self.config
        B, L = cfg.blocks, cfg.lease
        t = cand.task
        w = self.weights.get(t.tenant, 1.0) * (1.0 + cfg.aging * cand.waited / t.duration)
        groups, gidx, lex = grid.groups(t.gpus)
        allowed = np.ones(len(groups), dtype=bool)
        if cand.models is not None and len(groups):
            ok_model = np.isin(grid.models, list(cand.models))
            allowed = ok_model[gidx].all(axis=1)
        res_dur = max(1, math.ceil(cand.remaining - 1e-9))
        options: list[tuple[tuple[str, ...], float, int, int, float]] = []
        pref_len = task_steps(t, t.preferred_memory, work=res_dur)
        defer = (1.0 - cfg.deferral_floor) * worth(t, now + cfg.horizon + pref_len) \
            if cfg.bid_model == "deferral" else 0.0
        floor = cfg.late_value * float(t.value)
        mems = np.asarray(t.memory_levels(cfg.memory_levels), dtype=float)
        if len(groups):  # every (level, block, group) at once: fits, and memory left over
            gm, gc = grid.capm[:, gidx], grid.capc[:, gidx]  # (B, groups, k)
            fit_all = ((gm[None] + 1e-9 >= mems[:, None, None, None]).all(axis=-1)
                       & (gc + 1e-9 >= t.compute).all(axis=-1)[None] & allowed[None, None])
            left_all = gm.sum(axis=-1)[None] - t.gpus * mems[:, None, None]
        for li, mem in enumerate(mems):
            mem = float(mem)
            stay_len = task_steps(t, mem, work=res_dur)
            move_len = task_steps(t, mem, work=max(1, math.ceil(cand.remaining + cfg.checkpoint_steps - 1e-9)))
            for b in range(B):
                if len(groups):
                    cand_idx = np.flatnonzero(fit_all[li, b])
                    order = cand_idx[np.lexsort((lex[cand_idx], left_all[li, b, cand_idx]))]
                else:
                    order = np.zeros(0, dtype=int)
                chosen = [groups[i] for i in order[:cfg.max_gpu_options]]
                if cand.placement is not None and b == 0 and cand.placement not in chosen and \
                        any(groups[i] == cand.placement for i in order):
                    chosen.append(cand.placement)
                for grp in chosen:
                    stay = cand.placement is not None and grp == cand.placement and b == 0
                    extra = 0 if (cand.placement is None or stay) else cfg.checkpoint_steps
                    length = move_len if extra else stay_len
                    finish = now + b * L + length
                    value = max(worth(t, finish) - defer, floor) * w
                    if cand.placement is not None and not stay:
                        value *= 1.0 - cfg.switch_penalty
                    if value <= 0:
                        continue
                    options.append((grp, mem, b, length, value))
        return options

    def _add_bids(self, cand: Candidate, options: list[tuple[tuple[str, ...], float, int, int, float]],
                  candidates: Sequence[Candidate], bids: list[Bid],
                  meta: dict[str, tuple[Candidate, tuple[str, ...], float, int, int, float]]) -> None:
        """The candidate's bids: its options scaled so the best per-lease value fits its tenant's budget share."""
        cfg = self.config
        B, L = cfg.blocks, cfg.lease
        t = cand.task
        tenant = t.tenant
        cap_value = self.balances.get(tenant, cfg.budget) / max(1, sum(1 for c in candidates if c.task.tenant == tenant))
        top = max(o[4] * (min(1.0, L / o[3]) if t.preemptible else 1.0) for o in options)
        scale = min(1.0, cap_value / top) if top > 0 else 0.0
        for k, (grp, mem, b, length, value) in enumerate(options):
            v = value * scale
            if v <= 0:
                continue
            nb = min(B, b + math.ceil(length / L - 1e-9))
            demand = {f"{g}@b{bb}": {"memory": mem, "compute": t.compute} for g in grp for bb in range(b, nb)}
            bid_id = f"{t.id}|{k}"
            bids.append(Bid(bid_id, t.id, float(v), demand))
            meta[bid_id] = (cand, grp, mem, b, length, float(v))

    def clear(self, now: float, *, gpus: Sequence[GpuSpec], candidates: Sequence[Candidate],
              reservations: Sequence[Reservation] = (), mechanism: str | None = None, method: str | None = None,
              time_limit: float | None | str = "config", solver: str | None = None) -> Clearing:
        """Run one round at step ``now``.

        Parameters
        ----------
        now : float
        gpus : sequence of GpuSpec, keyword-only
            The GPUs that are up.
        candidates : sequence of Candidate, keyword-only
            Waiting tasks and running preemptible ones.
        reservations : sequence of Reservation, keyword-only
            Capacity held by tasks that keep their GPUs.
        mechanism, method, time_limit : keyword-only
            Override the configuration for this round.
        solver : str, optional, keyword-only
            Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
            removed in the next release).

        Returns
        -------
        Clearing
        """
        method = method_alias(method, solver, where="Market.clear", default=None)
        cfg = self.config
        self.refill(now)
        for c in candidates:
            self.tenant(c.task.tenant, now)
        mech = mechanism or cfg.mechanism
        if isinstance(time_limit, str):
            if time_limit != "config":
                raise InputError(f"time_limit must be seconds, None or 'config', got {time_limit!r}")
            limit = cfg.time_limit
        else:
            limit = time_limit
        cands = list(candidates)
        if len(cands) > cfg.max_bidders:
            running = [c for c in cands if c.placement is not None]
            waiting = [c for c in cands if c.placement is None]
            waiting.sort(key=lambda c: (-self.priority(c), c.task.release, c.task.id))
            cands = (running + waiting)[:max(cfg.max_bidders, len(running))]
        t0 = time.perf_counter()
        inst, meta = self.build(now, gpus, cands, reservations)
        t1 = time.perf_counter()
        if inst is None:
            preempted = tuple(c.task.id for c in cands if c.placement is not None)
            return Clearing(float(now), MappingProxyType({}), preempted, MappingProxyType({}), len(cands), 0, mech,
                            "", "empty", 0.0, 0.0, t1 - t0)
        method = method or cfg.method
        if inst.n_bids > cfg.greedy_above:
            method = "greedy"
        logger.debug("round at step %g: %d candidates, %d bids on %d slots, %s with %s", now, len(cands),
                     inst.n_bids, inst.n_slots, mech, method)
        tenant_of = {c.task.id: c.task.tenant for c in cands}
        winners, payments, status, welfare, used, honest = self._run(inst, mech, method, limit, tenant_of)
        t2 = time.perf_counter()
        logger.info("round at step %g: %s, %d winning bids, welfare %.6g, %.3f s", now, status, len(winners),
                    welfare, t2 - t1)
        assignments: dict[str, Assignment] = {}
        charges: dict[str, float] = {}
        won_mem: dict[str, float] = {}
        for bid_id in winners:
            cand, grp, mem, b, length, value = meta[bid_id]
            if b != 0:
                continue
            tid = cand.task.id
            keep = cand.placement is not None and grp == cand.placement
            assignments[tid] = Assignment(tid, grp, mem, length, value, keep)
            pay = float(payments.get(tid, 0.0))
            charge = pay if not cand.task.preemptible else pay * min(1.0, cfg.lease / length)
            charge = min(charge, max(0.0, self.balances[cand.task.tenant]))
            if charge > 0:
                charges[tid] = charge
                self._credit(now, cand.task.tenant, -charge, "payment", tid)
            won_mem[cand.task.tenant] = won_mem.get(cand.task.tenant, 0.0) + mem * cand.task.gpus
        preempted = tuple(c.task.id for c in cands if c.placement is not None and c.task.id not in assignments)
        self._update_weights(cands, won_mem)
        return Clearing(float(now), MappingProxyType(assignments), preempted, MappingProxyType(charges), len(cands),
                        inst.n_bids, mech, used, status, welfare, t2 - t1, t1 - t0, *honest)

    def priority(self, cand: Candidate) -> float:
        """Aged reported value per GiB-step of a candidate: the order in which tasks are admitted
        to a round when more than ``max_bidders`` bid."""
        t = cand.task
        aged = t.value * self.weights.get(t.tenant, 1.0) * (1.0 + self.config.aging * cand.waited / t.duration)
        return float(aged / (t.preferred_memory * t.gpus * max(1.0, cand.remaining)))

    def _run(self, inst: Instance, mech: str, method: str, limit: float | None, tenant_of: Mapping[str, str]):
        try:
            return self._run_once(inst, mech, method, limit, tenant_of)
        except Exception as exc:  # a failing backend must not stop the market: fall back to greedy
            if method == "greedy":
                raise
            self.errors.append(f"{mech}/{method} failed ({type(exc).__name__}: {exc}); used greedy")
            return self._run_once(inst, mech, "greedy", limit, tenant_of)

    def _run_once(self, inst: Instance, mech: str, method: str, limit: float | None, tenant_of: Mapping[str, str]):
        try:
            from ..mechanisms import run_mechanism
        except ImportError:  # pragma: no cover - mechanisms ship with the package
            run_mechanism = None  # type: ignore[assignment]
        cfg = self.config
        work = work_budget_options(mech, method, cfg)
        if work is not None:
            out = run_mechanism(inst, mechanism=mech, method="auto", time_limit=limit, options=work)
            return self._from_outcome(out)
        if method == "auto" and cfg.deterministic:
            threads = cfg.threads

            def auto_det(instance: Instance, *, time_limit: float | None = None, threads_: Any = None,
                         seed: int = 0, options: Any = None, **_: Any) -> Any:
                return solve(instance, method="auto", time_limit=time_limit, threads=threads, seed=0,
                             options={"deterministic": True})

            auto_det.__name__ = "auto"
            method = auto_det  # type: ignore[assignment]
        if mech == "others-price":  # winners pay the best density the round turned away from others
            alloc = solve(inst, method=method, time_limit=limit)
            pays, _ = others_payments(inst, alloc.winners, tenant_of)
            honest = (True, MappingProxyType({b: (p, p) for b, p in pays.items()}), "")
            return alloc.winners, pays, alloc.status.value, alloc.welfare, alloc.method, honest
        if run_mechanism is None and mech == "pay-as-bid":
            alloc = solve(inst, method=method, time_limit=limit)
            index = inst.bid_index
            pays = {inst.bids[index[w]].bidder: inst.bids[index[w]].value for w in alloc.winners}
            exact = alloc.status.value == "optimal"
            note = "" if exact else "allocation not proven optimal; payments are the bids of the returned allocation"
            honest = (exact, MappingProxyType({b: (p, p) for b, p in pays.items()}), note)
            return alloc.winners, pays, alloc.status.value, alloc.welfare, alloc.method, honest
        if mech == "lavi-swamy":  # the decomposition oracle is the method; alpha fixed by the config
            lavi = {"alpha": cfg.alpha, "threads": cfg.threads, "deterministic": cfg.deterministic}
            out = run_mechanism(inst, mechanism=mech, method="greedy" if method == "greedy" else "auto",
                                time_limit=limit, options=lavi)
        else:
            out = run_mechanism(inst, mechanism=mech, method=method, time_limit=limit)
        return self._from_outcome(out)

    @staticmethod
    def _from_outcome(out: Any):
        """``(winners, payments, status, welfare, method, (exact, bounds, why inexact))`` of a mechanism's outcome."""
        from ..mechanisms import inexact_reason

        a = out.allocation
        honest = (bool(out.exact), MappingProxyType(dict(out.payment_bounds)), inexact_reason(out))
        return a.winners, dict(out.payments), a.status.value, a.welfare, a.method, honest

    def _update_weights(self, cands: Sequence[Candidate], won_mem: Mapping[str, float]) -> None:
        cfg = self.config
        asked: dict[str, float] = {}
        for c in cands:
            asked[c.task.tenant] = asked.get(c.task.tenant, 0.0) + c.task.preferred_memory * c.task.gpus
        if len(asked) < 2:
            return
        share = {k: min(1.0, won_mem.get(k, 0.0) / v) if v > 0 else 1.0 for k, v in asked.items()}
        mean = sum(share.values()) / len(share)
        for k, s in share.items():
            self.weights[k] = float(min(cfg.w_max, max(cfg.w_min, self.weights.get(k, 1.0) * math.exp(cfg.eta * (mean - s)))))


def worth(task: Task, finish: float) -> float:
    """The round's utility of finishing ``task`` at step ``finish``: :func:`task_value`, and 0
    past the task's deadline (the floor ``late_value`` of :class:`MarketConfig` is applied by
    :meth:`Market.build`, so a late task still bids)."""
    if task.deadline is not None and finish > task.deadline + 1e-9:
        return 0.0
    return task_value(task, finish)


