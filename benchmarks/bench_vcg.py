"""VCG timing: main solve versus all pivot re-solves (cold, fast path, parallel).

Usage::

    python benchmarks/bench_vcg.py            # GPU rounds (1,512 and 2,916 bids), CATS arbitrary 60 x 250
    python benchmarks/bench_vcg.py --large    # adds CATS arbitrary 100 x 500 (minutes)
    python benchmarks/bench_vcg.py --quick    # smaller instances (a smoke run)
    python benchmarks/bench_vcg.py --families --seeds 11 12   # default mode on every family of sweep_families.py

For each instance it runs VCG four ways with the same solver: pivots re-solved cold (no warm
start, serial); the ``auto`` fast path on one thread (main LP duals, warm start, shared
solution pool); the fast path as ``vcg`` runs it by default (a private thread pool, one per
CPU); and the fast path on a ``ProcessPoolExecutor`` (each pivot in a worker process with the
main LP's duals, the bounds settled so far and the best known warm start). It checks that all give the
same payments and prints the seconds of the main solve and of all pivots, and the ratio
``pivots / main`` (issue 7's goal: at most 3 where the main solve is optimal).

``--families`` runs only the default mode, on the instances of ``sweep_families.py`` (every
CATS family and a GPU round) for each seed, to show how the ratio spreads across families.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from gensolver.mechanisms import run_mechanism


def _instances(quick: bool, large: bool):
    from gensolver.instances.cats import arbitrary
    from gensolver.instances.gpu import gpu_round

    if quick:
        return [("cats-arbitrary 40x150", arbitrary(40, 150, seed=1)),
                ("gpu round (8 GPUs, 6 tasks)", gpu_round(n_gpus=8, n_tasks=6, steps=12, seed=1).expand())]
    out = [("gpu round (8 GPUs, 16 tasks)", gpu_round(n_gpus=8, n_tasks=16, steps=12, seed=1).expand()),
           ("gpu round (8 GPUs, 32 tasks)", gpu_round(n_gpus=8, n_tasks=32, steps=12, seed=1).expand()),
           ("cats-arbitrary 60x250", arbitrary(60, 250, seed=1))]
    if large:
        out.append(("cats-arbitrary 100x500", arbitrary(100, 500, seed=1)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small instances")
    ap.add_argument("--large", action="store_true", help="add CATS arbitrary 100 x 500 (minutes)")
    ap.add_argument("--solver", default="auto", help="winner determination method (default: auto)")
    ap.add_argument("--workers", type=int, default=2, help="processes for the process-pool run")
    ap.add_argument("--threads", type=int, default=None, help="solver threads per solve")
    ap.add_argument("--families", action="store_true",
                    help="default mode only, on every family of sweep_families.py")
    ap.add_argument("--seeds", type=int, nargs="+", default=[11, 12], help="seeds for --families")
    args = ap.parse_args()
    if args.families:
        _families(args)
        return
    head = ("instance", "size", "pivots", "solver", "main s", "pivots s", "pivots/main", "exact", "same payments")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    with ProcessPoolExecutor(args.workers) as pool, ThreadPoolExecutor(1) as one_thread:
        pool.submit(int, 0).result()  # start the workers outside the timings
        for label, inst in _instances(args.quick, args.large):
            runs = {}
            for mode, opts, ex in (("cold, serial", {"warm_start": False}, None),
                                   ("fast path, 1 thread", {"warm_start": True}, one_thread),
                                   ("fast path, default (thread per CPU)", {"warm_start": True}, None),
                                   (f"fast path, {args.workers} processes", {"warm_start": True}, pool)):
                t0 = time.perf_counter()
                out = run_mechanism(inst, mechanism="vcg", method=args.solver, executor=ex,
                                    options={**opts, "threads": args.threads})
                wall = time.perf_counter() - t0
                runs[mode] = (out, wall)
            ref = next(iter(runs.values()))[0]
            for mode, (out, _wall) in runs.items():
                same = all(abs(out.payments[b] - ref.payments[b]) <= 1e-6 * max(1.0, ref.payments[b]) for b in ref.payments)
                sec = out.details["seconds"]
                r = ((label, f"{inst.n_bids} bids / {len(out.details['pivots'])} winners", mode,
                      out.details["method"], sec["main"], sec["pivots"], sec["pivots"] / sec["main"],
                      out.exact, same))
                print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} | {r[7]} | {r[8]} |",
                      flush=True)


def _families(args: argparse.Namespace) -> None:
    from sweep_families import cases  # the sibling script: same instances as the solver sweep

    head = ("instance", "seed", "bids", "winners", "main s", "pivots s", "pivots/main", "exact")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    ratios = []
    for seed in args.seeds:
        for label, inst in cases(seed):
            out = run_mechanism(inst, mechanism="vcg", method=args.solver, options={"threads": args.threads})
            sec = out.details["seconds"]
            ratio = sec["pivots"] / max(sec["main"], 1e-9)
            ratios.append(ratio)
            print(f"| {label} | {seed} | {inst.n_bids} | {len(out.details['pivots'])} | {sec['main']:.2f} | "
                  f"{sec['pivots']:.2f} | {ratio:.2f} | {out.exact} |", flush=True)
    print(f"\n{sum(r <= 3 for r in ratios)} of {len(ratios)} instances at most 3x; "
          f"median {sorted(ratios)[len(ratios) // 2]:.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
