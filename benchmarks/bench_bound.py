"""How far is each policy from the offline bound? Average JCT over the bound, per workload.

Workloads: the ones of ``bench_market.py`` (the bundled Alibaba 2023 trace, 300 pods, and a
synthetic workload of 300 tasks on the same GPUs at the same arrival rate, 30% with
deadlines) on 2 nodes (12 GPUs) and 4 nodes (28 GPUs) with arrivals compressed 16x.

Printed per workload: the bound (:func:`gensolver.sim.offline_bound`: a certified lower bound
on average JCT, an upper bound on welfare) and the seconds it took; per policy: tasks done of
all, average JCT, ``jct/bound`` (1 = optimal), welfare over its upper bound, memory used and
held, and the simulation's wall time.

Run: ``python benchmarks/bench_bound.py`` (``--configs 2x16`` restricts to those
``NODESxCOMPRESS`` configurations; by default every registered policy and ``market:clearing=solver``
(the market cleared by the solver layer), which ``--no-solver`` skips;
``--policies a,b`` picks policies, each ``name`` or ``name:key=value+key=value`` with
options, e.g. ``market:clearing=solver``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_market import SOLVER_CLEARED, _cell, _configs, policy_spec, workloads  # noqa: E402

from gensolver.sim import list_policies, offline_bound, simulate  # noqa: E402

CONFIGS = ((2, 16.0), (4, 16.0))


def rows_for(w, policies):
    b = offline_bound(w)
    out = [{"workload": w.name, "gpus": len(w.gpus), "policy": "(bound)", "done": f"{b.tasks}/{len(w.tasks)}",
            "avg_jct": b.avg_jct, "jct/bound": 1.0, "welfare/bound": 1.0, "mem_used": None, "mem_held": None,
            "seconds": b.seconds}]
    for p in policies:
        name, opts = policy_spec(p)
        r = simulate(w, policy=name, policy_options=opts or None)
        m = r.metrics
        out.append({"workload": w.name, "gpus": len(w.gpus), "policy": p, "done": f"{m.completed}/{len(w.tasks)}",
                    "avg_jct": m.avg_jct, "jct/bound": m.avg_jct / b.avg_jct if b.avg_jct else None,
                    "welfare/bound": m.welfare / b.welfare if b.welfare else None, "mem_used": m.memory_used,
                    "mem_held": m.memory_held, "seconds": r.wall_seconds})
        print(" | ".join(_cell(v) for v in out[-1].values()), flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=_configs, help="NODESxCOMPRESS,... (default: 2x16,4x16)")
    ap.add_argument("--no-solver", "--no-auction", dest="no_solver", action="store_true",
                    help=f"skip {SOLVER_CLEARED} (old name: --no-auction)")
    ap.add_argument("--policies", type=lambda s: tuple(s.split(",")), help="comma-separated (default: all)")
    a = ap.parse_args(argv)
    policies = a.policies or (*list_policies(), *(() if a.no_solver else (SOLVER_CLEARED,)))
    t0 = time.perf_counter()
    rows = []
    for nodes, compress in a.configs or CONFIGS:
        for w in workloads(nodes, compress):
            rows += rows_for(w, policies)
    cols = list(rows[0])
    print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(_cell(r[c]) for c in cols) + " |")
    print(f"\n({time.perf_counter() - t0:.0f} s; load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
