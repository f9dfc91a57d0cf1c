"""PuLP and OR-Tools' HiGHS in one process: gensolver imports PuLP after OR-Tools' native library,
so ``highs`` keeps working after ``pulp-cbc``/``pulp-highs`` solves (they used to make ``highs``
unavailable for the rest of the process, and its conformance tests skipped in every test worker
that had solved with PuLP first). Answers are checked against brute force."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from gensolver import solve
from gensolver.model import Bid, Instance, Slot
from gensolver.solvers import Status, get_method
from gensolver.verify import brute_force, check_allocation

NEEDED = ("pulp", "highspy", "ortools")


def _instance() -> Instance:
    slots = tuple(Slot(f"s{k}", {"memory": 80.0, "compute": 1.0}) for k in range(2))
    bids = tuple(Bid(f"b{j}", f"i{j % 3}", float(1 + (7 * j) % 5),
                     {f"s{j % 2}": {"memory": float(10 + (7 * j) % 50), "compute": 0.25 * (1 + j % 3)}})
                 for j in range(10))
    return Instance(slots, bids)


@pytest.fixture(scope="module", autouse=True)
def _needs_all() -> None:
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


def test_highs_after_pulp_in_this_process() -> None:
    inst = _instance()
    opt, _ = brute_force(inst)
    for method in ("pulp-cbc", "pulp-highs", "highs", "pulp-highs", "highs"):
        assert get_method(method).available() == (True, ""), method
        res = solve(inst, method=method, threads=1)
        assert res.status is Status.OPTIMAL, (method, res.message)
        assert check_allocation(inst, res.winners, welfare=res.welfare).feasible
        assert res.welfare == pytest.approx(opt), method


def test_highs_after_pulp_in_a_fresh_process_does_not_crash() -> None:
    """The order that crashed (PuLP's highspy first, then OR-Tools' HiGHS), in a process of its
    own so that a segmentation fault fails this test instead of the test run."""
    code = ("import gensolver\n"
            "from tests.solvers.test_pulp_import import _instance\n"
            "inst = _instance()\n"
            "a = gensolver.solve(inst, method='pulp-highs')\n"
            "b = gensolver.solve(inst, method='highs')\n"
            "print(a.status.value, b.status.value, a.welfare, b.welfare)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    sa, sb, wa, wb = proc.stdout.split()
    opt, _ = brute_force(_instance())
    assert (sa, sb) == ("optimal", "optimal") and float(wa) == float(wb) == pytest.approx(opt)


def test_pulp_imported_by_the_user_first_is_still_refused_not_crashed() -> None:
    """The guard can still fire: ``import pulp`` before gensolver's solvers (a user's own
    order) makes ``highs`` unavailable with its reason, and the process does not crash."""
    code = ("import pulp, gensolver\n"
            "from gensolver.solvers import get_method\n"
            "print(get_method('highs').available())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("(False, \"PuLP has loaded highspy"), proc.stdout
