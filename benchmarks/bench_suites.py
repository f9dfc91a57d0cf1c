"""Suite benchmark: the ``small`` and ``medium`` suites with 1 and 2 local workers.

Run from the repository root::

    python benchmarks/bench_suites.py                          # small + medium, 1 and 2 workers
    python benchmarks/bench_suites.py --suites small --quick   # small only, greedy + lp

Each run is a fresh :func:`gensolver.bench.run_suite` (no journal reuse) on a local process
pool; the script prints the wall-clock seconds per (suite, workers) and the speed-up, and each
run's Markdown report lies under ``--out`` (default ``bench-out/bench_suites``). Medium files are
generated from the manifest's seeds first if missing (not timed).
"""

from __future__ import annotations

import argparse
import time

from gensolver.bench import load_suite, materialize, run_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suites", default="small,medium", help="comma-separated suites (default small,medium)")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--methods", default="cpsat,highs,greedy,lp", help="comma-separated methods")
    ap.add_argument("--per-solve-limit", type=float, default=10.0, help="time limit of each solve of a cell (s)")
    ap.add_argument("--out", default="bench-out/bench_suites", help="output folder")
    ap.add_argument("--quick", action="store_true", help="methods greedy,lp only")
    args = ap.parse_args()
    methods = ["greedy", "lp"] if args.quick else [m for m in args.methods.split(",") if m]
    rows = []
    for name in [s for s in args.suites.split(",") if s]:
        suite = load_suite(name)
        materialize(suite)
        base = None
        for w in [int(x) for x in args.workers.split(",") if x]:
            t0 = time.perf_counter()
            res = run_suite(suite, methods=methods, per_solve_limit=args.per_solve_limit, jobs=w,
                            out_dir=f"{args.out}/{name}-w{w}", resume=False, progress=False)
            secs = time.perf_counter() - t0
            base = base or secs
            rows.append((name, w, len(res.cells), len(res.errors), secs, base / secs))
            print(f"{name}: {w} worker(s), {len(res.cells)} cells, {len(res.errors)} errors, {secs:.1f} s", flush=True)
    print()
    print("| suite | workers | cells | errors | seconds | speed-up |")
    print("|---|---|---|---|---|---|")
    for name, w, n, e, secs, speed in rows:
        print(f"| {name} | {w} | {n} | {e} | {secs:.1f} | {speed:.2f}x |")


if __name__ == "__main__":
    main()
