"""Idempotency-Key on POST, and per-tenant quotas on tasks and concurrent solves."""

from __future__ import annotations

import pytest

from .conftest import gentask, make_api
from .test_api import INSTANCE, is_problem


def test_a_retried_round_returns_the_first_answer(api):
    ops = {**api.h("ops"), "Idempotency-Key": "round-7f3a"}
    api.client.post("/v1/tasks", json=gentask("t1", value=10.0), headers=api.h("alice"))
    first = api.client.post("/v1/rounds", headers=ops)
    assert first.status_code == 201 and "idempotent-replayed" not in first.headers
    again = api.client.post("/v1/rounds", headers=ops)
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    # one round was cleared, not two; a new key clears the next one
    assert [r["round"] for r in api.client.get("/v1/rounds", headers=api.h("ops")).json()["rounds"]] == [1]
    assert api.client.post("/v1/rounds", headers={**api.h("ops"), "Idempotency-Key": "round-2"}).json()["round"] == 2
    # the same key with another request is refused; keys are per tenant
    a = {**api.h("alice"), "Idempotency-Key": "k1"}
    assert api.client.post("/v1/tasks", json=gentask("x1"), headers=a).status_code == 201
    is_problem(api.client.post("/v1/tasks", json=gentask("x2"), headers=a), 422, "header.idempotency-key")
    b = {**api.h("bob"), "Idempotency-Key": "k1"}
    assert api.client.post("/v1/tasks", json=gentask("x2"), headers=b).status_code == 201
    # an error is not stored: the same request may be retried once it can succeed
    is_problem(api.client.post("/v1/tasks", json=gentask("Bad"), headers={**api.h("alice"), "Idempotency-Key": "k2"}),
               422, "metadata.name")
    is_problem(api.client.post("/v1/tasks", json=gentask("x3"), headers={**api.h("alice"), "Idempotency-Key": "k\x01"}),
               400, "header.idempotency-key")
    is_problem(api.client.post("/v1/tasks", json=gentask("x3"), headers={**api.h("alice"),
                                                                         "Idempotency-Key": "k" * 201}),
               400, "header.idempotency-key")
    # a bad token with a key is still a 401 from the route
    is_problem(api.client.post("/v1/rounds", headers={"Authorization": "Bearer gs_x_y", "Idempotency-Key": "z"}), 401)


def test_every_post_route_replays_its_first_answer(api):
    """The key is honoured on each POST route, not only on rounds and tasks."""
    a = api.h("alice")
    api.client.post("/v1/tasks", json=gentask("f", preferred="40Gi", duration="60m", value=100), headers=a)
    api.client.post("/v1/rounds", headers=api.h("ops"))
    calls = [("/v1/solve?method=greedy&mechanism=vcg", INSTANCE), ("/v1/feedback", {"task": "f", "progress": 0.5}),
             ("/v1/tasks", gentask("g")), ("/v1/rounds", None)]
    for k, (path, doc) in enumerate(calls):
        h = {**(api.h("ops") if doc is None else a), "Idempotency-Key": f"every-{k}"}
        first = api.client.post(path, json=doc, headers=h)
        assert first.status_code in (200, 201) and "idempotent-replayed" not in first.headers, (path, first.text)
        again = api.client.post(path, json=doc, headers=h)
        assert again.status_code == first.status_code and again.headers.get("idempotent-replayed") == "true", path
        assert again.content == first.content, path
    # the replayed round cleared nothing: rounds 1 and 2 only
    assert [r["round"] for r in api.client.get("/v1/rounds", headers=api.h("ops")).json()["rounds"]] == [1, 2]


def test_task_quota_per_tenant(tmp_path):
    gen = make_api(tmp_path, max_tasks_per_tenant=2)
    api = next(gen)
    try:
        a = api.h("alice")
        assert api.client.post("/v1/tasks", json=[gentask("q1"), gentask("q2")], headers=a).status_code == 201
        is_problem(api.client.post("/v1/tasks", json=gentask("q3"), headers=a), 403)
        assert api.client.post("/v1/tasks", json=gentask("q1"), headers=a).status_code == 200  # a retry still answers
        assert api.client.post("/v1/tasks", json=gentask("b1"), headers=api.h("bob")).status_code == 201  # own quota
        api.client.delete("/v1/tasks/q1", headers=a)
        assert api.client.post("/v1/tasks", json=gentask("q3"), headers=a).status_code == 201
        is_problem(api.client.post("/v1/tasks", json=[gentask("q4"), gentask("q5")], headers=a), 403)
        live = [t["id"] for t in api.client.get("/v1/tasks?state=waiting", headers=a).json()["tasks"]]
        assert live == ["q2", "q3"]
    finally:
        gen.close()


def test_concurrent_solves_per_tenant(api):
    solves = api.client.app.state.solves
    solves["alice"] = api.client.app.state.settings.max_solves_per_tenant  # as if alice's solves were running
    r = api.client.post("/v1/solve?method=greedy", json=INSTANCE, headers=api.h("alice"))
    is_problem(r, 429)
    assert r.headers["retry-after"] == "1" and "--max-solves-per-tenant" in r.json()["detail"]
    assert api.client.post("/v1/solve?method=greedy", json=INSTANCE, headers=api.h("bob")).status_code == 200
    del solves["alice"]
    assert api.client.post("/v1/solve?method=greedy", json=INSTANCE, headers=api.h("alice")).status_code == 200
    bad = {**INSTANCE, "bids": "x"}
    assert api.client.post("/v1/solve", json=bad, headers=api.h("alice")).status_code == 422
    assert solves == {}  # every solve, failed or not, gave its slot back


@pytest.mark.parametrize("field", ["max_tasks_per_tenant", "max_solves_per_tenant"])
def test_quota_settings_are_checked(field):
    from gensolver.service import Settings

    with pytest.raises(ValueError, match=field):
        Settings(**{field: 0})
