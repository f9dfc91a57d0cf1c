"""Anytime ``auto`` versus the raw MILP/CP backends, side by side in one run (issue 7).

For each instance and time budget it prints the welfare of ``gensolver.solve(method="auto")``
beside each backend called *directly* (the model built with the backend's own API from the
same data, no gensolver code in the solve), their ratio, and ``auto``'s certified gap.

Usage::

    python benchmarks/bench_anytime.py                 # budgets 1, 10, 60 s; all instances
    python benchmarks/bench_anytime.py --quick         # budgets 1, 5 s; small instances only
    python benchmarks/bench_anytime.py --budgets 10 --instances gpu-8x16x60 --backends scip

Instances (seeded, generated on the fly):

- ``gpu-8x16x60``   8 GPUs x 16 steps x 60 tasks, 3 memory levels (about 15,000 bids)
- ``gpu-16x24x150`` 16 GPUs x 24 steps x 150 tasks (about 110,000 bids)
- ``gpu-32x32x400`` 32 x 32 x 400 from the compact form only (about 820,000 bundles; no raw
  backend can be given the expanded model in reasonable memory, so only ``auto`` runs; peak
  memory is measured in a child process)
- ``cats-arbitrary-200x1000``, ``cats-arbitrary-300x1500``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import time
from typing import Any, Callable

import numpy as np

from gensolver import solve
from gensolver.instances.cats import arbitrary
from gensolver.instances.gpu import gpu_round
from gensolver.model import Instance
from gensolver.solvers.auto import solve_round


def gpu(n_gpus: int, steps: int, n_tasks: int, max_duration: int, seed: int = 1):
    return gpu_round(n_gpus=n_gpus, steps=steps, n_tasks=n_tasks, memory_levels=3, max_duration=max_duration,
                     seed=seed, per_node=8, deadline_prob=0.0, gang_prob=0.0, name=f"gpu-{n_gpus}x{steps}x{n_tasks}")


INSTANCES: dict[str, Callable[[], Any]] = {
    "gpu-8x16x60": lambda: gpu(8, 16, 60, 4),
    "gpu-16x24x150": lambda: gpu(16, 24, 150, 6),
    "gpu-32x32x400": lambda: gpu(32, 32, 400, 8),
    "cats-arbitrary-200x1000": lambda: arbitrary(200, 1000, seed=1),
    "cats-arbitrary-300x1500": lambda: arbitrary(300, 1500, seed=1),
}
COMPACT_ONLY = {"gpu-32x32x400"}


# --------------------------------------------------------------------------- raw backends
def raw_pywraplp(inst: Instance, backend: str, time_limit: float) -> tuple[float, float | None, float]:
    """Build the MILP with pywraplp's own API and solve it; returns (welfare, bound, seconds)."""
    from ortools.linear_solver import pywraplp

    t0 = time.perf_counter()
    s = pywraplp.Solver.CreateSolver(backend)
    x = {b.id: s.BoolVar(b.id) for b in inst.bids}
    rows: dict[tuple[str, str], list] = {}
    groups: dict[str, list] = {}
    for b in inst.bids:
        groups.setdefault(b.bidder, []).append(x[b.id])
        for slot, res in b.demand.items():
            for r, q in res.items():
                rows.setdefault((slot, r), []).append((x[b.id], q))
    caps = {(sl.id, r): c for sl in inst.slots for r, c in sl.capacity.items()}
    for key, terms in rows.items():
        ct = s.RowConstraint(-s.infinity(), caps[key], "")
        for var, q in terms:
            ct.SetCoefficient(var, q)
    for vars_ in groups.values():
        if len(vars_) > 1:
            ct = s.RowConstraint(-s.infinity(), 1, "")
            for var in vars_:
                ct.SetCoefficient(var, 1)
    obj = s.Objective()
    for b in inst.bids:
        obj.SetCoefficient(x[b.id], b.value)
    obj.SetMaximization()
    s.SetTimeLimit(int(time_limit * 1000))
    st = s.Solve()
    secs = time.perf_counter() - t0
    if st not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        return 0.0, None, secs
    w = sum(b.value for b in inst.bids if x[b.id].solution_value() > 0.5)
    return w, obj.BestBound(), secs


def raw_cpsat(inst: Instance, time_limit: float) -> tuple[float, float | None, float]:
    """CP-SAT with its own API (values and demands scaled to integers by 1000, rounded)."""
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    m = cp_model.CpModel()
    x = {b.id: m.NewBoolVar(b.id) for b in inst.bids}
    rows: dict[tuple[str, str], list] = {}
    groups: dict[str, list] = {}
    for b in inst.bids:
        groups.setdefault(b.bidder, []).append(x[b.id])
        for slot, res in b.demand.items():
            for r, q in res.items():
                rows.setdefault((slot, r), []).append((x[b.id], int(np.ceil(q * 1000 - 1e-9))))
    caps = {(sl.id, r): int(np.floor(c * 1000 + 1e-9)) for sl in inst.slots for r, c in sl.capacity.items()}
    for key, terms in rows.items():
        m.Add(sum(q * v for v, q in terms) <= caps[key])
    for vars_ in groups.values():
        if len(vars_) > 1:
            m.AddAtMostOne(vars_)
    m.Maximize(sum(int(round(b.value * 1000)) * x[b.id] for b in inst.bids))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = os.cpu_count() or 1
    st = solver.Solve(m)
    secs = time.perf_counter() - t0
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return 0.0, None, secs
    w = sum(b.value for b in inst.bids if solver.BooleanValue(x[b.id]))
    return w, solver.BestObjectiveBound() / 1000, secs


RAW = {
    "cpsat": raw_cpsat,
    "scip": lambda inst, tl: raw_pywraplp(inst, "SCIP", tl),
    "highs": lambda inst, tl: raw_pywraplp(inst, "HIGHS", tl),
}


def _peak_mb() -> float:
    """This process's peak resident memory in MB.

    ``VmHWM`` from ``/proc/self/status`` where it exists: ``ru_maxrss`` survives ``exec`` on
    Linux, so in a spawned child it would report the *parent's* peak at fork time.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _compact_child(name: str, budget: float, q: Any) -> None:
    rnd = INSTANCES[name]()
    t0 = time.perf_counter()
    res = solve_round(rnd, time_limit=budget)
    secs = time.perf_counter() - t0
    build = res.seconds.build
    peak_mb = _peak_mb()
    q.put({"welfare": res.welfare, "bound": res.bound, "gap": res.gap, "seconds": secs, "build": build,
           "peak_mb": peak_mb, "columns": res.details.get("columns")})


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for name in args.instances:
        for budget in args.budgets:
            if name in COMPACT_ONLY:
                q: Any = mp.get_context("spawn").Queue()
                p = mp.get_context("spawn").Process(target=_compact_child, args=(name, budget, q))
                p.start()
                out = q.get()
                p.join()
                rows.append({"instance": name, "budget": budget, "method": "auto (compact)", **out})
                print(json.dumps(rows[-1]), flush=True)
                continue
            made = INSTANCES[name]()
            inst = made.expand() if hasattr(made, "expand") else made
            t0 = time.perf_counter()
            res = solve(inst, method="auto", time_limit=budget)
            auto_secs = time.perf_counter() - t0
            row = {"instance": name, "bids": inst.n_bids, "budget": budget, "method": "auto", "welfare": res.welfare,
                   "bound": res.bound, "gap": res.gap, "seconds": auto_secs, "build": res.seconds.build}
            rows.append(row)
            print(json.dumps(row), flush=True)
            for backend in args.backends:
                w, bd, secs = RAW[backend](inst, budget)
                row = {"instance": name, "bids": inst.n_bids, "budget": budget, "method": f"raw {backend}", "welfare": w,
                       "bound": bd, "seconds": secs, "auto_ratio": (res.welfare / w) if w > 0 else float("inf")}
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| instance | budget s | method | welfare | bound | auto gap | auto / raw | seconds |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        gap = f"{100 * r['gap']:.2f} %" if r.get("gap") is not None else ""
        ratio = f"{r['auto_ratio']:.3f}" if "auto_ratio" in r and np.isfinite(r["auto_ratio"]) else ("inf" if "auto_ratio" in r else "")
        bound = f"{r['bound']:.1f}" if r.get("bound") is not None else "—"
        extra = f" (peak {r['peak_mb']:.0f} MB, build {r['build']:.1f} s)" if "peak_mb" in r else ""
        out.append(f"| {r['instance']} | {r['budget']:g} | {r['method']}{extra} | {r['welfare']:.1f} | {bound} | {gap} "
                   f"| {ratio} | {r['seconds']:.1f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="budgets 1 and 5 s on the two smaller instances")
    ap.add_argument("--budgets", type=float, nargs="+", default=[1.0, 10.0, 60.0])
    ap.add_argument("--instances", nargs="+", default=list(INSTANCES), choices=list(INSTANCES))
    ap.add_argument("--backends", nargs="+", default=list(RAW), choices=list(RAW))
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    if args.quick:
        args.budgets = [1.0, 5.0]
        args.instances = ["gpu-8x16x60", "cats-arbitrary-200x1000"]
    rows = run(args)
    print()
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    print(table(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
