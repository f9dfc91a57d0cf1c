"""``lavi-swamy`` at round scale: time, expected welfare against the best allocation found, exact
expected regret (issue 17).

Wall-clock seconds depend on what else runs on the machine; the CPU seconds of the process
(``time.process_time``, one solver thread) are printed beside them, with the load average.

For each GPU round (the instances of ``bench_anytime.py``) it prints, side by side for each
oracle: the total seconds (expansion to bids, LP and pivots, decomposition), the verified
``alpha`` and the certified ``alpha_floor`` (no oracle can verify less), ``LP*``, the expected
welfare ``LP*/alpha`` and its ratio to the best allocation ``auto`` finds in ``--ref-limit``
seconds. With ``--regret`` it measures the exact expected regret (weighted sums over the
lottery, :func:`gensolver.verify.expected_regret`) of a few bidders over every misreport
family of :mod:`gensolver.verify`, with ``alpha`` fixed to the truthful run's verified ratio
(report-independent for the misreports, as the guarantee requires).

Usage::

    python benchmarks/bench_truthful.py                          # both rounds, ref 600 s, regret
    python benchmarks/bench_truthful.py --quick                  # 8x16x60 only, ref 60 s, small regret
    python benchmarks/bench_truthful.py --instances gpu-16x24x150 --no-regret --ref-limit 0
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_anytime import gpu  # noqa: E402

from gensolver import solve  # noqa: E402
from gensolver.mechanisms import run_mechanism  # noqa: E402
from gensolver.verify import FAMILIES, check_allocation, expected_regret, misreports  # noqa: E402

INSTANCES = {
    "gpu-8x16x60": lambda: gpu(8, 16, 60, 4),
    "gpu-16x24x150": lambda: gpu(16, 24, 150, 6),
}


def run(name: str, oracles: list[str], ref_limit: float, regret: bool, bidders: int, per_family: int) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    rnd = INSTANCES[name]()
    inst = rnd.expand()
    t_expand = time.perf_counter() - t0
    print(f"\n## {name}: {inst.n_bids} bids, {inst.n_bidders} bidders, {inst.n_slots} slots "
          f"(expanded in {t_expand:.2f} s, CPU {time.process_time() - c0:.2f} s; load average "
          f"{os.getloadavg()[0]:.1f})\n")
    best = None
    if ref_limit > 0:
        ref = solve(inst, method="auto", time_limit=ref_limit)
        best = ref.welfare
        print(f"reference: auto {ref_limit:g} s: welfare {ref.welfare:.6g}, bound {ref.bound:.6g}, "
              f"status {ref.status.value}\n")
    print("| oracle | total s (with expansion) | CPU s | LP+pivots s | decomposition s | LP* | alpha | alpha_floor | "
          "E[welfare] | E[welfare] / best | allocations | lottery feasible |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    outs = {}
    for oracle in oracles:
        t1, c1 = time.perf_counter(), time.process_time()
        out = run_mechanism(inst, mechanism="lavi-swamy", method=oracle)
        total, cpu = time.perf_counter() - t1, time.process_time() - c1
        d = out.details
        ok = all(check_allocation(inst, a["winners"]).feasible for a in d["decomposition"])
        s = d["seconds"]
        ratio = "—" if not best else f"{100 * d['expected_welfare'] / best:.2f} %"
        floor = "—" if d["alpha_floor"] is None else f"{d['alpha_floor']:.4f}"
        print(f"| {oracle} | {total:.2f} ({total + t_expand:.2f}) | {cpu:.2f} | {s['lp_and_pivots']:.2f} | "
              f"{s['decomposition']:.2f} | {d['lp_welfare']:.6g} | {d['alpha']:.4f} | {floor} | "
              f"{d['expected_welfare']:.6g} | {ratio} | {len(d['decomposition'])} | {ok} |")
        outs[oracle] = out
    if not regret:
        return
    oracle = oracles[0]
    base = outs[oracle]
    alpha = base.details["alpha_verified"]
    opts = {"alpha": alpha}
    truthful = run_mechanism(inst, mechanism="lavi-swamy", method=oracle, options=opts)
    eu = truthful.details["expected_utilities"]
    chosen = sorted(eu, key=lambda b: -eu[b])[:bidders]
    print(f"\nexpected regret (oracle {oracle}, alpha fixed at {alpha:.6g}; bidders with the largest expected "
          f"utility: {', '.join(chosen)}; at most {per_family} misreports per family and bidder)\n")
    print("| family | misreports | max regret | max regret / E[u_i] | max regret / LP* |")
    print("|---|---|---|---|---|")
    lp = truthful.details["lp_welfare"]
    worst_rel = 0.0
    for fam in FAMILIES:
        n, worst, worst_u = 0, 0.0, 0.0
        for b in chosen:
            ms = list(misreports(inst, b, families=(fam,)))[:per_family]
            if not ms:
                continue
            r = expected_regret("lavi-swamy", inst, b, misreports=ms, method=oracle, options=opts, truthful=truthful)
            n += r.evaluated
            if r.regret >= worst:
                worst, worst_u = r.regret, r.truthful_utility
        rel_u = worst / worst_u if worst_u > 0 else (0.0 if worst == 0 else math.inf)
        worst_rel = max(worst_rel, worst / lp if lp > 0 else 0.0)
        print(f"| {fam} | {n} | {worst:.3g} | {rel_u:.3g} | {worst / lp if lp > 0 else 0.0:.3g} |")
    print(f"\nlargest expected regret relative to LP*: {worst_rel:.3g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", default=",".join(INSTANCES))
    ap.add_argument("--oracles", default="greedy,auto")
    ap.add_argument("--ref-limit", type=float, default=600.0, help="seconds for the reference auto solve (0: none)")
    ap.add_argument("--no-regret", action="store_true")
    ap.add_argument("--regret-bidders", type=int, default=2)
    ap.add_argument("--per-family", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="8x16x60 only, reference 60 s, 2 bidders x 2 misreports")
    a = ap.parse_args()
    names = a.instances.split(",")
    if a.quick:
        names, a.ref_limit, a.per_family = ["gpu-8x16x60"], min(a.ref_limit, 60.0), 2
    print(f"# lavi-swamy at round scale ({os.cpu_count()} CPUs)")
    for name in names:
        # regret on the smaller round only: each misreport is a whole mechanism run
        run(name, a.oracles.split(","), a.ref_limit, not a.no_regret and name == "gpu-8x16x60", a.regret_bidders,
            a.per_family)


if __name__ == "__main__":
    main()
