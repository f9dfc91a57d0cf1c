"""``exact=true`` means every payment is proved to the absolute tolerance the outcome states.

Random tiny rounds with values up to ``1e6`` (where a ``1e-9`` relative MIP gap is worth
``1e-3``: a winner was charged 2.5 with interval [2.5, 2.5] against a true 2.501), priced by VCG
on several backends; Clarke payments are recomputed by an enumeration written here (exact sums,
the documented capacity rule), not by :mod:`gensolver.verify`. An exact payment must be within
``exact_tolerance`` of it; an inexact one's interval must contain it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gensolver.mechanisms import outcome_to_dict, run_mechanism
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.solvers import get_method


def _fits(rows: dict[tuple[str, str], list[float]], caps: dict[tuple[str, str], float]) -> bool:
    return all(math.fsum(d) <= caps[k] + (1e-9 + 1e-12 * abs(caps[k])) for k, d in rows.items())


def best_welfare(inst: Instance, without: str | None = None) -> float:
    caps = {(s.id, r): q for s in inst.slots for r, q in s.capacity.items()}
    groups: dict[str, list[Bid]] = {}
    for b in inst.bids:
        if b.bidder != without:
            groups.setdefault(b.bidder, []).append(b)
    best = 0.0
    for choice in itertools.product(*[[None, *g] for g in groups.values()]):
        rows: dict[tuple[str, str], list[float]] = {}
        for b in choice:
            if b is not None:
                for s, res in b.demand.items():
                    for r, q in res.items():
                        rows.setdefault((s, r), []).append(q)
        if _fits(rows, caps):
            best = max(best, math.fsum(b.value for b in choice if b is not None))
    return best


@st.composite
def tiny_rounds(draw: st.DrawFn) -> Instance:
    slots = (Slot("s0", {"mem": 2.0, "cmp": 1.0}), Slot("s1", {"mem": 2.0, "cmp": 1.0}))
    base = draw(st.floats(1e5, 1e6, allow_nan=False))
    bids = []
    for i in range(draw(st.integers(2, 5))):
        for k in range(draw(st.integers(1, 2))):
            chosen = draw(st.lists(st.sampled_from(["s0", "s1"]), min_size=1, max_size=2, unique=True))
            mem = draw(st.sampled_from([1.0, 2.0]))
            cmp = draw(st.sampled_from([0.5, 1.0]))
            # near-ties at the scale of 1e6: the case a relative gap of 1e-9 gets wrong
            value = draw(st.one_of(st.floats(0.0, 1e6, allow_nan=False),
                                   st.integers(-5000, 5000).map(lambda d, b=base: b + d * 1e-3)))
            bids.append(Bid(f"b{i}_{k}", f"B{i}", max(0.0, value), {s: {"mem": mem, "cmp": cmp} for s in chosen}))
    return Instance(slots, tuple(bids))


SOLVERS = [s for s in ("auto", "cpsat", "scip", "cbc") if get_method(s).available()[0]]


def check_vcg(inst: Instance, solver: str) -> bool:
    out = run_mechanism(inst, mechanism="vcg", method=solver, options={"threads": 1})
    check_outcome(inst, out, solver)
    return out.exact


def check_outcome(inst: Instance, out: Any, solver: str) -> None:
    doc = outcome_to_dict(out)
    tol = doc["exact_tolerance"]
    assert tol is not None and tol >= 1e-6
    W = best_welfare(inst)
    by_id = {b.id: b for b in inst.bids}
    won = {by_id[w].bidder: by_id[w].value for w in out.allocation.winners}
    for bidder in inst.bidder_ids:
        if bidder in won:
            want = best_welfare(inst, without=bidder) - (W - won[bidder])
        else:
            want = 0.0
        if out.exact:
            assert abs(out.allocation.welfare - W) <= tol, (solver, out.allocation.welfare, W)
            assert abs(out.payments[bidder] - want) <= tol, (solver, bidder, out.payments[bidder], want)
        else:
            lo, hi = out.payment_bounds[bidder]
            assert lo - tol <= want <= hi + tol, (solver, bidder, lo, want, hi)


@pytest.mark.parametrize("solver", SOLVERS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=tiny_rounds())
def test_exact_payments_are_proved_to_the_stated_tolerance(solver: str, inst: Instance) -> None:
    check_vcg(inst, solver)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=tiny_rounds())
def test_exact_payments_on_1000_rounds(inst: Instance) -> None:
    for solver in SOLVERS:
        check_vcg(inst, solver)


def test_the_payment_check_can_fail() -> None:
    """A payment 1e-3 off at values near 1e6 (what a relative gap of 1e-9 allows), claimed exact,
    is caught."""
    import dataclasses
    from types import MappingProxyType

    inst = Instance((Slot("s", {"u": 1.0}),), (Bid("a", "A", 1_000_000.0, {"s": {"u": 1.0}}),
                                               Bid("b", "B", 999_999.501, {"s": {"u": 1.0}})))
    out = run_mechanism(inst, mechanism="vcg", method="auto", options={"threads": 1})
    assert out.exact and out.payments["A"] == pytest.approx(999_999.501, abs=1e-6)
    check_outcome(inst, out, "auto")
    bad = dataclasses.replace(out, payments=MappingProxyType({"A": 999_999.5, "B": 0.0}))
    with pytest.raises(AssertionError):
        check_outcome(inst, bad, "auto")


def _seeded_round(rng: Any) -> Instance:
    """A tiny round of ``benchmarks/bench_exact_payments.py`` (the family :func:`tiny_rounds` draws),
    from a seeded generator: the test and the benchmark's 1,000 rounds share one definition."""
    global _BENCH
    if _BENCH is None:
        import importlib.util
        from pathlib import Path

        path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_exact_payments.py"
        spec = importlib.util.spec_from_file_location("bench_exact_payments", path)
        assert spec is not None and spec.loader is not None
        _BENCH = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_BENCH)
    return _BENCH.tiny_round(rng)


_BENCH: Any = None


def test_auto_proves_every_tiny_round_exactly() -> None:
    """Without a budget, ``auto`` reaches ``exact=true`` on every tiny round: a main solve proved
    only to the relative MIP gap (about one round in ten, ``1e-6``..``1e-3`` apart at values near
    ``1e6``) is re-proved to the absolute tolerance; every payment still matches brute force."""
    import numpy as np

    rng = np.random.default_rng(2029)
    for k in range(30):
        inst = _seeded_round(rng)
        assert check_vcg(inst, "auto"), k


def test_main_proof_bound_is_valid_and_tight() -> None:
    """:func:`prove_main` from a bound left ``1e-3`` above the optimum (what the relative gap
    allows): its bound is at least the brute-force optimum and within the tolerance of it."""
    import numpy as np

    from gensolver.mechanisms.pivots import prove_main
    from gensolver.solvers.engine import from_instance

    rng = np.random.default_rng(7)
    for _ in range(10):
        inst = _seeded_round(rng)
        W = best_welfare(inst)
        P = from_instance(inst)
        out = run_mechanism(inst, mechanism="vcg", method="auto", options={"threads": 1})
        x = np.zeros(P.n)
        for w in out.allocation.winners:
            x[inst.bid_index[w]] = 1.0
        proof = prove_main(P, x, None, bound=W + 1e-3, tol=2.5e-7, time_limit=None, threads=1)
        assert proof.proved
        assert proof.bound >= W - 1e-9 and proof.bound - W <= 2.5e-7 + 1e-9
        assert abs(float(P.values @ proof.x) - W) <= 2.5e-7 + 1e-9
