"""The ``auction`` policy: the cluster driven by :class:`gensolver.market.Market`.

At every round boundary (every ``lease`` steps) the waiting tasks and the running preemptible
ones bid for the capacity that non-preemptible running tasks leave free over the horizon; the
market's committed winners start (or keep running, possibly with a new memory level) and the
running candidates that lost are preempted (checkpoint cost). Between boundaries, when
capacity frees (a task finishes, a GPU comes back) or tasks arrive, the market also clears a
*between-rounds* auction of the waiting tasks only over the capacity that is free right now,
with the faster ``between_solver`` (default ``"greedy"``; ``None`` waits for the next boundary).

No task left behind: after every clearing, the waiting tasks the market left out (planned for
a later block, over ``max_bidders``, or outbid) start on whatever capacity is free now, in the
market's priority order (``backfill``), so no GPU idles while a task that fits waits; and a
task past its deadline keeps a positive bid (``MarketConfig.late_value``).

Keeping rounds fast (documented option): each boundary solve is limited to
``MarketConfig.time_limit`` seconds (default 0.2 s with ``solver="auto"``, an anytime portfolio
never worse than greedy), instances over ``greedy_above`` bids use ``"greedy"``, and at most
``max_bidders`` tasks bid per round.
"""

from __future__ import annotations

from typing import Any

from ...market import Candidate, Market, MarketConfig, Reservation
from ...market.pool import backfill_start
from ..engine import TOL, Cluster
from .base import Policy

__all__ = ["AuctionPolicy"]


class AuctionPolicy(Policy):
    """Market-cleared scheduling (see the module docstring).

    Parameters
    ----------
    market : Market, optional
        A market to use (its ``lease`` should equal the simulator's); else one is built from
        ``options``.
    between_solver : str or None, keyword-only
        Solver for between-rounds clearings; ``None`` disables them.
    backfill : {"elastic", "preferred", "none"}, keyword-only
        After every clearing, waiting tasks left out start on free capacity (work
        conservation): at preferred memory, else (``"elastic"``, the default) with less, at
        least their minimum. ``"none"`` is not work-conserving (kept for comparison).
    **options
        :class:`gensolver.market.MarketConfig` fields (``mechanism``, ``solver``,
        ``time_limit``, ``budget``, ...). The mechanism defaults to ``"others-price"``
        (:mod:`gensolver.market.pricing`) here, where :class:`MarketConfig` (and the service)
        keep ``"pay-as-bid"``.
    """

    name = "auction"

    def __init__(self, *, market: Market | None = None, between_solver: str | None = "greedy",
                 backfill: str = "elastic", **options: Any) -> None:
        super().__init__()
        if backfill not in ("elastic", "preferred", "none"):
            raise ValueError(f"backfill must be 'elastic', 'preferred' or 'none', got {backfill!r}")
        self.backfill = backfill
        if market is None:
            options.setdefault("mechanism", "others-price")  # no tenant's report sets its own price
        self.market = market if market is not None else Market(MarketConfig(), **options)
        self.between_solver = between_solver
        self._ledger_seen = 0

    def attach(self, cluster: Cluster) -> None:
        from dataclasses import replace

        self.market.config = replace(self.market.config, lease=cluster.lease,
                                     checkpoint_steps=cluster.checkpoint_steps)

    def _flush_ledger(self, cluster: Cluster) -> None:
        for e in self.market.ledger[self._ledger_seen:]:
            cluster.emit("credit", tenant=e.tenant, amount=e.amount, note=e.reason, task=e.task)
        self._ledger_seen = len(self.market.ledger)

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        self._clear(cluster, boundary)
        if self.backfill != "none":
            self._backfill(cluster)
        self._flush_ledger(cluster)

    def _backfill(self, cluster: Cluster) -> None:
        """Work conservation: waiting tasks the clearing left out start on what is free now, in
        the market's priority order (:meth:`Market.priority`), at preferred memory where it fits
        (best fit), else (``backfill="elastic"``) with what the freest group has, at least their
        minimum; running tasks below their preferred memory then grow into freed memory."""
        waiting = cluster.waiting()
        if waiting:
            now = cluster.now
            models = cluster.allowed
            keyed = [(-self.market.priority(Candidate(s.task, s.est_remaining, now - s.waiting_since + _waited_before(s),
                                                      None, None, _models(models, s.id))), s.arrival, s.id, s)
                     for s in waiting]
            for *_, st in sorted(keyed, key=lambda k: k[:3]):
                backfill_start(cluster, st, elastic=self.backfill == "elastic")
        for st in cluster.running():
            if st.memory + TOL < st.task.preferred_memory:
                free = min(cluster.gpus[g].free_memory for g in st.gpus)
                if free > TOL:
                    cluster.resize(st.id, min(st.task.preferred_memory, st.memory + free))

    def _clear(self, cluster: Cluster, boundary: bool) -> None:
        now = cluster.now
        waiting = cluster.waiting()
        if not boundary:
            if self.between_solver is None or not waiting:
                return
            # only worth a clearing when some waiting task fits in the free capacity now
            if not any(any(g.fits(s.task.min_memory, s.task.compute) for g in cluster.up_gpus()) for s in waiting):
                return
        running = cluster.running()
        models = cluster.allowed
        cands = [Candidate(s.task, s.est_remaining, now - s.waiting_since + _waited_before(s), None, None,
                           _models(models, s.id)) for s in waiting]
        reservations: list[Reservation] = []
        for s in running:
            if boundary and s.task.preemptible:
                cands.append(Candidate(s.task, s.est_remaining, _waited_before(s), s.gpus, s.memory,
                                       _models(models, s.id)))
            else:
                steps = s.est_remaining / s.speed if s.speed > 0 else float("inf")
                reservations.extend(Reservation(g, s.memory, s.compute, steps) for g in s.gpus)
        if not cands:
            self.market.refill(now)
            return
        gpus = [g.spec for g in cluster.up_gpus()]
        if not gpus:
            return
        kw: dict[str, Any] = {}
        if not boundary:
            kw = {"solver": self.between_solver, "mechanism": self.market.config.mechanism}
        clearing = self.market.clear(now, gpus=gpus, candidates=cands, reservations=reservations, **kw)
        self.rounds.append({"time": now, "boundary": boundary, "waiting": len(waiting), "candidates": clearing.candidates,
                            "bids": clearing.bids, "seconds": clearing.seconds, "build_seconds": clearing.build_seconds,
                            "method": clearing.method, "status": clearing.status, "welfare": clearing.welfare,
                            "winners": len(clearing.assignments), "payments_exact": clearing.payments_exact,
                            "payments_note": clearing.payments_note,
                            "payment_bounds": {k: list(v) for k, v in clearing.payment_bounds.items()}})
        # apply: stops, shrinks, grows, starts
        for tid in clearing.preempted:
            cluster.stop(tid, reason="preempt")
        for tid, a in clearing.assignments.items():
            st = cluster.tasks[tid]
            if st.state == "running" and not a.keep:
                cluster.stop(tid, reason="preempt")
        keeps = [(tid, a) for tid, a in clearing.assignments.items() if a.keep and cluster.tasks[tid].state == "running"]
        for tid, a in sorted(keeps, key=lambda p: p[1].memory - cluster.tasks[p[0]].memory):
            st = cluster.tasks[tid]
            if a.memory < st.memory - TOL or all(cluster.gpus[g].free_memory + TOL >= a.memory - st.memory for g in st.gpus):
                cluster.resize(tid, a.memory)
        for tid, a in clearing.assignments.items():
            st = cluster.tasks[tid]
            if st.state == "waiting" and all(cluster.gpus[g].fits(a.memory, st.task.compute) for g in a.gpus):
                cluster.start(tid, a.gpus, a.memory)


def _models(allowed, task_id: str) -> tuple[str, ...] | None:  # type: ignore[no-untyped-def]
    m = allowed.get(task_id)
    return None if m is None else tuple(sorted(m))


def _waited_before(s) -> float:
    """Steps a task has waited before its current state began (queueing so far)."""
    if s.first_start is None:
        return 0.0
    return max(0.0, s.first_start - s.arrival)
