"""Core payments: the LLG example and generated instances, checked by the MILP in ``in_core``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from gensolver.mechanisms import run_mechanism
from gensolver.testing import instances
from gensolver.verify import in_core, is_individually_rational

from .helpers import EXACT, goods_instance


def llg(v1: float, v2: float, vg: float):
    return goods_instance([("l1", "L1", v1, ["A"]), ("l2", "L2", v2, ["B"]), ("g", "G", vg, ["A", "B"])], ["A", "B"])


@pytest.mark.parametrize("v1, v2, vg", [(8, 6, 10), (7, 7, 10), (9, 2, 10), (5, 5, 6)])
def test_llg(v1, v2, vg):
    """Ausubel & Milgrom (2006), "The lovely but lonely Vickrey auction", LLG example.

    Local bidders L1 (A, v1) and L2 (B, v2) win when v1 + v2 > vG. VCG: p1 = max(0, vG - v2),
    p2 = max(0, vG - v1); their sum is below vG, so G and the seller block: VCG is outside the
    core. The core needs p1 + p2 >= vG; the minimum-revenue core is p1 + p2 = vG, and the
    point nearest VCG (Day & Cramton 2012) splits the shortfall equally,
    p_i = vcg_i + (vG - vcg1 - vcg2) / 2, as long as that stays within [vcg_i, v_i].
    """
    inst = llg(v1, v2, vg)
    vcg1, vcg2 = max(0, vg - v2), max(0, vg - v1)
    short = vg - vcg1 - vcg2
    p1, p2 = vcg1 + short / 2, vcg2 + short / 2
    # (each example is chosen so that the equal split stays within the bounds)
    assert vcg1 <= p1 <= v1 and vcg2 <= p2 <= v2

    vcg = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert vcg.payments["L1"] == pytest.approx(vcg1) and vcg.payments["L2"] == pytest.approx(vcg2)
    blocked = in_core(vcg, inst)
    assert not blocked and blocked.details["coalition"] == ("G",)

    out = run_mechanism(inst, mechanism="core", **EXACT)
    assert out.exact
    assert out.payments["L1"] == pytest.approx(p1, abs=1e-6)
    assert out.payments["L2"] == pytest.approx(p2, abs=1e-6)
    assert out.payments["G"] == 0.0
    assert out.revenue == pytest.approx(vg, abs=1e-6)
    assert in_core(out, inst)
    assert out.details["core_constraints"] >= 1


def test_llg_one_local_bidder_pays_zero_under_vcg():
    """v1 = 2, v2 = 12, vG = 10: VCG p1 = max(0, 10 - 12) = 0, p2 = 10 - 2 = 8 (sum 8 < 10).
    Coalitions: {G} needs p1 + p2 >= 10; {L1, G} needs p2 >= 10 - 2 = 8; {L2, G} needs
    p1 >= 12 - 12 = 0. Minimum revenue 10, nearest to (0, 8): (1, 9)."""
    inst = llg(2, 12, 10)
    out = run_mechanism(inst, mechanism="core", **EXACT)
    assert out.payments["L1"] == pytest.approx(1.0, abs=1e-6)
    assert out.payments["L2"] == pytest.approx(9.0, abs=1e-6)


@settings(max_examples=12, deadline=None)
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=2))
def test_core_payments_in_core_and_above_vcg(inst):
    out = run_mechanism(inst, mechanism="core", **EXACT)
    vcg = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert in_core(out, inst, tol=1e-6), in_core(out, inst).violations
    assert is_individually_rational(out, inst)
    for i in inst.bidder_ids:
        assert out.payments[i] >= vcg.payments[i] - 1e-6
    assert out.allocation.welfare == pytest.approx(vcg.allocation.welfare)


def test_in_core_rejects_underpayment():
    inst = llg(8, 6, 10)
    out = run_mechanism(inst, mechanism="core", **EXACT)
    import dataclasses

    cheap = dataclasses.replace(out, payments={**out.payments, "L1": out.payments["L1"] - 0.5})
    check = in_core(cheap, inst)
    assert not check and "blocks" in check.violations[0]
