"""``auto`` on a core-only install (no OR-Tools, PuLP or highspy): SciPy's ``milp`` solves the
exact restricted MIP, so ``auto`` proves optimality; answers checked against brute force.

The solves run in a fresh interpreter where ``tests/hide_extras.py`` hides the ``solvers``
extra; the checks (brute force, the feasibility certificate) run here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gensolver.instances import generate
from gensolver.model import from_dict
from gensolver.solvers.anytime.scipy_mip import solve_restricted_scipy
from gensolver.solvers.formulation.problem import from_instance
from gensolver.verify import brute_force, check_allocation

ROOT = Path(__file__).resolve().parents[2]
README = {"schema": "gensolver.instance/v1",
          "slots": [{"id": "gpu0@t0", "capacity": {"memory": 80, "compute": 1.0}},
                    {"id": "gpu0@t1", "capacity": {"memory": 80, "compute": 1.0}}],
          "bids": [{"id": "a", "bidder": "A", "value": 10,
                    "demand": {"gpu0@t0": {"memory": 50, "compute": 0.5}, "gpu0@t1": {"memory": 50, "compute": 0.5}}},
                   {"id": "b", "bidder": "B", "value": 6, "demand": {"gpu0@t0": {"memory": 40, "compute": 0.5}}},
                   {"id": "c", "bidder": "C", "value": 5, "demand": {"gpu0@t1": {"memory": 40, "compute": 0.5}}}]}

PROBE = """
import tests.hide_extras  # first: hides $GENSOLVER_TEST_HIDE
import json, sys
from gensolver import from_dict, solve
out = []
for doc in json.loads(sys.stdin.read()):
    a = solve(from_dict(doc), method="auto", time_limit=60)
    out.append({"status": a.status.value, "welfare": a.welfare, "bound": a.bound, "winners": list(a.winners),
                "stages": [s["stage"] for s in a.details["stages"]]})
import gensolver.solvers.anytime.driver, sys as _s
out.append({"ortools_loaded": any(m.startswith("ortools") for m in _s.modules)})
print(json.dumps(out))
"""


def _instances() -> list[dict]:
    docs = [README]
    for family, params in (("arbitrary", {"n_goods": 8, "n_bids": 14}), ("regions", {"n_goods": 8, "n_bids": 14}),
                           ("scheduling", {"n_goods": 6, "n_bids": 14}), ("matching", {"n_goods": 12, "n_bids": 14, "n_airports": 4}),
                           ("L3", {"n_goods": 8, "n_bids": 14})):
        for seed in range(3):
            docs.append(generate(family, seed=seed, **params).to_dict())
    return docs


def _solve_core_only(docs: list[dict]) -> list[dict]:
    env = {**os.environ, "GENSOLVER_TEST_HIDE": "ortools,pulp,highspy", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(docs), capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_auto_proves_optimality_without_the_solvers_extra() -> None:
    docs = _instances()
    *results, meta = _solve_core_only(docs)
    assert meta == {"ortools_loaded": False}
    through_scipy = 0
    for doc, got in zip(docs, results):
        inst = from_dict(doc)
        opt, _ = brute_force(inst)
        assert check_allocation(inst, got["winners"], welfare=got["welfare"]).feasible
        assert got["status"] == "optimal", (inst.name, got)
        assert got["welfare"] == pytest.approx(opt, rel=1e-9, abs=1e-9), inst.name
        assert got["bound"] >= opt - 1e-6 * max(1.0, abs(opt))
        through_scipy += "scipy-restricted" in got["stages"]
    # the README example's LP bound is 19 against the optimum 11: the proof comes from the MIP
    assert "scipy-restricted" in results[0]["stages"] and results[0]["welfare"] == pytest.approx(11.0)
    assert through_scipy >= 3, [r["stages"] for r in results]


@pytest.mark.parametrize("seed", range(4))
def test_the_scipy_restricted_mip_against_brute_force(seed: int) -> None:
    inst = generate("arbitrary", seed=seed, n_goods=8, n_bids=14)
    P = from_instance(inst)
    opt, _ = brute_force(inst)
    full = solve_restricted_scipy(P, np.arange(P.n), time_limit=None)
    assert full.optimal and float(P.values @ full.x) == pytest.approx(opt)
    assert P.feasible(full.x) and full.bound is not None and full.bound >= opt - 1e-9
    # a restriction that leaves out an optimal winner is solved over its own columns only
    winners = [inst.bid_index[w] for w in brute_force(inst)[1]]
    rest = np.setdiff1d(np.arange(P.n), winners[:1])
    part = solve_restricted_scipy(P, rest, time_limit=None)
    assert part.x[winners[0]] == 0.0 and float(P.values @ part.x) <= opt + 1e-9
