"""Property checks of a mechanism's outcome: IR, budgets, envy-freeness, core membership.

Each check returns a frozen :class:`PropertyCheck` (truthy when the property holds) listing
every violation, and re-derives what it needs from the instance's plain objects; :func:`in_core`
builds its own MILP (with :func:`scipy.optimize.milp`) rather than reusing the mechanism's
separation problem, so it can catch a bug there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from ..model import Instance
from .certificates import check_tolerance
from .regret import true_utility, true_value

__all__ = ["PropertyCheck", "is_individually_rational", "is_budget_feasible", "is_envy_free", "in_core"]


@dataclass(frozen=True)
class PropertyCheck:
    """Result of a property check.

    Attributes
    ----------
    holds : bool
    violations : tuple of str
        One line per violation (empty when ``holds``).
    details : Mapping
        Check-specific data (e.g. the blocking coalition for :func:`in_core`).
    """

    holds: bool
    violations: tuple[str, ...]
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __bool__(self) -> bool:
        return self.holds


def _check(violations: list[str], **details: Any) -> PropertyCheck:
    return PropertyCheck(not violations, tuple(violations), MappingProxyType(details))


def _allocated(instance: Instance, outcome: Any) -> dict[str, dict[str, dict[str, float]]]:
    index = instance.bid_index
    out: dict[str, dict[str, dict[str, float]]] = {}
    for w in outcome.allocation.winners:
        bid = instance.bids[index[w]]
        out[bid.bidder] = {s: dict(r) for s, r in bid.demand.items()}
    return out


def is_individually_rational(outcome: Any, instance: Instance, *, tol: float = 1e-6) -> PropertyCheck:
    """Every bidder's utility is at least ``-tol``, and payments are non-negative.

    Utility is the value (under ``instance``'s bids, with free disposal) of what the bidder
    is allocated minus its payment; pass the true instance for true utilities.
    """
    check_tolerance(tol)
    bad: list[str] = []
    for b in instance.bidder_ids:
        u = true_utility(instance, b, instance, outcome)
        p = outcome.payments.get(b, 0.0)
        if u < -tol:
            bad.append(f"bidder {b!r}: utility {u:.12g} < 0 (payment {p:.12g})")
        if p < -tol:
            bad.append(f"bidder {b!r}: negative payment {p:.12g}")
    return _check(bad)


def is_budget_feasible(outcome: Any, instance: Instance, *, tol: float = 1e-9) -> PropertyCheck:
    """No bidder pays more than its budget (bidders without a budget always pass)."""
    check_tolerance(tol)
    bad = []
    for b, budget in instance.budgets.items():
        p = outcome.payments.get(b, 0.0)
        if budget is not None and p > budget + tol:
            bad.append(f"bidder {b!r} pays {p:.12g} > budget {budget:.12g}")
    return _check(bad)


def is_envy_free(outcome: Any, instance: Instance, *, tol: float = 1e-6) -> PropertyCheck:
    """No bidder prefers another bidder's bundle at that bidder's price.

    Bidder ``i`` envies ``j`` when ``v_i(bundle_j) - p_j > u_i + tol``, with ``v_i`` the
    free-disposal value of ``i``'s bids for ``j``'s allocated demand (0 unless one of ``i``'s
    bids fits inside it) and ``u_i`` its own utility. This is the bundle (not item-price)
    notion; it is natural for single-minded bidders. VCG is not envy-free in general.
    """
    check_tolerance(tol)
    bundles = _allocated(instance, outcome)
    util = {b: true_utility(instance, b, instance, outcome) for b in instance.bidder_ids}
    bad = []
    for i in instance.bidder_ids:
        for j, bundle in bundles.items():
            if i == j:
                continue
            gain = true_value(instance, i, bundle) - outcome.payments.get(j, 0.0)
            if gain > util[i] + tol:
                bad.append(f"bidder {i!r} envies {j!r}: {gain:.12g} > own utility {util[i]:.12g}")
    return _check(bad)


def in_core(outcome: Any, instance: Instance, *, tol: float = 1e-6, time_limit: float | None = None) -> PropertyCheck:
    """The outcome is in the core: no coalition of bidders and the seller can block it.

    Solves ``max_x sum_b v_b x_b - sum_{i winner} (v_i(x*) - p_i) y_i`` over feasible
    allocations ``x``, with ``x_b <= y_i`` for every bid of a winner ``i`` (a winner joining a
    coalition gives up its surplus), by a MILP (HiGHS via :func:`scipy.optimize.milp`). The
    outcome is blocked when this exceeds the revenue by more than ``tol * max(1, welfare)``;
    ``details`` then names the blocking coalition and its value.
    """
    check_tolerance(tol)
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    index = instance.bid_index
    won = {}
    for w in outcome.allocation.winners:
        bid = instance.bids[index[w]]
        won[bid.bidder] = bid
    winners = list(won)
    pos = {b: k for k, b in enumerate(winners)}
    nb, nw = instance.n_bids, len(winners)
    surplus = np.array([won[i].value - outcome.payments.get(i, 0.0) for i in winners])
    c = -np.concatenate([np.array([b.value for b in instance.bids]), -surplus])
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    ub: list[float] = []
    r = 0
    labels: dict[tuple[str, str], int] = {}
    caps: list[float] = []
    for s in instance.slots:
        for res, cap in s.capacity.items():
            labels[(s.id, res)] = len(caps)
            caps.append(cap)
    for j, bid in enumerate(instance.bids):
        for sid, amounts in bid.demand.items():
            for name, q in amounts.items():
                rows.append(labels[(sid, name)])
                cols.append(j)
                vals.append(q)
    ub.extend(c + 1e-9 for c in caps)
    r = len(caps)
    for _k, b in enumerate(instance.bidder_ids):
        for bid_id in instance.bids_of_bidder[b]:
            rows.append(r)
            cols.append(index[bid_id])
            vals.append(1.0)
        ub.append(1.0)
        r += 1
    for i in winners:  # x_b - y_i <= 0
        for bid_id in instance.bids_of_bidder[i]:
            rows.extend([r, r])
            cols.extend([index[bid_id], nb + pos[i]])
            vals.extend([1.0, -1.0])
            ub.append(0.0)
            r += 1
    A = sp.csr_matrix((vals, (rows, cols)), shape=(r, nb + nw))
    opts: dict[str, Any] = {"mip_rel_gap": 0.0}
    if time_limit is not None:
        opts["time_limit"] = time_limit
    res = milp(c, integrality=np.ones(nb + nw), bounds=Bounds(0, 1),
               constraints=LinearConstraint(A, -np.inf, np.array(ub)), options=opts)
    revenue = math.fsum(outcome.payments.get(i, 0.0) for i in winners)
    welfare = sum(b.value for b in won.values())
    if res.x is None:
        return _check([f"core MILP failed: {res.message}"])
    z = -float(res.fun)
    x = res.x[:nb] > 0.5
    coalition = sorted({instance.bids[j].bidder for j in np.flatnonzero(x)})
    value = float(sum(instance.bids[j].value for j in np.flatnonzero(x)))
    bad = []
    if z > revenue + tol * max(1.0, welfare):
        bad.append(f"coalition {coalition} blocks: it can reach {value:.12g}, so the seller's "
                   f"revenue {revenue:.12g} is {z - revenue:.12g} too low")
    if res.status != 0:
        bad.append(f"core MILP not solved to optimality ({res.message}); membership not certified")
    return _check(bad, coalition=tuple(coalition), coalition_value=value, z=z, revenue=revenue)
