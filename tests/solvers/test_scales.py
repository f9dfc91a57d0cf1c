"""The numeric scaling of the backends (:mod:`gensolver.solvers.formulation.scales`) and the
anytime engine's clock and proof rule (:mod:`gensolver.solvers.anytime.budget`,
:mod:`gensolver.solvers.anytime.state`), checked in exact rational arithmetic and by brute force
over every 0/1 choice of a row's bids, never by the module's own sums."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from gensolver.model.tolerances import capacity_limit
from gensolver.solvers.anytime.budget import (
    WORK_PER_CPSAT_DET,
    WORK_PER_CPSAT_DET_INTERLEAVED,
    WorkClock,
    cpsat_work_factor,
)
from gensolver.solvers.anytime.state import proven_by_bound
from gensolver.solvers.formulation.scales import (
    DEFAULT_MIP_GAP,
    integer_row,
    integer_scale,
    power_of_two_scales,
    within_mip_gap,
)


def _is_power_of_two(x: float) -> bool:
    mantissa, _ = math.frexp(x)
    return x > 0 and mantissa == 0.5


@pytest.mark.parametrize("seed", range(4))
def test_power_of_two_scales_lift_small_rows_and_bring_down_large_ones(seed: int) -> None:
    rng = random.Random(seed)
    tops = [10.0 ** rng.uniform(-300, 300) for _ in range(200)] + [0.0, 1.0, 1.5, 2.0, math.inf, 5e-324]
    above = 2.0 ** rng.randint(1, 60)
    f = power_of_two_scales(np.array(tops), above=above)
    for top, s in zip(tops, f):
        assert _is_power_of_two(float(s)), (top, s)
        if top == 0.0 or not math.isfinite(top) or 1.0 <= top < above:
            assert s == 1.0, (top, s)
        elif top != 5e-324:  # a subnormal top is lifted as far as a finite factor goes
            scaled = Fraction(top) * Fraction(float(s))  # exact: no rounding in the check
            assert 1 <= scaled < 2, (top, s)


@pytest.mark.parametrize("seed", range(4))
def test_integer_scale_is_the_smallest_exact_power_of_ten(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        digits = rng.randint(0, 6)
        texts = [f"{rng.randint(0, 10**6) / 10**digits:.{digits}f}" for _ in range(rng.randint(1, 6))]
        scale, exact = integer_scale(np.array([float(t) for t in texts]), 9)
        assert exact
        k = round(math.log10(scale))
        assert all((Fraction(t) * 10**k).denominator == 1 for t in texts)  # integral at 10**k ...
        if k > 0:  # ... and not at 10**(k-1)
            assert any((Fraction(t) * 10**(k - 1)).denominator != 1 for t in texts)


def test_integer_scale_says_when_no_power_is_exact() -> None:
    scale, exact = integer_scale(np.array([1 / 3, 2 / 3]), 9)
    assert not exact and scale == 10.0**9
    scale, exact = integer_scale(np.array([1 / 3]), 9, limit=1e5)  # capped by the limit
    assert not exact and scale <= 1e5 / (1 / 3)


@pytest.mark.parametrize("relax", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_integer_rows_keep_or_relax_every_choice_of_bids(relax: bool, seed: int) -> None:
    """Conservative rows admit only allocations that fit the true row (its limit, as every
    method reads it); relaxed rows admit every one that does."""
    rng = random.Random(seed)
    for _ in range(20):
        coefs = np.array([rng.choice([1 / 3, 1 / 7, 0.1, 2 / 3, 1e-7 / 3]) * rng.randint(1, 9) for _ in range(6)])
        cap = float(coefs.sum() * rng.uniform(0.2, 0.9))
        icoef, icap, exact = integer_row(coefs, cap, relax=relax)
        limit = Fraction(capacity_limit(cap))
        for x in itertools.product((0, 1), repeat=len(coefs)):
            fits_true = sum(Fraction(float(c)) * xi for c, xi in zip(coefs, x)) <= limit
            fits_int = sum(int(c) * xi for c, xi in zip(icoef, x)) <= icap
            if exact:
                continue  # an exact row is checked by the exact-scale test above
            if relax:
                assert fits_int or not fits_true, (coefs, cap, x)
            else:
                assert fits_true or not fits_int, (coefs, cap, x)


def test_the_proof_rules_stop_at_the_mip_gap() -> None:
    for bound in (0.5, 1.0, 1e6):
        gap = DEFAULT_MIP_GAP * max(1.0, bound)
        assert within_mip_gap(bound, bound - 0.5 * gap) and not within_mip_gap(bound, bound - 2 * gap)
        assert proven_by_bound(bound - 0.5 * gap, bound) and not proven_by_bound(bound - 2 * gap, bound)


def test_the_work_clock_counts_charges_in_deterministic_mode_only() -> None:
    det = WorkClock(3.0, deterministic=True)
    det.charge(1.25)
    det.charge(-5.0)  # never runs backwards
    assert det.now() == 1.25 and det.left() == 1.75 and det.left(until=2.0) == 0.75
    wall = WorkClock(None)
    wall.charge(100.0)
    assert wall.left() is None and 0.0 <= wall.now() < 100.0  # charges do not count on the wall clock
    assert cpsat_work_factor(1) == WORK_PER_CPSAT_DET
    assert cpsat_work_factor(4) == pytest.approx(WORK_PER_CPSAT_DET_INTERLEAVED / 4)


def test_the_brute_force_tells_the_two_roundings_apart() -> None:
    """The check above can fail: a relaxed row, read as a conservative one, admits a choice of
    bids the true row refuses (here 3 x 1/3 against a limit a tenth of a billionth under 1)."""
    coefs, cap = np.array([1 / 3, 1 / 3, 1 / 3]), 0.9999999989
    icoef, icap, exact = integer_row(coefs, cap, relax=True)
    assert not exact
    assert sum(int(c) for c in icoef) <= icap and sum(Fraction(float(c)) for c in coefs) > Fraction(capacity_limit(cap))
    icoef, icap, _ = integer_row(coefs, cap)
    assert sum(int(c) for c in icoef) > icap  # the conservative row refuses it
