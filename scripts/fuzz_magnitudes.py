#!/usr/bin/env python
"""Fuzz every solver method against brute force on instances of extreme magnitudes.

Capacities are drawn from about ``1e-6`` to ``1e9`` (memory in TiB fractions or in bytes),
demands as fractions of them (some exactly filling a capacity, some just over it), values
from ``1e-8`` to ``1e12``. Each method's answer is checked by the independent certificates of
:mod:`gensolver.verify`: the allocation fits (:func:`check_allocation`), a bound is never below
the brute-force optimum, and an ``optimal`` status means the brute-force optimum. This is how
the tolerance bugs fixed in the sixth session were found (a HiGHS row tolerance letting a bid
20 % over a capacity of ``1.2e-6`` win, CP-SAT calling ``6.666666666666666`` integral, SCIP and
CBC on rows of size ``1e9``); the conformance suite's ``rescaled_instances`` covers the same
ground on every ``make test``.

Usage::

    python scripts/fuzz_magnitudes.py                       # seeds 0-3, 60 instances each
    python scripts/fuzz_magnitudes.py --seeds 7 8 --trials 100 --methods auto cpsat

Exit status 0 when every answer passes, 1 otherwise (each failure is printed).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from gensolver import solve
from gensolver.model import Bid, Instance, Slot
from gensolver.solvers import Status, get_method, list_methods
from gensolver.verify import brute_force, check_allocation


def instance(rng: np.random.Generator) -> Instance:
    """A random instance small enough for brute force (up to 8 bids on up to 3 slots)."""
    n_slots, n_bids = int(rng.integers(1, 4)), int(rng.integers(1, 9))
    slots = [Slot(f"s{k}", {"memory": float(rng.choice([0, 1e-6, 1, 80, 1e9])) * float(rng.random() + 0.5),
                            "compute": 1.0}) for k in range(n_slots)]
    scale = float(10 ** rng.uniform(-8, 12))
    bids = []
    for j in range(n_bids):
        demand = {}
        for k in rng.choice(n_slots, size=int(rng.integers(1, n_slots + 1)), replace=False):
            cap = slots[int(k)].capacity["memory"]
            demand[f"s{int(k)}"] = {"memory": float(cap * rng.choice([0, 0.3, 0.5, 0.7, 1.0, 1.2]))}
        value = float(scale * rng.random()) if rng.random() > 0.1 else 0.0
        bids.append(Bid(f"b{j}", f"p{int(rng.integers(0, max(1, n_bids // 2)))}", value, demand))
    return Instance(tuple(slots), tuple(bids))


def check(inst: Instance, method: str) -> str | None:
    """``None`` if ``method``'s answer passes the certificates, else what is wrong."""
    opt, _ = brute_force(inst)
    res = solve(inst, method=method)
    tol = 1e-6 * max(1.0, opt)
    if res.status not in (Status.OPTIMAL, Status.FEASIBLE):
        return f"status {res.status.value}: {res.message}"
    if not check_allocation(inst, res.winners, welfare=res.welfare).feasible:
        return "allocation does not fit"
    if res.bound is not None and res.bound < opt - tol:
        return f"bound {res.bound!r} below the optimum {opt!r}"
    if res.status is Status.OPTIMAL and abs(res.welfare - opt) > tol:
        return f"called optimal at {res.welfare!r}, optimum {opt!r}"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--trials", type=int, default=60, help="instances per seed")
    ap.add_argument("--methods", nargs="+", default=None, help="default: every method usable here")
    args = ap.parse_args(argv)
    methods = args.methods or [m.name for m in list_methods() if m.available()[0]]
    failures = checked = 0
    for seed in args.seeds:
        rng = np.random.default_rng(seed)
        for trial in range(args.trials):
            inst = instance(rng)
            for method in methods:
                if not get_method(method).available()[0]:
                    continue  # e.g. OR-Tools' HiGHS once PuLP has loaded highspy in this process
                checked += 1
                problem = check(inst, method)
                if problem is not None:
                    failures += 1
                    print(f"seed {seed} trial {trial} {method}: {problem}", flush=True)
    print(f"{checked} answers checked, {failures} failed ({len(args.seeds)} seeds x {args.trials} instances; "
          f"methods: {', '.join(methods)})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
