"""Expected utilities over a mechanism's lottery (:mod:`gensolver.verify.expected`), against
sums worked out by hand on one good."""

from __future__ import annotations

import dataclasses

import pytest

from gensolver import from_dict
from gensolver.errors import InputError
from gensolver.mechanisms import run_mechanism
from gensolver.verify.expected import expected_regret, expected_utility, lottery

INST = from_dict({"schema": "gensolver.instance/v1", "slots": [{"id": "s", "capacity": {"units": 1}}],
                  "bids": [{"id": "a", "bidder": "A", "value": 6, "demand": {"s": {"units": 1}}},
                           {"id": "b", "bidder": "B", "value": 4, "demand": {"s": {"units": 1}}}]})


def _drawn(outcome, decomposition):
    return dataclasses.replace(outcome, details={**outcome.details, "decomposition": decomposition})


def test_a_deterministic_outcome_is_a_lottery_of_one() -> None:
    out = run_mechanism(INST, mechanism="vcg", method="cpsat")
    assert lottery(out) == [(1.0, ("a",), {"A": 4.0, "B": 0.0})]
    assert expected_utility(INST, "A", INST, out) == pytest.approx(6 - 4)  # second price
    assert expected_utility(INST, "B", INST, out) == 0.0


def test_the_expectation_weighs_each_draw() -> None:
    base = run_mechanism(INST, mechanism="pay-as-bid", method="cpsat")
    out = _drawn(base, [{"probability": 0.25, "winners": ["a"], "payments": {"A": 2.0}},
                        {"probability": 0.75, "winners": ["b"], "payments": {"B": 1.0}}])
    assert expected_utility(INST, "A", INST, out) == pytest.approx(0.25 * (6 - 2))
    assert expected_utility(INST, "B", INST, out) == pytest.approx(0.75 * (4 - 1))
    # A controlling both identities gets both goods' draws (free disposal: one unit is worth 6)
    assert expected_utility(INST, "A", INST, out, identities=("A", "B")) == pytest.approx(0.25 * 4 + 0.75 * (6 - 1))


@pytest.mark.parametrize("probs", [(0.5, 0.6), (-0.1, 1.1)])
def test_a_lottery_that_is_no_distribution_is_refused(probs) -> None:
    base = run_mechanism(INST, mechanism="pay-as-bid", method="cpsat")
    out = _drawn(base, [{"probability": p, "winners": [], "payments": {}} for p in probs])
    with pytest.raises(InputError, match="not a probability distribution"):
        lottery(out)


def test_expected_regret_finds_the_gain_of_shading_a_first_price_bid() -> None:
    """Pay-as-bid: A wins at 6 paying 6 (utility 0); bidding just over B's 4 keeps the good
    and saves nearly 2, so the regret is positive and below 2; VCG's is zero."""
    r = expected_regret("pay-as-bid", INST, "A", method="cpsat", families=("scale",))
    assert 0.5 < r.regret <= 2.0 + 1e-9
    assert expected_regret("vcg", INST, "A", method="cpsat").regret <= 1e-9
