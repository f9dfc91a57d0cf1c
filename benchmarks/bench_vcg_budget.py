"""VCG under one time budget: a GPU round at a time limit, and the pivot/main ratio where the
main solve is optimal, side by side in one run.

Usage::

    python benchmarks/bench_vcg_budget.py                      # GPU round 8x16x60 at 10 s + quick instances
    python benchmarks/bench_vcg_budget.py --time-limit 10 --seeds 1 2
    python benchmarks/bench_vcg_budget.py --no-round --set default   # ratio table on bench_vcg.py's default instances
    python benchmarks/bench_vcg_budget.py --no-round --set large     # ... and CATS 100 x 500 (minutes)
    python benchmarks/bench_vcg_budget.py --deterministic      # the budget in work units

Table 1 runs ``vcg`` with ``method="auto"`` and ``time_limit`` as the whole budget (main
solve and every pivot) on the GPU round ``gpu-8x16x60`` of ``bench_anytime.py`` (about 15,000
bids, 60 tasks) and prints wall and CPU seconds (``time.process_time`` of this process, which
shows how much of the wall time the machine's load took), the main solve's status and gap,
how many winners' payments are exact (a degenerate certified interval), and the widest
interval relative to the bidder's largest bid (the most it can be charged; 1.0 is the
uninformative ``[0, largest bid]`` that is all one can certify while the main solve is not
proven optimal) and to the payment charged (``inf`` for a payment of 0). Issue 17's goal: at
most 30 s of wall time on 2 cores at ``--time-limit 10``; before the budget, each pivot was
given the whole limit again (10 min 18 s).

Table 2 runs ``vcg`` without a time limit (every solve proven) on ``bench_vcg.py``'s
instances and prints the seconds of the main solve and of the pivots and their ratio (goal:
at most 3 where the main solve is optimal).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_anytime import gpu  # noqa: E402  (the sibling script: the same instances)
from bench_vcg import _instances  # noqa: E402

from gensolver.mechanisms import run_mechanism  # noqa: E402

#: an interval narrower than this (relative to the bidder's value, at least 1e-9) is exact
EXACT_TOL = 1e-9


def interval_figures(inst, out) -> tuple[int, int, float, float]:
    """Winners, exact payments among them, widest interval relative to the bidder's largest
    bid (the most a bidder can be charged), widest interval relative to the payment."""
    vmax: dict[str, float] = {}
    for bid in inst.bids:
        vmax[bid.bidder] = max(vmax.get(bid.bidder, 0.0), bid.value)
    winners = list(out.details["pivots"])
    exact = 0
    by_value = by_pay = 0.0
    for b in winners:
        lo, hi = out.payment_bounds[b]
        v = out.utilities[b] + out.payments[b]  # the winning bid's value
        width = hi - lo
        if width <= EXACT_TOL * max(1.0, v):
            exact += 1
        by_value = max(by_value, width / vmax[b] if vmax[b] > 0 else 0.0)
        p = out.payments[b]
        by_pay = max(by_pay, width / p if p > EXACT_TOL * max(1.0, v) else (math.inf if width > 0 else 0.0))
    return len(winners), exact, by_value, by_pay


def round_table(args: argparse.Namespace) -> None:
    unit = "work units" if args.deterministic else "s"
    print(f"GPU round gpu-8x16x60, vcg --method auto --time-limit {args.time_limit:g} ({unit}), "
          f"main share {args.main_share:g}")
    head = ("seed", "bids", "wall s", "CPU s", "main s", "pivots s", "main status", "main gap", "winners",
            "exact payments", "widest / largest bid", "widest / payment", "work (det.)")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    for seed in args.seeds:
        inst = gpu(8, 16, 60, 4, seed=seed).expand()
        t0, c0 = time.perf_counter(), time.process_time()
        out = run_mechanism(inst, mechanism="vcg", method="auto", time_limit=args.time_limit,
                            options={"main_share": args.main_share, "deterministic": args.deterministic})
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        n, exact, by_value, by_pay = interval_figures(inst, out)
        sec = out.details["seconds"]
        gap = out.allocation.gap
        work = out.details.get("work")
        work_s = "-" if not work else f"{work['total']:.2f}"
        print(f"| {seed} | {inst.n_bids} | {wall:.1f} | {cpu:.1f} | {sec['main']:.1f} | {sec['pivots']:.1f} | "
              f"{out.allocation.status.value} | {'-' if gap is None else f'{gap:.2%}'} | {n} | {exact} | "
              f"{by_value:.3f} | {by_pay:.3g} | {work_s} |", flush=True)


def ratio_table(args: argparse.Namespace) -> None:
    print("\nPayments without a time limit (every solve proven): pivots / main solve")
    head = ("instance", "bids", "winners", "main s", "pivots s", "pivots/main", "CPU s", "exact")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    for label, inst in _instances(args.set == "quick", args.set == "large"):
        c0 = time.process_time()
        out = run_mechanism(inst, mechanism="vcg", method="auto")
        cpu = time.process_time() - c0
        sec = out.details["seconds"]
        ratio = sec["pivots"] / max(sec["main"], 1e-9)
        print(f"| {label} | {inst.n_bids} | {len(out.details['pivots'])} | {sec['main']:.2f} | {sec['pivots']:.2f} | "
              f"{ratio:.2f} | {cpu:.2f} | {out.exact} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0, help="the whole VCG budget (default 10)")
    ap.add_argument("--main-share", type=float, default=0.7, help="vcg option main_share (default 0.7)")
    ap.add_argument("--deterministic", action="store_true", help="the budget in work units")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1], help="GPU round seeds")
    ap.add_argument("--set", choices=("quick", "default", "large"), default="quick",
                    help="bench_vcg.py's instances for the ratio table: --quick ones (default), its default "
                         "ones, or those and CATS 100 x 500 (minutes)")
    ap.add_argument("--no-round", action="store_true", help="only the ratio table")
    args = ap.parse_args()
    if not args.no_round:
        round_table(args)
    ratio_table(args)


if __name__ == "__main__":
    main()
