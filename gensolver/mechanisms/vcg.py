"""Vickrey–Clarke–Groves with the Clarke pivot rule.

Guarantee
---------
With an exact winner determination solver, truthful bidding is a dominant strategy for every
bidder (XOR bids included), the outcome is efficient and individually rational, and payments
are non-negative. None of this holds for false-name bids (one bidder posing as several; see
Yokoo, Sakurai & Matsubara 2004), and a budget cap (below) breaks truthfulness.

Algorithm
---------
1. Solve the welfare problem once: allocation ``x*`` with welfare ``W*``.
2. For every *winning* bidder ``i`` solve it again without ``i``: ``W*(-i)`` (losers pay 0 and
   are not re-solved). Each re-solve is warm-started with ``x*`` minus ``i``'s bid, which is
   feasible without ``i``; re-solves may run in parallel on any
   :class:`concurrent.futures.Executor`. With warm starts on, a pivot whose ``W* - v_i``
   already meets the trivial bound (every other bidder's best bid that fits alone) is settled
   without a re-solve, whatever the solver.
3. ``p_i = W*(-i) - (W* - v_i(x*))``, which lies in ``[0, v_i(x*)]``.

Certified intervals when a solve is not proven optimal
------------------------------------------------------
Every solve gives an incumbent and, where the method has one, a proven bound:
``W(-i) in [inc_-i, bnd_-i]`` and ``W* in [welfare, bound]``. ``inc_-i`` is at least
``welfare - v_i`` (``x*`` minus ``i`` is feasible) and ``bnd_-i`` at most ``bound``.

- Main solve proven optimal: with ``O_i = W* - v_i(x*)`` known exactly, the exact payment lies
  in ``[max(0, inc_-i - O_i), min(v_i, bnd_-i - O_i)]``; the charged payment is the lower end
  (the "VCG-based" payment of Nisan & Ronen 2007, still individually rational).
- Main solve not proven optimal: the optimal allocation is unknown, so the interval is for the
  Clarke payment of bidder ``i`` at *any* optimal allocation:
  ``p_i = v_i(x_opt) - D_i`` with ``D_i = W* - W(-i)`` in ``[max(0, welfare - bnd_-i), ...]``
  and ``v_i(x_opt)`` at most ``i``'s largest bid, so ``p_i in [0, max_b v_b - D_lo]``;
  losers get ``[0, max_b v_b]``. The charged payment is still ``clip(inc_-i - O_i, 0, v_i)``
  for the returned allocation.

Budgets
-------
A payment above the bidder's ``budget`` is capped at the budget and the bidder is listed in
``Outcome.budget_capped``; the interval is capped likewise. The allocation is not changed, so
the outcome stays efficient for the reports but **capping breaks truthfulness** (a capped
bidder may gain by overbidding).

References
----------
Vickrey, "Counterspeculation, auctions, and competitive sealed tenders", J. Finance 16, 1961.
Clarke, "Multipart pricing of public goods", Public Choice 11, 1971.
Groves, "Incentives in teams", Econometrica 41, 1973.
Nisan & Ronen, "Computationally feasible VCG mechanisms", JAIR 29, 2007.
Yokoo, Sakurai & Matsubara, "The effect of false-name bids in combinatorial auctions", GEB 46, 2004.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Callable, Mapping

import numpy as np

from ..model import Bid, Instance, Slot
from ..model.validate import mark_validated
from ..solvers import Status
from ..solvers.approximation.greedy import trivial_bound
from ..solvers.formulation.problem import from_instance
from .common import check_call, check_options, make_outcome, solve_wdp, winning_bids
from .outcome import Outcome
from .pivots import SolutionPool, lp_state, owner_best_alone, pivot_solve

__all__ = ["vcg", "pivot_welfare"]

_DEFAULTS: dict[str, Any] = {"warm_start": True, "threads": None}


def _instance_from_doc(doc: Mapping[str, Any]) -> Instance:
    """Rebuild a (previously validated) instance from its plain dict form, without re-checking."""
    slots = tuple(Slot(s["id"], s["capacity"], s.get("gpu"), s.get("start"), s.get("end")) for s in doc["slots"])
    bids = tuple(Bid(b["id"], b["bidder"], b["value"], b["demand"]) for b in doc["bids"])
    return mark_validated(Instance(slots, bids, (), doc.get("name", "")))


def pivot_welfare(
    instance: Instance | Mapping[str, Any],
    *,
    solver: str | Callable[..., Any],
    time_limit: float | None,
    threads: int | None,
    hint: list[str] | None,
) -> dict[str, Any]:
    """Solve one pivot problem; a plain (picklable) dict of status, welfare, bound, seconds.

    ``instance`` may be the plain dict form (used with process pools, since instances hold
    read-only mappings that do not pickle).
    """
    inst = instance if isinstance(instance, Instance) else _instance_from_doc(instance)
    t0 = time.perf_counter()
    res = solve_wdp(inst, solver=solver, time_limit=time_limit, threads=threads, hint=hint)
    return {
        "status": res.status.value,
        "welfare": res.welfare,
        "bound": res.bound,
        "winners": list(res.winners),
        "seconds": time.perf_counter() - t0,
        "message": res.message,
    }


def _pivot_task(P: Any, owner: int, x_star: np.ndarray, lp: Any, upper: float, time_limit: float | None,
                threads: int | None, best_alone: np.ndarray, settled: Mapping[int, float],
                start: np.ndarray | None) -> dict[str, Any]:
    """One fast-path pivot in a worker process (module level, so it pickles).

    ``settled`` (proven bounds of finished pivots) and ``start`` (the best solution known
    without ``owner``) stand in for the shared pool of the threaded path; the solutions the
    pivot finds go back (as column indices) for the pivots submitted after it.
    """
    pool = SolutionPool(P, x_star)
    if start is not None:
        pool.add(start)
    for o, b in settled.items():
        pool.settle(o, b)
    r = pivot_solve(P, owner, x_star, lp, upper=upper, time_limit=time_limit, threads=threads, pool=pool,
                    best_alone=best_alone)
    known = [x_star] if start is None else [x_star, start]
    found = [np.flatnonzero(x > 0.5) for x in pool.solutions() if not any(np.array_equal(x, k) for k in known)]
    return {"status": Status.OPTIMAL.value if r.exact else Status.FEASIBLE.value, "welfare": r.welfare,
            "bound": r.bound, "winners": [], "seconds": r.seconds, "message": r.method, "found": found}


def _pivots_in_workers(P: Any, order: list[str], owner_of: Mapping[str, int], x_star: np.ndarray, lp: Any,
                       upper: float, best_alone: np.ndarray, *, time_limit: float | None, threads: int,
                       executor: Executor) -> dict[str, dict[str, Any]]:
    """Fast-path pivots on an executor whose workers share no memory (processes, a cluster).

    As many pivots run at once as the executor has workers (``os.cpu_count()`` when it does
    not say); each new one is given the bounds settled so far and the best solution known
    without its bidder, so later pivots search smaller problems, as on threads.
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    Pp = dataclasses.replace(P, column_id=str)  # pivots never name columns; a picklable stand-in
    pool = SolutionPool(P, x_star)
    pending = list(order)
    width = max(1, min(len(pending), int(getattr(executor, "_max_workers", 0) or (os.cpu_count() or 1))))
    running: dict[Any, str] = {}
    out: dict[str, dict[str, Any]] = {}
    while pending or running:
        while pending and len(running) < width:
            b = pending.pop(0)
            o = owner_of[b]
            start = pool.best_without(o, np.where(P.owner == o, 0.0, P.values))
            running[executor.submit(_pivot_task, Pp, o, x_star, lp, upper, time_limit, threads, best_alone,
                                    pool.settled_bounds(o), start)] = b
        done, _ = wait(list(running), return_when=FIRST_COMPLETED)
        for f in done:
            b = running.pop(f)
            res = f.result()
            for idx in res.pop("found"):
                x = np.zeros(P.n)
                x[idx] = 1.0
                pool.add(x)
            pool.settle(owner_of[b], res["bound"])
            out[b] = res
    return out


def _fast_pivots(instance: Instance, main: Any, won: Mapping[str, Bid], *, time_limit: float | None,
                 threads: int | None, executor: Executor | None) -> dict[str, dict[str, Any]]:
    """Pivots through the anytime engine, reusing one LP's duals for every winner.

    The main LP's dual solution stays feasible when a bidder's columns are removed, so each
    pivot starts with a bound for free; the main winners minus the bidder (extended first
    fit) give the incumbent; reduced-cost fixing then leaves a small exact restricted MIP, or
    nothing at all when the incumbent meets the bound. Pivots share a
    :class:`~gensolver.mechanisms.pivots.SolutionPool`: its solutions warm-start them,
    and each settled ``W(-k)`` lets later pivots require ``k`` to win (see
    :func:`~gensolver.mechanisms.pivots.pivot_solve`), so they run largest winning bid
    first. Threads share the pool directly; other executors go through
    :func:`_pivots_in_workers`.
    """
    P = from_instance(instance)
    x_star = np.zeros(P.n)
    index = instance.bid_index
    for w in main.winners:
        x_star[index[w]] = 1.0
    owner_of = {name: i for i, name in enumerate(instance.bidder_ids)}
    upper = float(main.bound if main.bound is not None else main.welfare)
    best_alone = owner_best_alone(P)  # the trivial bound of every pivot, computed once
    if executor is not None and not isinstance(executor, ThreadPoolExecutor):
        # workers without shared memory (processes, a cluster): pivots the trivial bound
        # settles are done here; the rest get the main LP (solved here, once), the main
        # allocation, and what earlier pivots settled and found (_pivots_in_workers)
        out = _trivial_pivots(instance, main, won, upper, best_alone)
        rest = [b for b in sorted(won, key=lambda b: (-won[b].value, b)) if b not in out]
        if rest:
            out.update(_pivots_in_workers(P, rest, owner_of, x_star, lp_state(P), upper, best_alone,
                                          time_limit=time_limit, threads=threads or 1, executor=executor))
        return out
    cache: list[Any] = []
    lock = threading.Lock()

    def lp() -> Any:  # computed once, on the first pivot that needs it
        with lock:
            if not cache:
                cache.append(lp_state(P))
            return cache[0]

    pool = SolutionPool(P, x_star)
    own_pool = None
    if executor is None and len(won) > 1 and (os.cpu_count() or 1) > 1:
        # the pivots are independent: one solver thread each, as many at once as CPUs
        own_pool = executor = ThreadPoolExecutor(min(len(won), os.cpu_count() or 1))
        threads = threads or 1

    def one(bidder: str) -> dict[str, Any]:
        r = pivot_solve(P, owner_of[bidder], x_star, lp, upper=upper, time_limit=time_limit, threads=threads,
                        pool=pool, best_alone=best_alone)
        return {"status": Status.OPTIMAL.value if r.exact else Status.FEASIBLE.value, "welfare": r.welfare,
                "bound": r.bound, "winners": [], "seconds": r.seconds, "message": r.method}

    # largest winning bids first: their pivots tend to settle lowest, and every settled pivot
    # at or below another pivot's incumbent makes that pivot's search smaller (pivot_solve)
    order = sorted(won, key=lambda b: (-won[b].value, b))
    if executor is None:
        return {b: one(b) for b in order}
    try:
        futures = {b: executor.submit(one, b) for b in order}
        return {b: f.result() for b, f in futures.items()}
    finally:
        if own_pool is not None:
            own_pool.shutdown()


def _trivial_pivots(instance: Instance, main: Any, won: Mapping[str, Bid], upper: float,
                    best: np.ndarray | None = None) -> dict[str, dict[str, Any]]:
    """Pivots settled without a solve: ``W(-i) = W* - v_i`` whenever the main allocation minus
    ``i``'s bid (feasible without ``i``) is worth the trivial bound of the pivot problem.

    ``best``: each bidder's best bid that fits alone, when already computed
    (:func:`~gensolver.solvers.formulation.bounds.owner_best_alone`).
    """
    t0 = time.perf_counter()
    if best is None:
        best = owner_best_alone(from_instance(instance))
    total = float(best.sum())
    owner_of = {name: i for i, name in enumerate(instance.bidder_ids)}
    out: dict[str, dict[str, Any]] = {}
    for bidder, bid in won.items():
        others = float(main.welfare) - bid.value
        bound = min(total - float(best[owner_of[bidder]]), upper)
        if others >= bound - 1e-9 * max(1.0, abs(others)):
            out[bidder] = {"status": Status.OPTIMAL.value, "welfare": others, "bound": others,
                           "winners": [w for w in main.winners if w != bid.id],
                           "seconds": time.perf_counter() - t0, "message": "trivial-bound"}
    return out


def vcg(
    instance: Instance,
    *,
    solver: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    executor: Executor | None = None,
    options: Mapping[str, Any] | None = None,
) -> Outcome:
    """VCG (Clarke pivot) payments; see the module docstring for guarantee and algorithm.

    Parameters
    ----------
    instance : Instance
        Reported bids.
    solver : str or callable, keyword-only
        Winner determination method (:func:`gensolver.solve`) for the main solve and the
        pivots. ``"auto"`` (the anytime method) proves optimality without a time limit, is never
        worse than the greedy with one, and enables the LP-dual fast path for the pivots.
    time_limit : float, optional
        Seconds for *each* solve (the main one and every pivot).
    executor : concurrent.futures.Executor, optional
        Runs the pivot re-solves in parallel (threads or processes). ``None``: the ``"auto"``
        fast path runs them on a private thread pool, one per CPU with one solver thread each
        (pivots share a pool of solutions: one found without bidder ``k`` that gives bidder
        ``i`` nothing is a warm start for ``i``'s pivot); other solvers run them serially.
    options : mapping, optional
        ``warm_start`` (bool, default True): hint each pivot with the main winners minus the
        bidder's bid; with ``solver="auto"`` the pivots also reuse the main LP's duals as a
        free bound and for reduced-cost fixing, on threads or in worker processes (see
        :func:`gensolver.mechanisms.pivots.pivot_solve`); ``threads`` (int): solver
        threads per solve.

    Returns
    -------
    Outcome
        ``exact`` is ``True`` only when every solve is proven optimal; otherwise
        ``payment_bounds`` certify where the exact payments lie.
    """
    instance = check_call(instance, executor)
    opts = check_options(options, _DEFAULTS, "vcg")
    if not isinstance(opts["warm_start"], bool):
        raise ValueError(f"vcg option warm_start must be True or False, got {opts['warm_start']!r}")
    threads = opts["threads"]
    t0 = time.perf_counter()
    main = solve_wdp(instance, solver=solver, time_limit=time_limit, threads=threads)
    t_main = time.perf_counter() - t0
    main_ok = main.status is Status.OPTIMAL
    main_bound = main.bound if main.bound is not None else trivial_bound(instance)
    won = winning_bids(instance, main)

    fast = solver == "auto" and opts["warm_start"] and main_ok and bool(won)
    jobs: dict[str, tuple[Any, list[str] | None]] = {}
    t1 = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    if not fast:  # the fast path needs no per-pivot instances
        # warm start, any solver: x* minus the bidder's bid is feasible without the bidder;
        # when it meets the trivial bound (every other bidder's best bid that fits alone, as
        # when everyone won their best bid) the pivot is settled here, with no re-solve
        if opts["warm_start"] and won:
            results.update(_trivial_pivots(instance, main, won, main_bound))
        for bidder, bid in won.items():
            if bidder in results:
                continue
            hint = [w for w in main.winners if w != bid.id] if opts["warm_start"] else None
            jobs[bidder] = (instance.without_bidder(bidder), hint)
    if fast:
        results = _fast_pivots(instance, main, won, time_limit=time_limit, threads=threads, executor=executor)
    elif executor is None:
        for bidder, (inst_i, hint) in jobs.items():
            results[bidder] = pivot_welfare(inst_i, solver=solver, time_limit=time_limit, threads=threads, hint=hint)
    else:
        plain = not isinstance(executor, ThreadPoolExecutor)
        futures = {
            bidder: executor.submit(
                pivot_welfare, inst_i.to_dict() if plain else inst_i,
                solver=solver, time_limit=time_limit, threads=threads, hint=hint,
            )
            for bidder, (inst_i, hint) in jobs.items()
        }
        for bidder, fut in futures.items():
            results[bidder] = fut.result()
    t_pivots = time.perf_counter() - t1

    payments: dict[str, float] = {}
    bounds: dict[str, tuple[float, float]] = {}
    pivots: dict[str, Any] = {}
    all_exact = main_ok
    notes: list[str] = []
    vmax = {b: 0.0 for b in instance.bidder_ids}
    for bid in instance.bids:
        vmax[bid.bidder] = max(vmax[bid.bidder], bid.value)
    for bidder in instance.bidder_ids:
        if bidder not in won:
            payments[bidder] = 0.0
            bounds[bidder] = (0.0, 0.0) if main_ok else (0.0, vmax[bidder])
            continue
        v_i = won[bidder].value
        others = main.welfare - v_i
        res = results[bidder]
        ok = res["status"] in (Status.OPTIMAL.value, Status.FEASIBLE.value)
        inc = max(res["welfare"] if ok else 0.0, others)
        if ok and res["bound"] is not None:
            bnd = res["bound"]
        else:
            bnd = trivial_bound(jobs[bidder][0] if bidder in jobs else instance.without_bidder(bidder))
        bnd = min(bnd, main_bound)
        exact_i = res["status"] == Status.OPTIMAL.value
        if exact_i:
            bnd = inc = max(res["welfare"], others)
        all_exact = all_exact and exact_i
        pay = min(max(inc - others, 0.0), v_i)
        payments[bidder] = pay
        if main_ok:
            lo = min(max(0.0, inc - others), v_i)
            hi = max(lo, min(v_i, bnd - others))
        else:
            d_lo = max(0.0, main.welfare - bnd)
            lo, hi = 0.0, max(0.0, vmax[bidder] - d_lo)
        bounds[bidder] = (lo, hi)
        pivots[bidder] = {"status": res["status"], "welfare": res["welfare"], "bound": res["bound"],
                          "seconds": res["seconds"], "how": res.get("message", "")}
        if not exact_i:
            notes.append(bidder)
    message = ""
    if not main_ok:
        message = (f"main solve not proven optimal (status {main.status.value}, gap {main.gap}); "
                   "payment_bounds hold for the Clarke payment at any optimal allocation")
    elif notes:
        message = f"pivot re-solves not proven optimal for {len(notes)} bidder(s); payment_bounds certify the exact payments"
    details = {
        "solver": getattr(solver, "__name__", solver),
        "warm_start": bool(opts["warm_start"]),
        "executor": type(executor).__name__ if executor is not None else None,
        "seconds": {"main": t_main, "pivots": t_pivots, "total": time.perf_counter() - t0},
        "pivots": pivots,
    }
    return make_outcome("vcg", instance, main, payments, bounds=bounds, exact=all_exact and main_ok,
                        message=message, details=details)
