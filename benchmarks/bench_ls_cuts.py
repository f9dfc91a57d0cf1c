"""Does a tighter LP help Lavi–Swamy? Big-item clique cuts against the plain relaxation.

For every capacity row with limit ``L`` (the capacity rule's) and ``k = 2..6``, the bids asking
more than ``L / k`` of the row cannot ``k`` of them fit together: ``sum x_j <= k - 1`` is valid
for every integral allocation (so the lottery's allocations are unchanged) and depends on the
bids' demands only, not on their values (so the fractional VCG on the tightened polytope stays
truthful in expectation). The script runs ``lavi-swamy`` (alpha fixed at 3, work budget
``--budget``) on bundled rounds with the plain and the tightened LP (the tightened matrix
problem is swapped in for the mechanism's ``from_instance``) and prints ``LP*``, the verified
alpha, its certified floor and the expected welfare ``LP*/alpha_verified``.

Usage::

    python benchmarks/bench_ls_cuts.py                                   # the four GPU-trace rounds of small
    python benchmarks/bench_ls_cuts.py --rounds small-alibaba,small-L7 --budget 20
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
    args = ap.parse_args(argv)
    rounds = [(name, lambda name=name: read_instance(SMALL / f"{name}.json.gz")) for name in args.rounds.split(",") if name]
    rounds += [(f"{fam}:{seed}", lambda fam=fam, seed=seed: generate(fam, seed=int(seed)))
               for fam in args.families.split(",") if fam for seed in args.seeds.split(",")]
    better = worse = 0
    print(f"load average {os.getloadavg()}")
    print("| round | LP | LP* | alpha verified | alpha floor | E[welfare] | seconds |")
    print("|---|---|---|---|---|---|---|")
    try:
        for name, load in rounds:
            inst = load()
            alphas = []
            for label, build in (("plain", PLAIN), ("clique cuts", with_cuts)):
                LS.from_instance = build
                t0 = time.perf_counter()
                d = run_mechanism(inst, mechanism="lavi-swamy", method="auto", time_limit=args.budget,
                                  options={"alpha": 3.0}).details
                floor = d["alpha_floor"]
                print(f"| {name} | {label} | {d['lp_welfare']:.2f} | {d['alpha_verified']:.3f} | "
                      f"{'-' if floor is None else f'{floor:.3f}'} | {d['lp_welfare'] / d['alpha_verified']:.2f} | "
                      f"{time.perf_counter() - t0:.1f} |", flush=True)
                alphas.append(d["alpha_verified"])
            better += alphas[1] < alphas[0] - 1e-9
            worse += alphas[1] > alphas[0] + 1e-9
    finally:
        LS.from_instance = PLAIN
    print(f"\nclique cuts: verified alpha lower on {better}, higher on {worse} of {len(rounds)} rounds")
    print(f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
