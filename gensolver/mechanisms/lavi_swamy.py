"""Lavi–Swamy: a truthful-in-expectation mechanism from the LP relaxation.

Guarantee
---------
For a scaling ``alpha`` fixed before the reports are seen (``options={"alpha": a}``) and every
instance whose decomposition the oracle verifies at ``a`` (``details["alpha_verified"] <= a``):

- **truthful in expectation**: a bidder's expected utility is ``(1/alpha)`` times its utility
  under fractional VCG on the LP relaxation, which is maximal in range over a polytope that
  does not depend on the reports, so no misreport (of values, of bundles, dropping bids)
  raises it. When a misreport makes the verified ratio exceed ``a``, ``max(a, V)`` is used,
  which only lowers the misreporting bidder's expected utility (it is ``>= 0`` and divided by
  more), so truth stays a best reply;
- **alpha-approximate in expectation**: expected welfare ``= LP* / alpha >= OPT / alpha``;
- **individually rational** (for reported values) in every draw, hence in expectation, and
  payments are never negative: a winner pays ``p_i * v_ij / (v_i . x*_i) <= v_ij`` for its
  winning bid ``j``, ``p_i <= v_i . x*_i`` being its fractional VCG payment.

With ``alpha=None`` (the default) the scaling is the verified ratio of this instance, which a
bidder's report can move: the mechanism is then truthful in expectation *given* the ratio,
and a misreport that lowers it from ``alpha`` to ``alpha'`` gains at most
``U_i (alpha - alpha') / (alpha alpha')`` (``U_i`` the fractional VCG utility). The market
should fix ``alpha`` from earlier rounds. As for every VCG-based rule, false-name bids are not
covered, and a budget cap (below) breaks truthfulness.

Which relaxation (option ``relaxation``)
----------------------------------------
``"plain"``: the LP relaxation of :mod:`.fractional`. ``"clique"``: the same with every clique
inequality of the bids' conflict graph (:mod:`.cliques`), whose feasible region depends on the
bundles and owners only, so everything below holds for it too, with a smaller ``alpha`` on the
rounds measured (``docs/explanation/lavi-swamy.md``). ``details["relaxation"]`` says which, and
for ``"clique"`` whether the separation closed (``truthful_in_expectation`` requires it).

Which LP optimum (option ``optima``)
------------------------------------
The LP may have a whole face ``F(b)`` of optima, and the ratio the decomposition verifies
depends on which one is decomposed. Any selection ``x(b) in F(b)``, even one that looks at the
reports (such as "the one verified at the lowest ratio"), keeps fractional VCG truthful,
*provided the payments are computed at the selected point*. With ``h_i = LP*(b_-i)`` (the LP
without ``i``, the same whichever optimum is selected) and ``p_i(x) = h_i - sum_{k != i} b_k .
x_k``, a truthful bidder's fractional utility is ``v_i . x_i + sum_{k != i} b_k . x_k - h_i =
LP*(v_i, b_-i) - h_i`` at *every* point of the face, and under a misreport the selected
``x'`` is merely feasible in the report-independent polytope, so ``v_i . x'_i + sum_{k != i}
b_k . x'_k - h_i <= LP*(v_i, b_-i) - h_i`` (maximal in range, Lavi & Swamy 2011, Section 2;
the argument of VCG under any tie-breaking rule). Across the face a bidder's value ``v_i . x_i``
and payment ``p_i`` move by the same amount; the lottery of one optimum paired with the
payments of another would not be truthful. The lottery has mean ``x(b) / alpha`` and expected
payments ``p_i(x(b)) / alpha``, so each expected utility is the (selection-independent)
fractional utility divided by ``alpha``: with ``alpha`` fixed the choice of optimum is free.
With ``alpha`` from the reports, choosing the optimum of lowest verified ratio raises the
expected welfare ``LP*/alpha`` but ``alpha`` stays report-dependent and is flagged as above.

``optima=k`` (default 7): after the simplex optimum, up to ``k`` other optima
(:func:`.fractional.face_optima`: second-stage objectives over the optimal face, described
exactly by complementary slackness with the optimal duals, no slack on the objective) are
decomposed and the lowest verified ratio is kept (the simplex optimum's on ties, so it is never
worse); with ``alpha`` fixed, the search stops at the first optimum verified at ``alpha``. The
kept optimum is re-priced from the same pivot LPs (:func:`.fractional.at_optimum`, no new
re-solve) and ``exact`` is re-checked against its own value. It costs up to ``k + 1``
decompositions (each with the full iteration budget); ``optima=0`` is the simplex optimum only.
``details["optimum"]`` names the optimum kept and ``details["optima_tried"]`` lists the ratio
each verified.

Algorithm (Lavi & Swamy 2011, Sections 2–3)
-------------------------------------------
1. Solve the LP relaxation (columns of bids that fit alone) to optimality: ``x*``, ``LP*``
   (:mod:`.fractional`, warm-started simplex with column generation).
2. Fractional VCG: ``p_i = LP*(-i) - (LP* - v_i . x*_i)``, one warm-started re-solve per bidder
   with ``x*_i > 0`` (the others pay 0).
3. Decompose ``x* / alpha`` (``x*`` the optimum kept, above) into a lottery over integral feasible allocations by Carr–Vempala
   column generation with an approximation oracle whose ratio is checked at every call
   (:mod:`.decomposition`; ``method="greedy"`` or ``"auto"``, the latter adding the anytime
   engine's LNS when the greedy finds nothing); the lottery's mean is ``x* / alpha`` exactly
   and the empty allocation takes the remaining probability.
4. Draw one allocation with ``numpy.random.default_rng(seed)``.
5. Winner ``i`` of bid ``j`` in the draw pays ``p_i * v_ij / (v_i . x*_i)`` (Lavi & Swamy's
   value-proportional form, individually rational in every draw; option
   ``payment_rule="win-indicator"`` charges ``(p_i / alpha) / Pr[i wins]`` instead); its
   expected payment is ``p_i / alpha`` and its expected value ``v_i . x*_i / alpha``.

``Outcome.details`` holds the whole lottery (``decomposition``: probability, winners and
payments of every allocation, the empty one included), ``expected_payments``,
``expected_utilities`` (reported values), ``fractional_payments``, ``alpha``,
``alpha_verified``, ``alpha_floor`` (no oracle can verify less at the optimum kept; another
optimum of the LP may verify less), ``optimum`` and ``optima_tried``, ``lp_welfare``,
``expected_welfare`` and ``truthful_in_expectation``, so expected utilities are exact weighted sums (:func:`gensolver.verify.expected_regret`).

Exactness
---------
``exact`` is ``True`` when every LP converged with its certified dual bound within a quarter
of ``details["payment_tolerance"]`` (absolute; :func:`gensolver.model.tolerances.payment_tolerance`)
of its value, so every fractional payment is proved to that tolerance; the decomposition is
exact by construction. ``payment_bounds`` scale the
certified intervals of the fractional payments.

Budgets
-------
Payments above a bidder's budget are capped (in every allocation of the lottery, and the
bidder is listed in ``Outcome.budget_capped`` when the drawn one is capped); capping breaks
truthfulness.

References
----------
Lavi & Swamy, "Truthful and near-optimal mechanism design via linear programming", J. ACM
58(6), 2011 (FOCS 2005).
Carr & Vempala, "Randomized metarounding", Random Structures & Algorithms 20(3), 2002.
The project's market design notes (``MARKET_DESIGN.md``, "Lavi and Swamy"): alpha must not
depend on the bids.
"""

from __future__ import annotations

import math
import numbers
import time
from concurrent.futures import Executor
from typing import Any, Callable, Mapping

import numpy as np

from .._deprecation import method_alias
from ..errors import InputError, check_options, check_seed
from ..model import Instance
from ..model.canonical import canonical
from ..solvers.engine import MatrixProblem, finish, from_instance
from .cliques import RELAXATIONS, CliqueRelaxation, clique_relaxation
from .common import check_call, make_outcome
from .decomposition import ORACLES, Decomposition, decompose_best, decomposition_summary
from .fractional import SECOND_STAGES, FractionalVcg, fractional_vcg
from .outcome import Outcome

__all__ = ["lavi_swamy"]

_DEFAULTS: dict[str, Any] = {"alpha": None, "seed": 0, "threads": None, "payment_rule": "value-proportional",
                             "deterministic": True, "optima": len(SECOND_STAGES), "relaxation": "plain"}

#: column-generation iterations of the decomposition per work unit of ``time_limit`` (deterministic mode)
ITERATIONS_PER_UNIT = 200

#: how a winner's payment in the draw is set; both have expectation ``p_i / alpha``
PAYMENT_RULES = ("value-proportional", "win-indicator")

GUARANTEE = ("truthful in expectation for a report-independent alpha (options['alpha']) whenever "
             "alpha_verified <= alpha; expected welfare LP*/alpha >= OPT/alpha; individually rational "
             "in every draw for reported values")


def _check(opts: dict[str, Any], method: Any, time_limit: Any) -> str:
    a = opts["alpha"]
    if a is not None and (isinstance(a, bool) or not isinstance(a, numbers.Real) or not math.isfinite(a) or a < 1):
        raise InputError(f"lavi-swamy option alpha must be None or a finite number >= 1, got {a!r}")
    check_seed(opts["seed"], name="lavi-swamy option seed")
    t = opts["threads"]
    if t is not None and (isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 1):
        raise InputError(f"lavi-swamy option threads must be None or a positive integer, got {t!r}")
    if not isinstance(opts["deterministic"], bool):
        raise InputError(f"lavi-swamy option deterministic must be True or False, got {opts['deterministic']!r}")
    k = opts["optima"]
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= int(k) <= len(SECOND_STAGES):
        raise InputError(f"lavi-swamy option optima must be an integer from 0 to {len(SECOND_STAGES)}, got {k!r}")
    if opts["relaxation"] not in RELAXATIONS:
        raise InputError(f"lavi-swamy option relaxation must be one of {', '.join(RELAXATIONS)}, "
                         f"got {opts['relaxation']!r}")
    if opts["payment_rule"] not in PAYMENT_RULES:
        raise InputError(f"lavi-swamy option payment_rule must be one of {', '.join(PAYMENT_RULES)}, "
                         f"got {opts['payment_rule']!r}")
    if method not in ORACLES:
        raise InputError(f"lavi-swamy: method is the decomposition oracle and must be one of {', '.join(ORACLES)}, "
                         f"got {method!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not math.isfinite(time_limit) or time_limit <= 0):
        raise InputError(f"time_limit must be a positive finite number of seconds or None, got {time_limit!r}")
    return str(method)


def lavi_swamy(
    instance: Instance,
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    executor: Executor | None = None,
    options: Mapping[str, Any] | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> Outcome:
    """Lavi–Swamy lottery over integral allocations with scaled fractional VCG payments.

    See the module docstring for the guarantee and the algorithm.

    Parameters
    ----------
    instance : Instance
        Reported bids.
    method : {"auto", "greedy"}, keyword-only
        The decomposition oracle: ``"greedy"`` (LOS first fit on the dual prices) or
        ``"auto"`` (the greedy, then the anytime engine's LNS when the greedy finds no
        improving allocation; it also certifies ``alpha_floor``).
    time_limit : float, optional
        The budget. Deterministic mode (the default): work units; the LPs are solved to
        optimality and each decomposition (one per optimum tried) runs at most
        ``ITERATIONS_PER_UNIT * time_limit`` column-generation iterations (the ``"auto"``
        oracle's engine on its work clock), so the
        outcome depends on the reports and the budget only, never on the machine's load. With
        ``deterministic=False``: seconds in all, the LPs may be stopped (the outcome is then
        inexact) and the decompositions share the rest; the outcome says the wall clock was used.
    executor : Executor, optional
        Unused (the re-solves are warm-started in one LP object).
    options : mapping, optional
        ``alpha`` (None or a number >= 1): the scaling, fixed before the reports for
        truthfulness in expectation; ``seed`` (int, default 0): the draw; ``threads``: for the
        ``"auto"`` oracle; ``deterministic`` (bool, default True): see ``time_limit``;
        ``optima`` (int 0–7, default 7): other LP optima tried (module docstring);
        ``relaxation``: ``"plain"`` (default) or ``"clique"`` (every clique inequality of the
        bids' conflict graph, :mod:`.cliques`; module docstring);
        ``payment_rule``: ``"value-proportional"`` (default, the winner of
        bid ``j`` pays ``p_i v_ij / (v_i . x*_i)``, individually rational in every draw) or
        ``"win-indicator"`` (the winner pays ``p_i / sum_j x*_ij``, i.e. ``(p_i/alpha) /
        Pr[i wins]``; individually rational only in expectation for bidders with several
        bids). Both charge ``p_i / alpha`` in expectation.
    solver : str or callable, optional
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).

    Returns
    -------
    Outcome
        The drawn allocation and its payments; the lottery and expectations in ``details``.

    References
    ----------
    Lavi & Swamy, J. ACM 58(6), 2011.

    Examples
    --------
    >>> from gensolver import from_dict
    >>> from gensolver.mechanisms import run_mechanism
    >>> inst = from_dict({"schema": "gensolver.instance/v1",
    ...     "slots": [{"id": "s", "capacity": {"units": 1}}],
    ...     "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"units": 1}}},
    ...              {"id": "b", "bidder": "B", "value": 3, "demand": {"s": {"units": 1}}}]})
    >>> out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    >>> out.details["alpha"], dict(out.details["expected_payments"])
    (1.0, {'A': 3.0, 'B': 0.0})
    """
    method = method_alias(method, solver, where="lavi_swamy")
    instance = canonical(check_call(instance, executor))  # an LP optimum independent of the input order
    opts = check_options(options, _DEFAULTS, "mechanism 'lavi-swamy'")
    oracle = _check(opts, method, time_limit)
    det = bool(opts["deterministic"])
    t0 = time.perf_counter()
    closure = clique_relaxation(from_instance(instance)) if opts["relaxation"] == "clique" else None
    P = from_instance(instance) if closure is None else closure.problem  # clique rows: a tighter LP, same allocations
    fv = fractional_vcg(P, time_limit=None if det else time_limit)
    t1 = time.perf_counter()
    left, iterations = _decomposition_budget(time_limit, det, spent=t1 - t0)
    fv, dec, tried = decompose_best(P, fv, optima=int(opts["optima"]), alpha=opts["alpha"], oracle=oracle,
                                    time_limit=left, seed=int(opts["seed"]), threads=opts["threads"],
                                    max_iterations=iterations, deterministic=det)
    t2 = time.perf_counter()
    pricing = _Pricing(instance, P, fv, proportional=opts["payment_rule"] == "value-proportional")
    lottery, expected = _lottery(pricing, dec)
    u, pick, drawn = _draw(dec, int(opts["seed"]))
    x = np.zeros(P.n)
    x[drawn] = 1.0
    payments, bounds = _drawn_payments(pricing, drawn)
    details = _details(pricing, dec, opts, oracle=oracle, time_limit=time_limit, det=det, lottery=lottery,
                       expected=expected, draw={"seed": int(opts["seed"]), "u": u, "index": pick},
                       seconds={"lp_and_pivots": t1 - t0, "decomposition": t2 - t1,
                                "total": time.perf_counter() - t0}, tried=tried, closure=closure)
    alpha = dec.alpha
    alloc = finish(instance, x, method=f"lavi-swamy({oracle})", proven_optimal=False, bound=fv.lp.bound,
                   build=0.0, solve=t2 - t0, details={"alpha": alpha, "expected_welfare": details["expected_welfare"]})
    return make_outcome("lavi-swamy", instance, alloc, payments, bounds=bounds, exact=fv.exact,
                        message="; ".join(_notes(fv, dec, opts["alpha"], time_limit=time_limit, det=det,
                                                 closure=closure)),
                        details=details)


def _decomposition_budget(time_limit: float | None, det: bool, *, spent: float) -> tuple[float | None, int]:
    """The decomposition's wall-clock seconds (None: unbounded) and its column-generation iterations.

    Deterministic mode bounds the iterations by ``ITERATIONS_PER_UNIT * time_limit`` and never
    reads the clock; otherwise the decomposition gets the seconds the LPs left (at least 0.1).
    """
    if det:
        return None, 5000 if time_limit is None else max(10, min(5000, int(ITERATIONS_PER_UNIT * time_limit)))
    return (None if time_limit is None else max(0.1, time_limit - spent)), 5000


class _Pricing:
    """What the payment of a winning bid is read from: the fractional VCG result and the payment rule."""

    def __init__(self, instance: Instance, P: MatrixProblem, fv: FractionalVcg, *, proportional: bool) -> None:
        self.instance = instance
        self.P = P
        self.fv = fv
        self.proportional = proportional
        self.bidders = instance.bidder_ids
        self.ov = fv.owner_value
        self.share = np.bincount(P.owner, weights=fv.lp.x, minlength=P.n_owners)

    def factor(self, j: int) -> float:
        """The fraction of its owner's fractional VCG payment that winning bid ``j`` is charged."""
        o = int(self.P.owner[j])
        if self.proportional:
            return float(self.P.values[j]) / self.ov[o] if self.ov[o] > 0 else 0.0
        return 1.0 / self.share[o] if self.share[o] > 0 else 0.0

    def pay(self, j: int, cap: bool = True) -> float:
        """The payment of the winner of bid ``j`` (capped at its owner's budget when ``cap``)."""
        o = int(self.P.owner[j])
        if self.proportional:
            p = self.fv.payments[o] * float(self.P.values[j]) / self.ov[o] if self.ov[o] > 0 else 0.0
        else:
            p = self.fv.payments[o] / self.share[o] if self.share[o] > 0 else 0.0
        b = self.instance.budgets.get(self.bidders[o])
        return float(p) if b is None or not cap else float(min(p, float(b)))


def _lottery(pricing: _Pricing, dec: Decomposition) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every allocation of the lottery (the empty one last) with its payments, and the expected payments."""
    P, bidders, bids = pricing.P, pricing.bidders, pricing.instance.bids
    lottery: list[dict[str, Any]] = []
    expected = {b: 0.0 for b in bidders}
    for prob, cols in zip(dec.probabilities, dec.allocations):
        pays = {bidders[int(P.owner[j])]: pricing.pay(int(j)) for j in cols.tolist()}
        for b, p in pays.items():
            expected[b] += float(prob) * p
        lottery.append({"probability": float(prob), "winners": [bids[j].id for j in sorted(cols.tolist())],
                        "payments": pays})
    lottery.append({"probability": dec.null_probability, "winners": [], "payments": {}})
    return lottery, expected


def _draw(dec: Decomposition, seed: int) -> tuple[float, int, np.ndarray]:
    """One draw from the lottery: the uniform number, the allocation's index and its bid columns."""
    rng = np.random.default_rng(seed)
    u = float(rng.random())
    cum = np.cumsum(dec.probabilities)
    pick = int(np.searchsorted(cum, u, side="right"))  # == len(allocations): the empty allocation
    drawn = dec.allocations[pick] if pick < len(dec.allocations) else np.zeros(0, dtype=np.int64)
    return u, pick, drawn


def _drawn_payments(pricing: _Pricing, drawn: np.ndarray) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """The drawn winners' payments (uncapped: make_outcome caps them and names the bidder) and bounds."""
    P, fv, bidders = pricing.P, pricing.fv, pricing.bidders
    payments: dict[str, float] = {}
    bounds: dict[str, tuple[float, float]] = {}
    for j in drawn.tolist():
        o = int(P.owner[j])
        payments[bidders[o]] = pricing.pay(j, cap=False)
        f = pricing.factor(j)
        if fv.lp.converged:
            bounds[bidders[o]] = (float(fv.bounds[o, 0]) * f, float(fv.bounds[o, 1]) * f)
        else:  # the shares of an exact LP optimum are unknown: only individual rationality bounds it
            bounds[bidders[o]] = (0.0, float(P.values[j]))
    return payments, bounds


def _notes(fv: FractionalVcg, dec: Decomposition, requested: Any, *, time_limit: float | None, det: bool,
           closure: CliqueRelaxation | None = None) -> list[str]:
    """The outcome's message: what an inexact LP, the scaling and the wall clock mean for this run."""
    notes: list[str] = []
    if closure is not None and not closure.closed:
        notes.append(f"clique separation stopped after {closure.rounds} rounds with cliques still violated: the "
                     "relaxation is not the clique relaxation, not truthful in expectation")
    if not fv.exact:
        notes.append("an LP relaxation did not converge within the time limit; payment_bounds certify the "
                     "fractional VCG payments")
    if requested is None:
        notes.append(f"alpha = {dec.alpha:.6g} is this instance's verified ratio (not fixed before the reports): "
                     "truthful in expectation given alpha only; fix options['alpha'] for the guarantee")
    elif dec.alpha_verified > float(requested):
        notes.append(f"the oracle verified only alpha = {dec.alpha_verified:.6g} > the requested {requested:g}; "
                     "the lottery is scaled by the verified ratio")
    if not det and time_limit is not None:
        notes.append("time_limit read as wall-clock seconds (deterministic=False): the lottery of a run stopped "
                     "by it depends on the machine's load")
    return notes


def _details(pricing: _Pricing, dec: Decomposition, opts: dict[str, Any], *, oracle: str, time_limit: float | None,
             det: bool, lottery: list[dict[str, Any]], expected: dict[str, float], draw: dict[str, Any],
             seconds: dict[str, float], tried: list[dict[str, Any]],
             closure: CliqueRelaxation | None = None) -> dict[str, Any]:
    """``Outcome.details``: the lottery, the expectations, the scaling and the guarantee that holds."""
    P, fv, bidders, ov = pricing.P, pricing.fv, pricing.bidders, pricing.ov
    alpha = dec.alpha
    requested = opts["alpha"]
    truthful = (requested is not None and dec.alpha_verified <= float(requested) and fv.exact
                and (closure is None or closure.closed))
    lp_welfare = float(P.values @ fv.lp.x)
    return {
        "budget": "none" if time_limit is None else "work units" if det else "wall clock",
        "payment_tolerance": fv.tolerance,
        "guarantee": GUARANTEE,
        "truthful_in_expectation": bool(truthful),
        "oracle": oracle,
        "alpha": alpha,
        "alpha_requested": requested,
        "alpha_verified": dec.alpha_verified,
        "alpha_floor": dec.alpha_floor,
        "lp_welfare": fv.lp.value,
        "lp_bound": fv.lp.bound,
        "expected_welfare": lp_welfare / alpha if alpha > 0 else 0.0,
        "fractional_payments": {bidders[o]: float(fv.payments[o]) for o in range(P.n_owners)},
        "expected_payments": expected,
        "expected_utilities": {bidders[o]: float(ov[o]) / alpha - expected[bidders[o]] for o in range(P.n_owners)},
        "decomposition": lottery,
        "draw": draw,
        "decomposition_summary": decomposition_summary(dec),
        "seconds": seconds,
        "pivots": len(fv.pivots),
        "optimum": next(t["optimum"] for t in tried if t["kept"]),
        "optima_tried": tried,
        "relaxation": ({"name": "plain"} if closure is None else
                       {"name": "clique", "cliques": closure.cliques, "rounds": closure.rounds,
                        "closed": closure.closed}),
    }
