"""Dump the solver and mechanism results on the bundled suites as JSON, to check that a
refactoring leaves them unchanged.

Deterministic settings only (one thread, seed 0, no wall-clock limit), so two runs of the
same code print the same file::

    python scripts/results_snapshot.py --out before.json
    # ... change the code ...
    python scripts/results_snapshot.py --out after.json --compare before.json

``--compare`` exits 1 and lists the differing records when any winner set, welfare, bound,
status or payment differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gensolver.bench.suites import load_entry, load_suite
from gensolver.mechanisms import run_mechanism
from gensolver.solvers import solve

#: solver methods and their options (one thread, a fixed seed: the same answer on every run)
METHODS: dict[str, dict[str, Any]] = {
    "greedy": {},
    "lp": {},
    "cpsat": {"threads": 1},
    "highs": {"threads": 1},
    "auto": {"threads": 1, "time_limit": 5.0, "options": {"deterministic": True}},
}
#: mechanisms over CP-SAT with one thread (lavi-swamy: its greedy oracle and seed)
MECHANISMS: dict[str, dict[str, Any]] = {
    "vcg": {"threads": 1},
    "greedy-critical": {},
    "pay-as-bid": {"threads": 1},
    "core": {"threads": 1},
    "lavi-swamy": {"seed": 0},
}
#: the winner determination method of each mechanism (lavi-swamy's oracle is greedy or auto)
MECH_SOLVER = {"lavi-swamy": "greedy"}


def _alloc(a: Any) -> dict[str, Any]:
    return {"status": a.status.value, "winners": sorted(a.winners), "welfare": a.welfare, "bound": a.bound}


def snapshot(suites: list[str]) -> dict[str, Any]:
    """``{"suite/instance/solver:method": record}`` over ``suites``."""
    out: dict[str, Any] = {}
    for name in suites:
        suite = load_suite(name)
        for entry in suite.entries:
            inst = load_entry(suite, entry)
            for method, kw in METHODS.items():
                kw = dict(kw)
                a = solve(inst, method=method, seed=0, **kw)
                out[f"{name}/{entry.name}/solver:{method}"] = _alloc(a)
            for mech, opts in MECHANISMS.items():
                o = run_mechanism(inst, mechanism=mech, method=MECH_SOLVER.get(mech, "cpsat"), options=opts or None)
                rec = _alloc(o.allocation)
                rec["payments"] = dict(sorted(o.payments.items()))
                rec["exact"] = o.exact
                out[f"{name}/{entry.name}/mechanism:{mech}"] = rec
            print(f"{name}/{entry.name}", file=sys.stderr, flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suites", nargs="+", default=["smoke", "small"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--compare", type=Path, help="an earlier snapshot to compare with")
    args = p.parse_args()
    doc = snapshot(args.suites)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if args.compare is None:
        return 0
    old = json.loads(args.compare.read_text())
    diff = sorted(k for k in old.keys() | doc.keys() if old.get(k) != json.loads(json.dumps(doc.get(k))))
    print(f"{len(doc)} records, {len(diff)} differ")
    for k in diff:
        print(f"  {k}: before {old.get(k)} after {doc.get(k)}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
