"""Honest payments on the way out: CLI JSON and tables, bench reports carry ``exact``, each
bidder's ``[low, high]`` interval and the reason the payments are not exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.mechanisms import outcome_to_dict, run_mechanism
from gensolver.model import read_instance
from gensolver.verify import brute_force

# greedy takes the big bundle x (3 / sqrt(2) > 2) and misses y + z = 4: not proven optimal
DOC = {
    "schema": "gensolver.instance/v1", "name": "greedy-trap",
    "slots": [{"id": "A", "capacity": {"units": 1}}, {"id": "B", "capacity": {"units": 1}}],
    "bids": [
        {"id": "x", "bidder": "X", "value": 3, "demand": {"A": {"units": 1}, "B": {"units": 1}}},
        {"id": "y", "bidder": "Y", "value": 2, "demand": {"A": {"units": 1}}},
        {"id": "z", "bidder": "Z", "value": 2, "demand": {"B": {"units": 1}}},
    ],
}


def clarke_by_brute_force(inst) -> dict[str, float]:
    """Exact VCG payments, every welfare by enumeration (the optimum y + z is unique)."""
    w_star, winners = brute_force(inst)
    index = inst.bid_index
    value = {inst.bids[index[w]].bidder: inst.bids[index[w]].value for w in winners}
    return {i: brute_force(inst.without_bidder(i))[0] - (w_star - value.get(i, 0.0)) for i in inst.bidder_ids}


@pytest.fixture()
def trap(tmp_path: Path) -> Path:
    path = tmp_path / "trap.json"
    path.write_text(json.dumps(DOC))
    return path


def test_json_of_an_unproven_vcg_says_inexact_and_its_intervals_hold_the_true_payments(trap, capsys):
    assert main(["solve", str(trap), "--mechanism", "vcg", "--method", "greedy", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exact"] is False
    assert "not proven optimal" in doc["inexact_reason"]
    truth = clarke_by_brute_force(read_instance(trap))
    assert truth == pytest.approx({"X": 0.0, "Y": 1.0, "Z": 1.0})
    assert set(doc["payment_bounds"]) == set(truth)
    for bidder, exact in truth.items():
        lo, hi = doc["payment_bounds"][bidder]
        assert lo - 1e-9 <= exact <= hi + 1e-9, (bidder, lo, exact, hi)
    # the payments printed are the charged ones, and they are not the exact ones here
    assert doc["payments"] != pytest.approx(truth)


def test_json_of_an_exact_vcg_has_degenerate_intervals(trap, capsys):
    assert main(["solve", str(trap), "--mechanism", "vcg", "--method", "cpsat", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exact"] is True and doc["inexact_reason"] == ""
    truth = clarke_by_brute_force(read_instance(trap))
    assert doc["payments"] == pytest.approx(truth)
    for b, p in truth.items():
        assert doc["payment_bounds"][b] == pytest.approx([p, p])


def test_table_shows_the_intervals_and_the_reason(trap, capsys):
    assert main(["solve", str(trap), "--mechanism", "vcg", "--method", "greedy"]) == 0
    out = capsys.readouterr().out
    assert "exact payment in" in out and "payments exact: no" in out and "not proven optimal" in out


def test_json_of_lavi_swamy_carries_its_lottery(trap, capsys):
    assert main(["solve", str(trap), "--mechanism", "lavi-swamy", "--method", "greedy", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exact"] is True
    lot = doc["lottery"]
    # the LP optimum here is integral (y + z = 4), so alpha = 1 and the lottery is that allocation
    assert lot["alpha"] == pytest.approx(1.0) and lot["expected_welfare"] == pytest.approx(4.0)
    assert lot["expected_payments"] == pytest.approx({"X": 0.0, "Y": 1.0, "Z": 1.0})


def test_outcome_to_dict_is_json_with_every_field():
    from gensolver import from_dict

    out = run_mechanism(from_dict(DOC), mechanism="vcg", method="greedy")
    doc = json.loads(json.dumps(outcome_to_dict(out, allocation=True, details=True), allow_nan=False))
    assert {"mechanism", "payments", "revenue", "exact", "payment_bounds", "inexact_reason", "allocation",
            "utilities", "details"} <= set(doc)
    assert doc == json.loads(json.dumps(out.to_dict()))


def test_seed_draws_from_the_lavi_swamy_lottery(tmp_path, capsys):
    """Three bidders on an odd cycle of goods: the lottery has three allocations, seeds differ."""
    doc = {"schema": "gensolver.instance/v1",
           "slots": [{"id": g, "capacity": {"units": 1}} for g in "ABC"],
           "bids": [{"id": f"{a}{b}", "bidder": a, "value": 2, "demand": {a: {"units": 1}, b: {"units": 1}}}
                    for a, b in ("AB", "BC", "CA")]}
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(doc))
    drawn = set()
    for seed in range(8):
        assert main(["solve", str(path), "--mechanism", "lavi-swamy", "--method", "greedy", "--seed", str(seed),
                     "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["lottery"]["alpha"] == pytest.approx(1.5)
        drawn.add(tuple(out["winners"]))
    assert len(drawn) >= 2
