"""Lavi–Swamy through the service: alpha is a setting fixed before any report (``serve --alpha``),
a lavi-swamy market without it is refused, and each round says whether its lottery is truthful."""

from __future__ import annotations

import json
import subprocess

import httpx

from .conftest import GENSOLVER, gentask, token_direct

MARKET = json.dumps({"engine": "auction", "mechanism": "lavi-swamy", "time_limit": 1000.0, "lease": 5})


def serve_fails(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(GENSOLVER + ["serve", "--db", str(tmp_path / "refused.db"), "--port", "1", *args],
                          capture_output=True, text=True, timeout=120)


def test_lavi_swamy_without_a_fixed_alpha_is_refused(tmp_path):
    out = serve_fails(tmp_path, "--market", MARKET)
    assert out.returncode == 2 and "market.alpha" in out.stderr and "Traceback" not in out.stderr
    out = serve_fails(tmp_path, "--market", json.dumps({"engine": "auction", "mechanism": "lavi-swamy", "alpha": 3}), "--alpha", "2")
    assert out.returncode == 2 and "disagree" in out.stderr
    out = serve_fails(tmp_path, "--market", MARKET, "--alpha", "0.5")
    assert out.returncode == 2 and "alpha" in out.stderr
    assert not (tmp_path / "refused.db").exists()


def one_round(srv, db, *, double_bob: bool = False) -> dict:
    ops, alice, bob = (token_direct(db, t, admin=t == "ops") for t in ("ops", "alice", "bob"))
    scale = 2 if double_bob else 1
    with httpx.Client(base_url=srv.url, timeout=120) as c:
        for k in range(3):  # two-GPU tasks against one-GPU tasks: the LP relaxation is fractional
            r = c.post("/v1/tasks", json=gentask(f"a{k}", preferred="50Gi", value=50 + k, gpus=2),
                       headers={"Authorization": f"Bearer {alice}"})
            assert r.status_code == 201, r.text
            r = c.post("/v1/tasks", json=gentask(f"b{k}", preferred="45Gi", value=scale * (40 + 3 * k)),
                       headers={"Authorization": f"Bearer {bob}"})
            assert r.status_code == 201, r.text
        r = c.post("/v1/rounds", headers={"Authorization": f"Bearer {ops}"})
        assert r.status_code == 201, r.text
        return r.json()


def test_rounds_use_the_fixed_alpha_and_say_when_it_is_not_enough(tmp_path, server_factory):
    seen = {}
    for alpha, double_bob in (("3", False), ("3", True), ("1", False)):
        db = tmp_path / f"m{alpha}{double_bob}.db"
        srv = server_factory("--gpus", "n0:2x80", "--market", MARKET, "--alpha", alpha, db=db)
        doc = one_round(srv, db, double_bob=double_bob)
        srv.stop()
        lot = doc["lottery"]
        assert doc["mechanism"] == "lavi-swamy" and lot["alpha_requested"] == float(alpha)
        for p in doc["payments"]:  # individually rational per draw, inside the certified interval
            lo, hi = p["payment_bounds"]
            assert lo - 1e-9 <= p["payment"] <= hi + 1e-9
        seen[alpha, double_bob] = lot
    for key in (("3", False), ("3", True)):  # fixed before the reports: bob doubling its values moves nothing
        assert seen[key]["alpha"] == 3.0 and seen[key]["truthful_in_expectation"] is True
        assert 1.0 < seen[key]["alpha_verified"] <= 3.0
    low = seen["1", False]  # this round cannot be decomposed at 1: flagged, scaled by what was verified
    assert low["truthful_in_expectation"] is False and low["alpha"] == low["alpha_verified"] > 1.0
