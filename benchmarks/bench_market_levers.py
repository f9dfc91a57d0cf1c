"""What drives the market's average JCT? An ablation of every lever, against finish-time fairness.

Issue 27 asks the one market engine for an average JCT at most 0.85x finish-time-fair's (FTF)
under overload (12 and 28 GPUs, arrivals x16). This script measures each lever of
:class:`gensolver.market.engine.CreditEngine` on its own, on the same workloads as
``benchmarks/bench_market.py`` (the bundled Alibaba 2023 list and synthetic workloads of 300
tasks, 30% with deadlines; seed ``k > 0`` jitters the Alibaba arrivals and draws a new
synthetic workload), and prints, per configuration and workload, the mean over seeds of

- ``jct/ftf``: average JCT over finished-time-fair's (every run finishes every task; the
  ``done`` column says so);
- for FTF itself, two facts that bound what any order can win: ``dur/jct``, the share of the
  average JCT that is the tasks' own durations (no schedule runs a task faster than speed 1,
  so only the rest, the waiting, can shrink), and ``busy``, the compute in use while one-GPU
  tasks wait (capacity that packing leaves idle; ``1.0`` would be perfect packing).

Levers (policy specs as in ``bench_market.py``: ``market:KEY=VALUE+KEY=VALUE``; ``lease=N`` is
the simulator's round length, not an engine option), each on the engine's defaults (Smith's
rule ``smith=1``, ``credit_power=0.25``): the earlier rules (``smith=0``, full credit power;
the solver clearing's 0.5), Smith's exponent (``smith``), pure shortest-remaining-first
(``rho_power=0+smith=4``), no credits (``credit_power=0``), the solver clearing with memory
levels (``levels``: the elastic speed model, more tasks at lower memory) and a larger stay
bonus, preferred-memory backfill only, and rounds of 1 step (preemption at every arrival).

Relaxations of the trace itself (what-if rows, not engine options; the ratio is still over
FTF on the *unrelaxed* trace): ``preemptible=all`` makes every task preemptible (reports and
truths), ``checkpoint=0`` makes a preemption free (the simulator's ``checkpoint_steps``).
The last default row, pure shortest-remaining-first on the trace with every task preemptible,
rounds of 1 step and free preemption, shows how much of the gap to 0.85x FTF any order of
the queue could close when nothing is pinned: on the Alibaba list it is 0.861x FTF at 12 GPUs
x16 and 0.857x at 28 GPUs x16 (mean of 6 seeds; the default market 0.914x at both, pure
shortest-remaining-first on the real trace 0.930x and 0.910x), so the non-preemptible pods and
the lease, not the order of the queue, hold the market at about 0.91x there. ``dur/jct``
says why the margin is thin: the tasks' own durations are 64% of FTF's average JCT at 28 GPUs,
so 0.85x means cutting FTF's waiting by 42%.

A random search (``--sweep N``) asks the same question of the real trace from the other side:
``N`` distinct combinations of the engine's levers and the lease, drawn from :data:`SPACE` with
a seeded generator (``--sweep-seed``; the default engine first), each run on every seed, and
the ``--top`` best printed by their mean ratio over the configurations. The best of a search is
chosen on the seeds it reports, so it flatters itself: it says what the levers can reach at
most, not a setting to ship.

Run: ``python benchmarks/bench_market_levers.py`` (``--seeds 3``, ``--configs 2x16,4x16``,
``--levers market,market:smith=1``, ``--workload alibaba``; ``--sweep 150`` for the random
search).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_market import _configs, policy_spec, show, workloads  # noqa: E402

from gensolver.sim import simulate  # noqa: E402

#: the engine's default (``market``), the earlier rules, then one lever at a time on the default
LEVERS = ("market", "market:smith=0+credit_power=1", "market:clearing=solver+smith=0+credit_power=0.5",
          "market:smith=0.5", "market:smith=2", "market:rho_power=0+smith=4", "market:credit_power=0",
          "market:clearing=solver", "market:clearing=solver+levels=3", "market:clearing=solver+stay_bonus=0.3",
          "market:backfill=preferred", "market:lease=1",
          "market:rho_power=0+smith=8+credit_power=0+preemptible=all+lease=1+checkpoint=0")


#: the random search's space (``--sweep``): engine options and the simulator's ``lease``; the
#: trace itself is never relaxed here
SPACE: dict[str, tuple] = {
    "smith": (0, 0.5, 1, 2, 4),
    "rho_power": (0, 0.5, 1, 2),
    "credit_power": (0, 0.25, 1),
    "backfill": ("elastic", "preferred"),
    "lease": (2, 3, 5, 8),
    "keep": (0, 0.5, 2),
    "steer": ("true", "false"),
    "tail": (0, 0.5, 2),
    "clearing": ("greedy", "solver"),
    "reserve": ("inf", 0.5, 2),
}


def sample_specs(n: int, *, seed: int = 7) -> list[str]:
    """``n`` distinct policy specs: the default ``market`` first, then lever combinations
    drawn uniformly from :data:`SPACE` (a deterministic function of ``n`` and ``seed``).

    >>> sample_specs(1)
    ['market']
    >>> sample_specs(3) == sample_specs(3) and len(set(sample_specs(3))) == 3
    True
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    size = int(np.prod([len(v) for v in SPACE.values()]))
    if n > size + 1:
        raise ValueError(f"n must be at most {size + 1} (the space's size and the default), got {n}")
    rng = random.Random(seed)
    specs = ["market"]
    while len(specs) < n:
        spec = "market:" + "+".join(f"{k}={rng.choice(v)}" for k, v in SPACE.items())
        if spec not in specs:
            specs.append(spec)
    return specs


def busy_while_waiting(result, w) -> float:
    """Mean compute in use (fraction of the GPUs' compute) over the steps at which some
    one-GPU task of workload ``w`` waits (a gang waiting for a whole node does not count), from
    the event log alone."""
    gpus = len(w.gpus)
    single = {t.id for t in w.tasks if t.gpus == 1}
    events = [e.to_dict() for e in result.events]
    horizon = int(max(e["time"] for e in events)) + 2
    compute, waiting = np.zeros(horizon), np.zeros(horizon)
    running: dict[str, tuple[int, float]] = {}
    for e in events:
        t = int(e["time"])
        one = e["task"] in single
        if e["kind"] == "arrive":
            waiting[t:] += one
        elif e["kind"] == "start":
            running[e["task"]] = (t, e["compute"] * len(e["gpus"]))
            waiting[t:] -= one
        elif e["kind"] in ("stop", "finish"):
            t0, c = running.pop(e["task"])
            compute[t0:t] += c
            if e["kind"] == "stop":
                waiting[t:] += one
    mask = waiting > 0
    return float(compute[mask].mean() / gpus) if mask.any() else 1.0


def run(spec: str, w):
    """``spec`` on ``w``: engine options, plus the simulator's ``lease`` and ``checkpoint``
    (steps) and ``preemptible=all`` (the trace relaxed: every task preemptible)."""
    name, opts = policy_spec(spec)
    lease = int(opts.pop("lease", 5))
    checkpoint = float(opts.pop("checkpoint", 1.0))
    relax = opts.pop("preemptible", None)
    if relax not in (None, "all"):
        raise SystemExit(f"preemptible must be 'all', got {relax!r}")
    if relax == "all":
        w = replace(w, tasks=tuple(replace(t, preemptible=True) for t in w.tasks),
                    truths={k: replace(t, preemptible=True) for k, t in w.truths.items()})
    return simulate(w, policy=name, policy_options=opts or None, lease=lease, checkpoint_steps=checkpoint)


def sweep_rows(cells: dict[tuple[str, str], list[tuple]], top: int) -> list[dict[str, str]]:
    """The random search's table: one row per spec (the ``top`` best by the mean over the
    configurations of the mean ``jct/ftf`` over seeds, and the default ``market`` wherever it
    ranks), a column per configuration; a run that left a task unfinished ranks last."""
    kinds = list(dict.fromkeys(kind for kind, spec in cells if spec != "finish-time-fair"))
    table: dict[str, dict[str, float]] = {}
    for (kind, spec), xs in cells.items():
        if spec == "finish-time-fair":
            continue
        v = np.array(xs, dtype=float)
        table.setdefault(spec, {})[kind] = float(v[:, 0].mean()) if v[:, 3].all() else math.inf
    ranked = sorted(table, key=lambda spec: (float(np.mean([table[spec][k] for k in kinds])), spec))
    keep = [spec for i, spec in enumerate(ranked) if i < top or spec == "market"]
    return [{"rank": str(ranked.index(spec) + 1), **{k: f"{table[spec][k]:.3f}" for k in kinds},
             "mean": f"{np.mean([table[spec][k] for k in kinds]):.3f}", "policy": spec} for spec in keep]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--configs", type=_configs, default=((2, 16.0), (4, 16.0)))
    ap.add_argument("--levers", type=lambda s: tuple(s.split(",")), default=LEVERS)
    ap.add_argument("--workload", choices=("alibaba", "synthetic", "both"), default="both")
    ap.add_argument("--sweep", type=int, metavar="N", help="random search: N lever combinations (see SPACE)")
    ap.add_argument("--sweep-seed", type=int, default=7)
    ap.add_argument("--top", type=int, default=10, help="combinations the random search prints")
    a = ap.parse_args(argv)
    if a.sweep is not None:
        try:
            a.levers = tuple(sample_specs(a.sweep, seed=a.sweep_seed))
        except ValueError as e:
            ap.error(f"--sweep: {e}")
    t0 = time.perf_counter()
    cells: dict[tuple[str, str], list[tuple[float, float, float, int]]] = {}
    for nodes, compress in a.configs:
        for seed in range(a.seeds):
            for w in workloads(nodes, compress, seed=seed):
                ali = w.name.startswith("alibaba")
                if a.workload != "both" and ali != (a.workload == "alibaba"):
                    continue
                kind = f"{'Ali' if ali else 'syn'} {len(w.gpus)}x{compress:g}"
                ftf = simulate(w, policy="finish-time-fair")
                f = ftf.metrics
                dur = float(np.mean([t.duration for t in w.tasks]))
                cells.setdefault((kind, "finish-time-fair"), []).append(
                    (1.0, dur / f.avg_jct, busy_while_waiting(ftf, w), f.completed == len(w.tasks)))
                for spec in a.levers:
                    r = run(spec, w)
                    m = r.metrics
                    cells.setdefault((kind, spec), []).append(
                        (m.avg_jct / f.avg_jct, dur / m.avg_jct, busy_while_waiting(r, w),
                         m.completed == len(w.tasks)))
    if a.sweep is not None:
        show(sweep_rows(cells, a.top), f"random search: the {a.top} best of {len(a.levers)} lever combinations by "
                                       "mean average JCT / FTF's over the configurations (mean over seeds; "
                                       "chosen on these seeds, so optimistic)")
        print(f"\n({time.perf_counter() - t0:.0f} s)")
        return
    rows = []
    for (kind, spec), xs in cells.items():
        v = np.array(xs, dtype=float)
        rows.append({"config": kind, "policy": spec, "seeds": len(xs), "jct/ftf": f"{v[:, 0].mean():.3f}",
                     "dur/jct": f"{v[:, 1].mean():.3f}", "busy": f"{v[:, 2].mean():.3f}",
                     "done": "all" if v[:, 3].all() else "MISS"})
    show(rows, "average JCT / FTF's per lever (mean over seeds); dur/jct: the share of JCT that is the tasks' "
               "own durations; busy: compute in use while tasks wait")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
