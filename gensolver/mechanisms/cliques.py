"""The clique relaxation of the welfare problem (Lavi–Swamy option ``relaxation="clique"``).

Two bids *conflict* when no integral allocation can hold both: they have the same owner (the
XOR row), or together they ask more than some capacity row admits (``d_a,r + d_b,r >
limit_r``, the capacity rule of :mod:`gensolver.model.tolerances`). Every *clique* ``C`` of
this conflict graph gives the valid inequality ``sum_{j in C} x_j <= 1``. The clique relaxation
is the plain LP relaxation with *every* clique inequality added.

Why it keeps Lavi–Swamy truthful: the conflict relation depends on the bids' demands and owners
only, never on the values, and it is the restriction of one fixed relation over every bundle a
bidder could ask for. The clique inequalities of the bids present are exactly the restriction of
those of that fixed universe to the columns present (a clique of the bids present is a clique
of the universe; a clique of the universe meets the bids present in a clique), so the polytope
is the same report-independent polytope whichever bids are reported, as Lavi & Swamy's
maximal-in-range argument needs.

The inequalities are not written out (there can be exponentially many); they are *separated*
exactly. At an LP solution ``x`` only the support matters (a clique's weight is its weight on
the support), so the maximal cliques of the conflict graph over the support are enumerated
(:func:`networkx.find_cliques`) and those of weight above ``1 + tol`` are added as rows.
:func:`clique_relaxation` repeats this on the LP optimum and, once that is clean, on every
re-solve without one owner (the fractional VCG pivots), until no solution violates a clique:
then each of those optima is feasible for the full clique polytope, hence optimal over it, and
the fractional VCG on the returned problem is the fractional VCG on the clique relaxation. The
cuts found depend on the solutions (and so on the values), the optima and pivots do not.

References
----------
Padberg, "On the facial structure of set packing polyhedra", Math. Programming 5, 1973.
Lavi & Swamy, J. ACM 58(6), 2011, Section 2 (any relaxation with a report-independent
feasible region).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..solvers.engine import MatrixProblem
from .fractional import RestrictedLp, fits_alone

__all__ = ["CliqueRelaxation", "conflicts", "neighbours", "lift", "violated_cliques", "with_cliques",
           "clique_relaxation", "RELAXATIONS"]

#: the relaxations the Lavi–Swamy mechanism offers (option ``relaxation``)
RELAXATIONS = ("plain", "clique")

#: a clique is violated when its weight exceeds ``1 + VIOLATION``
VIOLATION = 1e-7

#: entries of an LP solution at most this are read as 0 (as :func:`.fractional.fractional_vcg` does)
SUPPORT = 1e-10


def conflicts(P: MatrixProblem, cols: np.ndarray) -> np.ndarray:
    """``bool[s, s]``: which pairs of the columns ``cols`` no integral allocation holds together
    (same owner, or a capacity row of ``P`` over its limit); the diagonal is false."""
    cols = np.asarray(cols, dtype=np.int64)
    s = cols.size
    C = P.owner[cols][:, None] == P.owner[cols][None, :]
    sub = P.A_rows[:, cols].tocsr()
    used = np.flatnonzero(np.diff(sub.indptr))
    if used.size:
        D = sub[used].toarray()
        lim = P.limit[used]
        step = max(1, (1 << 22) // max(1, s * s))
        for a in range(0, used.size, step):
            d = D[a:a + step]
            both = (d[:, :, None] > 0) & (d[:, None, :] > 0)
            C |= (both & (d[:, :, None] + d[:, None, :] > lim[a:a + step, None, None])).any(axis=0)
    np.fill_diagonal(C, False)
    return C


def violated_cliques(P: MatrixProblem, x: np.ndarray, *, tol: float = VIOLATION) -> list[tuple[int, ...]]:
    """Every maximal clique of the conflict graph over the support of ``x`` whose weight
    ``sum x_j`` exceeds ``1 + tol``, as sorted column tuples, heaviest first (ties by columns).

    Exact separation: no clique inequality is violated by ``x`` when this is empty.
    """
    S = np.flatnonzero(x > SUPPORT)
    if S.size < 2:
        return []
    import networkx as nx  # here, not at the top: the CLI starts without it

    C = conflicts(P, S)
    G = nx.Graph()
    G.add_nodes_from(range(S.size))
    a, b = np.nonzero(np.triu(C))
    G.add_edges_from(zip(a.tolist(), b.tolist()))
    out = []
    for clique in nx.find_cliques(G):
        if len(clique) < 2:
            continue
        cols = tuple(sorted(int(S[k]) for k in clique))
        w = float(np.sum(x[list(cols)]))
        if w > 1.0 + tol:
            out.append((-w, cols))
    out.sort()
    return [cols for _, cols in out]


def neighbours(P: MatrixProblem, j: int) -> np.ndarray:
    """``bool[n]``: the columns that conflict with column ``j`` (itself excluded)."""
    out = P.owner == P.owner[j]
    col = P.A[:, [j]].tocoo()
    R = P.A_rows
    for r, d in zip(col.row.tolist(), col.data.tolist()):
        if d <= 0:
            continue
        lo, hi = R.indptr[r], R.indptr[r + 1]
        hit = R.data[lo:hi] > P.limit[r] - d
        out[R.indices[lo:hi][hit]] = True
    out[j] = False
    return out


def lift(P: MatrixProblem, clique: tuple[int, ...], allowed: np.ndarray) -> tuple[int, ...]:
    """``clique`` extended to a maximal clique over the ``allowed`` columns: the common
    neighbours are added one at a time, highest value first (lowest column on ties)."""
    common = allowed.copy()
    for j in clique:
        common &= neighbours(P, j)
    members = list(clique)
    order = np.lexsort((np.arange(P.n), -P.values))
    while common.any():
        k = int(order[common[order]][0])
        members.append(k)
        common &= neighbours(P, k)
    return tuple(sorted(members))


def with_cliques(P: MatrixProblem, cliques: list[tuple[int, ...]]) -> MatrixProblem:
    """``P`` with one row ``sum_{j in C} x_j <= 1`` per clique appended (in the order given)."""
    if not cliques:
        return P
    base = P.A_rows
    M = sp.csr_matrix((np.ones(sum(len(c) for c in cliques)),
                       (np.repeat(np.arange(len(cliques)), [len(c) for c in cliques]),
                        np.concatenate([np.asarray(c, dtype=np.int64) for c in cliques]))),
                      shape=(len(cliques), P.n))
    rows = sp.vstack([base, M], format="csr")
    return dataclasses.replace(P, A=rows.tocsc(), cap=np.concatenate([P.cap, np.ones(len(cliques))]), rows=rows)


@dataclass(frozen=True)
class CliqueRelaxation:
    """The outcome of :func:`clique_relaxation`.

    Attributes
    ----------
    problem : MatrixProblem
        The original problem with the clique rows found appended (its first rows are the
        original ones).
    cliques : int
        Clique rows added.
    rounds : int
        Separation rounds (each one LP, plus the pivot LPs once the LP is clean).
    closed : bool
        The LP optimum and every pivot optimum satisfy every clique inequality: the fractional
        VCG on ``problem`` is the one on the clique relaxation. False when ``max_rounds`` ran out.
    """

    problem: MatrixProblem
    cliques: int
    rounds: int
    closed: bool


def clique_relaxation(P: MatrixProblem, *, max_rounds: int = 60, per_round: int = 200) -> CliqueRelaxation:
    """Separate clique inequalities until the LP optimum and every pivot optimum (without one
    owner of the optimum's support) satisfy them all (module docstring).

    At most ``per_round`` of the heaviest violated cliques of each solution are added per round,
    each lifted to a maximal clique over every column (:func:`lift`).
    Deterministic: the same problem gives the same rows in the same order.
    """
    base_rows = P.cap.size
    cliques: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()

    allowed = fits_alone(P) & (P.values > 0)

    def add(x: np.ndarray) -> int:
        found = [lift(P, c, allowed) for c in violated_cliques(P, x)[:per_round]]
        new = list(dict.fromkeys(c for c in found if c not in seen))
        seen.update(new)
        cliques.extend(new)
        return len(new)

    Q = P
    for rounds in range(1, max_rounds + 1):
        Q = with_cliques(P, cliques)
        relax = RestrictedLp(Q)
        lp = relax.solve()
        if add(lp.x):
            continue
        # the pivots fractional_vcg re-solves, in its order (the same LP states, so the same optima)
        share = np.bincount(P.owner, weights=np.where(lp.x > SUPPORT, lp.x, 0.0), minlength=P.n_owners)
        found = 0
        for o in np.flatnonzero(share > 0).tolist():
            found += add(relax.solve(exclude=o).x)
        if not found:
            return CliqueRelaxation(Q, Q.cap.size - base_rows, rounds, True)
    Q = with_cliques(P, cliques)
    return CliqueRelaxation(Q, Q.cap.size - base_rows, max_rounds, False)
