"""Payments depend on the reports and the budget, not on the machine's load.

Mechanisms run on the deterministic work budget by default: the same round with the same
budget is priced twice, once as it is and once while two busy loops (subprocesses) compete for
both cores, and the payments, intervals and lottery must be equal. Nothing here measures time.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from gensolver.mechanisms import outcome_to_dict, run_mechanism
from gensolver.model.instance import Bid, Instance, Slot


def crowded_round(seed: int, bidders: int = 30, slots: int = 8) -> Instance:
    """Many bidders with overlapping multi-slot bids: the budget binds before the pivots prove."""
    rng = random.Random(seed)
    sl = tuple(Slot(f"g{k // 4}t{k % 4}", {"memory": 80.0, "compute": 1.0}) for k in range(slots))
    bids = []
    for i in range(bidders):
        for k in range(3):
            chosen = rng.sample([s.id for s in sl], rng.randint(1, 3))
            mem, cmp = float(rng.choice([20, 30, 40, 50])), rng.choice([0.25, 0.5, 0.75])
            bids.append(Bid(f"b{i}_{k}", f"T{i}", round(rng.uniform(1, 100), 3) * len(chosen),
                            {s: {"memory": mem, "compute": cmp} for s in chosen}))
    return Instance(sl, tuple(bids))


def priced(inst: Instance, mechanism: str) -> str:
    if mechanism == "vcg":
        out = run_mechanism(inst, mechanism="vcg", method="auto", time_limit=0.3, options={"threads": 1})
        assert out.details["budget"] == "work units"
    elif mechanism == "core":
        out = run_mechanism(inst, mechanism="core", method="auto", time_limit=0.3, options={"threads": 1})
        assert out.details["budget"] == "work units"
    else:
        out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", time_limit=0.2, options={"alpha": 3.0})
        assert out.details["budget"] == "work units"
    doc = outcome_to_dict(out, allocation=True)
    doc["allocation"].pop("seconds")
    doc["allocation"].pop("details")
    return json.dumps(doc, sort_keys=True)


@pytest.mark.parametrize("mechanism", ["vcg", "core", "lavi-swamy"])
def test_same_payments_under_a_busy_loop_on_both_cores(mechanism: str) -> None:
    inst = crowded_round(7)
    quiet = priced(inst, mechanism)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = priced(inst, mechanism)
    finally:
        for h in hogs:
            h.kill()
            h.wait(timeout=30)
    assert loaded == quiet


def test_the_wall_clock_mode_says_so() -> None:
    out = run_mechanism(crowded_round(7), mechanism="vcg", method="auto", time_limit=0.3,
                        options={"threads": 1, "deterministic": False})
    assert out.details["budget"] == "wall clock"
    if not out.exact:
        assert "wall-clock" in out.message
