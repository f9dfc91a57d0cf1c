"""Decompose a scaled LP optimum into a lottery over integral allocations (Lavi–Swamy, step 3).

Given the LP optimum ``x*`` (support ``S``), find integral feasible allocations ``x^l`` and
probabilities ``pi_l`` with ``sum_l pi_l x^l = x* / alpha`` exactly and ``sum_l pi_l <= 1``
(the empty allocation takes the rest). Carr & Vempala's covering LP, as Lavi & Swamy use it::

    V = min sum_l lam_l   s.t.  sum_l lam_l x^l_e >= x*_e  (e in S),  lam >= 0

is solved by column generation: its dual prices ``w >= 0`` (one per support column) are handed
to an approximation *oracle* that returns an integral allocation ``x^A`` of large ``w . x^A``;
a column with ``w . x^A > 1`` improves the master, and when the oracle finds none, strong
duality gives ``V = w . x* <= rho(w)`` with ``rho(w) = w . x* / w . x^A`` the ratio the oracle
achieved at ``w`` (checked, not assumed). ``lam / V`` is then a lottery over the columns found
whose mean covers ``x* / V``: the decomposition exists at ``alpha = V``, the *verified* ratio.
Every column is feasible (oracle answers and single bids that fit alone, the latter making the
first master feasible), and the packing constraints are down-closed, so the surplus of the
covering constraints is removed exactly by dropping bids from allocations (splitting one
allocation where only part of its probability must lose the bid): afterwards the lottery's
mean is ``x* / alpha`` coordinate by coordinate, up to floating-point round-off.

Oracles (``oracle=``)
---------------------
``"greedy"``  LOS first fit on the weights ``w`` in three orderings (``w / size**a``,
              ``a = 0.5, 1, 0``) and in the order of ``x*``; microseconds per call.
``"auto"``    the greedy first; when it finds no improving column, the anytime engine
              (:func:`gensolver.solvers.anytime.driver.anytime_solve`: LP bound, reduced-cost
              fixing, LNS with CP-SAT sub-MIPs) on the support with weights ``w``, which also
              gives an upper bound ``U(w)`` on the best integral ``w . x``, hence a lower bound
              ``w . x* / U(w)`` on the ratio any oracle could verify (``alpha_floor``).

References
----------
Carr & Vempala, "Randomized metarounding", Random Structures & Algorithms 20(3), 2002.
Lavi & Swamy, "Truthful and near-optimal mechanism design via linear programming", J. ACM
58(6), 2011 (FOCS 2005), Section 3 (the decomposition and its column generation).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..solvers.engine import MatrixProblem, first_fit_matrix, highs_rows_model, los_order
from .fractional import FractionalVcg, at_optimum, face_optima

__all__ = ["Decomposition", "decompose", "decompose_best", "ORACLES"]

ORACLES = ("greedy", "auto")


@dataclass(frozen=True)
class Decomposition:
    """A lottery over integral allocations whose mean is ``x* / alpha``.

    Attributes
    ----------
    allocations : tuple of int64 arrays
        Column indices (into the problem) of each allocation; none is empty.
    probabilities : float64 array
        ``pi_l`` of each allocation.
    null_probability : float
        Probability of the empty allocation, ``1 - sum(pi)``.
    alpha : float
        The scaling: ``sum_l pi_l x^l = x* / alpha``.
    alpha_verified : float
        ``V``, the smallest scaling the columns found achieve (``alpha >= V``).
    alpha_floor : float or None
        A lower bound on ``V`` for *any* oracle (from an upper bound on the best integral
        answer at the final prices; ``"auto"`` oracle only).
    worst_ratio, final_ratio : float
        Largest and last ``w . x* / w . x^A`` the oracle achieved (``inf`` when it returned
        nothing of positive weight).
    converged : bool
        The oracle found no improving column at the end (rather than a time or iteration
        limit stopping the column generation).
    oracle_calls, columns : int
    seconds : float
    """

    allocations: tuple[np.ndarray, ...]
    probabilities: np.ndarray
    null_probability: float
    alpha: float
    alpha_verified: float
    alpha_floor: float | None
    worst_ratio: float
    final_ratio: float
    converged: bool
    oracle_calls: int
    columns: int
    seconds: float

    def mean(self, n: int) -> np.ndarray:
        """``sum_l pi_l x^l`` as a dense vector over ``n`` columns."""
        out = np.zeros(n)
        for p, cols in zip(self.probabilities, self.allocations):
            out[cols] += p
        return out


class _CoverMaster:
    """``min sum lam  s.t.  M lam >= b, lam >= 0`` in one ``highspy.Highs`` (primal simplex)."""

    def __init__(self, b: np.ndarray) -> None:
        import highspy

        self._hs = highspy
        self.h = highs_rows_model(b, np.full(b.size, highspy.kHighsInf), maximize=False,
                                  options={"solver": "simplex", "simplex_strategy": 4, "presolve": "off"})
        self.n = 0

    def add(self, rows: list[np.ndarray]) -> None:
        if not rows:
            return
        starts = np.cumsum([0] + [r.size for r in rows[:-1]]).astype(np.int32)
        idx = np.concatenate(rows).astype(np.int32)
        k = len(rows)
        self.h.addCols(k, np.ones(k), np.zeros(k), np.full(k, self._hs.kHighsInf), int(idx.size), starts, idx,
                       np.ones(idx.size))
        self.n += k

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        h = self.h
        h.run()
        if h.getModelStatus() != self._hs.HighsModelStatus.kOptimal:  # pragma: no cover - always feasible
            raise RuntimeError(f"decomposition master: HiGHS status {h.modelStatusToString(h.getModelStatus())}")
        sol = h.getSolution()
        return (float(h.getInfo().objective_function_value), np.asarray(sol.col_value, dtype=np.float64),
                np.maximum(np.asarray(sol.row_dual, dtype=np.float64), 0.0))


def _greedy(Ps: MatrixProblem, size: np.ndarray, xs: np.ndarray) -> list[np.ndarray]:
    """Greedy allocations (0/1 over the support) on the weights ``Ps.values``."""
    out = [first_fit_matrix(Ps, los_order(Ps, a, size)) for a in (0.5, 1.0, 0.0)]
    out.append(first_fit_matrix(Ps, np.lexsort((-Ps.values, -xs))))
    return out


def decompose(P: MatrixProblem, x_star: np.ndarray, *, alpha: float | None = None, oracle: str = "auto",
              time_limit: float | None = None, max_iterations: int = 5000, seed: int = 0,
              threads: int | None = None, oracle_slice: float = 0.5, deterministic: bool = False) -> Decomposition:
    """Decompose ``x_star / alpha`` into a lottery over integral allocations (module docstring).

    Parameters
    ----------
    P : MatrixProblem
    x_star : float64[n]
        A feasible fractional solution whose support columns each fit alone.
    alpha : float, optional
        The scaling wanted; ``None``: the verified ratio ``V`` (at least 1). A value below ``V`` cannot be
        honoured and ``max(alpha, V)`` is used (``Decomposition.alpha`` says which).
    oracle : {"greedy", "auto"}
    time_limit : float, optional
        Seconds for the column generation (the decomposition is exact whenever it stops; an
        early stop only makes ``V`` larger).
    seed, threads : for the ``"auto"`` oracle.
    oracle_slice : float
        Seconds per call of the ``"auto"`` oracle's engine (work units when ``deterministic``).
    deterministic : bool
        No wall clock at all: ``time_limit`` is ignored (the caller caps ``max_iterations``
        instead) and the ``"auto"`` oracle's engine runs on its deterministic work clock, so
        the lottery depends on the input only, not on the machine's load.
    """
    if deterministic:
        time_limit = None
    if oracle not in ORACLES:
        raise InputError(f"unknown oracle {oracle!r}; valid: {', '.join(ORACLES)}")
    t0 = time.perf_counter()
    S = np.flatnonzero(x_star > 0)
    xs = x_star[S]
    if S.size == 0:
        return Decomposition((), np.zeros(0), 1.0, float(alpha or 1.0), 1.0, None, 1.0, 1.0, True, 0, 0,
                             time.perf_counter() - t0)
    As = P.A[:, S].tocsc()
    Ps0 = MatrixProblem(xs.copy(), As, P.cap, P.owner[S], P.n_owners, lambda j: str(S[j]))
    size = Ps0.normalised_size()
    master = _CoverMaster(xs)
    seen: set[bytes] = set()
    columns: list[np.ndarray] = []

    def add(cands: list[np.ndarray], w: np.ndarray | None) -> int:
        new = []
        for x in cands:
            rows = np.flatnonzero(x > 0.5)
            if rows.size == 0 or (w is not None and float(w[rows].sum()) <= 1.0 + 1e-9):
                continue
            key = rows.tobytes()
            if key in seen:
                continue
            seen.add(key)
            new.append(rows)
        master.add(new)
        columns.extend(new)
        return len(new)

    # first columns: every support bid alone (feasible: it fits alone), and greedy allocations
    # on x* itself and on unit weights
    add([np.eye(1, S.size, k).ravel() for k in range(S.size)], None)
    add(_greedy(Ps0, size, xs), None)
    Ps0 = MatrixProblem(np.ones(S.size), As, P.cap, P.owner[S], P.n_owners, Ps0.column_id)
    add(_greedy(Ps0, size, xs), None)
    worst, last, floor = 0.0, math.inf, None
    calls, converged, it = 0, False, 0
    V, lam, w = 0.0, np.zeros(0), np.zeros(S.size)
    for it in range(1, max_iterations + 1):
        V, lam, w = master.solve()
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        Pw = MatrixProblem(w, As, P.cap, P.owner[S], P.n_owners, Ps0.column_id)
        cands = _greedy(Pw, size, xs)
        calls += 1
        best = max(float(w @ x) for x in cands)
        if best <= 1.0 + 1e-9 and oracle == "auto":
            from ..solvers.engine import anytime_solve

            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            if left is None or left > 0.05:
                sl = oracle_slice if left is None else max(0.05, min(oracle_slice, left))
                res = anytime_solve(Pw, time_limit=sl, seed=seed + it, threads=threads, deterministic=deterministic)
                cands.append(res.x)
                best = max(best, float(w @ res.x))
                if res.bound > 0:
                    f = float(w @ xs) / res.bound
                    floor = f if floor is None else max(floor, f)
        wx = float(w @ xs)
        last = wx / best if best > 0 else math.inf
        worst = max(worst, last)
        if add(cands, w) == 0:
            converged = best <= 1.0 + 1e-9
            break
    lam = _cover_exactly(columns, lam, xs)
    V = math.fsum(lam)
    a = max(1.0, V) if alpha is None else max(float(alpha), V)  # V < 1 only by round-off
    keys, probs = _lottery(columns, lam, xs, a)
    null = max(0.0, 1.0 - math.fsum(probs))
    allocations = tuple(S[np.asarray(k, dtype=np.int64)] for k in keys)
    return Decomposition(allocations, probs, null, float(a), float(V), floor, float(worst), float(last), converged,
                         calls, len(columns), time.perf_counter() - t0)


def decompose_best(P: MatrixProblem, fv: FractionalVcg, *, optima: int, alpha: float | None = None,
                   time_limit: float | None = None, **kw: Any) -> tuple[FractionalVcg, Decomposition, list[dict[str, Any]]]:
    """Decompose ``fv``'s LP optimum, then up to ``optima`` other optima of the same LP
    (:func:`~gensolver.mechanisms.fractional.face_optima`), and keep the one of lowest verified
    ratio (``fv``'s own on ties), re-priced at it
    (:func:`~gensolver.mechanisms.fractional.at_optimum`).

    With ``alpha`` set, the search stops at the first optimum verified at ``alpha`` (all such
    optima give every bidder the same expected utility). Other keywords go to
    :func:`decompose`; ``time_limit`` (seconds) is shared by all the decompositions; an optimum
    equal to one already tried (within ``1e-9``) is skipped. Returns the
    fractional VCG and decomposition kept, and one record per optimum tried (name, verified
    ratio, whether it was kept).
    """
    t0 = time.perf_counter()

    def left() -> float | None:
        return None if time_limit is None else time_limit - (time.perf_counter() - t0)

    dec = decompose(P, fv.lp.x, alpha=alpha, time_limit=time_limit, **kw)
    tried = [{"optimum": "simplex", "alpha_verified": dec.alpha_verified, "kept": True}]
    best_fv, best = fv, dec
    if optima <= 0 or (alpha is not None and dec.alpha_verified <= alpha):
        return best_fv, best, tried
    seen = [fv.lp.x]
    for name, x in face_optima(P, fv, optima):
        if any(np.allclose(x, y, rtol=0.0, atol=1e-9) for y in seen):
            continue  # the same optimum (a face of one point is common): nothing new to decompose
        seen.append(x)
        rest = left()
        if rest is not None and rest <= 0.05:
            break
        cand = decompose(P, x, alpha=alpha, time_limit=rest, **kw)
        tried.append({"optimum": name, "alpha_verified": cand.alpha_verified, "kept": False})
        if cand.alpha_verified < best.alpha_verified - 1e-9:
            best_fv, best = at_optimum(P, fv, x), cand
            for t in tried:
                t["kept"] = t is tried[-1]
        if alpha is not None and best.alpha_verified <= alpha:
            break
    return best_fv, best, tried


def _cover_exactly(columns: list[np.ndarray], lam: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """The master's weights raised so that they cover ``xs`` exactly.

    The master covers x* only up to HiGHS's feasibility tolerance (an entry of x* below it may
    not be covered at all), so each shortfall is made up by the column of that bid alone
    (``columns[e]`` is bid ``e`` alone); then alpha >= sum(lam).
    """
    lam = np.maximum(np.asarray(lam, dtype=np.float64).copy(), 0.0)
    M_cov = np.zeros(xs.size)
    for k, rows in enumerate(columns):
        if lam[k] > 0:
            M_cov[rows] += lam[k]
    short = xs - M_cov
    fill = np.flatnonzero(short > 0)
    lam[fill] += short[fill]
    return lam


def _lottery(columns: list[np.ndarray], lam: np.ndarray, xs: np.ndarray,
             a: float) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The allocations (support positions) and probabilities of the lottery: ``lam / a``, with
    the surplus ``sum_l pi_l x^l_e - x*_e / a`` trimmed bid by bid, then equal allocations
    merged; most likely first."""
    allocs: list[tuple[float, set[int]]] = [(float(lam[k]) / a, set(rows.tolist())) for k, rows in enumerate(columns)
                                            if lam[k] > 0]
    holders: dict[int, list[int]] = {}
    for k, (_, rows_set) in enumerate(allocs):
        for e in rows_set:
            holders.setdefault(e, []).append(k)
    for e in range(xs.size):
        ks = holders.get(e, [])
        surplus = math.fsum(allocs[k][0] for k in ks) - xs[e] / a
        # drop e from the least likely allocations first (fewest splits of large ones)
        for k in sorted(ks, key=lambda k: allocs[k][0]):
            if surplus <= 0:
                break
            p, rows_set = allocs[k]
            if p <= surplus:
                rows_set.discard(e)
                surplus -= p
            else:
                allocs[k] = (p - surplus, rows_set)
                rest = rows_set - {e}
                for f in rest:
                    holders[f].append(len(allocs))
                allocs.append((surplus, rest))
                surplus = 0.0
    merged: dict[tuple[int, ...], float] = {}
    for p, rows_set in allocs:
        if rows_set and p > 0:
            key = tuple(sorted(rows_set))
            merged[key] = merged.get(key, 0.0) + p
    keys = sorted(merged, key=lambda k: -merged[k])
    return keys, np.array([merged[k] for k in keys])


def decomposition_summary(dec: Decomposition) -> dict[str, Any]:
    """The scalar facts of a decomposition (for logs and ``Outcome.details``)."""
    return {"alpha": dec.alpha, "alpha_verified": dec.alpha_verified, "alpha_floor": dec.alpha_floor,
            "worst_oracle_ratio": dec.worst_ratio, "final_oracle_ratio": dec.final_ratio,
            "converged": dec.converged, "oracle_calls": dec.oracle_calls, "columns": dec.columns,
            "allocations": len(dec.allocations), "null_probability": dec.null_probability,
            "seconds": dec.seconds}
