"""Vickrey–Clarke–Groves with the Clarke pivot rule.

Guarantee
---------
With an exact winner determination method, truthful bidding is a dominant strategy for every
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
   without a re-solve, whatever the method.
3. ``p_i = W*(-i) - (W* - v_i(x*))``, which lies in ``[0, v_i(x*)]``.

One budget
----------
``time_limit`` is the budget of the whole run, not of each solve: the main solve may use the
share ``main_share`` (default 0.7: an unproven main solve leaves every interval wide, so it
comes first); the pivots share what is left. With ``"auto"``,
pivots the trivial bound settles cost nothing and are done first; each other pivot takes,
when it starts, what is left split evenly over the waves of pivots still to start (as many
run side by side as the executor has workers), so a pivot that settles early from the LP
duals or the shared pool leaves its share to the later ones. A pivot whose share cannot pay
for building its restricted MIP starts none and reports the interval of its free incumbent
and dual bound. Budget left at the end goes to a second pass over the pivots still open,
widest interval first. With ``options={"deterministic": True}`` the budget is in work units (see
:class:`~gensolver.solvers.anytime.budget.WorkClock`): shares are split over the pivots
themselves (work adds up whatever runs in parallel), pivots run in waves on snapshots of the
shared pool and join in a fixed order, so the outcome is the same on every run; the work
charged by the main solve and every pivot together stays within the budget but for the
last solve's overshoot of its share (CP-SAT stops on its deterministic clock a little after
the limit), reported in ``details["work"]``.
(:class:`~gensolver.mechanisms.pivots.PivotBudget`, :func:`~gensolver.mechanisms.pivots.run_pivots`.)

Exact payments
--------------
``exact=True`` only when the main solve and every pivot are proved to a quarter of the payment
tolerance, absolute. The ``"auto"`` engine stops at a ``1e-9`` relative gap (``1e-3`` at values
near ``1e6``); such a main solve is re-proved by one exact restricted MIP over the columns its
LP duals leave (:func:`~gensolver.mechanisms.pivots.prove_main`), within what is left of its
share of the budget (``details`` of the allocation: ``absolute_proof``).

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
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Callable, Mapping

import numpy as np

from .._deprecation import method_alias
from ..errors import InputError, check_options
from ..model import Bid, Instance, Slot
from ..model.tolerances import payment_tolerance
from ..model.validate import mark_validated
from ..solvers import Status
from ..solvers.engine import DEFAULT_MIP_GAP, finish, from_instance, trivial_bound
from .common import check_call, make_outcome, solve_wdp, winning_bids
from .outcome import Outcome
from .pivots import (
    MIN_PIVOT_SOLVE,
    PivotBudget,
    PivotResult,
    SolutionPool,
    executor_width,
    lp_state_work,
    owner_best_alone,
    prove_main,
    run_pivots,
)

__all__ = ["vcg", "pivot_welfare"]

#: floating-point MIP backends: their "optimal" bounds are not certificates to an absolute
#: tolerance on fractional values (CBC and SCIP both claimed bound == welfare 1e-3 below the
#: optimum at values near 1e6); only integral values below 1e8 make their proofs exact
UNCERTIFIED_BOUNDS = frozenset({"scip", "highs", "cbc", "pulp-cbc", "pulp-highs"})

_DEFAULTS: dict[str, Any] = {"warm_start": True, "threads": None, "main_share": 0.7, "deterministic": None}


def _instance_from_doc(doc: Mapping[str, Any]) -> Instance:
    """Rebuild a (previously validated) instance from its plain dict form, without re-checking."""
    slots = tuple(Slot(s["id"], s["capacity"], s.get("gpu"), s.get("start"), s.get("end")) for s in doc["slots"])
    bids = tuple(Bid(b["id"], b["bidder"], b["value"], b["demand"]) for b in doc["bids"])
    return mark_validated(Instance(slots, bids, (), doc.get("name", "")))


def pivot_welfare(
    instance: Instance | Mapping[str, Any],
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None,
    threads: int | None,
    hint: list[str] | None,
    mip_gap: float | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> PivotResult:
    """Solve one pivot problem: its :class:`~gensolver.mechanisms.pivots.PivotResult` (the
    re-solve's status, welfare, bound, seconds, winners, and its message as ``how``).

    ``instance`` may be the plain dict form (used with process pools, since instances hold
    read-only mappings that do not pickle; the result pickles as it is). ``method`` is the
    winner determination method (:func:`gensolver.solve`); ``solver`` its deprecated alias (a
    :class:`~gensolver.GensolverDeprecationWarning`; removed in the next release).
    """
    method = method_alias(method, solver, where="pivot_welfare")
    inst = instance if isinstance(instance, Instance) else _instance_from_doc(instance)
    t0 = time.perf_counter()
    res = solve_wdp(inst, method=method, time_limit=time_limit, threads=threads, hint=hint, mip_gap=mip_gap)
    return PivotResult(res.status, res.welfare, res.bound, time.perf_counter() - t0, res.message,
                       winners=tuple(res.winners))


def _main_auto(instance: Instance, P: Any, *, time_limit: float | None, threads: int | None,
               deterministic: bool) -> tuple[Any, Any]:
    """The main solve with the anytime engine (as :func:`gensolver.solvers.auto.solve_auto`),
    keeping its LP, incumbents and work for the pivots."""
    from ..solvers.engine import anytime_solve, finish

    t0 = time.perf_counter()
    res = anytime_solve(P, time_limit=time_limit, threads=threads, deterministic=deterministic)
    main = finish(instance, res.x, method="auto", proven_optimal=res.proven, bound=res.bound, build=0.0,
                  solve=time.perf_counter() - t0, details={"stages": list(res.stages)})
    return main, res


def _fast_pivots(instance: Instance, P: Any, main: Any, run: Any, won: Mapping[str, Bid], *,
                 budget: PivotBudget, threads: int | None, executor: Executor | None,
                 deterministic: bool) -> tuple[dict[str, PivotResult], float]:
    """Pivots through the anytime engine, reusing the main run's LP, incumbents and bound.

    The main LP's dual solution stays feasible when a bidder's columns are removed, so each
    pivot starts with a bound for free; the main winners minus the bidder (extended first
    fit) give the incumbent; reduced-cost fixing then leaves a small exact restricted MIP, or
    nothing at all when the incumbent meets the bound. Pivots share a
    :class:`~gensolver.mechanisms.pivots.SolutionPool`, seeded with the main run's
    incumbents: its solutions warm-start them, and each settled ``W(-k)`` lets later pivots
    require ``k`` to win (see :func:`~gensolver.mechanisms.pivots.pivot_solve`), so they run
    largest winning bid first. Pivots the trivial bound settles cost nothing; the others share
    ``budget`` (:func:`~gensolver.mechanisms.pivots.run_pivots`). Returns the pivots and the
    work units charged outside them (an LP solved here when the main run has none).
    """
    x_star = np.zeros(P.n)
    index = instance.bid_index
    for w in main.winners:
        x_star[index[w]] = 1.0
    owner_of = {name: i for i, name in enumerate(instance.bidder_ids)}
    upper = float(main.bound if main.bound is not None else main.welfare)
    best_alone = owner_best_alone(P)  # the trivial bound of every pivot, computed once
    out = _trivial_pivots(instance, main, won, upper, best_alone)
    rest = [b for b in sorted(won, key=lambda b: (-won[b].value, b)) if b not in out]
    budget.pending = len(rest)
    if not rest:
        return out, 0.0
    # the pivots' LP: the main run's duals are valid but come from an interior point stopped at
    # a 1e-4 gap; a vertex solution of the whole LP settles many more pivots by its bound alone
    # (GPU round 8 x 32: 17 of 31 against none, pivots 0.4 s against 1.4 s), so one is solved
    # here, warm-started from the main LP's columns, on at most a quarter of the pivots' budget;
    # the duals with the smaller dual objective are used
    main_lp = getattr(run, "lp", None)
    limit = budget.left()
    init = None if main_lp is None else np.union1d(main_lp.cols, np.flatnonzero(x_star > 0.5))
    lp, extra = lp_state_work(P, time_limit=None if limit is None else max(limit, 0.0) / 4,
                              deterministic=deterministic, init=init)
    budget.spent += extra
    if main_lp is not None and main_lp.dual_objective < lp.dual_objective:
        lp = main_lp
    pool = SolutionPool(P, x_star)
    for x in getattr(run, "found", ()):
        pool.add(x)
    own_pool = None
    if executor is None and not deterministic and len(rest) > 1 and (os.cpu_count() or 1) > 1:
        # the pivots are independent: one solver thread each, as many at once as CPUs
        own_pool = executor = ThreadPoolExecutor(min(len(rest), os.cpu_count() or 1))
        threads = threads or 1
    if executor is not None and not isinstance(executor, ThreadPoolExecutor):
        threads = threads or 1
    budget.slots = max(1, min(len(rest), executor_width(executor)))
    try:
        res = run_pivots(P, [owner_of[b] for b in rest], x_star, lp, upper=upper, budget=budget, pool=pool,
                         best_alone=best_alone, executor=executor, threads=threads, deterministic=deterministic)
        # a second pass: pivots left open while later ones settled early and left budget get
        # that budget, widest interval first, restarting from the pool (which now holds their
        # best solutions and every settled bound)
        open_ = sorted((o for o, r in res.items() if not r.exact), key=lambda o: (-res[o].width, o))
        left = budget.left()
        if open_ and left is not None and left >= MIN_PIVOT_SOLVE * len(open_):
            budget.pending = len(open_)
            again = run_pivots(P, open_, x_star, lp, upper=upper, budget=budget, pool=pool, best_alone=best_alone,
                               executor=executor, threads=threads, deterministic=deterministic)
            for o, r in again.items():
                res[o] = _joined(res[o], r)
    finally:
        if own_pool is not None:
            own_pool.shutdown()
    out.update((b, res[owner_of[b]]) for b in rest)
    return out, extra


def _joined(old: PivotResult, new: PivotResult) -> PivotResult:
    """One fast-path pivot over two passes: the better welfare and bound of the two, their
    seconds and work added, ``how`` joined with ``+``."""
    assert old.bound is not None and new.bound is not None  # the fast path always has a bound
    W, B = max(old.welfare, new.welfare), min(old.bound, new.bound)
    exact = new.exact or old.exact or W >= B
    return dataclasses.replace(new, status=Status.OPTIMAL if exact else Status.FEASIBLE, welfare=W, bound=max(W, B),
                               seconds=old.seconds + new.seconds, work=(old.work or 0.0) + (new.work or 0.0),
                               how=f"{old.how}+{new.how}")


def _plain_pivots(jobs: Mapping[str, tuple[Instance, list[str] | None]], *, method: Any, budget: PivotBudget,
                  threads: int | None, executor: Executor | None,
                  mip_gap: float | None = None) -> dict[str, PivotResult]:
    """Pivots re-solved by ``method`` from scratch, each given its share of ``budget`` when it
    starts (serially, or as many at once as ``executor`` has workers)."""
    from concurrent.futures import FIRST_COMPLETED, wait

    budget.pending = len(jobs)
    budget.slots = max(1, min(len(jobs), executor_width(executor)))
    plain = executor is not None and not isinstance(executor, ThreadPoolExecutor)
    out: dict[str, PivotResult] = {}
    pending = list(jobs)
    running: dict[Any, str] = {}
    while pending or running:
        while pending and (executor is None or len(running) < budget.slots):
            bidder = pending.pop(0)
            inst_i, hint = jobs[bidder]
            share = budget.share()
            limit = None if share is None else max(share, 0.05)
            if executor is None:
                out[bidder] = pivot_welfare(inst_i, method=method, time_limit=limit, threads=threads, hint=hint,
                                            mip_gap=mip_gap)
                continue
            running[executor.submit(pivot_welfare, inst_i.to_dict() if plain else inst_i, method=method,
                                    time_limit=limit, threads=threads, hint=hint, mip_gap=mip_gap)] = bidder
        if running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for f in done:
                out[running.pop(f)] = f.result()
    return out


def _trivial_pivots(instance: Instance, main: Any, won: Mapping[str, Bid], upper: float,
                    best: np.ndarray | None = None) -> dict[str, PivotResult]:
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
    out: dict[str, PivotResult] = {}
    for bidder, bid in won.items():
        others = float(main.welfare) - bid.value
        bound = min(total - float(best[owner_of[bidder]]), upper)
        if others >= bound - min(1e-9 * max(1.0, abs(others)), payment_tolerance(upper) / 4):
            out[bidder] = PivotResult(Status.OPTIMAL, others, others, time.perf_counter() - t0, "trivial-bound",
                                      winners=tuple(w for w in main.winners if w != bid.id))
    return out




def vcg(
    instance: Instance,
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    executor: Executor | None = None,
    options: Mapping[str, Any] | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> Outcome:
    """VCG (Clarke pivot) payments; see the module docstring for guarantee and algorithm.

    Parameters
    ----------
    instance : Instance
        Reported bids.
    method : str or callable, keyword-only
        Winner determination method (:func:`gensolver.solve`) for the main solve and the
        pivots. ``"auto"`` (the anytime method) proves optimality without a time limit, is never
        worse than the greedy with one, and enables the LP-dual fast path for the pivots.
    time_limit : float, optional
        The whole budget, main solve and every pivot together (see "One budget" in the module
        docstring): seconds, or work units with ``options={"deterministic": True}``.
    executor : concurrent.futures.Executor, optional
        Runs the pivot re-solves in parallel (threads or processes). ``None``: the ``"auto"``
        fast path runs them on a private thread pool, one per CPU with one solver thread each
        (pivots share a pool of solutions: one found without bidder ``k`` that gives bidder
        ``i`` nothing is a warm start for ``i``'s pivot); other solvers run them serially.
    options : mapping, optional
        ``warm_start`` (bool, default True): hint each pivot with the main winners minus the
        bidder's bid; with ``method="auto"`` the pivots also reuse the main run's LP duals as a
        free bound and for reduced-cost fixing, on threads or in worker processes (see
        :func:`gensolver.mechanisms.pivots.pivot_solve`); ``threads`` (int): solver
        threads per solve; ``main_share`` (float in (0, 1], default 0.7): the fraction of
        ``time_limit`` the main solve may use (the pivots share the rest, and whatever the
        main solve leaves); ``deterministic`` (bool; ``method="auto"`` only; default: on with
        ``method="auto"`` and ``warm_start``, so payments depend on the reports and the budget,
        not on the machine's load): ``time_limit`` is a budget of work units and the outcome is
        the same on every run for a thread count and executor width. ``False`` reads
        ``time_limit`` as wall-clock seconds, and the outcome says so (``details["budget"]``
        and ``message``).
    solver : str or callable, optional
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).

    Returns
    -------
    Outcome
        ``exact`` is ``True`` only when every solve is proven optimal; otherwise
        ``payment_bounds`` certify where the exact payments lie and ``message`` says why.
        ``details["seconds"]`` and ``details["work"]`` give the main solve's and the pivots'
        share of the budget (``work`` in deterministic mode).
    """
    method = method_alias(method, solver, where="vcg")
    instance = check_call(instance, executor)
    opts = _vcg_options(options, method)
    det, share, threads = opts["deterministic"], opts["main_share"], opts["threads"]
    t0, c0 = time.perf_counter(), time.process_time()
    scale, ptol, gap, slack = _tolerances(instance, method)
    main, run, P = _main_solve(instance, method, time_limit, share=share, threads=threads, deterministic=det,
                               gap=gap, t0=t0)
    main_work = float(getattr(run, "work", 0.0)) if det else 0.0
    main, proof_work = _prove_main(instance, P, main, run, ptol=ptol, slack=slack, time_limit=time_limit, share=share,
                                   used=main_work if det else time.perf_counter() - t0, threads=threads, det=det)
    main_work += proof_work
    main_ok = main.status is Status.OPTIMAL
    main_proved = main_ok and not slack and (main.bound is None or main.bound - main.welfare <= ptol / 4)
    t_main = time.perf_counter() - t0
    main_bound = main.bound if main.bound is not None else trivial_bound(from_instance(instance))
    won = winning_bids(instance, main)
    left = None if time_limit is None else float(time_limit) - (main_work if det else t_main)
    budget = PivotBudget(left, 0, deterministic=det)

    fast = method == "auto" and opts["warm_start"] and bool(won)
    t1 = time.perf_counter()
    results, jobs, extra_work = _pivots(instance, P if fast else None, main, run, won, main_bound, fast=fast,
                                        warm_start=opts["warm_start"], method=method, budget=budget,
                                        threads=threads, executor=executor, deterministic=det, gap=gap)
    t_pivots = time.perf_counter() - t1
    payments, bounds, pivots, all_exact, notes = _payments(instance, main, won, results, jobs, main_ok=main_ok,
                                                           main_bound=main_bound, slack=slack, ptol=ptol)
    details_work = _work_details(main_work, extra_work, results) if det else None
    budget_kind = "none" if time_limit is None else "work units" if det else "wall clock"
    message = _message(main, notes, budget_kind, all_exact=all_exact, main_ok=main_ok, main_proved=main_proved,
                       slack=slack, method=method)
    details = {
        "budget": budget_kind,
        "payment_tolerance": ptol,
        "method": getattr(method, "__name__", method),
        "warm_start": bool(opts["warm_start"]),
        "executor": type(executor).__name__ if executor is not None else None,
        "seconds": {"main": t_main, "pivots": t_pivots, "total": time.perf_counter() - t0,
                    "cpu": time.process_time() - c0},
        "time_limit": time_limit,
        "main_share": share,
        "deterministic": det,
        "pivots": pivots,
        "work": details_work,
    }
    return make_outcome("vcg", instance, main, payments, bounds=bounds, exact=all_exact and main_proved,
                        message=message, details=details)


def _prove_main(instance: Instance, P: Any, main: Any, run: Any, *, ptol: float, slack: float,
                time_limit: float | None, share: float, used: float, threads: int | None,
                det: bool) -> tuple[Any, float]:
    """The main solve re-proved to ``ptol / 4``, absolute (:func:`~gensolver.mechanisms.pivots.prove_main`),
    within what is left of its share of the budget: ``(allocation, work charged)``. A main solve
    not optimal, already proved to that, or of a backend whose bounds are not certified
    (``slack``), or not on the ``"auto"`` engine (``P`` is ``None``) is returned as it is."""
    if (P is None or slack or main.status is not Status.OPTIMAL or main.bound is None
            or main.bound - main.welfare <= ptol / 4):
        return main, 0.0
    limit = None if time_limit is None else share * float(time_limit) - used
    if limit is not None and limit < MIN_PIVOT_SOLVE:
        return main, 0.0
    x = np.zeros(P.n)
    index = instance.bid_index
    for w in main.winners:
        x[index[w]] = 1.0
    proof = prove_main(P, x, getattr(run, "lp", None), bound=float(main.bound), tol=ptol / 4, time_limit=limit,
                       threads=threads, deterministic=det)
    details = {**main.details, "absolute_proof": {"bound": proof.bound, "proved": proof.proved,
                                                  "columns": proof.columns, "work": proof.work}}
    new = finish(instance, proof.x, method=main.method, proven_optimal=proof.proved, bound=proof.bound,
                 build=main.seconds.build, solve=main.seconds.solve, details=details, message=main.message)
    work = proof.work if det else 0.0
    return (main if new.status is not Status.OPTIMAL or new.welfare < main.welfare else new), work


def _work_details(main_work: float, extra_work: float, results: Mapping[str, PivotResult]) -> dict[str, float]:
    """``details["work"]`` of a deterministic run: the work units of the main solve, of the
    pivots (their solves and the fast path's shared work) and in all."""
    pivot_work = extra_work + sum(r.work or 0.0 for r in results.values())
    return {"main": main_work, "pivots": pivot_work, "total": main_work + pivot_work}


def _vcg_options(options: Mapping[str, Any] | None, method: Any) -> dict[str, Any]:
    """The options of :func:`vcg`, checked, with ``deterministic`` resolved from ``method``."""
    opts = check_options(options, _DEFAULTS, "mechanism 'vcg'")
    if opts["deterministic"] is None:  # the default: the work budget wherever it exists
        opts["deterministic"] = method == "auto" and opts["warm_start"] is True
    for key in ("warm_start", "deterministic"):
        if not isinstance(opts[key], bool):
            raise InputError(f"vcg option {key} must be True or False, got {opts[key]!r}")
    share = opts["main_share"]
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 < share <= 1.0:
        raise InputError(f"vcg option main_share must be a number in (0, 1], got {share!r}")
    det = opts["deterministic"]
    if det and method != "auto":
        raise InputError(f"vcg option deterministic needs method='auto', got method={method!r}")
    if det and not opts["warm_start"]:
        raise InputError("vcg option deterministic needs warm_start=True (the pivots of the 'auto' fast path)")
    return opts


def _tolerances(instance: Instance, method: Any) -> tuple[float, float, float, float]:
    """``(scale, ptol, gap, slack)``: the payment tolerance of this round, the MIP gap that
    proves it and the widening of bounds a floating-point backend does not certify."""
    # exact payments are proved to ptol (absolute): every welfare to a quarter of it, so the
    # backends get a relative gap that means that much at this round's scale
    scale = trivial_bound(from_instance(instance))
    ptol = payment_tolerance(scale)
    gap = min(DEFAULT_MIP_GAP, ptol / 4 / max(1.0, scale))
    # the floating-point backends' bounds are not certificates at this level (see
    # UNCERTIFIED_BOUNDS): their proofs count only on integral values small enough that their
    # 1e-9 relative tolerances are below one unit, and their bounds are widened otherwise
    slack = 0.0
    if isinstance(method, str) and method in UNCERTIFIED_BOUNDS and not (
            bool(np.all(instance.values == np.round(instance.values))) and 2 * DEFAULT_MIP_GAP * scale < 0.5):
        slack = 2 * DEFAULT_MIP_GAP * max(1.0, scale) + ptol
    return scale, ptol, gap, slack


def _pivots(instance: Instance, P: Any, main: Any, run: Any, won: dict[str, Any], main_bound: float, *,
            fast: bool, warm_start: bool, method: Any, budget: PivotBudget, threads: int | None, executor: Any,
            deterministic: bool, gap: float) -> tuple[dict[str, PivotResult], dict[str, Any], float]:
    """Every winner's pivot: ``(results per bidder, re-solved instances and hints, extra work)``."""
    jobs: dict[str, tuple[Any, list[str] | None]] = {}
    results: dict[str, PivotResult] = {}
    extra_work = 0.0
    if fast:
        results, extra_work = _fast_pivots(instance, P, main, run, won, budget=budget, threads=threads,
                                           executor=executor, deterministic=deterministic)
    else:
        # warm start, any method: x* minus the bidder's bid is feasible without the bidder;
        # when it meets the trivial bound (every other bidder's best bid that fits alone, as
        # when everyone won their best bid) the pivot is settled here, with no re-solve
        if warm_start and won:
            results.update(_trivial_pivots(instance, main, won, main_bound))
        for bidder, bid in won.items():
            if bidder in results:
                continue
            hint = [w for w in main.winners if w != bid.id] if warm_start else None
            jobs[bidder] = (instance.without_bidder(bidder), hint)
        if jobs:
            results.update(_plain_pivots(jobs, method=method, budget=budget, threads=threads, executor=executor,
                                         mip_gap=gap))
    return results, jobs, extra_work


def _payments(instance: Instance, main: Any, won: dict[str, Any], results: dict[str, PivotResult],
              jobs: dict[str, Any], *, main_ok: bool, main_bound: float, slack: float, ptol: float,
              ) -> tuple[dict[str, float], dict[str, tuple[float, float]], dict[str, Any], bool, list[str]]:
    """Clarke payments and their certified intervals from the pivots:
    ``(payments, bounds, pivot records, all exact, bidders not proved exact)``."""
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
        ok = res.status in (Status.OPTIMAL, Status.FEASIBLE)
        inc = max(res.welfare if ok else 0.0, others)
        if ok and res.bound is not None:
            bnd = res.bound
        else:
            bnd = trivial_bound(from_instance(jobs[bidder][0] if bidder in jobs else instance.without_bidder(bidder)))
        bnd = min(bnd, main_bound + slack) + slack
        exact_i = not slack and res.status is Status.OPTIMAL and (
            res.bound is None or res.bound - res.welfare <= ptol / 4)
        if exact_i:
            bnd = inc = max(res.welfare, others)
        all_exact = all_exact and exact_i
        pay = min(max(inc - others, 0.0), v_i)
        payments[bidder] = pay
        if main_ok:
            lo = min(max(0.0, inc - others - slack), v_i)
            hi = max(lo, min(v_i, bnd - others))
        else:
            d_lo = max(0.0, main.welfare - bnd)
            lo, hi = 0.0, max(0.0, vmax[bidder] - d_lo)
        bounds[bidder] = (lo, hi)
        pivots[bidder] = res.to_dict()
        if not exact_i:
            notes.append(bidder)
    return payments, bounds, pivots, all_exact, notes


def _main_solve(instance: Instance, method: Any, time_limit: float | None, *, share: float, threads: int | None,
                deterministic: bool, gap: float, t0: float) -> tuple[Any, Any, Any]:
    """The main solve on its share of the budget: ``(result, the auto engine's run, problem)``
    (the last two ``None`` unless ``method`` is ``"auto"``)."""
    run = P = None
    main_limit = None if time_limit is None else share * float(time_limit)
    if method == "auto":
        P = from_instance(instance)
        if main_limit is not None and not deterministic:
            main_limit = max(0.05, main_limit - (time.perf_counter() - t0))
        main, run = _main_auto(instance, P, time_limit=main_limit, threads=threads, deterministic=deterministic)
    else:
        main = solve_wdp(instance, method=method, time_limit=main_limit, threads=threads, mip_gap=gap)
    return main, run, P


def _message(main: Any, notes: list[str], budget_kind: str, *, all_exact: bool, main_ok: bool, main_proved: bool,
             slack: float, method: Any) -> str:
    """The outcome's message: what is not proved, and how the budget was read."""
    message = ""
    if budget_kind == "wall clock":
        notes_clock = ("time_limit read as wall-clock seconds: payments of a run stopped by it depend on the "
                       "machine's load (method='auto' runs on the deterministic work budget)")
    else:
        notes_clock = ""
    if not main_ok:
        message = (f"main solve not proven optimal (status {main.status.value}, gap {main.gap}); "
                   "payment_bounds hold for the Clarke payment at any optimal allocation")
    elif notes:
        message = (f"pivot re-solves not proven optimal within the budget for {len(notes)} bidder(s) "
                   f"({', '.join(notes[:5])}{', ...' if len(notes) > 5 else ''}); payment_bounds certify the "
                   "exact payments")
    if notes_clock and not (all_exact and main_ok):
        message = f"{message}; {notes_clock}" if message else notes_clock
    if main_ok and not main_proved:
        gap_now = 0.0 if main.bound is None else main.bound - main.welfare
        message = (f"{message}; " if message else "") + (
            f"main solve optimal to the MIP gap only (bound - welfare = {gap_now:.3g}"
            f"{', bounds of ' + str(method) + ' not certified on fractional values' if slack else ''}): "
            "payments not proved to the stated tolerance")
    return message
