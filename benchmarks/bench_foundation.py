"""Foundation benchmark: instance I/O, model build, and every method against its bare backend.

Run from the repository root::

    python benchmarks/bench_foundation.py --quick        # ~3-5 minutes on 2 cores
    python benchmarks/bench_foundation.py                # 10 s and 60 s limits (long)

Measures

1. **Read + build**: each instance is written to ``gensolver.instance/v1`` JSON in a temporary
   folder; ``read_instance`` is timed, then building ``capacity_matrix`` and ``xor_matrix``.
   Done for (a) a CATS-style 200 goods x 1000 bids instance, (b) a GPU-slot instance of about
   17,000 bids (8 GPUs x 16 steps x 60 tasks x 3 memory levels) and (c) a 100,000-bid instance.
2. **Solve**: for every registered method and each time limit, gensolver's welfare, bound and
   seconds, beside the same backend called directly (the model built with the backend's own
   API from the plain JSON document, solved with the same limit). The column ``build % of
   backend solve`` is gensolver's model-build time as a percentage of the bare backend's own
   solve time (goal: below 10 %).

Prints Markdown tables. OR-Tools' HiGHS cannot run once PuLP is imported in the process (see
``gensolver.solvers.registry``), so methods run in registry order, each on every instance, and
every PuLP-based run comes after the OR-Tools ones.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from gensolver import read_instance, solve, write_instance
from gensolver.model import Bid, Instance, Slot
from gensolver.solvers import list_methods

# ---------------------------------------------------------------------------- instances


def cats_instance(n_goods: int, n_bids: int, seed: int) -> Instance:
    """CATS ``arbitrary`` from :mod:`gensolver.instances` when present, else a small stand-in."""
    try:
        from gensolver.instances.cats import arbitrary

        return arbitrary(n_goods, n_bids, seed=seed)
    except ImportError:
        pass
    rng = np.random.default_rng(seed)
    common = rng.uniform(1, 100, n_goods)
    slots = tuple(Slot(f"g{k}", {"units": 1.0}) for k in range(n_goods))
    bids = []
    bidder = 0
    while len(bids) < n_bids:
        base = rng.choice(n_goods, int(rng.integers(1, 8)), replace=False)
        for _ in range(int(rng.integers(1, 5))):
            goods = set(base.tolist())
            if rng.random() < 0.7:
                goods.symmetric_difference_update({int(rng.integers(n_goods))})
            if not goods:
                continue
            value = float(np.round(sum(common[g] for g in goods) * rng.uniform(0.8, 1.2) + len(goods) ** 1.2, 4))
            bids.append(Bid(f"b{len(bids)}", f"d{bidder}", value, {f"g{g}": {"units": 1.0} for g in sorted(goods)}))
        bidder += 1
    return Instance(slots, tuple(bids[:n_bids]), name=f"cats-standin-{n_goods}x{n_bids}")


def gpu_instance(n_gpus: int, steps: int, n_tasks: int, seed: int) -> Instance:
    """GPU round via :class:`gensolver.model.tasks.GpuRound` (three memory levels per task)."""
    from gensolver.model.tasks import GpuRound, Task, uniform_gpus

    rng = np.random.default_rng(seed)
    gpus = uniform_gpus([80.0] * (n_gpus // 2) + [40.0] * (n_gpus - n_gpus // 2), per_node=8)
    tasks = []
    for k in range(n_tasks):
        pref = float(rng.choice([16.0, 24.0, 32.0, 40.0]))
        tasks.append(Task(
            id=f"t{k}", preferred_memory=pref, min_memory=pref / 2, duration=int(rng.integers(2, 5)),
            value=float(np.round(rng.uniform(5, 100), 3)), urgency=float(rng.uniform(0.1, 0.9)),
            elasticity=0.5, compute=float(rng.choice([0.25, 0.5, 1.0])),
        ))
    rnd = GpuRound(gpus=gpus, tasks=tuple(tasks), steps=steps, memory_levels=3, name=f"gpu-{n_gpus}x{steps}x{n_tasks}")
    return rnd.expand()


def big_instance(n_bids: int, n_slots: int, seed: int) -> Instance:
    """A 100,000-bid GPU-style instance built directly (memory + compute on 1-3 slots)."""
    rng = np.random.default_rng(seed)
    slots = tuple(Slot(f"s{k}", {"memory": 80.0, "compute": 1.0}) for k in range(n_slots))
    bids = []
    for j in range(n_bids):
        first = int(rng.integers(n_slots))
        span = int(rng.integers(1, 4))
        mem = float(rng.choice([8.0, 16.0, 24.0, 40.0]))
        demand = {f"s{(first + d) % n_slots}": {"memory": mem, "compute": 0.25} for d in range(span)}
        bids.append(Bid(f"b{j}", f"u{j // 4}", float(np.round(rng.uniform(1, 50) * span, 3)), demand))
    return Instance(slots, tuple(bids), name=f"big-{n_bids}")


def time_read_build(inst: Instance, folder: Path) -> dict[str, float]:
    path = write_instance(inst, folder / f"{inst.name or 'inst'}.json")
    t0 = time.perf_counter()
    read = read_instance(path)
    t1 = time.perf_counter()
    _ = read.capacity_matrix, read.xor_matrix
    t2 = time.perf_counter()
    return {"bids": read.n_bids, "slots": read.n_slots, "mb": path.stat().st_size / 1e6,
            "read": t1 - t0, "build": t2 - t1, "nnz": read.capacity_matrix.nnz}


# ---------------------------------------------------------------------------- bare backends
# Each builds the model from the plain JSON document (what a user of the backend would have),
# not from gensolver's matrices, and returns (welfare, bound, build_s, solve_s, status).


def _rows(doc: dict[str, Any]) -> tuple[list[tuple[float, list[tuple[int, float]]]], dict[str, list[int]], list[float]]:
    index = {}
    caps = []
    for s in doc["slots"]:
        for r, c in s["capacity"].items():
            index[(s["id"], r)] = len(caps)
            caps.append(float(c))
    rows: list[list[tuple[int, float]]] = [[] for _ in caps]
    groups: dict[str, list[int]] = {}
    values = []
    for j, b in enumerate(doc["bids"]):
        values.append(float(b["value"]))
        groups.setdefault(b["bidder"], []).append(j)
        for s, res in b["demand"].items():
            for r, q in res.items():
                if q:
                    rows[index[(s, r)]].append((j, float(q)))
    return [(caps[k], rows[k]) for k in range(len(caps)) if rows[k]], groups, values


def bare_cpsat(doc: dict[str, Any], time_limit: float, threads: int) -> tuple:
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    rows, groups, values = _rows(doc)
    m = cp_model.CpModel()
    x = [m.NewBoolVar(f"x{j}") for j in range(len(values))]
    scale = 1000
    for cap, row in rows:
        m.Add(sum(math.ceil(q * scale - 1e-9) * x[j] for j, q in row) <= math.floor(cap * scale + 1e-9))
    for cols in groups.values():
        if len(cols) > 1:
            m.AddAtMostOne([x[j] for j in cols])
    m.Maximize(sum(round(v * scale) * x[j] for j, v in enumerate(values)))
    t1 = time.perf_counter()
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = time_limit
    s.parameters.num_workers = threads
    st = s.Solve(m)
    t2 = time.perf_counter()
    ok = st in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return (s.ObjectiveValue() / scale if ok else 0.0, s.BestObjectiveBound() / scale if ok else None,
            t1 - t0, t2 - t1, s.StatusName(st))


def bare_pywraplp(backend: str) -> Callable[..., tuple]:
    def run(doc: dict[str, Any], time_limit: float, threads: int) -> tuple:
        from ortools.linear_solver import pywraplp

        t0 = time.perf_counter()
        rows, groups, values = _rows(doc)
        s = pywraplp.Solver.CreateSolver(backend)
        inf = s.infinity()
        x = [s.BoolVar(f"x{j}") for j in range(len(values))]
        for cap, row in rows:
            ct = s.RowConstraint(-inf, cap, "")
            for j, q in row:
                ct.SetCoefficient(x[j], q)
        for cols in groups.values():
            if len(cols) > 1:
                ct = s.RowConstraint(-inf, 1.0, "")
                for j in cols:
                    ct.SetCoefficient(x[j], 1.0)
        obj = s.Objective()
        for j, v in enumerate(values):
            obj.SetCoefficient(x[j], v)
        obj.SetMaximization()
        s.SetTimeLimit(int(time_limit * 1000))
        s.SetNumThreads(threads)
        t1 = time.perf_counter()
        st = s.Solve()
        t2 = time.perf_counter()
        ok = st in (s.OPTIMAL, s.FEASIBLE)
        return (obj.Value() if ok else 0.0, obj.BestBound() if ok else None, t1 - t0, t2 - t1, str(st))

    return run


def bare_pulp(which: str) -> Callable[..., tuple]:
    def run(doc: dict[str, Any], time_limit: float, threads: int) -> tuple:
        import pulp

        t0 = time.perf_counter()
        rows, groups, values = _rows(doc)
        prob = pulp.LpProblem("wdp", pulp.LpMaximize)
        x = [pulp.LpVariable(f"x{j}", cat=pulp.LpBinary) for j in range(len(values))]
        prob += pulp.lpSum(v * x[j] for j, v in enumerate(values))
        for k, (cap, row) in enumerate(rows):
            prob += pulp.lpSum(q * x[j] for j, q in row) <= cap, f"c{k}"
        for k, cols in enumerate(c for c in groups.values() if len(c) > 1):
            prob += pulp.lpSum(x[j] for j in cols) <= 1, f"x{k}"
        solver = (pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, threads=threads) if which == "cbc"
                  else pulp.HiGHS(msg=False, timeLimit=time_limit, threads=threads))
        t1 = time.perf_counter()
        prob.solve(solver)
        t2 = time.perf_counter()
        welfare = sum(values[j] for j, v in enumerate(x) if (v.varValue or 0) > 0.5)
        return welfare, None, t1 - t0, t2 - t1, pulp.LpSolution.get(prob.sol_status, str(prob.sol_status))

    return run


BARE: dict[str, Callable[..., tuple]] = {
    "cpsat": bare_cpsat,
    "scip": bare_pywraplp("SCIP"),
    "highs": bare_pywraplp("HIGHS"),
    "cbc": bare_pywraplp("CBC"),
    "pulp-cbc": bare_pulp("cbc"),
    "pulp-highs": bare_pulp("highs"),
}


# ---------------------------------------------------------------------------- main


def fmt(x: float | None, spec: str = ".6g") -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short limits (1 s, 3 s) and a smaller big instance")
    ap.add_argument("--limits", type=float, nargs="+", help="time limits in seconds (default 10 60; quick: 1 3)")
    ap.add_argument("--methods", nargs="+", help="methods to run (default: all available)")
    ap.add_argument("--threads", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-bare", action="store_true", help="skip the bare-backend runs")
    args = ap.parse_args(argv)
    limits = args.limits or ([1.0, 3.0] if args.quick else [10.0, 60.0])
    big_n = 100_000

    print(f"# gensolver foundation benchmark ({'quick' if args.quick else 'full'}; limits {limits} s; "
          f"threads {args.threads}; python {sys.version.split()[0]})\n")
    instances = {
        "cats-200x1000": cats_instance(200, 1000, args.seed),
        "gpu-8x16x60": gpu_instance(8, 16, 60, args.seed),
    }
    print("## Read + build\n")
    print("| instance | bids | slots | nnz | JSON MB | read_instance s | build matrices s | total s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        rows = list(instances.items()) + [(f"big-{big_n}", big_instance(big_n, 128, args.seed))]
        for name, inst in rows:
            r = time_read_build(inst, Path(tmp))
            print(f"| {name} | {r['bids']} | {r['slots']} | {r['nnz']} | {r['mb']:.1f} | {r['read']:.3f} | "
                  f"{r['build']:.3f} | {r['read'] + r['build']:.3f} |", flush=True)
    print()

    methods = [m for m in list_methods() if not args.methods or m.name in args.methods]
    print("## Solve: gensolver vs the bare backend\n")
    print("| instance | method | limit s | status | welfare | bound | gap % | gensolver build s | solve s | total s "
          "| bare welfare | bare bound | bare build s | bare solve s | build % of backend solve |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in methods:
        for name, inst in instances.items():
            doc = inst.to_dict()
            for limit in limits:
                ok, why = m.available()
                if not ok:
                    print(f"| {name} | {m.name} | {limit:g} | unavailable: {why[:60]} |" + " |" * 11, flush=True)
                    continue
                fresh = Instance(inst.slots, inst.bids, inst.bidders, inst.name, inst.metadata)  # cold caches
                res = solve(fresh, method=m.name, time_limit=limit, threads=args.threads)
                bare = BARE.get(m.name) if not args.no_bare else None
                if bare is not None:
                    bw, bb, bbuild, bsolve, _ = bare(doc, limit, args.threads)
                    pct = 100.0 * res.seconds.build / bsolve if bsolve > 0 else None
                else:
                    bw = bb = bbuild = bsolve = pct = None
                gap = None if res.gap is None else 100 * res.gap
                print(f"| {name} | {m.name} | {limit:g} | {res.status.value} | {fmt(res.welfare)} | {fmt(res.bound)} | "
                      f"{fmt(gap, '.3f')} | {res.seconds.build:.3f} | {res.seconds.solve:.3f} | {res.seconds.total:.3f} | "
                      f"{fmt(bw)} | {fmt(bb)} | {fmt(bbuild, '.3f')} | {fmt(bsolve, '.3f')} | {fmt(pct, '.1f')} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
