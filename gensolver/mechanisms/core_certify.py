"""Exact certificate of the core payment point: rational KKT conditions of the two stages.

Constraint generation (:mod:`gensolver.mechanisms.core`) ends with core rows ``G p >= h`` (the
blocking coalitions found, the VCG payments below, the bids above) and a floating-point point
from an LP (minimum revenue) and a QP (nearest to the VCG payments at that revenue). Neither
solver proves its answer to an absolute tolerance, so :func:`certify_core_point` re-derives the
point in exact rational arithmetic (:class:`fractions.Fraction`, from the exact binary values of
the floats) and checks optimality conditions that are sufficient, with no tolerance:

1. **Minimum revenue** ``R*``. From the constraints tight at the LP's point, ``n`` linearly
   independent ones (a basis ``B``) give a vertex ``v`` (``B v = h_B``); ``v`` satisfies every
   row exactly, and ``B^T y = 1`` has a solution ``y >= 0``. Then ``v`` is optimal (weak
   duality: every feasible ``p`` has ``1.p = y.B p >= y.h_B = 1.v``) and ``R* = 1.v`` exactly.
2. **Nearest point** ``p*`` of ``min ||p - c||^2`` over the rows and ``1.p = R*``. From the rows
   tight at the QP's point, with the revenue row, an independent subset ``A`` gives the
   projection ``p = c + A^T w``, ``(A A^T) w = b - A c``. If ``p`` satisfies every row exactly
   and the multipliers ``2w`` of the inequality rows are ``>= 0``, the KKT conditions of a
   strictly convex problem hold, so ``p`` is *the* minimiser ``p*``.

When a check fails (a tight set guessed wrongly from floating-point slacks, or a degenerate
face), no certificate is returned and the caller reports ``exact=False``. Cost is ``O(n^3)``
rational operations for ``n`` winners, so the caller skips it above :data:`MAX_CERTIFIED`.

References
----------
Applegate, Cook, Dash & Espinoza, "Exact solutions to linear programming problems",
Operations Research Letters 35(6), 2007 (verifying a floating-point basis in rationals).
Boyd & Vandenberghe, *Convex Optimization*, Cambridge 2004, §5.5 (KKT conditions).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Sequence

import numpy as np

__all__ = ["certify_core_point", "MAX_CERTIFIED", "OpCounter"]

#: the most winners (variables) the rational certificate is attempted for
MAX_CERTIFIED = 60
#: the most bases of a degenerate vertex tried for a dual certificate
MAX_BASES = 200

Vec = list[Fraction]


class OpCounter:
    """Rational operations spent by :func:`certify_core_point` (``used``), and at most how many it
    may spend (``limit``, ``None``: no limit); past the limit the certificate gives up. The count
    is of the data's shape, not of time, so the decision is the same on every machine."""

    def __init__(self, limit: float | None = None) -> None:
        self.limit, self.used = limit, 0

    def spend(self, ops: int) -> None:
        self.used += int(ops)
        if self.limit is not None and self.used > self.limit:
            raise _OutOfOps


class _OutOfOps(Exception):
    pass


_NO_LIMIT = OpCounter()


def _independent(rows: Sequence[Vec], n: int, limit: int, ops: OpCounter = _NO_LIMIT) -> list[int]:
    """Indices of a maximal linearly independent subset of ``rows`` (in order), at most ``limit``."""
    basis: list[tuple[int, Vec]] = []  # (pivot column, reduced row)
    chosen: list[int] = []
    for k, row in enumerate(rows):
        ops.spend(n * (len(basis) + 1))
        r = list(row)
        for col, b in basis:
            if r[col]:
                f = r[col] / b[col]
                r = [x - f * y for x, y in zip(r, b)]
        piv = next((j for j in range(n) if r[j]), None)
        if piv is not None:
            basis.append((piv, r))
            chosen.append(k)
            if len(chosen) == limit:
                break
    return chosen


def _solve(M: list[Vec], rhs: Vec, ops: OpCounter = _NO_LIMIT) -> Vec | None:
    """The solution of the square system ``M x = rhs`` (``None`` if singular)."""
    n = len(M)
    ops.spend(n * n * (n + 1))
    a = [list(r) + [v] for r, v in zip(M, rhs)]
    for col in range(n):
        piv = next((r for r in range(col, n) if a[r][col]), None)
        if piv is None:
            return None
        a[col], a[piv] = a[piv], a[col]
        inv = 1 / a[col][col]
        a[col] = [x * inv for x in a[col]]
        for r in range(n):
            if r != col and a[r][col]:
                f = a[r][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    return [a[r][n] for r in range(n)]


def _dot(a: Vec, b: Vec) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def _min_revenue(Gq: list[Vec], hq: Vec, tight: list[int], n: int, ops: OpCounter) -> Fraction | None:
    """``min 1.p`` over ``G p >= h``, proved by a basis of the ``tight`` rows (``None``: not)."""
    m = len(Gq)
    ones = [Fraction(1)] * n
    first = _independent([Gq[k] for k in tight], n, n, ops)
    if len(first) < n:
        return None
    # a degenerate vertex has more tight rows than n (or floating-point slacks make rows look
    # tight that are not quite): bases differ in their duals and vertices, so try them (the
    # first independent one, then up to MAX_BASES others)
    tries = itertools.chain([tuple(first)], itertools.islice(itertools.combinations(range(len(tight)), n), MAX_BASES))
    for basis in tries:
        B = [Gq[tight[k]] for k in basis]
        y = _solve([list(col) for col in zip(*B)], ones, ops)  # B^T y = 1
        if y is None or any(x < 0 for x in y):
            continue
        v = _solve(B, [hq[tight[k]] for k in basis], ops)
        ops.spend(m * n)
        if v is not None and all(_dot(Gq[k], v) >= hq[k] for k in range(m)):
            return sum(v, Fraction(0))
    return None


def certify_core_point(G: np.ndarray, h: np.ndarray, c: np.ndarray, p_lp: np.ndarray, p_qp: np.ndarray,
                       *, slack: float, ops: OpCounter | None = None) -> np.ndarray | None:
    """The exact minimum-revenue, nearest-to-``c`` point of ``{p : G p >= h}``, or ``None``.

    Parameters
    ----------
    G, h : ndarray
        Every constraint as a row ``G_k . p >= h_k`` (core rows, lower and upper bounds).
    c : ndarray
        The point to be nearest to (the VCG payments).
    p_lp, p_qp : ndarray
        The floating-point LP and QP points; they only suggest which rows are tight.
    slack : float
        Rows within ``slack`` of tight at a point are tried as tight there.
    ops : OpCounter, optional
        Counts the rational operations; past its ``limit`` the certificate gives up (``None``).

    Returns
    -------
    ndarray or None
        ``p*`` rounded to floats (each within half an ulp of the exact value) when both stages
        are certified as in the module docstring, else ``None``.
    """
    counter = ops if ops is not None else OpCounter()
    try:
        return _certify(G, h, c, p_lp, p_qp, slack, counter)
    except _OutOfOps:
        return None


def _certify(G: np.ndarray, h: np.ndarray, c: np.ndarray, p_lp: np.ndarray, p_qp: np.ndarray, slack: float,
             ops: OpCounter) -> np.ndarray | None:
    m, n = G.shape
    ops.spend(m * n)
    Gq = [[Fraction(float(x)) for x in row] for row in G]
    hq = [Fraction(float(x)) for x in h]
    cq = [Fraction(float(x)) for x in c]
    ones = [Fraction(1)] * n
    # stage 1: a vertex of the rows tight at the LP point, proved optimal by its duals
    revenue = None
    for point in (p_lp, p_qp):  # both lie on the LP's optimal face
        revenue = _min_revenue(Gq, hq, [k for k in range(m) if float(G[k] @ point) - h[k] <= slack], n, ops)
        if revenue is not None:
            break
    if revenue is None:
        return None
    # stage 2: the projection of c on the rows tight at the QP point and the revenue row,
    # corrected by an active-set loop (add the most violated row, drop the most negative
    # multiplier) when the floating-point slacks guessed the face wrongly
    active = [k for k in range(m) if float(G[k] @ p_qp) - h[k] <= slack]
    for _ in range(3 * m + 3):
        rows = [ones] + [Gq[k] for k in active]
        keep = _independent(rows, n, n, ops)
        if not keep or keep[0] != 0:
            return None
        active = [active[k - 1] for k in keep[1:]]
        A = [ones] + [Gq[k] for k in active]
        b = [revenue] + [hq[k] for k in active]
        ops.spend(len(A) * len(A) * n + m * n)
        AAt = [[_dot(r1, r2) for r2 in A] for r1 in A]
        w = _solve(AAt, [bk - _dot(r, cq) for r, bk in zip(A, b)], ops)
        if w is None:
            return None
        p = [cq[j] + sum((w[r] * A[r][j] for r in range(len(A))), Fraction(0)) for j in range(n)]
        short = [(_dot(Gq[k], p) - hq[k], k) for k in range(m)]
        worst = min(short)
        if worst[0] < 0:
            active.append(worst[1])
            continue
        neg = min(((x, k) for x, k in zip(w[1:], active)), default=(Fraction(0), -1))
        if neg[0] < 0:  # multipliers of inequality rows (2w) must be >= 0
            active.remove(neg[1])
            continue
        if sum(p, Fraction(0)) != revenue:
            return None
        return np.array([float(x) for x in p])
    return None
