"""Auction round time vs number of waiting tasks.

Builds one market round with ``n`` waiting tasks (synthetic, batch) on 16 GPUs and times the
build and the clearing (``method="auto"`` limited to ``time_limit`` s, and ``"greedy"``).

Run: ``python benchmarks/bench_sim_rounds.py``.
"""

from __future__ import annotations

import time

from gensolver.market import Candidate, Market, MarketConfig
from gensolver.model.tasks import uniform_gpus
from gensolver.sim import synthetic_workload


def run(sizes=(8, 16, 32, 64, 128, 256), *, time_limit: float = 0.2) -> list[dict]:
    gpus = uniform_gpus([80, 80, 40, 40, 24, 24, 16, 16] * 2, per_node=4)
    rows = []
    for n in sizes:
        w = synthetic_workload(n, seed=1, rate=None)
        cands = [Candidate(t, float(t.duration)) for t in w.tasks]
        for method in ("auto", "greedy"):
            m = Market(MarketConfig(method=method, time_limit=time_limit, max_bidders=max(sizes)))
            t0 = time.perf_counter()
            c = m.clear(0, gpus=gpus, candidates=cands)
            rows.append({"waiting": n, "method": method, "bids": c.bids, "build_s": round(c.build_seconds, 4),
                         "clear_s": round(c.seconds, 4), "total_s": round(time.perf_counter() - t0, 4),
                         "status": c.status, "welfare": round(c.welfare, 2)})
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
