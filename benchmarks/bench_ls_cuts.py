"""Does a tighter LP help Lavi–Swamy? Big-item clique cuts and the clique relaxation against the plain LP.

For every capacity row with limit ``L`` (the capacity rule's) and ``k = 2..6``, the bids asking
more than ``L / k`` of the row cannot ``k`` of them fit together: ``sum x_j <= k - 1`` is valid
for every integral allocation (so the lottery's allocations are unchanged) and depends on the
bids' demands only, not on their values (so the fractional VCG on the tightened polytope stays
truthful in expectation). The script runs ``lavi-swamy`` (alpha fixed at ``--alpha``, 3 by
default, so the simplex optimum is decomposed; work budget ``--budget``) on bundled rounds with
the plain LP, the big-item cuts (the tightened matrix problem is swapped in for the mechanism's
``from_instance``) and the mechanism's own ``relaxation="clique"`` (every clique of the conflict
graph, separated exactly; :mod:`gensolver.mechanisms.cliques`) and prints ``LP*``, the verified
alpha, its certified floor, the expected welfare ``LP*/alpha_verified``, whether the clique
separation closed and the seconds; then the mean verified alpha of each LP.

Usage::

    python benchmarks/bench_ls_cuts.py                                   # the four GPU-trace rounds of small
    python benchmarks/bench_ls_cuts.py --rounds small-alibaba,small-L7 --budget 20
    python benchmarks/bench_ls_cuts.py --rounds "" --seeds 3,4,5          # fresh seeds only
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gensolver import read_instance
from gensolver.instances import generate
from gensolver.mechanisms import run_mechanism

#: the module (its name in the package is the mechanism function)
LS = importlib.import_module("gensolver.mechanisms.lavi_swamy")
PLAIN = LS.from_instance
SMALL = Path(__file__).resolve().parents[1] / "gensolver" / "data" / "suites" / "small"


def with_cuts(instance, k_max: int = 6):
    """The matrix problem of ``instance`` with the big-item clique rows appended."""
    P = PLAIN(instance)
    A, limit = P.A_rows.tocsr(), P.limit
    rows, rhs = [], []
    for r in range(A.shape[0]):
        cols, d = A.indices[A.indptr[r]:A.indptr[r + 1]], A.data[A.indptr[r]:A.indptr[r + 1]]
        for k in range(2, k_max + 1):
            big = np.sort(cols[d > limit[r] / k * (1 + 1e-12)])
            if len(big) >= k:
                rows.append(big)
                rhs.append(k - 1.0)
    if not rows:
        return P
    M = sp.csr_matrix((np.ones(sum(map(len, rows))), (np.repeat(np.arange(len(rows)), [len(x) for x in rows]),
                                                      np.concatenate(rows))), shape=(len(rows), P.n))
    A2 = sp.vstack([A, M]).tocsr()
    return dataclasses.replace(P, A=A2.tocsc(), cap=np.concatenate([P.cap, rhs]), rows=A2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", default="small-alibaba,small-philly,small-gpu-1,small-gpu-2")
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--families", default="gpu,trace-alibaba,trace-philly,arbitrary",
                    help="generated families (default parameters), each at every --seeds; '' for none")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--alpha", type=float, default=3.0)
    args = ap.parse_args(argv)
    rounds = [(name, lambda name=name: read_instance(SMALL / f"{name}.json.gz")) for name in args.rounds.split(",") if name]
    rounds += [(f"{fam}:{seed}", lambda fam=fam, seed=seed: generate(fam, seed=int(seed)))
               for fam in args.families.split(",") if fam for seed in args.seeds.split(",")]
    labels = ("plain", "big-item cuts", "clique relaxation")
    alphas: dict[str, list[float]] = {k: [] for k in labels}
    welfare: dict[str, list[float]] = {k: [] for k in labels}
    print(f"load average {os.getloadavg()}")
    print("| round | LP | LP* | alpha verified | alpha floor | E[welfare] | closed (cliques) | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for name, load in rounds:
            inst = load()
            for label, build, rel in zip(labels, (PLAIN, with_cuts, PLAIN), ("plain", "plain", "clique")):
                LS.from_instance = build
                t0 = time.perf_counter()
                d = run_mechanism(inst, mechanism="lavi-swamy", method="auto", time_limit=args.budget,
                                  options={"alpha": args.alpha, "relaxation": rel}).details
                floor, r = d["alpha_floor"], d["relaxation"]
                closed = f"{r['closed']} ({r['cliques']})" if rel == "clique" else "-"
                print(f"| {name} | {label} | {d['lp_welfare']:.2f} | {d['alpha_verified']:.3f} | "
                      f"{'-' if floor is None else f'{floor:.3f}'} | {d['lp_welfare'] / d['alpha_verified']:.2f} | "
                      f"{closed} | {time.perf_counter() - t0:.1f} |", flush=True)
                alphas[label].append(d["alpha_verified"])
                welfare[label].append(d["lp_welfare"] / d["alpha_verified"])
    finally:
        LS.from_instance = PLAIN
    print()
    for label in labels[1:]:
        better = sum(a < b - 1e-9 for a, b in zip(alphas[label], alphas["plain"]))
        worse = sum(a > b + 1e-9 for a, b in zip(alphas[label], alphas["plain"]))
        more = sum(a > b * (1 + 1e-9) for a, b in zip(welfare[label], welfare["plain"]))
        print(f"{label}: verified alpha lower on {better}, higher on {worse} of {len(rounds)} rounds; "
              f"expected welfare higher on {more}")
    for label in labels:
        print(f"{label}: mean verified alpha {np.mean(alphas[label]):.3f}, "
              f"mean expected welfare {np.mean(welfare[label]):.1f}")
    print(f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
