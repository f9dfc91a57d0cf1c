"""The one capacity rule (:mod:`gensolver.model.tolerances`) and the model check that applies it.

The expected answers come from exact rational arithmetic (:class:`fractions.Fraction`) on the
instance's numbers, never from gensolver's own sums.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest

from gensolver.model import tolerances as T
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.solvers.formulation.problem import from_instance
from gensolver.verify import check_allocation


def exact_fits(demands: list[float], cap: float) -> bool:
    """The documented rule, recomputed: the exact (rational) sum of the doubles, rounded once to
    the nearest double, against ``cap + (1e-9 + 1e-12 * |cap|)`` in double arithmetic."""
    limit = cap + (1e-9 + 1e-12 * abs(cap))
    return float(sum(map(Fraction, demands), Fraction(0))) <= limit


def test_table_values_are_documented() -> None:
    assert T.TOLERANCES == {"capacity_abs": 1e-9, "capacity_rel": 1e-12, "payment": 1e-9, "welfare_rel": 1e-9,
                            "probability": 1e-9, "exact_payment_abs": 1e-6, "exact_payment_rel": 1e-12}
    assert T.payment_tolerance(1e9) == 1e-3 and T.payment_tolerance(0.0) == 1e-6
    assert T.capacity_limit(2.0) == 2.0 + (1e-9 + 2e-12)
    arr = T.capacity_limit(np.array([0.0, 8e10]))
    assert arr[0] == 1e-9 and arr[1] == 8e10 + (1e-9 + 0.08)


@pytest.mark.parametrize("demands,cap", [
    ([0.666666667] * 3, 2.0),            # the format's 1e-9 boundary: fits
    ([0.6666666677] * 3, 2.0),           # 3.1e-9 over: does not
    ([8e10 / 3] * 3, 8e10),              # bytes: round-off far above 1e-9, inside the relative part
    ([26666666667.0] * 3, 8e10),         # one byte over a memory row
    ([0.1, 0.2, 0.3, 0.4], 1.0),
    ([0.5000000005, 0.5000000005], 1.0),  # exactly cap + 1e-9 in decimals
])
def test_row_fits_matches_rationals_in_every_order(demands: list[float], cap: float) -> None:
    want = exact_fits(demands, cap)
    for perm in itertools.permutations(demands):
        assert T.row_fits(perm, cap) is want


def _instance(demands: list[float], cap: float) -> Instance:
    slots = (Slot("s", {"r": cap}),)
    bids = tuple(Bid(f"b{k}", f"B{k}", 1.0 + k, {"s": {"r": d}}) for k, d in enumerate(demands))
    return Instance(slots, bids)


@pytest.mark.parametrize("seed", range(5))
def test_check_allocation_and_matrix_check_agree_with_rationals(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        k = rng.randint(2, 5)
        cap = rng.choice([1.0, 2.0, 3.0, 80.0, 8e10])
        base = cap / k
        # on the format's boundary: within a few 1e-9 of the capacity, some over, some under
        demands = [base + rng.choice([-2, -1, 0, 1, 2]) * 1e-9 / k + rng.choice([0.0, 1e-12, -1e-12]) * cap
                   for _ in range(k)]
        inst = _instance(demands, cap)
        want = exact_fits(demands, cap)
        winners = [b.id for b in inst.bids]
        assert check_allocation(inst, winners).feasible is want
        P = from_instance(inst)
        assert (P.violation(np.ones(P.n)) is None) is want
        rng.shuffle(winners)
        assert check_allocation(inst, winners).feasible is want


def test_check_allocation_rejects_an_overfilled_row() -> None:
    """The checker can fail: three bids 3.1e-9 over capacity 2 are refused, with the row named."""
    inst = _instance([0.6666666677] * 3, 2.0)
    cert = check_allocation(inst, ["b0", "b1", "b2"])
    assert not cert.feasible and "slot 's' resource 'r'" in cert.violations[0]
    assert check_allocation(inst, ["b0", "b1"]).feasible
