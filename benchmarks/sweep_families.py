"""``auto`` beside the raw backends on every CATS family and on GPU rounds, with certificates.

Usage::

    python benchmarks/sweep_families.py                       # 5 s each, seeds 11 and 12
    python benchmarks/sweep_families.py --time-limit 10 --seeds 1 2 3

For each instance it runs ``auto``, ``cpsat`` and ``highs`` with the same time limit, checks
``auto``'s allocation with the independent feasibility checker
(:func:`gensolver.verify.certificates.check_allocation`) and its bound against the best
welfare any of the three found, and prints one row per instance: welfare of each, ``auto``'s
share of the best, its certified gap. A row is flagged when a check fails or ``auto`` is
below 99.9 % of the best. It exits 1 if any certificate fails.
"""

from __future__ import annotations

import argparse
import sys

from gensolver import solve
from gensolver.instances import cats
from gensolver.instances.gpu import gpu_round
from gensolver.verify.certificates import check_allocation


def cases(seed: int):
    yield "arbitrary", cats.arbitrary(80, 400, seed=seed)
    yield "regions", cats.regions(80, 400, seed=seed)
    yield "paths", cats.paths(30, 300, seed=seed)
    yield "matching", cats.matching(60, 300, seed=seed)
    yield "scheduling", cats.scheduling(60, 300, seed=seed)
    yield "legacy-L4", cats.legacy("L4", 80, 400, seed=seed)
    yield "legacy-L2", cats.legacy("L2", 80, 400, seed=seed)
    yield "gpu-round", gpu_round(n_gpus=6, n_tasks=30, steps=10, seed=seed).expand()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=5.0, help="seconds per solve (default 5)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[11, 12])
    args = ap.parse_args()
    head = ("instance", "seed", "bids", "auto", "cpsat", "highs", "auto / best", "auto gap", "checks")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    failed = 0
    for seed in args.seeds:
        for name, inst in cases(seed):
            runs = {m: solve(inst, method=m, time_limit=args.time_limit) for m in ("auto", "cpsat", "highs")}
            a = runs["auto"]
            best = max(r.welfare for r in runs.values())
            feasible = check_allocation(inst, a.winners, welfare=a.welfare).feasible
            bound_ok = a.bound is None or a.bound >= best - 1e-6 * max(1.0, abs(best))
            failed += not (feasible and bound_ok)
            share = a.welfare / best if best > 0 else 1.0
            note = "ok" if feasible and bound_ok else f"FAILED (feasible={feasible}, bound>=best={bound_ok})"
            if share < 0.999 and feasible and bound_ok:
                note = "ok, below 99.9 %"
            gap = "-" if a.gap is None else f"{100 * a.gap:.3f} %"
            print(f"| {name} | {seed} | {inst.n_bids} | {a.welfare:.2f} ({a.status.value}) | "
                  f"{runs['cpsat'].welfare:.2f} ({runs['cpsat'].status.value}) | "
                  f"{runs['highs'].welfare:.2f} ({runs['highs'].status.value}) | {share:.4f} | {gap} | {note} |",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
