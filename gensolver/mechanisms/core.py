"""Bidder-optimal, VCG-nearest core payments (core-selecting combinatorial auction).

Guarantee
---------
With an exact method, the payments are in the **core** with respect to the reported values: no
coalition of bidders together with the seller can block the outcome, i.e. for every coalition
``C`` the winners outside ``C`` pay at least ``W(C) - sum_{i in C, winner} v_i(x*)``. Among core
payments they minimise revenue (bidder-optimal, "minimum revenue core") and, among those, the
Euclidean distance to the VCG payments (Day & Cramton 2012). They are at least the VCG
payments and at most the bids (individually rational). Core-selecting auctions are **not**
truthful: VCG is the only efficient truthful mechanism, and VCG payments can lie outside the
core (the LLG example of Ausubel & Milgrom 2006, ``tests/mechanisms/test_core.py``); the
VCG-nearest rule limits the incentive to deviate (Day & Milgrom 2008).

Algorithm (Day & Raghavan 2007 constraint generation)
-----------------------------------------------------
1. Solve the welfare problem (allocation ``x*``, winners ``W``) and VCG payments ``p_vcg``.
2. Start from ``p = p_vcg`` and no core constraints.
3. Separation: solve the welfare problem with every winner's bids reduced by its current
   surplus ``v_i(x*) - p_i`` (a MILP, with the same method). Its optimum ``z`` equals the most
   violated core constraint's left side; if ``z <= sum(p)`` (absolute tolerance a quarter of
   the payment tolerance) ``p`` is in the core: stop. Otherwise the bidders of its solution form a blocking coalition
   ``C``; add ``sum_{i in W \\ C} p_i >= V(C) - sum_{i in W cap C} v_i(x*)``.
4. Day–Cramton tie-break: an LP (HiGHS simplex) minimises ``sum(p)`` over the constraints and
   ``p_vcg <= p <= v(x*)``, giving revenue ``R``; a QP (HiGHS, or an active-set method where
   that fails, :mod:`~gensolver.mechanisms.core_lp`) minimises ``||p - p_vcg||^2`` with
   ``sum(p) = R`` fixed. Go to 3 with the new ``p``.

Budget
------
``time_limit`` is the budget of the whole run: the VCG stage may use the share ``vcg_share``
(default 0.5); each separation solve is then given half of what is left, and the LP, the QP and
the rational certificate are charged to it and stopped by what is left
(:class:`~gensolver.mechanisms.core_lp.CoreBudget`). In deterministic mode (the default with
``method="auto"``) the budget is in work units, so payments depend on the reports and the
budget, not on the machine's load; ``details["work"]`` gives each stage's charge (the last solve
may overshoot its share by CP-SAT's own overshoot of its deterministic limit). A run the budget
cuts short stops with ``exact=False``, a message saying where, and intervals between the VCG
lower bounds and the bids.

Exact payments
--------------
``exact=True`` means every payment is within ``exact_tolerance`` (``details["payment_tolerance"]``,
the VCG stage's :func:`~gensolver.model.tolerances.payment_tolerance`) of the definition's:

- the VCG payments are proved to it (:func:`~gensolver.mechanisms.vcg.vcg`);
- core membership is proved by a separation bound within a quarter of it, absolute (a bound
  proved only to a backend's relative gap is re-solved once with a gap worth that much, on
  CP-SAT for ``"auto"``);
- the LP and QP points are replaced by the exact rational point of the rows found, proved by
  its KKT conditions (:func:`~gensolver.mechanisms.core_certify.certify_core_point`), which is
  then separated in turn. A degenerate face the certificate cannot settle, or more than
  :data:`~gensolver.mechanisms.core_certify.MAX_CERTIFIED` winners, leave ``exact=False``.

If any solve is not proven, ``exact`` is ``False`` and ``payment_bounds`` hold the interval
between the VCG lower bounds and the bids. When the allocation is not efficient (a main
solve stopped by its budget, or a heuristic method), a separation solve can find a coalition
whose allocation is worth more than ``x*``: no payments within the bids block it (the core of
``x*`` is empty), so the loop stops there with the last point, ``exact=False``, and the better
allocation in ``details["better_allocation"]`` (its value, bidders and bids).

Budgets
-------
Core payments above a budget are capped at the budget (``Outcome.budget_capped``); capped
payments may leave the core, and capping (like the rule itself) is not truthful.

References
----------
Day & Raghavan, "Fair payments for efficient allocations in public sector combinatorial
auctions", Management Science 53(9), 2007.
Day & Cramton, "Quadratic core-selecting payment rules for combinatorial auctions",
Operations Research 60(3), 2012.
Day & Milgrom, "Core-selecting package auctions", Int. J. Game Theory 36, 2008.
Ausubel & Milgrom, "The lovely but lonely Vickrey auction", in *Combinatorial Auctions*,
MIT Press, 2006.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from .._deprecation import method_alias
from ..errors import InputError, check_options
from ..model import Bid, Instance
from ..model.tolerances import payment_tolerance
from ..model.validate import mark_validated
from ..solvers import Status
from ..solvers.engine import DEFAULT_MIP_GAP, anytime_solve, finish, from_instance
from .common import check_call, make_outcome, solve_wdp, winning_bids
from .core_certify import MAX_CERTIFIED, OpCounter, certify_core_point
from .core_lp import WORK_PER_RATIONAL_OP, CoreBudget, lp_qp
from .outcome import Outcome
from .vcg import vcg

__all__ = ["core", "separate", "Separation"]

_DEFAULTS: dict[str, Any] = {"max_iterations": 200, "threads": None, "deterministic": None, "vcg_share": 0.5}


class Separation(NamedTuple):
    """One separation solve (:func:`separate`)."""

    #: best reduced welfare found
    z: float
    #: a proven upper bound on the reduced welfare
    z_bound: float
    #: bidders of that solution with positive reduced value (the blocking coalition)
    coalition: tuple[str, ...]
    #: their reported welfare
    coalition_value: float
    #: the solve was proven optimal
    optimal: bool
    #: the coalition's winning bids (a feasible allocation worth ``coalition_value``)
    bids: tuple[str, ...] = ()
    #: work units charged (deterministic mode; ``0.0`` otherwise)
    work: float = 0.0


def separate(
    instance: Instance,
    winning: Mapping[str, Bid],
    payments: Mapping[str, float],
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    threads: int | None = None,
    deterministic: bool = False,
    mip_gap: float | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> Separation:
    """Most violated core constraint at ``payments`` (Day & Raghavan's separation MILP).
    solver : str or callable, optional
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).

    Returns
    -------
    Separation
        ``z``: best reduced welfare found; ``z_bound``: a proven upper bound on it;
        ``coalition``: bidders of that solution (with positive reduced value);
        ``coalition_value``: their true (reported) welfare; ``optimal``: proven optimal;
        ``bids``: the coalition's winning bids.
    """
    method = method_alias(method, solver, where="separate")
    surplus = {i: max(0.0, winning[i].value - payments.get(i, 0.0)) for i in winning}
    bids = [
        Bid(b.id, b.bidder, max(0.0, b.value - surplus.get(b.bidder, 0.0)), b.demand) if b.bidder in surplus else b
        for b in instance.bids
    ]
    reduced = mark_validated(instance.replace_bids(bids))
    work = 0.0
    if deterministic:  # ``time_limit`` in work units of the anytime engine: load-independent
        run = anytime_solve(from_instance(reduced), time_limit=time_limit, threads=threads, deterministic=True)
        work = run.work
        res = finish(reduced, run.x, method="auto", proven_optimal=run.proven, bound=run.bound, build=0.0, solve=0.0)
    else:
        res = solve_wdp(reduced, method=method, time_limit=time_limit, threads=threads, mip_gap=mip_gap)
    index = reduced.bid_index
    coalition: list[str] = []
    chosen: list[str] = []
    value = 0.0
    z = 0.0
    for w in res.winners:
        b = reduced.bids[index[w]]
        if b.value > 0.0:
            coalition.append(b.bidder)
            chosen.append(w)
            value += instance.bids[index[w]].value
            z += b.value
    bound = res.bound if res.bound is not None else float("inf")
    return Separation(z, max(bound, z), tuple(coalition), value, res.status is Status.OPTIMAL, tuple(chosen), work)


def _constraint_matrix(rows: list[tuple[np.ndarray, float]], lo: np.ndarray,
                       hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every constraint of the core LP as ``G p >= h``: the core rows, ``p >= lo``, ``-p >= -hi``."""
    n = len(lo)
    eye = np.eye(n)
    G = np.vstack([np.array([r[0] for r in rows]).reshape(-1, n), eye, -eye])
    h = np.concatenate([np.array([r[1] for r in rows], dtype=float), lo, -hi])
    return G, h


#: a separation solve whose share of the budget is below this (seconds or work units) is not
#: started: the run stops there, inexact
MIN_SEPARATION = 0.05


@dataclass
class _Generation:
    """What constraint generation ended with."""

    p: np.ndarray
    p_lp: np.ndarray
    rows: list[tuple[np.ndarray, float]] = field(default_factory=list)
    coalitions: list[list[str]] = field(default_factory=list)
    iterations: int = 0
    certified: bool = False
    beaten: dict[str, Any] | None = None
    #: ``p`` is the exact point of ``rows`` (:func:`certify_core_point`)
    point_exact: bool = False
    #: why the run stopped before a proof ("" when it did not)
    stopped: str = ""


def _separation_limit(budget: CoreBudget) -> float | None:
    """One separation's share: half of what is left (``None``: no limit; ``-1``: too little)."""
    left = budget.left()
    if left is None:
        return None
    return left / 2 if left / 2 >= MIN_SEPARATION else -1.0


def _generate(instance: Instance, won: Mapping[str, Bid], lo: np.ndarray, hi: np.ndarray, vcg_p: np.ndarray, *,
              method: str | Callable[..., Any], budget: CoreBudget, threads: int | None, deterministic: bool,
              max_iterations: int, tol: float,
              certify: Callable[[list[tuple[np.ndarray, float]], np.ndarray, np.ndarray], np.ndarray | None] | None,
              ) -> _Generation:
    """Day & Raghavan's loop (steps 2-4 of the module docstring); ``tol`` is absolute.

    Every separation solve, LP, QP and certificate is charged to ``budget`` and stopped by what
    is left of it (:mod:`~gensolver.mechanisms.core_lp`); when too little is left for the next
    step the loop stops with ``stopped`` saying so. With ``certify`` (rows, LP point, QP point
    -> the exact point of the rows, or ``None``), a point the separation accepts is replaced by
    the exact point of the rows, which is then separated in turn: the floating-point point may
    be in the core while the exact one of the same rows is not."""
    winners = list(won)
    g = _Generation(vcg_p.copy(), vcg_p.copy())
    while winners and g.iterations < max_iterations:
        limit = _separation_limit(budget)
        if limit is not None and limit < 0:
            g.stopped = "budget spent before core membership was proved"
            return g
        g.iterations += 1
        sep = separate(instance, won, dict(zip(winners, g.p.tolist())), method=method, time_limit=limit,
                       threads=threads, deterministic=deterministic)
        budget.charge("separation", sep.work)
        revenue = float(g.p.sum())
        if sep.z_bound <= revenue + tol:
            if certify is None or not g.rows or g.point_exact:
                g.certified = True
                return g
            point = certify(g.rows, g.p_lp, g.p)
            if point is None:  # in the core, but not the exact point
                g.certified = True
                return g
            g.point_exact = True
            if np.array_equal(point, g.p):
                g.certified = True
                return g
            g.p = point  # separate the exact point
            continue
        if sep.z <= revenue + tol and deterministic:  # not proven either way: stop, flag as inexact
            return g
        if sep.z <= revenue + tol:
            # proved only to the backend's relative gap: once more with a gap worth ``tol`` at
            # this scale on an exact backend that takes it ("auto": CP-SAT)
            limit = _separation_limit(budget)
            if limit is not None and limit < 0:
                g.stopped = "budget spent before core membership was proved"
                return g
            exact_method = "cpsat" if method == "auto" else method
            sep = separate(instance, won, dict(zip(winners, g.p.tolist())), method=exact_method,
                           time_limit=limit, threads=threads,
                           mip_gap=min(DEFAULT_MIP_GAP, tol / max(1.0, abs(sep.z_bound))))
            g.certified = sep.z_bound <= revenue + tol
            return g
        cset = set(sep.coalition)
        coef = np.array([0.0 if i in cset else 1.0 for i in winners])
        rhs = sep.coalition_value - sum(won[i].value for i in winners if i in cset)
        if rhs > float(coef @ hi) + tol:
            # the coalition's allocation is worth more than x* (a main solve stopped by its
            # budget, or a heuristic): no payments within the bids block it, the core of x*
            # is empty; stop with the last point rather than hand the LP an infeasible row
            g.beaten = {"welfare": sep.coalition_value, "bidders": sorted(cset), "bids": sorted(sep.bids)}
            return g
        rows = [*g.rows, (coef, min(rhs, float(coef @ hi)))]
        step = lp_qp(rows, lo, hi, vcg_p, budget)
        if step is None:  # the LP did not finish: the last point stands, unproved
            g.stopped = "budget spent in the core LP"
            return g
        g.rows = rows
        g.point_exact = False
        g.coalitions.append(sorted(cset))
        g.p_lp, g.p = step.p_lp, step.p
        if not step.complete:
            g.stopped = "budget spent in the core QP (the point is the LP's, not the VCG-nearest)"
            return g
    g.certified = not winners
    if winners and not g.certified and not g.stopped:
        g.stopped = f"iteration limit ({max_iterations}) reached"
    return g


def _core_options(options: Mapping[str, Any] | None, method: Any) -> tuple[dict[str, Any], bool, float]:
    """The options of :func:`core`, checked: ``(options, deterministic, vcg_share)``."""
    opts = check_options(options, _DEFAULTS, "mechanism 'core'")
    det = method == "auto" if opts["deterministic"] is None else opts["deterministic"]
    if not isinstance(det, bool) or (det and method != "auto"):
        raise InputError(f"core option deterministic must be True (with method='auto') or False, "
                         f"got {opts['deterministic']!r} with method={method!r}")
    share = opts["vcg_share"]
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 < share <= 1.0:
        raise InputError(f"core option vcg_share must be a number in (0, 1], got {share!r}")
    return opts, det, float(share)


def _verdict(base: Outcome, gen: _Generation, n_winners: int, welfare: float) -> tuple[bool, list[str]]:
    """Whether the core payments are exact, and the messages saying why not."""
    exact = base.exact and gen.certified
    why_inexact = "" if gen.certified else \
        f"core membership not certified ({gen.stopped or 'separation not proven optimal'})"
    if exact and gen.rows and not gen.point_exact:
        exact = False
        why_inexact = (f"core point not certified exactly (more than {MAX_CERTIFIED} winners)"
                       if n_winners > MAX_CERTIFIED else "core point not certified exactly (degenerate LP or QP face)")
    msgs = []
    if gen.beaten is not None:
        exact = False
        msgs.append(f"the allocation is not efficient: the separation found one worth {gen.beaten['welfare']:.10g} > "
                    f"{welfare:.10g}, so its core is empty; payments are the last core-LP point")
    elif why_inexact:
        exact = False
        msgs.append(why_inexact)
    if base.message:
        msgs.append(f"VCG: {base.message}")
    return exact, msgs


def core(
    instance: Instance,
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    executor: Executor | None = None,
    options: Mapping[str, Any] | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> Outcome:
    """Bidder-optimal, VCG-nearest core payments (see the module docstring).

    Parameters
    ----------
    instance : Instance
        Reported bids.
    method : str or callable, keyword-only
        Winner determination method for the main solve, the VCG pivots and the separation
        MILPs (``"auto"``: see :func:`gensolver.mechanisms.vcg.vcg`).
    time_limit : float, optional
        The budget of the whole run (see "Budget" in the module docstring): work units of the
        anytime engine when deterministic (the default with ``method="auto"``, so payments do
        not depend on the machine's load), else wall-clock seconds.
    executor : Executor, optional
        Parallelises the VCG pivots.
    options : mapping, optional
        ``max_iterations`` (default 200) of constraint generation; ``threads``;
        ``deterministic`` (default ``None``: ``True`` with ``method="auto"``; ``False`` reads
        ``time_limit`` as wall-clock seconds); ``vcg_share`` (in (0, 1], default 0.5): the
        fraction of ``time_limit`` the VCG stage may use.
    solver : str or callable, optional
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).

    Returns
    -------
    Outcome
        ``details`` holds the VCG payments, the number of iterations, the core constraints and
        ``work`` (what each stage charged: work units in deterministic mode, else seconds).
    """
    method = method_alias(method, solver, where="core")
    instance = check_call(instance, executor)
    opts, det, share = _core_options(options, method)
    t0 = time.perf_counter()
    plain = mark_validated(Instance(instance.slots, instance.bids, (), instance.name, instance.metadata))
    budget = CoreBudget(time_limit, deterministic=det)
    base = vcg(plain, method=method, time_limit=None if time_limit is None else share * float(time_limit),
               executor=executor, options={"threads": opts["threads"], "deterministic": det})
    vcg_work = base.details.get("work") or {}
    budget.charge("vcg", float(vcg_work.get("total", 0.0)) if det else time.perf_counter() - t0)
    alloc = base.allocation
    won = winning_bids(instance, alloc)
    winners = list(won)
    vcg_p = np.array([base.payments[i] for i in winners], dtype=float)
    hi = np.array([won[i].value for i in winners], dtype=float)
    lo = np.minimum(vcg_p, hi)
    ptol = float(base.details.get("payment_tolerance", payment_tolerance(alloc.welfare)))
    def certify(rows: list[tuple[np.ndarray, float]], p_lp: np.ndarray, p_qp: np.ndarray) -> np.ndarray | None:
        G, h = _constraint_matrix(rows, lo, hi)
        left = budget.left()
        ops = OpCounter(None if left is None else max(0.0, left) / WORK_PER_RATIONAL_OP)
        try:
            return certify_core_point(G, h, vcg_p, p_lp, p_qp, slack=ptol / 4, ops=ops)
        finally:
            budget.charge("certificate", ops.used * WORK_PER_RATIONAL_OP)

    gen = _generate(instance, won, lo, hi, vcg_p, method=method, budget=budget, threads=opts["threads"],
                    deterministic=det and time_limit is not None, max_iterations=int(opts["max_iterations"]),
                    tol=ptol / 4, certify=certify if base.exact and len(winners) <= MAX_CERTIFIED else None)
    p, rows, coalitions, iterations, beaten = gen.p, gen.rows, gen.coalitions, gen.iterations, gen.beaten
    exact, msgs = _verdict(base, gen, len(winners), alloc.welfare)
    payments = dict(zip(winners, p.tolist()))
    details = {
        "vcg_payments": dict(base.payments),
        "iterations": iterations,
        "core_constraints": len(rows),
        "blocking_coalitions": coalitions,
        "seconds": time.perf_counter() - t0,
        "budget": "none" if time_limit is None else "work units" if det else "wall clock",
        "better_allocation": beaten,
        "payment_tolerance": ptol,
        "work": {**budget.by_stage, "total": budget.used()} if det else None,
        "vcg_share": share,
    }
    bounds = None
    if not exact:  # core payments are between the VCG payments and the bids
        bounds = {i: (min(base.payment_bounds[i][0], won[i].value), won[i].value) for i in winners}
    return make_outcome("core", instance, alloc, payments, bounds=bounds, exact=exact, message="; ".join(msgs),
                        details=details)
