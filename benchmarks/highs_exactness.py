"""How often an exact method's "optimal" (and VCG's ``exact=True``) is wrong, against brute force.

Runs ``--count`` random tiny rounds (1 or 2 slots of memory and compute; 2 to 5 bidders with 1 or
2 bids; values log-uniform on ``[1e-3, 1e6]``, some exactly ``1e-3, 2.5, 5, 1e6``) through
``solve(method=M)`` and ``vcg(instance, method=M)`` for every method ``M`` given, and counts:

- wrong optimal: the status is ``optimal`` but the welfare is below the brute-force optimum
  (or the reported bound is below it);
- wrong exact VCG: ``exact=True`` but the allocation is not optimal or a payment differs from the
  Clarke payment at that allocation computed by brute force (every pivot enumerated).

Usage::

    python benchmarks/highs_exactness.py                          # 1,000 rounds, highs
    python benchmarks/highs_exactness.py --count 200 --methods highs cpsat auto

Goal (issue 17): 0 wrong exact answers for ``highs`` on 1,000 rounds (before the fix: 4 wrong
optimal answers, the first at seed 13).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from gensolver import solve
from gensolver.mechanisms.vcg import vcg
from gensolver.model import Bid, Instance, Slot
from gensolver.verify import brute_force


def tiny_round(seed: int) -> Instance:
    """A random tiny round of wide value range (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n_slots = int(rng.integers(1, 3))
    slots = tuple(Slot(f"s{k}", {"memory": float(rng.choice([16, 24, 40, 80])), "compute": 1.0})
                  for k in range(n_slots))
    bids = []
    for b in range(int(rng.integers(2, 6))):
        for k in range(int(rng.integers(1, 3))):
            v = float(10 ** rng.uniform(-3, 6)) if rng.random() < 0.7 else float(rng.choice([0.001, 2.5, 5, 1e6]))
            dem: dict[str, dict[str, float]] = {}
            for s in slots:
                if rng.random() < 0.7 or not dem:
                    dem[s.id] = {"memory": float(rng.integers(1, 50)),
                                 "compute": float(rng.choice([0.25, 0.5, 0.75, 1.0]))}
            bids.append(Bid(f"b{b}_{k}", f"B{b}", v, dem))
    return Instance(slots, tuple(bids))


def clarke_payments(inst: Instance, winners: tuple[str, ...], opt: float,
                    without: dict[str, float]) -> dict[str, float]:
    """Every bidder's Clarke payment at the allocation ``winners`` (optimal, worth ``opt``),
    from the brute-force optima ``without`` each bidder (ties between optimal allocations
    change who pays what, so payments are checked at the allocation returned)."""
    pay = {b: 0.0 for b in inst.bidder_ids}
    for w in winners:
        bid = inst.bids[inst.bid_index[w]]
        pay[bid.bidder] = without[bid.bidder] - (opt - bid.value)
    return pay


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000, help="random rounds (default 1000)")
    ap.add_argument("--methods", nargs="+", default=["highs"])
    ap.add_argument("--no-vcg", action="store_true", help="skip the VCG check")
    args = ap.parse_args()
    wrong = {m: 0 for m in args.methods}
    wrong_vcg = {m: 0 for m in args.methods}
    exact_vcg = {m: 0 for m in args.methods}
    t0 = time.perf_counter()
    for seed in range(args.count):
        inst = tiny_round(seed)
        opt, _ = brute_force(inst)
        without = {b: brute_force(inst.without_bidder(b))[0] for b in inst.bidder_ids}
        tol = 1e-9 * max(1.0, opt)
        for m in args.methods:
            res = solve(inst, method=m)
            if res.status.value == "optimal" and (res.welfare < opt - tol or (res.bound or opt) < opt - tol):
                wrong[m] += 1
                print(f"wrong optimal: {m} seed {seed}: welfare {res.welfare!r}, optimum {opt!r}", flush=True)
            if args.no_vcg:
                continue
            out = vcg(inst, method=m)
            if out.exact:
                exact_vcg[m] += 1
                pay = clarke_payments(inst, out.allocation.winners, opt, without)
                bad = out.allocation.welfare < opt - tol or any(
                    abs(out.payments[b] - pay[b]) > tol for b in inst.bidder_ids)
                if bad:
                    wrong_vcg[m] += 1
                    print(f"wrong exact VCG: {m} seed {seed}: payments {dict(out.payments)}, Clarke {pay}", flush=True)
    print(f"\n{args.count} random tiny rounds, values 1e-3..1e6, memory + compute "
          f"({time.perf_counter() - t0:.0f} s)\n")
    print("| method | wrong optimal | VCG exact=True | wrong exact VCG |")
    print("|---|---|---|---|")
    for m in args.methods:
        print(f"| {m} | {wrong[m]} | {'-' if args.no_vcg else exact_vcg[m]} | {'-' if args.no_vcg else wrong_vcg[m]} |")
    return 1 if any(wrong.values()) or any(wrong_vcg.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
