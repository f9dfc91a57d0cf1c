"""Anytime ``auto`` at market-round speed (issue 19): the goals side by side in one run.

Rows:

- ``gpu-8x16x60`` at 2 s and ``gpu-16x24x150`` (about 110,000 bids) at 10 s: ``auto``'s
  welfare, its percentage of the best welfare known, and its certified gap
  (``(bound - welfare) / bound``), in wall-clock mode and in deterministic mode with the same
  number as its budget of work units, side by side with their *elapsed* seconds (the
  deterministic run is compared with a wall run given exactly the deterministic run's elapsed
  time, so "within 1 % at equal elapsed time" is read off one row);
- ``warm 5 %``: a round re-solved after 5 % of its tasks change (half of them leave and are
  replaced by new tasks, half change their values by a factor in [0.5, 2]): the time ``auto``
  from scratch needs to reach its own final welfare, against the time the warm start
  (:class:`gensolver.solvers.anytime.IncrementalSolver`, seeded with the previous round's
  answer) needs to reach the same welfare. ``round 2``: the previous round was the market's
  first (solved cold, same budget); ``round 5`` (``--chain 3``): three warm-started rounds,
  each 5 % changed, came before it, as in a market that has been clearing for a while;
- with ``--cats``: every CATS family at about 256 goods x 2,000 bids (``--cats-families``),
  ``auto`` against the raw backends (from ``bench_anytime.py``) at 60 s, welfare and bound;
- with ``--compact``: 32 GPUs x 32 steps x 400 tasks from the compact form
  (:func:`gensolver.solvers.auto.solve_round`, no bids materialised) at 60 s, in a fresh
  process whose peak RSS is reported.

Before the timed runs of an instance, one untimed 1-s solve loads the solver libraries (their
import time is not the round's). ``--wall-repeats N`` repeats the wall-clock run N times: on
a shared machine one run says little about the next.

The **best known** welfare is, unless given with ``--best-known NAME=VALUE``, the best of every
run this script makes on the instance *and* of a reference run of ``auto`` with
``--reference-factor`` times the largest budget (default 5 x). Issue 19 quotes CP-SAT at 10
minutes as its reference; pass such values with ``--best-known`` to compare on that footing.

Every time is given twice: wall seconds and this process's CPU seconds
(``time.process_time``, solver threads included); on a shared, loaded machine the wall
figure is inflated and the CPU figure is the fairer one.

Usage::

    python benchmarks/bench_round_speed.py --quick      # small instances, short limits (< 1 min)
    python benchmarks/bench_round_speed.py              # the issue's instances and budgets
    python benchmarks/bench_round_speed.py --cats       # adds the CATS 256x2000 comparison (long)
    python benchmarks/bench_round_speed.py --compact --warm-only --chain   # only 32x32x400
    python benchmarks/bench_round_speed.py --best-known gpu-8x16x60=12345.6
    python benchmarks/bench_round_speed.py --warm-only --chain 0 3 --repeats 3   # warm/cold rows only
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Any, Callable

import numpy as np

from gensolver import solve
from gensolver.model import Instance
from gensolver.solvers.anytime import IncrementalSolver

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_anytime import RAW, gpu  # noqa: E402

INSTANCES: dict[str, tuple[Callable[[], Any], float]] = {  # name -> (maker, budget in seconds)
    "gpu-8x16x60": (lambda: gpu(8, 16, 60, 4), 2.0),
    "gpu-16x24x150": (lambda: gpu(16, 24, 150, 6), 10.0),
}
QUICK: dict[str, tuple[Callable[[], Any], float]] = {
    "gpu-4x8x20": (lambda: gpu(4, 8, 20, 3), 1.0),
    "gpu-8x12x40": (lambda: gpu(8, 12, 40, 4), 2.0),
}


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def _gap(res: Any) -> float | None:
    return res.gap


def perturb(inst: Instance, frac: float, seed: int) -> Instance:
    """The next round: ``frac`` of the tasks change. Half of them leave and as many new tasks
    (the bids of leaving tasks, values re-drawn, under new ids) arrive; the other half change
    every bid's value by one factor in [0.5, 2] (their bids keep their ids)."""
    rng = np.random.default_rng(seed)
    bidders = sorted({b.bidder for b in inst.bids})
    k = max(2, int(round(frac * len(bidders))))
    picked = rng.choice(len(bidders), size=k, replace=False)
    leave = {bidders[i] for i in picked[: k // 2]}
    change = {bidders[i]: float(rng.uniform(0.5, 2.0)) for i in picked[k // 2:]}
    bids = []
    for b in inst.bids:
        if b.bidder in leave:
            f = float(rng.uniform(0.5, 2.0))
            bids.append(dataclasses.replace(b, id=f"new-{b.id}", bidder=f"new-{b.bidder}", value=b.value * f))
        elif b.bidder in change:
            bids.append(dataclasses.replace(b, value=b.value * change[b.bidder]))
        else:
            bids.append(b)
    return dataclasses.replace(inst, bids=tuple(bids), bidders=(), name=f"{inst.name}+{frac:.0%}")


def time_to(trace: list[tuple[float, float]], target: float, build: float) -> float | None:
    """Seconds (the build included) until the incumbent first reached ``target``."""
    for t, w in trace:
        if w >= target - 1e-9 * max(1.0, abs(target)):
            return build + t
    return None


def goal_rows(name: str, inst: Instance, budget: float, ref_factor: float, best_known: float | None,
              seed: int, wall_repeats: int = 1) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    solve(inst, method="auto", time_limit=min(budget, 1.0), seed=seed)  # imports and caches: not timed
    walls = [_timed(lambda: solve(inst, method="auto", time_limit=budget, seed=seed)) for _ in range(wall_repeats)]
    wall, ws, cs = walls[0]
    det, ds, dc = _timed(lambda: solve(inst, method="auto", time_limit=budget, seed=seed,
                                       options={"deterministic": True}))
    # the wall mode at the deterministic run's elapsed time
    eq, es, ec = _timed(lambda: solve(inst, method="auto", time_limit=ds, seed=seed))
    runs = [("auto wall" + (f" #{k + 1}" if wall_repeats > 1 else ""), budget, *walls[k]) for k in range(wall_repeats)]
    runs += [("auto deterministic", budget, det, ds, dc), ("auto wall @ det elapsed", round(ds, 2), eq, es, ec)]
    ref_w, ref_note = best_known, "given (--best-known)"
    if best_known is None:
        ref, rs, rc = _timed(lambda: solve(inst, method="auto", time_limit=ref_factor * budget, seed=seed))
        runs.append((f"auto reference ({ref_factor:g}x)", ref_factor * budget, ref, rs, rc))
        ref_w = max(r[2].welfare for r in runs)
        ref_note = f"best of these runs, incl. auto at {ref_factor * budget:g} s"
    for label, b, res, s, c in runs:
        rows.append({"instance": name, "bids": inst.n_bids, "run": label, "budget": b, "welfare": res.welfare,
                     "pct_best": 100 * res.welfare / ref_w if ref_w else None, "gap": _gap(res),
                     "bound": res.bound, "wall_s": s, "cpu_s": c, "best_known": ref_w, "reference": ref_note})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def warm_rows(name: str, inst: Instance, budget: float, frac: float, seed: int, chain: int,
              repeat: int = 0) -> list[dict[str, Any]]:
    inc = IncrementalSolver(time_limit=budget, seed=seed)
    inc.solve(inst)  # the market's first round: cold
    base = 1000 * (1000 * seed + repeat)  # each repeat draws other changes
    for k in range(chain):  # rounds before the measured one, each warm-started from the last
        inst = perturb(inst, frac, base + k + 1)
        inc.solve(inst)
    nxt = perturb(inst, frac, base)
    # from scratch: a fresh solver's first round is exactly solve(method="auto") (with its trace)
    cold, cs, cc = _timed(lambda: IncrementalSolver(time_limit=budget, seed=seed).solve(nxt))
    target = cold.welfare
    t_cold = time_to(cold.details["trace"], target, cold.seconds.build)
    warm, ws, wc = _timed(lambda: inc.solve(nxt))
    t_warm = time_to(warm.details["trace"], target, warm.seconds.build)
    row = {"instance": name, "bids": nxt.n_bids, "run": f"warm {frac:.0%} changed, round {chain + 2}", "budget": budget,
           "target_welfare": target, "cold_welfare": cold.welfare, "warm_welfare": warm.welfare,
           "cold_to_target_s": t_cold, "warm_to_target_s": t_warm,
           "speedup": (t_cold / t_warm) if t_cold and t_warm else None,
           "cold_wall_s": cs, "cold_cpu_s": cc, "warm_wall_s": ws, "warm_cpu_s": wc, "repeat": repeat}
    print(json.dumps(row), flush=True)
    return [row]


#: CATS families at about 256 goods x 2,000 bids (paths: 86 cities x edge density 3 = 258 links)
CATS_FAMILIES: dict[str, Callable[[], Any]] = {
    "arbitrary": lambda: _cats("arbitrary", 256, 2000),
    "regions": lambda: _cats("regions", 256, 2000),
    "paths": lambda: _cats("paths", 86, 2000),
    "matching": lambda: _cats("matching", 256, 2000),
    "scheduling": lambda: _cats("scheduling", 256, 2000),
}


def _cats(family: str, n: int, bids: int) -> Instance:
    from gensolver.instances import cats

    return getattr(cats, family)(n, bids, seed=1)


def cats_rows(budget: float, families: list[str]) -> list[dict[str, Any]]:
    rows = []
    for fam in families:
        inst = CATS_FAMILIES[fam]()
        name = f"cats-{fam}-{len(inst.slots)}x{inst.n_bids}"
        res, s, c = _timed(lambda inst=inst: solve(inst, method="auto", time_limit=budget))
        rows.append({"instance": name, "run": "auto", "budget": budget, "welfare": res.welfare,
                     "bound": res.bound, "gap": res.gap, "wall_s": s, "cpu_s": c})
        print(json.dumps(rows[-1]), flush=True)
        for backend, fn in RAW.items():
            (w, bd, _secs), s, c = _timed(lambda fn=fn, inst=inst: fn(inst, budget))
            rows.append({"instance": name, "run": f"raw {backend}", "budget": budget, "welfare": w,
                         "bound": bd, "gap": (bd - w) / bd if bd else None, "wall_s": s, "cpu_s": c})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _compact_child(spec: tuple[int, int, int, int], budget: float, out: Any) -> None:
    import resource

    from gensolver.solvers.auto import solve_round

    g, s, t, d = spec
    res, ws, cs = _timed(lambda: solve_round(gpu(g, s, t, d), time_limit=budget))
    out.put({"welfare": res.welfare, "bound": res.bound, "gap": res.gap, "wall_s": ws, "cpu_s": cs,
             "columns": res.details.get("columns"),
             "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def compact_rows(budget: float) -> list[dict[str, Any]]:
    """32 GPUs x 32 steps x 400 tasks from the compact form, in a fresh process (its own peak RSS)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_compact_child, args=((32, 32, 400, 8), budget, q))
    proc.start()
    row = {"instance": "gpu-32x32x400 (compact)", "run": "auto", "budget": budget, **q.get()}
    proc.join()
    print(json.dumps(row), flush=True)
    return [row]


def _f(v: Any, fmt: str) -> str:
    return "—" if v is None else format(v, fmt)


def tables(goals: list[dict[str, Any]], warm: list[dict[str, Any]], cats: list[dict[str, Any]],
           compact: list[dict[str, Any]] | None = None) -> str:
    out = ["| instance | bids | run | budget | welfare | % of best known | certified gap | wall s | CPU s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in goals:
        out.append(f"| {r['instance']} | {r['bids']} | {r['run']} | {r['budget']:g} | {r['welfare']:.1f} "
                   f"| {_f(r['pct_best'], '.2f')} | {_f(None if r['gap'] is None else 100 * r['gap'], '.2f')} % "
                   f"| {r['wall_s']:.2f} | {r['cpu_s']:.2f} |")
    refs = {r["instance"]: (r["best_known"], r["reference"]) for r in goals}
    out += [f"best known {k}: {v:.1f} ({note})" for k, (v, note) in refs.items()]
    out += ["", "| instance | bids | change | budget | target (cold final) | warm final | cold s to target "
                "| warm s to target | speed-up | cold wall/CPU s | warm wall/CPU s |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in warm:
        out.append(f"| {r['instance']} | {r['bids']} | {r['run']} | {r['budget']:g} | {r['target_welfare']:.1f} "
                   f"| {r['warm_welfare']:.1f} | {_f(r['cold_to_target_s'], '.3f')} | {_f(r['warm_to_target_s'], '.3f')} "
                   f"| {_f(r['speedup'], '.1f')}x | {r['cold_wall_s']:.2f}/{r['cold_cpu_s']:.2f} "
                   f"| {r['warm_wall_s']:.2f}/{r['warm_cpu_s']:.2f} |")
    kinds = sorted({(r["instance"], r["run"]) for r in warm})
    for inst_name, run in kinds:
        sp = [r["speedup"] if r["speedup"] is not None else 0.0 for r in warm
              if (r["instance"], r["run"]) == (inst_name, run)]
        if len(sp) > 1:
            out.append(f"median speed-up {inst_name}, {run}: {float(np.median(sp)):.1f}x over {len(sp)} "
                       f"(min {min(sp):.1f}x, max {max(sp):.1f}x; 0 = the warm start never reached the target)")
    if compact:
        out += ["", "| instance | columns | budget | welfare | bound | certified gap | peak RSS MiB | wall s | CPU s |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in compact:
            out.append(f"| {r['instance']} | {r['columns']} | {r['budget']:g} | {r['welfare']:.1f} | {r['bound']:.1f} "
                       f"| {_f(None if r['gap'] is None else 100 * r['gap'], '.2f')} % | {r['peak_mib']:.0f} "
                       f"| {r['wall_s']:.1f} | {r['cpu_s']:.1f} |")
    if cats:
        out += ["", "| instance | run | budget | welfare | bound | gap | wall s | CPU s |", "|---|---|---|---|---|---|---|---|"]
        for r in cats:
            out.append(f"| {r['instance']} | {r['run']} | {r['budget']:g} | {r['welfare']:.1f} | {_f(r['bound'], '.1f')} "
                       f"| {_f(None if r['gap'] is None else 100 * r['gap'], '.2f')} % | {r['wall_s']:.1f} "
                       f"| {r['cpu_s']:.1f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small instances, short limits (under a minute)")
    ap.add_argument("--cats", action="store_true", help="add CATS arbitrary 256x2000 vs raw backends (long)")
    ap.add_argument("--cats-budget", type=float, default=60.0)
    ap.add_argument("--cats-families", nargs="+", choices=list(CATS_FAMILIES), default=list(CATS_FAMILIES))
    ap.add_argument("--compact", action="store_true", help="add 32x32x400 from the compact form (peak RSS)")
    ap.add_argument("--compact-budget", type=float, default=60.0)
    ap.add_argument("--best-known", nargs="*", default=[], metavar="NAME=VALUE",
                    help="reference welfare per instance (else: auto run --reference-factor x longer)")
    ap.add_argument("--reference-factor", type=float, default=5.0)
    ap.add_argument("--change", type=float, default=0.05, help="fraction of tasks changed for the warm rows")
    ap.add_argument("--chain", type=int, nargs="*", default=[0, 3],
                    help="warm-started rounds before the measured one (0: round 2 of the market)")
    ap.add_argument("--instances", nargs="+", choices=list(INSTANCES) + list(QUICK), help="a subset of the instances")
    ap.add_argument("--repeats", type=int, default=1, help="warm/cold pairs per row kind (other changes each)")
    ap.add_argument("--warm-only", action="store_true", help="only the warm-start rows")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wall-repeats", type=int, default=1,
                    help="wall-clock runs per instance (the same seed: only timing differs between them)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    known = {k: float(v) for k, v in (kv.split("=", 1) for kv in args.best_known)}
    cases = QUICK if args.quick else INSTANCES
    if args.instances:
        cases = {k: v for k, v in cases.items() if k in args.instances}
    ref_factor = 2.0 if args.quick else args.reference_factor
    goals, warm = [], []
    for name, (make, budget) in cases.items():
        made = make()
        inst = made.expand() if hasattr(made, "expand") else made
        if not args.warm_only:
            goals += goal_rows(name, inst, budget, ref_factor, known.get(name), args.seed, args.wall_repeats)
        for chain in args.chain:
            for rep in range(args.repeats):
                warm += warm_rows(name, inst, budget, args.change, args.seed, chain, rep)
    cats = cats_rows(args.cats_budget, args.cats_families) if args.cats else []
    compact = compact_rows(args.compact_budget) if args.compact else []
    print()
    print(f"machine: {os.cpu_count()} CPUs (shared: see the load average {os.getloadavg()[0]:.1f}); "
          f"python {sys.version.split()[0]}")
    print(tables(goals, warm, cats, compact))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"goals": goals, "warm": warm, "cats": cats, "compact": compact}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
