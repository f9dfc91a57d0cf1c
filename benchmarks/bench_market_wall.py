"""Simulation wall time of the market engines against finish-time fairness (issue 27).

Issue 27 asks each market engine (``market``, greedy clearing, and ``market:clearing=solver``)
for a simulation wall time at most 5x finish-time-fair's (FTF) on the loaded rows: the bundled
Alibaba 2023 list and the synthetic workload of ``benchmarks/bench_market.py`` on 28 and 12 GPUs
(4 and 2 nodes) with arrivals compressed 16x (``--configs`` adds others, e.g. ``4x4``), workload
draw ``seed`` as there.

The machine this runs on is shared, so one run's seconds say little: per row, every policy is
simulated ``--reps`` times, the policies in turn (FTF, market, solver, FTF, ...), so a slow
spell of the machine hits them alike, and the table shows each policy's median seconds and the
median of the per-repetition ratios ``policy / FTF`` beside the goal, and the ratio of the
fastest repetitions (``min ratio``: each policy's least disturbed run). Every repetition of a
policy must give the same event log, byte for byte (``same``).

Run: ``python benchmarks/bench_market_wall.py`` (``--reps 5``, ``--seeds 2``, ``--configs
4x16,2x16,4x4``, ``--clock cpu``: the process's CPU seconds instead of wall seconds, steadier
when other work shares the machine; ``--json out.json``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_market import _configs, log_bytes, policy_spec, show, workloads  # noqa: E402

from gensolver.sim import simulate  # noqa: E402

BASE = "finish-time-fair"
ENGINES = ("market", "market:clearing=solver")
LOADED = ((4, 16.0), (2, 16.0))
GOAL = 5.0


def wall_rows(configs=LOADED, *, seeds: int = 1, reps: int = 3, engines=ENGINES, clock=time.perf_counter) -> list[dict]:
    """One row per configuration, seed, workload and engine: median seconds of FTF and of the
    engine (``clock``: wall, or the process's CPU time), the median per-repetition ratio engine
    / FTF, and whether every rerun was identical."""
    rows = []
    for nodes, compress in configs:
        for seed in range(seeds):
            for w in workloads(nodes, compress, seed=seed):
                pols = (BASE, *engines)
                secs: dict[str, list[float]] = {p: [] for p in pols}
                logs: dict[str, set[bytes]] = {p: set() for p in pols}
                for _ in range(reps):
                    for p in pols:
                        name, opts = policy_spec(p)
                        t0 = clock()
                        r = simulate(w, policy=name, policy_options=opts or None)
                        secs[p].append(clock() - t0)
                        logs[p].add(log_bytes(r))
                for e in engines:
                    ratio = statistics.median(a / b for a, b in zip(secs[e], secs[BASE]))
                    rows.append({"workload": w.name, "gpus": len(w.gpus), "x": compress, "seed": seed, "engine": e,
                                 "ftf s": statistics.median(secs[BASE]), "engine s": statistics.median(secs[e]),
                                 f"ratio (<={GOAL:g})": f"{ratio:.2f} {'ok' if ratio <= GOAL else 'MISS'}",
                                 "min ratio": min(secs[e]) / min(secs[BASE]),
                                 "same": "yes" if len(logs[e]) == 1 else "NO"})
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each policy per row (median)")
    ap.add_argument("--seeds", type=int, default=1, help="workload draws per configuration")
    ap.add_argument("--configs", type=_configs, default=LOADED, help="NODESxCOMPRESS,... (default: 4x16,2x16)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall seconds (the goal's), or this process's CPU seconds (steadier on a shared machine)")
    ap.add_argument("--json", type=Path, help="also write the table to this JSON file")
    a = ap.parse_args(argv)
    if a.reps < 1 or a.seeds < 1:
        ap.error("--reps and --seeds must be >= 1")
    t0 = time.perf_counter()
    clock = time.perf_counter if a.clock == "wall" else time.process_time
    rows = wall_rows(a.configs, seeds=a.seeds, reps=a.reps, clock=clock)
    show(rows, f"simulation {a.clock} time against {BASE} (medians over {a.reps} interleaved repetitions)")
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
