"""Fingerprint the market engine's decisions: one hash per simulation over a grid of runs.

A change meant to keep every decision (a refactor, a faster path) must leave every event log
byte for byte as it was. This script simulates the grid below and writes, per run, the first
16 hex digits of the SHA-256 of its event log (``benchmarks/bench_market.py``'s ``log_bytes``);
run it on both checkouts and compare the two files::

    PYTHONPATH=. python scripts/market_log_hashes.py before.json     # in the old checkout
    PYTHONPATH=. python scripts/market_log_hashes.py after.json      # in the new one
    python scripts/market_log_hashes.py --compare before.json after.json   # exit 1 on a difference

The grid: the bundled Alibaba 2023 list and the synthetic workload of ``bench_market`` on 28
GPUs x16, 12 GPUs x16 (seeds 0 and 1) and 28 GPUs x4; each honest and with two liars (the
tenant with the most tasks, ties by name, reports half its durations; the next one 97% of its
memory, within the tolerance band); the market with its options on and off (``POLICIES``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("market", "market:clearing=solver", "market:reserve=0+reserve_long=20",
            "market:levels=3+clearing=solver", "market:backfill=preferred",
            "market:income=active+tail=1+keep=0.5", "market:calibrate=mean+evidence=0")
GRID = (((4, 16.0), (0,)), ((2, 16.0), (0, 1)), ((4, 4.0), (0,)))


def fingerprints(*, progress=print) -> dict[str, str]:
    """``{run name: hash}`` over the grid (see the module docstring)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_market import log_bytes, policy_spec, workloads

    from gensolver.sim import simulate
    from gensolver.sim.strategy import Strategy, apply_strategies

    out: dict[str, str] = {}
    for (nodes, compress), seeds in GRID:
        for seed in seeds:
            for w in workloads(nodes, compress, seed=seed):
                count = {t: sum(x.tenant == t for x in w.tasks) for t in {x.tenant for x in w.tasks}}
                tenants = sorted(count, key=lambda t: (-count[t], t))
                lied = apply_strategies(w, {tenants[0]: Strategy(duration=0.5), tenants[1]: Strategy(memory=0.97)})
                for tag, ww in (("honest", w), ("lies", lied)):
                    for p in POLICIES:
                        name, opts = policy_spec(p)
                        if "evidence" in opts:
                            opts["evidence"] = bool(opts["evidence"])
                        res = simulate(ww, policy=name, policy_options=opts or None)
                        key = f"{nodes}x{compress:g} seed {seed} {w.name.split('[')[0]} {tag} {p}"
                        out[key] = hashlib.sha256(log_bytes(res)).hexdigest()[:16]
                        progress(f"{key}: {out[key]}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, nargs="?", help="write the hashes to this JSON file")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                    help="compare two files written by this script; exit 1 when any run differs")
    a = ap.parse_args(argv)
    if a.compare:
        before, after = (json.loads(p.read_text()) for p in a.compare)
        if set(before) != set(after):
            print(f"the files hold different runs: {sorted(set(before) ^ set(after))[:5]}")
            return 1
        diff = [k for k in before if before[k] != after[k]]
        print(f"{len(diff)} of {len(before)} runs differ ({len(set(before.values()))} distinct logs)")
        for k in diff:
            print(f"  {k}")
        return 1 if diff else 0
    if a.out is None:
        ap.error("give an output file, or --compare BEFORE AFTER")
    hashes = fingerprints()
    tmp = a.out.with_suffix(a.out.suffix + ".tmp")
    tmp.write_text(json.dumps(hashes, indent=1))
    tmp.replace(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
