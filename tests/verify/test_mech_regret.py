"""Regret over misreport families: VCG truthful, false names break it, the family itself."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from gensolver.mechanisms import run_mechanism
from gensolver.testing import gpu_round_instances, instances
from gensolver.verify import (
    FAMILIES,
    TRUTHFUL_FAMILIES,
    Misreport,
    apply_misreport,
    max_regret,
    misreports,
    regret,
    true_utility,
    true_value,
)
from tests.mechanisms.helpers import EXACT, goods_instance


@settings(max_examples=10, deadline=None)
@given(instances(max_slots=3, max_bidders=3, max_bids_per_bidder=2))
def test_vcg_exact_has_no_regret(inst):
    assert max_regret("vcg", inst, families=TRUTHFUL_FAMILIES, **EXACT).regret <= 1e-6


@settings(max_examples=5, deadline=None)
@given(gpu_round_instances(max_gpus=2, max_steps=2, max_bidders=3))
def test_vcg_exact_has_no_regret_on_gpu_rounds(inst):
    assert max_regret("vcg", inst, families=TRUTHFUL_FAMILIES, **EXACT).regret <= 1e-6


def test_vcg_is_not_false_name_proof():
    """Yokoo, Sakurai & Matsubara (2004): X wants {A, B} (10), Y wants {A, B} (8).

    Truthful: X wins and pays 8 (utility 2). Posing as X~fn1 bidding A at 5 and X~fn2
    bidding B at 5: the two names win (10 > 8); each pays W(-self) - 5 = 8 - 5 = 3, so X gets
    {A, B} for 6 (utility 4). With the full value on each name each pays 10 - 10 = 0.
    """
    inst = goods_instance([("x", "X", 10, ["A", "B"]), ("y", "Y", 8, ["A", "B"])], ["A", "B"])
    truthful = regret("vcg", inst, "X", families=TRUTHFUL_FAMILIES, **EXACT)
    assert truthful.regret == 0.0 and truthful.truthful_utility == pytest.approx(2.0)
    res = regret("vcg", inst, "X", families=("false-name",), **EXACT)
    assert res.evaluated == 2
    assert res.best_utility == pytest.approx(10.0)  # the full-value split: both names pay 0
    assert res.regret == pytest.approx(8.0)
    half = [m for m in misreports(inst, "X", families=("false-name",)) if "half" in m.description][0]
    rep = apply_misreport(inst, half)
    out = run_mechanism(rep, mechanism="vcg", **EXACT)
    assert out.payments["X~fn1"] == pytest.approx(3.0) and out.payments["X~fn2"] == pytest.approx(3.0)
    assert true_utility(inst, "X", rep, out, half.identities) == pytest.approx(4.0)


def test_family_is_finite_and_documented():
    inst = goods_instance([("a1", "A", 4, ["g1", "g2"]), ("a2", "A", 3, ["g2"]), ("b", "B", 2, ["g3"])],
                          ["g1", "g2", "g3"])
    ms = list(misreports(inst, "A"))
    fams = {m.family for m in ms}
    assert fams == set(FAMILIES)
    assert all(isinstance(m, Misreport) and m.bidder == "A" and m.description for m in ms)
    # single-minded bidder B: no per-bid / drop / false-name misreports (single-slot bundle)
    assert {m.family for m in misreports(inst, "B")} == {"scale", "subset", "superset"}
    with pytest.raises(ValueError, match="valid"):
        list(misreports(inst, "A", families=("lie",)))
    with pytest.raises(ValueError, match="unknown bidder"):
        list(misreports(inst, "Z"))


def test_true_value_free_disposal():
    inst = goods_instance([("a1", "A", 4, ["g1", "g2"]), ("a2", "A", 3, ["g2"])], ["g1", "g2", "g3"])
    unit = {"units": 1.0}
    assert true_value(inst, "A", {"g1": unit, "g2": unit, "g3": unit}) == 4.0
    assert true_value(inst, "A", {"g2": unit}) == 3.0
    assert true_value(inst, "A", {"g1": unit}) == 0.0
    assert true_value(inst, "A", {"g2": {"units": 0.5}}) == 0.0


def test_unknown_mechanism_in_regret():
    inst = goods_instance([("a", "A", 1, ["g"])], ["g"])
    with pytest.raises(ValueError, match="valid mechanisms"):
        regret("nope", inst, "A")


def test_max_regret_reports_progress_per_bidder_and_needs_families() -> None:
    from gensolver.model import Bid, Instance, Slot
    from gensolver.verify.regret import max_regret

    inst = Instance((Slot("s", {"units": 1.0}),), tuple(Bid(f"b{i}", f"B{i}", 1.0 + i, {"s": {"units": 1.0}})
                                                       for i in range(3)))
    calls: list[tuple[str, int, int]] = []
    res = max_regret("vcg", inst, families=("scale",), progress=lambda b, k, n: calls.append((b, k, n)))
    assert [c[1:] for c in calls] == [(1, 3), (2, 3), (3, 3)]
    assert [c[0] for c in calls] == list(res.per_bidder)
    with pytest.raises(ValueError, match="non-empty"):
        max_regret("vcg", inst, families=())


@pytest.mark.parametrize("kwargs, message", [
    ({"factors": [float("nan")]}, "factors must be finite numbers >= 0"),
    ({"factors": [-1.0]}, "factors must be finite numbers >= 0"),
    ({"factors": 2.0}, "factors must be a sequence"),
    ({"families": []}, "families must be a non-empty sequence"),
    ({"families": "scale"}, "families must be a non-empty sequence"),
])
def test_regret_refuses_bad_families_and_factors(kwargs, message) -> None:
    """An empty family list used to report regret 0 after trying nothing; NaN factors were
    tried as misreports."""
    from gensolver.model import Bid, Instance, Slot
    from gensolver.verify.regret import regret

    inst = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 5.0, {"s": {"units": 1.0}}),
                                                   Bid("b", "B", 3.0, {"s": {"units": 1.0}})))
    with pytest.raises(ValueError, match=message):
        regret("vcg", inst, "A", **kwargs)
