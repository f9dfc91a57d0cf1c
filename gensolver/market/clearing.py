"""One round of the credit market cleared by the solver layer.

:func:`clear_round` turns the round's candidates (waiting tasks and running preemptible ones),
each with the *utility score* of the credit rule (:class:`gensolver.sim.policies.market.
MarketPolicy`: Themis' finish-time fairness ``rho`` times the tenant's credits), into a
combinatorial auction over the free capacity of each GPU and solves winner determination with
:func:`gensolver.solve`.

Bids (XOR per task)
-------------------
For every memory level of the task, from its preferred memory down to its minimum
(:meth:`gensolver.model.tasks.Task.memory_levels`), and for each of the ``max_options`` best-fit
placements (one GPU: the fitting GPUs with the least memory left over; or a gang of
``gpus`` GPUs on one node: on each node the fitting GPUs with the least memory left over,
across nodes the least total left over first), the task bids

    ``value = score x task_speed(task, level)``

(:func:`gensolver.model.tasks.task_speed`, the package's one speed law), so a smaller memory
level is priced by the speed it costs. A running task's bid on its current GPUs at its current
memory is worth ``1 + stay_bonus`` times as much, and its other bids (a move or a new memory
level, which preempt it and cost a checkpoint) ``1 - switch_penalty`` times as much, so it is
not preempted for a bid that is barely better. Each bid asks ``level`` GiB and the task's compute on each GPU of its placement.

Winner determination
--------------------
``method="greedy"`` (default) ranks bids by value (``alpha=0``: the score order of the credit
rule; ties by the candidates' order) and accepts first fit, one bid per task:
``O(B log B)`` for ``B`` bids, deterministic. When every task's most valuable bid fits
together (an uncontended round), that is the greedy's answer (and optimal), so it is returned
without building the instance (same winners, proved in :func:`_tops_if_they_fit`). Any other registered method (``"lp"``,
``"auto"``...) can be named; ``"auto"`` runs under a deterministic budget of ``budget`` work
units (``options={"deterministic": True}``), never a wall-clock limit, so reruns are
byte-identical.

Work conservation (``fill=True``, default)
------------------------------------------
The bids name at most ``max_options`` placements each, chosen against the capacity free at
the start of the round, so many tasks can name the same best-fit GPUs (on an idle cluster every
task names the same ``max_options`` empty GPUs) and lose while other GPUs stay free. After the
solve, each loser in the candidates' order takes the best-fit placement of the capacity the
winners left, at its largest memory level that fits (a running loser first on its own GPUs).
Afterwards no loser fits anywhere at any of its levels (``tests/market/test_clearing.py``
checks this with an independent certificate).

What is proved and what is measured: every answer is feasible (the solver layer checks
capacity); greedy on value has no constant welfare guarantee with XOR bids and divisible
capacity (Lehmann, O'Callaghan & Shoham 2002 prove ``OPT / sqrt(m)`` only for single-minded
bidders on unit goods); its effect on job completion times is measured by
``benchmarks/bench_market.py``.

References
----------
.. [1] Lehmann, O'Callaghan & Shoham, J. ACM 49(5), 2002 (greedy winner determination).
.. [2] K. Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..model.instance import Bid, Bidder, Instance, Slot
from ..model.tasks import Task, task_speed
from ..model.tolerances import boundary_guard, capacity_limit
from ..model.validate import mark_validated
from ..solvers import relative_gap, solve
from ..solvers.engine import DEFAULT_MIP_GAP

__all__ = ["RoundTask", "RoundResult", "clear_round", "fitting_groups"]

_TOL = 1e-6


@dataclass(frozen=True)
class RoundTask:
    """A candidate of one round.

    Attributes
    ----------
    task : Task
        The task as reported.
    score : float
        Its utility score from the credit rule (higher: served first).
    placement : tuple of str or None
        GPUs it runs on now (running candidates), else ``None``.
    memory : float or None
        Memory per GPU it holds now (running candidates).
    """

    task: Task
    score: float
    placement: tuple[str, ...] | None = None
    memory: float | None = None


@dataclass(frozen=True)
class RoundResult:
    """What a round decided: ``{task id: (gpus, memory)}`` for the winners, the losers in the
    candidates' order, the solver's method and status, and the number of bids."""

    winners: Mapping[str, tuple[tuple[str, ...], float]]
    losers: tuple[str, ...]
    method: str
    status: str
    bids: int


def fitting_groups(free: Mapping[str, tuple[float, float]], nodes: Mapping[str, Sequence[str]], k: int,
                   memory: float, compute: float, *, limit: int,
                   allowed: Callable[[str], bool] | None = None) -> list[tuple[str, ...]]:
    """Up to ``limit`` placements of ``k`` GPUs on one node that each have ``memory`` GiB and
    ``compute`` free: per node the ``k`` fitting GPUs with the least memory left over (best fit,
    ties to the smaller card's order), nodes ordered by total left over, then by node order."""
    return _best_fit(_by_node(free, nodes), k, memory, compute, limit, allowed)


#: per node, ``(free memory + tol, free compute + tol, free memory, index in node, GPU)`` of its GPUs in ``free``
_Entries = list[list[tuple[float, float, float, int, str]]]


def _by_node(free: Mapping[str, tuple[float, float]], nodes: Mapping[str, Sequence[str]]) -> _Entries:
    """``free`` per node, for :func:`_best_fit` (taken once for many queries on one ``free``)."""
    out: _Entries = []
    for members in nodes.values():
        node = []
        for i, g in enumerate(members):
            if g in free:
                m, c = free[g]
                node.append((m + _TOL, c + _TOL, m, i, g))
        out.append(node)
    return out


def _best_fit(entries: _Entries, k: int, memory: float, compute: float, limit: int,
              allowed: Callable[[str], bool] | None) -> list[tuple[str, ...]]:
    """:func:`fitting_groups` on the snapshot ``entries`` of :func:`_by_node`."""
    options: list[tuple[float, int, tuple[str, ...]]] = []
    for n, node in enumerate(entries):
        ok = [(m - memory, i, g) for mt, ct, m, i, g in node
              if mt >= memory and ct >= compute and (allowed is None or allowed(g))]
        if len(ok) < k:
            continue
        ok.sort()
        if k == 1:  # every fitting GPU is a placement
            options.extend((c[0], n, (c[2],)) for c in ok[:limit])
            continue
        chosen = ok[:k]
        options.append((sum(c[0] for c in chosen), n, tuple(c[2] for c in chosen)))
    options.sort(key=lambda o: (o[0], o[1]))
    return [o[2] for o in options[:limit]]


def clear_round(candidates: Sequence[RoundTask], free: Mapping[str, tuple[float, float]],
                nodes: Mapping[str, Sequence[str]], *, levels: int = 1, max_options: int = 8,
                stay_bonus: float = 0.05, switch_penalty: float = 0.2, method: str = "greedy", budget: float | None = None,
                allowed: Callable[[str, str], bool] | None = None, fill: bool = True) -> RoundResult:
    """Clear one round of the credit market with the solver layer (see the module docstring).

    Parameters
    ----------
    candidates : sequence of RoundTask
        In the round's priority order (ties of the solver are broken by this order).
    free : mapping
        ``{gpu: (memory, compute)}`` free for the round (capacity held by tasks that keep their
        GPUs already subtracted).
    nodes : mapping
        ``{node: [gpu, ...]}``: a gang takes GPUs of one node.
    levels : int, keyword-only
        Memory levels per task, evenly spaced from minimum to preferred.
    max_options : int, keyword-only
        Placements offered per task and level (best fit first); a running task's current
        placement is always offered when it fits.
    stay_bonus : float, keyword-only
        Relative bonus of a running task's bid on its current GPUs and memory.
    switch_penalty : float, keyword-only
        Relative discount of a running task's other bids (moving or changing its memory
        level preempts it and costs a checkpoint), as ``MarketConfig.switch_penalty``.
    method : str, keyword-only
        A :func:`gensolver.solve` method name.
    budget : float, keyword-only
        Work units for ``method="auto"`` (deterministic); ignored otherwise.
    allowed : callable, keyword-only
        ``allowed(task_id, gpu)``: whether the task may run on that GPU (models).
    fill : bool, keyword-only
        Place the solve's losers on what the winners left (best fit, candidates' order; see
        the module docstring). ``False``: the solve's answer alone.

    Returns
    -------
    RoundResult
    """
    if not (stay_bonus >= 0 and 0 <= switch_penalty < 1 and levels >= 1 and max_options >= 1):
        raise InputError("stay_bonus must be >= 0, switch_penalty in [0, 1), levels and max_options >= 1")
    res = _solve_pass(candidates, free, nodes, levels=levels, max_options=max_options, stay_bonus=stay_bonus,
                      switch_penalty=switch_penalty, method=method, budget=budget, allowed=allowed)
    won = dict(res.winners)
    if fill:
        _fill(candidates, won, free, nodes, levels, allowed)
    ids = [c.task.id for c in candidates]
    return RoundResult(won, tuple(i for i in ids if i not in won), res.method, res.status, res.bids)


def _fill(candidates: Sequence[RoundTask], won: dict[str, tuple[tuple[str, ...], float]],
          free: Mapping[str, tuple[float, float]], nodes: Mapping[str, Sequence[str]], levels: int,
          allowed: Callable[[str, str], bool] | None) -> None:
    """Work conservation after the solve: each loser, in the candidates' order, takes the
    best-fit placement of the capacity the winners left, at its largest level that fits
    (a running loser only at its current memory). Updates ``won`` in place."""
    left = {g: [float(m), float(c)] for g, (m, c) in free.items()}
    by_id = {c.task.id: c.task for c in candidates}
    for tid, (grp, mem) in won.items():
        for g in grp:
            left[g][0] -= mem
            left[g][1] -= by_id[tid].compute
    view: dict[str, tuple[float, float]] | None = None
    entries: _Entries = []
    for c in candidates:
        t = c.task
        if t.id in won:
            continue
        ok = None if allowed is None else (lambda g, _id=t.id: allowed(_id, g))
        if view is None:  # what the winners and the losers placed so far left
            view = {g: (m, cc) for g, (m, cc) in left.items()}
            entries = _by_node(view, nodes)
        for mem in ([float(c.memory)] if c.memory is not None else _levels(t, levels)):
            if c.score * task_speed(t, mem) <= 0:
                continue
            home = c.placement
            if home is not None and all(g in view and view[g][0] + _TOL >= mem and view[g][1] + _TOL >= t.compute
                                        for g in home):
                groups = [home]  # a running loser stays where it runs when that still fits
            else:
                groups = _best_fit(entries, t.gpus, mem, t.compute, 1, ok)
            if groups:
                won[t.id] = (groups[0], mem)
                for g in groups[0]:
                    left[g][0] -= mem
                    left[g][1] -= t.compute
                view = None
                break


def _solve_pass(candidates: Sequence[RoundTask], free: Mapping[str, tuple[float, float]],
                nodes: Mapping[str, Sequence[str]], *, levels: int, max_options: int, stay_bonus: float,
                switch_penalty: float, method: str, budget: float | None,
                allowed: Callable[[str, str], bool] | None) -> RoundResult:
    """One winner determination over ``free`` (bids built against it, :func:`clear_round`)."""
    width = len(str(max(1, len(candidates))))
    most = max((m for m, _ in free.values()), default=0.0)  # no level above it fits anywhere
    # (bid id, task, GPUs, memory, value) of every bid, in the candidates' order
    entries = _by_node(free, nodes)
    raw = [(f"{rank:0{width}d}|{li}|{oi}", c.task, grp, mem, v) for rank, c in enumerate(candidates)
           for li, oi, grp, mem, v in _task_bids(c, free, nodes, levels, max_options, stay_bonus, switch_penalty,
                                                 most, allowed, entries)]
    ids = [c.task.id for c in candidates]
    if not raw:
        return RoundResult({}, tuple(ids), method, "empty", 0)
    if method == "greedy":
        tops = _tops_if_they_fit(raw, free)
        if tops is not None:  # what the greedy would answer, without building the instance
            return RoundResult(tops, tuple(i for i in ids if i not in tops), "greedy", "optimal", len(raw))
        won, status = _greedy_on_value(raw, free)  # the solver layer's greedy, without the instance
    else:
        won, method, status = _solve_instance(raw, free, method, budget)
    return RoundResult(won, tuple(i for i in ids if i not in won), method, status, len(raw))


def _solve_instance(raw: list[tuple[str, Task, tuple[str, ...], float, float]], free: Mapping[str, tuple[float, float]],
                    method: str, budget: float | None) -> tuple[dict[str, tuple[tuple[str, ...], float]], str, str]:
    """Winners ``{task id: (GPUs, memory)}``, method and status of :func:`gensolver.solve` with
    ``method`` on the instance of the bids ``raw`` over the capacities ``free``."""
    # built in canonical order (everything sorted by id), so the solver layer reorders nothing
    slots = tuple(Slot(g, {"compute": max(0.0, float(free[g][1])), "memory": max(0.0, float(free[g][0]))}, g)
                  for g in sorted(free))
    bids = [_bundle(grp, t.compute, mem).rebid(bid_id, t.id, v) for bid_id, t, grp, mem, v in raw]
    meta = {bid_id: (t.id, grp, mem) for bid_id, t, grp, mem, _ in raw}
    bidders = tuple(Bidder(tid, None) for tid in sorted({b.bidder for b in bids}))
    inst = mark_validated(Instance(slots, tuple(bids), bidders, "market-round", {"family": "market-round"}))
    if method == "greedy":
        alloc = solve(inst, method="greedy", options={"alpha": 0.0})
    elif method == "auto":
        alloc = solve(inst, method="auto", time_limit=budget, threads=1, seed=0, options={"deterministic": True})
    else:
        alloc = solve(inst, method=method, threads=1, seed=0)
    won: dict[str, tuple[tuple[str, ...], float]] = {}
    for w in alloc.winners:
        tid, grp, mem = meta[w]
        won[tid] = (grp, mem)
    return won, alloc.method, alloc.status.value


def _greedy_on_value(raw: list[tuple[str, Task, tuple[str, ...], float, float]],
                     free: Mapping[str, tuple[float, float]]) -> tuple[dict[str, tuple[tuple[str, ...], float]], str]:
    """What :func:`_solve_instance` answers with ``method="greedy"`` (greedy on value,
    ``alpha=0``), computed on the bids themselves: the same scan without the instance.

    The solver layer's greedy ranks the canonical instance's bids (sorted by id) by key
    (``value``, or ``inf`` for a bid asking nothing), then value, then bid id, and accepts first fit
    (:func:`gensolver.solvers.heuristics.first_fit_matrix`): a bid of a task not yet served fits
    when on each of its non-zero rows ``(GPU, resource)`` the floating-point residual of the
    limit (:func:`gensolver.model.tolerances.capacity_limit` of ``max(0, free)``) decides
    clearly, beyond :func:`~gensolver.model.tolerances.boundary_guard`, else the exact sum
    (:func:`math.fsum`) of the accepted demands does. Its status is ``"optimal"`` when the
    welfare meets the per-task bound (each task's best bid that fits alone) within the solver
    layer's gap, as :func:`gensolver.solvers.result.finish` decides, else ``"feasible"``.
    ``tests/market/test_clearing.py`` checks both against the solver layer.
    """
    cap = {g: (max(0.0, float(m)), max(0.0, float(c))) for g, (m, c) in free.items()}
    lim = {g: (capacity_limit(m), capacity_limit(c)) for g, (m, c) in cap.items()}
    guard = {g: (boundary_guard(m), boundary_guard(c)) for g, (m, c) in lim.items()}
    residual = {g: list(v) for g, v in lim.items()}
    taken: dict[tuple[str, int], list[float]] = {}  # (GPU, 0 memory | 1 compute) -> accepted demands

    def sized(grp: tuple[str, ...], mem: float, comp: float) -> bool:
        """Whether the bid's size (sum of demand / capacity, inf on a row of capacity 0) is > 0."""
        return any(d != 0.0 and (c <= 0 or d / c > 0) for g in grp for d, c in ((mem, cap[g][0]), (comp, cap[g][1])))

    order = sorted(range(len(raw)), key=lambda j: (-(raw[j][4] if sized(raw[j][2], raw[j][3], raw[j][1].compute)
                                                     else math.inf), -raw[j][4], raw[j][0]))
    won: set[str] = set()
    winners: list[int] = []
    for j in order:
        _, t, grp, mem, v = raw[j]
        if v <= 0 or t.id in won:
            continue
        rows = [(g, r, d) for g in grp for r, d in ((0, float(mem)), (1, float(t.compute))) if d != 0.0]
        for g, r, d in rows:
            gap, gd = residual[g][r] - d, guard[g][r]
            if gap < -gd or (gap <= gd and math.fsum([*taken.get((g, r), []), d]) > lim[g][r]):
                break
        else:
            for g, r, d in rows:
                residual[g][r] -= d
                taken.setdefault((g, r), []).append(d)
            won.add(t.id)
            winners.append(j)
    winners.sort(key=lambda j: raw[j][0])  # listed as the solver layer lists them: by bid id
    return {raw[j][1].id: (raw[j][2], raw[j][3]) for j in winners}, _greedy_status(raw, lim, winners)


def _greedy_status(raw: list[tuple[str, Task, tuple[str, ...], float, float]],
                   lim: Mapping[str, tuple[float, float]], winners: list[int]) -> str:
    """The status :func:`gensolver.solvers.result.finish` gives the greedy's answer ``winners``
    (indices of ``raw``, by bid id; ``lim``: each GPU's memory and compute limits):
    ``"optimal"`` when its welfare meets the trivial bound (per task, the best bid that fits
    alone), both summed as the solver layer sums them, else ``"feasible"``."""
    welfare = float(np.asarray([raw[j][4] for j in winners], dtype=np.float64).sum())
    if not math.isfinite(welfare):
        return "error"
    by_task: dict[str, list[tuple[float, tuple[str, ...], float, float]]] = {}
    for _, t, grp, mem, v in raw:
        by_task.setdefault(t.id, []).append((v, grp, float(mem), float(t.compute)))
    best = []
    for tid in sorted(by_task):  # the canonical bidder order
        alone = (v for v, grp, mem, comp in sorted(by_task[tid], key=lambda b: -b[0])
                 if v > 0 and all((mem == 0.0 or mem <= lim[g][0]) and (comp == 0.0 or comp <= lim[g][1]) for g in grp))
        best.append(next(alone, 0.0))
    bound = float(np.asarray(best, dtype=np.float64).sum())
    if not math.isfinite(bound):  # no bound: never proved optimal
        return "feasible"
    # every winner fits alone and is worth at most its task's best: bound >= welfare but for
    # round-off, which the solver layer lifts to the welfare (a gap of 0, as relative_gap clips)
    gap = relative_gap(welfare, bound)
    return "optimal" if gap is not None and gap <= DEFAULT_MIP_GAP else "feasible"


@functools.lru_cache(maxsize=1 << 14)
def _bundle(grp: tuple[str, ...], compute: float, memory: float) -> Bid:
    """A bid on ``grp`` asking ``compute`` and ``memory`` on each GPU (id, bidder and value
    blank): its frozen demand is built once and shared across bids and rounds (:meth:`Bid.rebid`)."""
    return Bid("", "", 0.0, {g: {"compute": compute, "memory": memory} for g in sorted(grp)})


def _tops_if_they_fit(raw: list[tuple[str, Task, tuple[str, ...], float, float]],
                      free: Mapping[str, tuple[float, float]]) -> dict[str, tuple[tuple[str, ...], float]] | None:
    """Each task's first bid in the greedy's order (highest value, ties to the smaller bid id:
    the canonical order), when those bids fit together, exactly (:func:`math.fsum` per GPU and
    resource, against the slots' capacities); else ``None``.

    Then greedy on value (``alpha=0``) accepts exactly these bids: by induction over its scan,
    every bid it has accepted is one of them, so each of them still fits when reached, and a
    task's later bids are skipped once it has won (its first bid comes before them). Each task
    then has its most valuable bid, the per-bidder upper bound: the answer is optimal.
    """
    top: dict[str, tuple[str, tuple[str, ...], float, float, float]] = {}
    for bid_id, t, grp, mem, v in raw:
        best = top.get(t.id)
        if best is None or v > best[3] or (v == best[3] and bid_id < best[0]):
            top[t.id] = (bid_id, grp, mem, v, t.compute)
    held: dict[str, tuple[list[float], list[float]]] = {}
    for _, grp, mem, _, comp in top.values():
        for g in grp:
            m, c = held.setdefault(g, ([], []))
            m.append(mem)
            c.append(comp)
    for g, (m, c) in held.items():
        if math.fsum(m) > max(0.0, float(free[g][0])) or math.fsum(c) > max(0.0, float(free[g][1])):
            return None
    return {tid: (grp, mem) for tid, (_, grp, mem, _, _) in top.items()}


def _task_bids(c: RoundTask, free: Mapping[str, tuple[float, float]], nodes: Mapping[str, Sequence[str]],
               levels: int, max_options: int, stay_bonus: float, switch_penalty: float, most: float,
               allowed: Callable[[str, str], bool] | None,
               entries: _Entries | None = None) -> list[tuple[int, int, tuple[str, ...], float, float]]:
    """``(level index, option index, GPUs, memory, value)`` of every XOR bid of one candidate
    (``entries``: :func:`_by_node` of ``free`` and ``nodes``, when the caller has it)."""
    t = c.task
    ok = None if allowed is None else (lambda g, _id=t.id: allowed(_id, g))
    mems = _levels(t, levels)
    if c.memory is not None and all(abs(c.memory - m) > _TOL for m in mems):
        mems.append(float(c.memory))
    out: list[tuple[int, int, tuple[str, ...], float, float]] = []
    for li, mem in enumerate(mems):
        value = float(c.score) * task_speed(t, mem)
        if entries is None:
            entries = _by_node(free, nodes)
        groups = _best_fit(entries, t.gpus, mem, t.compute, max_options, ok) if mem <= most + _TOL else []
        stay = c.placement is not None and c.memory is not None and abs(c.memory - mem) <= _TOL
        if c.placement is not None:  # the current GPUs under their current names and order
            here = set(c.placement)
            groups = [c.placement if set(grp) == here else grp for grp in groups]
        home = c.placement
        if stay and home is not None and home not in groups and all(
                free.get(g, (0.0, 0.0))[0] + _TOL >= mem and free.get(g, (0.0, 0.0))[1] + _TOL >= t.compute
                for g in home):
            groups.append(home)
        for oi, grp in enumerate(groups):
            if c.placement is None:
                v = value
            elif stay and grp == c.placement:
                v = value * (1.0 + stay_bonus)
            else:  # a running task that moves or changes memory pays a checkpoint
                v = value * (1.0 - switch_penalty)
            if v > 0:
                out.append((li, oi, grp, mem, v))
    return out


def _levels(task: Task, count: int) -> list[float]:
    """The task's memory levels, preferred first (as :meth:`Task.memory_levels`, descending)."""
    lo, hi = float(task.min_memory), float(task.preferred_memory)
    if lo == hi or count <= 1:
        return [hi]
    out = [hi - (hi - lo) * i / (count - 1) for i in range(count)]
    out[-1] = lo
    return out
