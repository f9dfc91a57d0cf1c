"""Rounds through the API, checked by independent certificates (capacity, accounting, plans)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from gensolver.executor import check_plan, plan_from_dict

from .conftest import gentask, make_api


def overfilled(assignments: list[dict], gpus: list[dict], tasks: dict[str, dict]) -> list[str]:
    """GPUs whose memory or compute the round's assignments exceed (an independent check)."""
    mem: dict[str, float] = defaultdict(float)
    cmp_: dict[str, float] = defaultdict(float)
    for a in assignments:
        for g in a["gpus"]:
            mem[g] += a["memory"]
            cmp_[g] += tasks[a["task"]]["compute"]
    cap = {g["id"]: g for g in gpus}
    return sorted(g for g in mem if mem[g] > cap[g]["memory"] + 1e-9 or cmp_[g] > cap[g]["compute"] + 1e-9)


def test_the_capacity_checker_can_fail():
    gpus = [{"id": "g0", "memory": 80.0, "compute": 1.0}]
    tasks = {"a": {"compute": 0.5}, "b": {"compute": 0.5}, "c": {"compute": 0.25}}
    ok = [{"task": "a", "gpus": ["g0"], "memory": 40.0}, {"task": "b", "gpus": ["g0"], "memory": 40.0}]
    assert overfilled(ok, gpus, tasks) == []
    assert overfilled(ok + [{"task": "c", "gpus": ["g0"], "memory": 1.0}], gpus, tasks) == ["g0"]


#: the market (the credit engine, the default), and the deprecated auction with two mechanisms
MARKETS = {"credit": {"lease": 5},
           "pay-as-bid": {"engine": "auction", "mechanism": "pay-as-bid", "time_limit": 1.0, "lease": 5,
                          "budget": 500.0, "refill": 100.0, "refill_every": 10},
           "vcg": {"engine": "auction", "mechanism": "vcg", "time_limit": 1.0, "lease": 5,
                   "budget": 500.0, "refill": 100.0, "refill_every": 10}}


@pytest.fixture(params=sorted(MARKETS))
def market_api(request, tmp_path):
    if request.param == "credit":
        yield from make_api(tmp_path, gpus="n0:2x80", market=MARKETS["credit"])
        return
    yield from make_api(tmp_path, gpus="n0:2x80", market=MARKETS[request.param])  # warns: the auction


def check_credit_payments(doc: dict, tasks: dict[str, dict], lease: int) -> list[str]:
    """Tasks of a credit round whose payment is not ``price(tenant) x GiB x GPUs x lease`` from
    the round's own prices, whose interval is not that point, or whose charge exceeds it."""
    bad = []
    held = {a["task"]: a for a in doc["assignments"]}
    for p in doc["payments"]:
        a = held[p["task"]]
        asked = doc["prices"].get(p["tenant"], 0.0) * a["memory"] * len(a["gpus"]) * lease
        if abs(p["payment"] - asked) > 1e-9 * max(1.0, asked) or p["payment_bounds"] != [p["payment"]] * 2 \
                or not p["exact"] or not -1e-12 <= p["charge"] <= p["payment"] + 1e-9:
            bad.append(p["task"])
    return bad


def test_the_credit_payment_checker_can_fail():
    doc = {"assignments": [{"task": "a/x", "gpus": ["g0"], "memory": 40.0}], "prices": {"a": 0.5},
           "payments": [{"task": "a/x", "tenant": "a", "payment": 100.0, "payment_bounds": [100.0, 100.0],
                         "exact": True, "charge": 60.0}]}
    assert check_credit_payments(doc, {}, 5) == []
    for key, value in (("payment", 99.0), ("charge", 100.5), ("payment_bounds", [90.0, 100.0])):
        assert check_credit_payments({**doc, "payments": [{**doc["payments"][0], key: value}]}, {}, 5) == ["a/x"]


def test_rounds_respect_capacity_and_account_every_credit(market_api):
    api = market_api
    for k in range(5):
        api.client.post("/v1/tasks", json=gentask(f"a{k}", preferred="30Gi", minimum="20Gi", duration="10m", value=50 + k),
                        headers=api.h("alice"))
        api.client.post("/v1/tasks", json=gentask(f"b{k}", preferred="50Gi", duration="5m", value=40 + k,
                                                  preemptible=k % 2 == 0), headers=api.h("bob"))
    gpus = api.client.get("/healthz").json()["gpus"]
    tasks = {t["key"]: t["task"] for t in api.client.get("/v1/tasks", headers=api.h("ops")).json()["tasks"]}
    rounds = []
    for _ in range(8):
        r = api.client.post("/v1/rounds", headers=api.h("ops"))
        assert r.status_code == 201, r.text
        rounds.append(r.json())
    for doc in rounds:
        assert overfilled(doc["assignments"], gpus, tasks) == [], doc["round"]
        assert doc["time"] == (doc["round"] - 1) * 5
        if doc["mechanism"] == "credit":
            assert check_credit_payments(doc, tasks, 5) == [], doc["round"]
        for p in doc["payments"]:
            lo, hi = p["payment_bounds"]
            assert lo - 1e-9 <= p["payment"] <= hi + 1e-9
            assert 0 <= p["charge"] <= p["payment"] + 1e-9
            if p["exact"]:
                assert lo == pytest.approx(hi)
        assert doc["revenue"] == pytest.approx(sum(p["charge"] for p in doc["payments"]))
        # the plan is a valid gensolver.plan/v1 whose entries are the round's assignments
        if doc["assignments"]:
            plan = plan_from_dict(doc["plan"])
            assert check_plan(plan).ok
            assert {e.task for e in plan.entries} == {a["task"] for a in doc["assignments"]}
    # accounting: a tenant's balance is the sum of its credit changes over all rounds
    for tenant in ("alice", "bob"):
        view = api.client.get(f"/v1/tenants/{tenant}", headers=api.h(tenant)).json()
        changes = [c for doc in rounds for c in doc["credits"] if c["tenant"] == tenant]
        first = ("income", None) if rounds[0]["mechanism"] == "credit" else ("budget", 500.0)
        assert changes[0]["reason"] == first[0] and changes[0]["amount"] == (first[1] or changes[0]["amount"]) > 0
        assert view["balance"] == pytest.approx(sum(c["amount"] for c in changes))
        charged = sum(p["charge"] for doc in rounds for p in doc["payments"] if p["tenant"] == tenant)
        assert view["spent"] == pytest.approx(charged)
        assert -sum(c["amount"] for c in changes if c["reason"] == "payment") == pytest.approx(charged)
    if rounds[0]["mechanism"] == "credit":  # overloaded: other tenants' left-out tasks set prices
        assert any(p["payment"] > 0 for doc in rounds for p in doc["payments"])
    # every task ran to completion: 10 steps at >= 20/30 speed fit in the 8 rounds of 5 steps
    states = {t["key"]: t["state"] for t in api.client.get("/v1/tasks", headers=api.h("ops")).json()["tasks"]}
    finished = {f["task"] for doc in rounds for f in doc["finished"]}
    assert finished == {t for t, s in states.items() if s == "done"}
    assert len(finished) >= 6


def test_work_is_counted_and_tasks_finish(tmp_path):
    gen = make_api(tmp_path, gpus="n0:1x80", market={"lease": 5})
    api = next(gen)
    try:
        api.client.post("/v1/tasks", json=gentask("w", preferred="40Gi", duration="12m", value=100), headers=api.h("alice"))
        first = api.client.post("/v1/rounds", headers=api.h("ops")).json()
        assert [a["task"] for a in first["assignments"]] == ["alice/w"] and first["assignments"][0]["memory"] == 40.0
        # 12 steps at full speed: 7 left after one lease, 2 after two, done at the fourth round
        api.client.post("/v1/rounds", headers=api.h("ops"))
        assert api.client.get("/v1/tasks/w", headers=api.h("alice")).json()["remaining"] == pytest.approx(7.0)
        api.client.post("/v1/rounds", headers=api.h("ops"))
        assert api.client.get("/v1/tasks/w", headers=api.h("alice")).json()["remaining"] == pytest.approx(2.0)
        fourth = api.client.post("/v1/rounds", headers=api.h("ops")).json()
        assert fourth["finished"] == [{"task": "alice/w", "tenant": "alice"}] and fourth["assignments"] == []
        assert api.client.get("/v1/tasks/w", headers=api.h("alice")).json()["state"] == "done"
    finally:
        gen.close()


def test_feedback_replaces_the_progress_model(api):
    api.client.post("/v1/tasks", json=gentask("f", preferred="40Gi", duration="60m", value=100), headers=api.h("alice"))
    r = api.client.post("/v1/feedback", json={"task": "f", "progress": 0.5}, headers=api.h("alice"))
    assert r.status_code == 409 and r.json()["field"] == "/task"  # not running yet
    api.client.post("/v1/rounds", headers=api.h("ops"))
    r = api.client.post("/v1/feedback", json={"task": "f", "progress": 0.5, "memory_bytes": 30 * 2 ** 30},
                        headers=api.h("alice"))
    assert r.status_code == 200, r.text
    assert r.json()["remaining"] == pytest.approx(30.0)
    # another tenant's task is simply not found
    assert api.client.post("/v1/feedback", json={"task": "f", "progress": 0.5}, headers=api.h("bob")).status_code == 404
    bad = api.client.post("/v1/feedback", json={"task": "f"}, headers=api.h("alice"))
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
    bad = api.client.post("/v1/feedback", json={"task": "f", "progress": 2}, headers=api.h("alice"))
    assert bad.status_code == 422 and bad.json()["field"] == "/progress"
    view = api.client.get("/v1/tenants/alice", headers=api.h("alice")).json()
    assert view["usage"]["executor_memory_bytes"] == 30 * 2 ** 30
    # the report counts, not the model: the next round does not subtract a lease of work again
    api.client.post("/v1/rounds", headers=api.h("ops"))
    assert api.client.get("/v1/tasks/f", headers=api.h("alice")).json()["remaining"] == pytest.approx(30.0)
    done = api.client.post("/v1/feedback", json={"task": "f", "progress": 1.0}, headers=api.h("alice")).json()
    assert done["state"] == "done"


def test_two_apps_in_one_process_share_nothing(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ga, gb = make_api(tmp_path / "a"), make_api(tmp_path / "b")
    a, b = next(ga), next(gb)
    try:
        a.client.post("/v1/tasks", json=gentask("only-a"), headers=a.h("alice"))
        assert b.client.get("/v1/tasks", headers=b.h("ops")).json()["tasks"] == []
        assert b"gensolver_tasks_submitted_total{tenant=\"alice\"}" not in b.client.get("/metrics").content
        assert a.client.get("/v1/tasks", headers=b.h("ops")).status_code == 401
    finally:
        ga.close()
        gb.close()
