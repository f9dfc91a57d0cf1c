"""Lavi–Swamy with and without the search over the LP's optimal face (option ``optima``).

For every round, runs the mechanism (``auto`` oracle, deterministic mode, ``alpha`` from the
instance) with ``optima=0`` (the simplex optimum only) and with ``optima=7`` (the simplex
optimum, then the seven second-stage optima of
:func:`gensolver.mechanisms.fractional.face_optima`, keeping the lowest verified alpha), and
prints both verified alphas, the optimum kept, the expected welfare as a share of LP* and the
seconds of each run (they depend on the machine's load, printed before and after). With
``--alpha A`` the scaling is fixed at ``A`` (as a market or service runs it): the search stops
at the first optimum verified at ``A``, and the script counts the rounds whose outcome is
truthful in expectation (verified at ``A``) with and without it.

Usage::

    python benchmarks/bench_ls_face.py
    python benchmarks/bench_ls_face.py --families gpu --seeds 0,1,2,3,4 --rounds ""
    python benchmarks/bench_ls_face.py --alpha 1.75
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from gensolver import read_instance
from gensolver.instances import generate
from gensolver.mechanisms.lavi_swamy import lavi_swamy

SMALL = Path(__file__).resolve().parents[1] / "gensolver" / "data" / "suites" / "small"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", default="small-alibaba,small-philly,small-gpu-1,small-gpu-2")
    ap.add_argument("--families", default="gpu,trace-alibaba,trace-philly,arbitrary")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--optima", type=int, default=7)
    ap.add_argument("--alpha", type=float, default=None, help="fixed scaling (default: from each instance)")
    args = ap.parse_args(argv)
    rounds = [(n, lambda n=n: read_instance(SMALL / f"{n}.json.gz")) for n in args.rounds.split(",") if n]
    rounds += [(f"{f}:{s}", lambda f=f, s=s: generate(f, seed=int(s)))
               for f in args.families.split(",") if f for s in args.seeds.split(",")]
    print(f"load average {os.getloadavg()}")
    print(f"| round | alpha (optima=0) | alpha (optima={args.optima}) | kept | E[welfare]/LP* | s (0) | "
          f"s ({args.optima}) |")
    print("|---|---|---|---|---|---|---|")
    lower, worse, t_base, t_face, truthful = 0, 0, 0.0, 0.0, [0, 0]
    for name, load in rounds:
        inst = load()
        t0 = time.perf_counter()
        base = lavi_swamy(inst, method="auto", options={"optima": 0, "alpha": args.alpha})
        t1 = time.perf_counter()
        face = lavi_swamy(inst, method="auto", options={"optima": args.optima, "alpha": args.alpha})
        t2 = time.perf_counter()
        a0, a1 = base.details["alpha_verified"], face.details["alpha_verified"]
        kept = face.details["optimum"]
        lower += a1 < a0 - 1e-3
        truthful[0] += bool(base.details["truthful_in_expectation"])
        truthful[1] += bool(face.details["truthful_in_expectation"])
        worse += a1 > a0 + 1e-9
        t_base += t1 - t0
        t_face += t2 - t1
        print(f"| {name} | {a0:.3f} | {a1:.3f} | {kept} | {1 / face.details['alpha']:.1%} | {t1 - t0:.2f} | "
              f"{t2 - t1:.2f} |", flush=True)
    print(f"\nlower alpha (by over 0.001) on {lower} of {len(rounds)} rounds, higher on {worse}; "
          f"seconds {t_base:.1f} (optima=0) vs {t_face:.1f} (optima={args.optima})")
    if args.alpha is not None:
        print(f"truthful in expectation at alpha = {args.alpha:g}: {truthful[0]} of {len(rounds)} rounds (optima=0), "
              f"{truthful[1]} (optima={args.optima})")
    print(f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
