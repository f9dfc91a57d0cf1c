"""Pay-as-bid: winners pay their bids, and the regret checker finds the incentive to shade."""

from __future__ import annotations

import pytest

from gensolver.mechanisms import run_mechanism
from gensolver.verify import max_regret, regret

from .helpers import EXACT, goods_instance


def test_winners_pay_bids():
    inst = goods_instance([("x", "X", 6, ["A"]), ("y", "Y", 5, ["B"]), ("z", "Z", 10, ["A", "B"])], ["A", "B"])
    out = run_mechanism(inst, mechanism="pay-as-bid", **EXACT)
    assert out.payments == {"X": 6.0, "Y": 5.0, "Z": 0.0}
    assert out.revenue == 11.0
    assert all(abs(u) < 1e-12 for u in out.utilities.values())


def test_positive_regret_on_instance_built_for_it():
    """One good, A values it 10, B 4. A pays 10 (utility 0); bidding half (5) still wins and
    pays 5, so the regret is at least 5 (the checker must fail pay-as-bid)."""
    inst = goods_instance([("a", "A", 10, ["g"]), ("b", "B", 4, ["g"])], ["g"])
    res = regret("pay-as-bid", inst, "A", **EXACT)
    assert res.truthful_utility == pytest.approx(0.0)
    assert res.regret == pytest.approx(5.0)  # best in the family: factor 0.5 (0.0 loses)
    assert res.best_misreport is not None and res.best_misreport.description == "scale all values by 0.5"
    assert max_regret("pay-as-bid", inst, **EXACT).regret == pytest.approx(5.0)
