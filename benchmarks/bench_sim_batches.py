"""Scenario (c) over many random batches: does the market beat FCFS on makespan and average JCT?

Each batch: 10 mixed tasks (``synthetic_workload(10, rate=None, seed=s)``: all arrive at step 0)
on 2 GPUs (24 and 16 GiB). Counts the batches where the market's (rounds cleared by the solver
layer, ``clearing="solver"``) makespan AND average JCT are
strictly lower than those of ``fcfs-whole-gpu`` (static FCFS) and of ``fcfs-packing``.

Run: ``python benchmarks/bench_sim_batches.py [--batches 100]``.
"""

from __future__ import annotations

import argparse
import time

from gensolver.sim import simulate, synthetic_workload


def run(batches: int = 100, *, gpus=(24.0, 16.0), seed0: int = 0) -> dict:
    wins = {"fcfs-whole-gpu": 0, "fcfs-packing": 0}
    t0 = time.perf_counter()
    for s in range(seed0, seed0 + batches):
        w = synthetic_workload(10, seed=s, rate=None, gpus=gpus)
        a = simulate(w, policy="market", policy_options={"clearing": "solver"}).metrics
        for base in wins:
            b = simulate(w, policy=base).metrics
            if a.makespan < b.makespan - 1e-9 and a.avg_jct < b.avg_jct - 1e-9:
                wins[base] += 1
    return {"batches": batches, "wins": wins, "seconds": time.perf_counter() - t0}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=100)
    args = ap.parse_args()
    print(run(args.batches))
