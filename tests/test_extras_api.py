"""From Python, a path that needs an optional extra raises :class:`MissingExtraError` (a
:class:`GensolverError` naming the extra and the pip line), never a bare ``ModuleNotFoundError``.

Each case runs in a fresh interpreter where ``tests/hide_extras.py`` hides the extra's packages
(imported before anything else), as on a core-only install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver import from_dict
from gensolver.errors import GensolverError, MissingExtraError, extras_named
from gensolver.mechanisms import run_mechanism
from gensolver.verify import brute_force

ROOT = Path(__file__).resolve().parents[1]
SOLVERS = "ortools,pulp,highspy"
DOC = {"schema": "gensolver.instance/v1",
       "slots": [{"id": "g0", "capacity": {"memory": 80, "compute": 1.0}},
                 {"id": "g1", "capacity": {"memory": 80, "compute": 1.0}}],
       "bids": [{"id": "a", "bidder": "A", "value": 10,
                 "demand": {"g0": {"memory": 50, "compute": 0.5}, "g1": {"memory": 50, "compute": 0.5}}},
                {"id": "b", "bidder": "B", "value": 6, "demand": {"g0": {"memory": 40, "compute": 0.5}}},
                {"id": "c", "bidder": "C", "value": 5, "demand": {"g1": {"memory": 40, "compute": 0.5}}}]}

PROBE = """
import tests.hide_extras  # first: hides $GENSOLVER_TEST_HIDE
import json, sys
from gensolver import from_dict
inst = from_dict(json.loads(sys.argv[2]))
call = sys.argv[1]
try:
    if call == "max_regret":
        from gensolver.verify.regret import max_regret
        max_regret("vcg", inst, families=("scale",), per_run_limit=5)
    else:
        from gensolver.mechanisms import run_mechanism
        run_mechanism(inst, mechanism=call, time_limit=5)
except Exception as exc:
    from gensolver.errors import GensolverError, MissingExtraError
    print(json.dumps({"type": type(exc).__name__, "message": str(exc),
                      "missing_extra": isinstance(exc, MissingExtraError),
                      "gensolver_error": isinstance(exc, GensolverError),
                      "module_not_found": isinstance(exc, ModuleNotFoundError)}))
else:
    print(json.dumps({"type": None}))
"""


def _probe(call: str, hidden: str) -> dict:
    env = {**os.environ, "GENSOLVER_TEST_HIDE": hidden, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", PROBE, call, json.dumps(DOC)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("call, package", [("vcg", "ortools"), ("core", "ortools"), ("lavi-swamy", "highspy"),
                                           ("max_regret", "ortools")])
def test_a_mechanism_without_its_extra_names_it(call: str, package: str) -> None:
    got = _probe(call, SOLVERS)
    assert got["type"] == "MissingExtraError", got
    assert got["missing_extra"] and got["gensolver_error"] and not got["module_not_found"]
    assert f"optional package {package!r}" in got["message"]
    assert 'pip install "gensolver[solvers]"' in got["message"]


def test_mechanisms_that_need_no_extra_still_run_without_it() -> None:
    assert _probe("greedy-critical", SOLVERS) == {"type": None}
    assert _probe("pay-as-bid", SOLVERS) == {"type": None}


def test_vcg_with_the_extra_gives_clarke_payments() -> None:
    """The control: with OR-Tools, the same call succeeds; payments against brute force."""
    inst = from_dict(DOC)
    out = run_mechanism(inst, mechanism="vcg", time_limit=10)
    welfare, winners = brute_force(inst)
    value = {b.id: b.value for b in inst.bids}
    for bid in winners:
        bidder = next(b.bidder for b in inst.bids if b.id == bid)
        others = from_dict({**DOC, "bids": [b for b in DOC["bids"] if b["bidder"] != bidder]})
        assert out.payments[bidder] == pytest.approx(brute_force(others)[0] - (welfare - value[bid]))


def test_extras_named_leaves_other_import_errors_alone() -> None:
    with pytest.raises(MissingExtraError, match=r'pip install "gensolver\[sim\]"') as caught:
        with extras_named("the simulator"):
            raise ModuleNotFoundError("No module named 'simpy.core'", name="simpy.core")
    assert isinstance(caught.value, GensolverError) and not isinstance(caught.value, ModuleNotFoundError)
    with pytest.raises(ModuleNotFoundError) as plain:  # not a package of an extra: unchanged
        with extras_named("x"):
            raise ModuleNotFoundError("No module named 'numpyy'", name="numpyy")
    assert not isinstance(plain.value, MissingExtraError)
    with pytest.raises(ImportError, match="cannot import name"):
        with extras_named("x"):
            raise ImportError("cannot import name 'f' from 'ortools'", name="ortools")
