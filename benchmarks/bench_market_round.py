"""How long one round of the credit engine takes: N candidate tasks on G GPUs.

One boundary round of :class:`gensolver.market.engine.CreditEngine` (income, scores,
clearing, backfill, prices, charges) on a :class:`gensolver.market.pool.TablePool` holding a
synthetic workload's tasks, all waiting: the round ``gensolver serve --market '{"engine":
"credit"}'`` clears, without the database. Printed per clearing (``greedy``: score order;
``solver``: :func:`gensolver.market.clearing.clear_round`): the candidates, the tasks
started, the memory and compute left free, how many waiting tasks would still fit at their
minimum memory (0: the round is work conserving; a gap in ``started`` between the clearings
is then packing, not idle capacity), and the fastest and slowest of ``--repeat`` rounds in
seconds (wall clock: give the load, e.g. ``uptime``, beside the figures).

Usage::

    python benchmarks/bench_market_round.py --tasks 300 --gpus 28
"""

from __future__ import annotations

import argparse
import time

from gensolver.market.engine import CreditEngine
from gensolver.market.pool import TablePool, find_placement
from gensolver.model.tasks import GpuSpec
from gensolver.sim import synthetic_workload


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--gpus", type=int, default=28, help="80 GiB GPUs, 4 per node")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    w = synthetic_workload(args.tasks, seed=args.seed, tenants=4, gang_share=0.1)
    gpus = [GpuSpec(f"g{i}", 80.0, node=f"n{i // 4}") for i in range(args.gpus)]
    for clearing in ("greedy", "solver"):
        times = []
        for _ in range(args.repeat):
            pool = TablePool(gpus, now=0.0, lease=5)
            for t in w.tasks:
                pool.add(t, remaining=float(t.duration))
            eng = CreditEngine(clearing=clearing)
            t0 = time.perf_counter()
            eng.round(pool, True)
            times.append(time.perf_counter() - t0)
        up = pool.up_gpus()
        fits = sum(1 for st in pool.waiting() if find_placement(pool, st, st.task.min_memory) is not None)
        print(f"{clearing:7s} candidates {len(pool.tasks)}  started {len(pool.running())}  "
              f"free memory {sum(g.free_memory for g in up):.0f} GiB  free compute "
              f"{sum(g.free_compute for g in up):.2f}  waiting that fit {fits}  "
              f"seconds min {min(times):.3f} max {max(times):.3f}")


if __name__ == "__main__":
    main()
