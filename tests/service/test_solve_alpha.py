"""``POST /v1/solve?mechanism=lavi-swamy&alpha=A`` on a real server: alpha fixed before the
reports reaches the lottery (truthful), a bad alpha is a 422 problem naming ``query.alpha``.
The expected payments are checked against an independent fractional VCG (LPs by
:func:`scipy.optimize.linprog`): Lavi & Swamy charge ``p_i^{LP-VCG} / alpha`` in expectation."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from scipy.optimize import linprog

from .conftest import token_direct
from .test_api import is_problem

#: the LLG auction with one more local bidder: the LP optimum (M on A, L2 on B) is unique
LLG = {"schema": "gensolver.instance/v1", "name": "llg",
       "slots": [{"id": "A", "capacity": {"units": 1}}, {"id": "B", "capacity": {"units": 1}}],
       "bids": [{"id": "l1", "bidder": "L1", "value": 6, "demand": {"A": {"units": 1}}},
                {"id": "l2", "bidder": "L2", "value": 6, "demand": {"B": {"units": 1}}},
                {"id": "g", "bidder": "G", "value": 10, "demand": {"A": {"units": 1}, "B": {"units": 1}}},
                {"id": "m", "bidder": "M", "value": 7, "demand": {"A": {"units": 1}}}]}


def lp(doc: dict, without: str | None = None) -> tuple[float, dict[str, float]]:
    """The LP relaxation (one bid per bidder here), optionally without one bidder: optimum and
    each bidder's fractional value."""
    bids = [b for b in doc["bids"] if b["bidder"] != without]
    slots = [s["id"] for s in doc["slots"]]
    A = np.array([[b["demand"].get(s, {}).get("units", 0.0) for b in bids] for s in slots])
    res = linprog(-np.array([b["value"] for b in bids], dtype=float), A_ub=A,
                  b_ub=[s["capacity"]["units"] for s in doc["slots"]], bounds=(0, 1), method="highs")
    assert res.status == 0
    return -res.fun, {b["bidder"]: b["value"] * x for b, x in zip(bids, res.x)}


@pytest.fixture
def server(tmp_path, server_factory):
    srv = server_factory()
    token = token_direct(tmp_path / "market.db", "alice")
    with httpx.Client(base_url=srv.url, timeout=120, headers={"Authorization": f"Bearer {token}"}) as c:
        yield c


def test_a_fixed_alpha_reaches_the_lottery(server):
    r = server.post("/v1/solve?mechanism=lavi-swamy&alpha=3", json=LLG)
    assert r.status_code == 200, r.text
    doc = r.json()
    lot = doc["lottery"]
    assert doc["truthful"] is True and lot["truthful_in_expectation"] is True
    assert lot["alpha"] == lot["alpha_requested"] == 3.0
    star, frac = lp(LLG)
    assert lot["lp_welfare"] == pytest.approx(star, abs=1e-9)
    assert lot["expected_welfare"] == pytest.approx(star / 3, abs=1e-9)
    for b in {x["bidder"] for x in LLG["bids"]}:  # fractional VCG over alpha
        clarke = lp(LLG, without=b)[0] - (star - frac[b])
        assert lot["expected_payments"][b] == pytest.approx(clarke / 3, abs=1e-9), b
    # without alpha it comes from the reports: answered, and flagged not truthful
    r = server.post("/v1/solve?mechanism=lavi-swamy", json=LLG)
    assert r.status_code == 200 and r.json()["truthful"] is False


def test_a_bad_alpha_is_refused_by_name(server):
    for query in ("mechanism=lavi-swamy&alpha=0.5", "mechanism=lavi-swamy&alpha=inf", "mechanism=lavi-swamy&alpha=nan",
                  "mechanism=lavi-swamy&alpha=two", "mechanism=vcg&alpha=2", "alpha=2"):
        body = is_problem(server.post(f"/v1/solve?{query}", json=LLG), 422, "query.alpha")
        assert "alpha" in body["detail"], query
