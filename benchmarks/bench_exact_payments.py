"""Exact payments on many tiny rounds, checked by brute force; boundary rounds across methods.

The issue's goal: on 1,000 random tiny rounds with values up to ``1e6`` every ``exact=true``
payment is within the ``exact_tolerance`` the outcome states of a brute-force reference, and an
inexact one's interval holds it; rounds at the capacity boundary get one answer from every
method.

References computed here, independently of the mechanisms:

- ``vcg``: Clarke payments from an enumeration of every allocation (exact rational sums, the
  documented capacity rule ``fsum <= cap + 1e-9 + 1e-12 |cap|``);
- ``core``: every coalition's value by the same enumeration, hence every core constraint; the
  minimum revenue over all vertices of the core polytope and the VCG-nearest point over the
  projections on every face, in exact rational arithmetic (no LP or QP solver).

Rounds: two slots (memory 2, compute 1), 2-5 bidders with one or two XOR bids each, values
uniform in ``[0, 1e6]`` or near-ties ``base +- k e-3`` around one ``base`` in ``[1e5, 1e6]`` (a
relative MIP gap of ``1e-9`` is worth ``1e-3`` there). Boundary rounds: demands of
``cap / k`` written with nine decimals (fit by the ``1e-9`` tolerance) or one unit in the
last place above it (do not fit), solved by every available method.

Usage::

    python benchmarks/bench_exact_payments.py                  # 1,000 rounds, seed 0
    python benchmarks/bench_exact_payments.py --rounds 200 --seed 3 --mechanisms vcg

Prints counts (exact, within tolerance, violations), the worst error of an exact payment in
units of its tolerance, seconds and the load average. Exit status 1 on any violation.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
from fractions import Fraction

import numpy as np

from gensolver.mechanisms import outcome_to_dict, run_mechanism
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.solvers import list_methods, solve

F = Fraction
CAPS = {"mem": 2.0, "cmp": 1.0}


def tiny_round(rng: np.random.Generator) -> Instance:
    slots = (Slot("s0", dict(CAPS)), Slot("s1", dict(CAPS)))
    base = float(rng.uniform(1e5, 1e6))
    bids = []
    for i in range(int(rng.integers(2, 6))):
        for k in range(int(rng.integers(1, 3))):
            chosen = ["s0", "s1"] if rng.random() < 0.4 else [str(rng.choice(["s0", "s1"]))]
            mem, cmp = float(rng.choice([1.0, 2.0])), float(rng.choice([0.5, 1.0]))
            value = float(rng.uniform(0, 1e6)) if rng.random() < 0.5 else base + int(rng.integers(-5000, 5001)) * 1e-3
            bids.append(Bid(f"b{i}_{k}", f"B{i}", max(0.0, value), {s: {"mem": mem, "cmp": cmp} for s in chosen}))
    return Instance(slots, tuple(bids))


def _fits(chosen: list[Bid], inst: Instance) -> bool:
    for s in inst.slots:
        for r, cap in s.capacity.items():
            if math.fsum(b.demand.get(s.id, {}).get(r, 0.0) for b in chosen) > cap + 1e-9 + 1e-12 * abs(cap):
                return False
    return True


def best(inst: Instance, keep: set[str]) -> Fraction:
    groups: dict[str, list[Bid]] = {}
    for b in inst.bids:
        if b.bidder in keep:
            groups.setdefault(b.bidder, []).append(b)
    out = F(0)
    for choice in itertools.product(*[[None, *g] for g in groups.values()]):
        chosen = [b for b in choice if b is not None]
        if _fits(chosen, inst):
            out = max(out, sum((F(b.value) for b in chosen), F(0)))
    return out


def _solve(M: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    n = len(M)
    a = [row[:] + [r] for row, r in zip(M, rhs)]
    for col in range(n):
        piv = next((r for r in range(col, n) if a[r][col] != 0), None)
        if piv is None:
            return None
        a[col], a[piv] = a[piv], a[col]
        for r in range(n):
            if r != col and a[r][col] != 0:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    return [a[r][n] / a[r][r] for r in range(n)]


def references(inst: Instance, won: dict[str, float]) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """Clarke payments and the VCG-nearest minimum-revenue core point at the winners ``won``."""
    bidders = list(inst.bidder_ids)
    everyone = best(inst, set(bidders))
    clarke = {i: (best(inst, set(bidders) - {i}) - (everyone - F(won[i]))) if i in won else F(0) for i in bidders}
    winners = sorted(won)
    n = len(winners)
    if n == 0:
        return clarke, {}
    rows: set[tuple[tuple[Fraction, ...], Fraction]] = set()
    for k in range(len(bidders) + 1):
        for S in itertools.combinations(bidders, k):
            keep = set(S)
            rows.add((tuple(F(0) if i in keep else F(1) for i in winners),
                      best(inst, keep) - sum((F(won[i]) for i in winners if i in keep), F(0))))
    for j, i in enumerate(winners):
        e = tuple(F(1) if t == j else F(0) for t in range(n))
        rows.add((e, min(clarke[i], F(won[i]))))
        rows.add((tuple(-x for x in e), -F(won[i])))
    G = sorted(rows)

    def feasible(p: list[Fraction]) -> bool:
        return all(sum((g * x for g, x in zip(row, p)), F(0)) >= h for row, h in G)

    R = min(sum(v, F(0)) for S in itertools.combinations(G, n)
            if (v := _solve([list(r) for r, _ in S], [h for _, h in S])) is not None and feasible(v))
    c = [clarke[i] for i in winners]
    ones = tuple(F(1) for _ in range(n))
    found: tuple[Fraction, list[Fraction]] | None = None
    for k in range(n):
        for S in itertools.combinations(G, k):
            A = [ones] + [r for r, _ in S]
            b = [R] + [h for _, h in S]
            m = len(A)
            M = [[F(2) if r == col else F(0) for col in range(n)] + [A[t][r] for t in range(m)] for r in range(n)]
            M += [list(A[t]) + [F(0)] * m for t in range(m)]
            sol = _solve(M, [2 * x for x in c] + b)
            if sol is not None and feasible(sol[:n]):
                d = sum(((x - y) ** 2 for x, y in zip(sol[:n], c)), F(0))
                if found is None or d < found[0]:
                    found = (d, sol[:n])
    assert found is not None
    return clarke, dict(zip(winners, found[1]))


def check(inst: Instance, mechanism: str, stats: dict[str, float]) -> None:
    out = run_mechanism(inst, mechanism=mechanism, method="auto", options={"threads": 1})
    tol = outcome_to_dict(out)["exact_tolerance"]
    by_id = {b.id: b for b in inst.bids}
    won = {by_id[w].bidder: by_id[w].value for w in out.allocation.winners}
    stats["rounds"] += 1
    stats["exact"] += out.exact
    stats["with_rows"] += bool(out.exact and out.details.get("core_constraints"))
    if float(best(inst, set(inst.bidder_ids))) > out.allocation.welfare + tol:  # not efficient
        stats["violations"] += out.exact
        return
    clarke, point = references(inst, won)
    want = clarke if mechanism == "vcg" else {i: point.get(i, F(0)) for i in inst.bidder_ids}
    for i in inst.bidder_ids:
        w = float(want.get(i, F(0)))
        stats["payments"] += 1
        if out.exact:
            err = abs(out.payments[i] - w)
            stats["worst"] = max(stats["worst"], err / tol)
            stats["violations"] += err > tol
        else:
            lo, hi = out.payment_bounds[i]
            stats["violations"] += not (lo - tol <= w <= hi + tol)


def boundary_rounds() -> list[Instance]:
    out = []
    for cap in (1.0, 2.0, 3.0, 8e10):
        for k in (2, 3, 6, 7):
            for bump in (0, 1):
                d = round(cap / k, 9) if cap < 1e3 else cap / k
                if bump:
                    d = math.nextafter(d + 1e-9 + 1e-12 * cap, math.inf) if cap < 1e3 else d * (1 + 1e-11)
                bids = tuple(Bid(f"b{j}", f"B{j}", 3.0 + j, {"s": {"compute": d, "memory": 1.0}}) for j in range(k))
                out.append(Instance((Slot("s", {"compute": cap, "memory": 10.0 * k}),), bids))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mechanisms", default="vcg,core")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rounds = [tiny_round(rng) for _ in range(args.rounds)]
    bad = 0
    print(f"load average {os.getloadavg()}")
    for mech in args.mechanisms.split(","):
        stats = dict.fromkeys(("rounds", "exact", "with_rows", "payments", "violations", "worst"), 0.0)
        t0 = time.perf_counter()
        for inst in rounds:
            check(inst, mech, stats)
        bad += int(stats["violations"])
        rows = f" ({int(stats['with_rows'])} with core rows)" if mech == "core" else ""
        print(f"{mech}: {int(stats['rounds'])} rounds, {int(stats['exact'])} exact{rows}, {int(stats['payments'])} payments, "
              f"{int(stats['violations'])} violations, worst exact error {stats['worst']:.3g} x tolerance, "
              f"{time.perf_counter() - t0:.1f} s")
    methods = [m.name for m in list_methods(only_available=True)]
    disagree = 0
    brs = boundary_rounds()
    for inst in brs:
        answers = {m: round(solve(inst, method=m, threads=1).welfare, 9) for m in methods}
        disagree += len(set(answers.values())) > 1
        if len(set(answers.values())) > 1:
            print("boundary disagreement:", answers)
    print(f"boundary: {len(brs)} rounds x {len(methods)} methods ({', '.join(methods)}), {disagree} disagree")
    print(f"load average {os.getloadavg()}")
    return 1 if bad or disagree else 0


if __name__ == "__main__":
    sys.exit(main())
