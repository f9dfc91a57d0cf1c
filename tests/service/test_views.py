"""Behaviour of :mod:`gensolver.service.views`: what each caller may read, and cursor paging.

Certificates: a tenant's view of a round is checked against the operator's full round (own
entries all kept, no other tenant's entry left); pages are walked to the end and compared
with the whole list read in one go.
"""

from __future__ import annotations

import copy

import pytest

from .conftest import gentask

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from gensolver.service.auth import Principal  # noqa: E402
from gensolver.service.errors import NotFound  # noqa: E402
from gensolver.service.views import TASK_STATES, ReadViews  # noqa: E402

OPS = Principal("ops", True, "t-ops")
ALICE = Principal("alice", False, "t-alice")
BOB = Principal("bob", False, "t-bob")


def _rounds(api, n: int) -> None:
    for k in range(n):
        for who in ("alice", "bob"):
            r = api.client.post("/v1/tasks", json=gentask(f"{who[0]}{k}", duration="1m"), headers=api.h(who))
            assert r.status_code in (200, 201), r.text
        assert api.client.post("/v1/rounds", headers=api.h("ops")).status_code == 201


def _entries(doc: dict) -> dict[str, list]:
    return {k: doc.get(k, []) for k in ("assignments", "preempted", "finished", "payments", "credits")}


def assert_tenant_view(full: dict, seen: dict, tenant: str) -> None:
    """``seen`` is ``full`` with exactly ``tenant``'s entries (lists and plan), nothing else changed."""
    for key, entries in _entries(full).items():
        assert seen.get(key, []) == [e for e in entries if e.get("tenant") == tenant], key
    own = {a["task"] for a in full["assignments"] if a.get("tenant") == tenant}
    if full.get("plan") is not None:
        assert {t["id"] for t in seen["plan"]["tasks"]} == {t["id"] for t in full["plan"]["tasks"]} & own
        for d_full, d_seen in zip(full["plan"]["devices"], seen["plan"]["devices"]):
            assert d_seen["entries"] == [e for e in d_full["entries"] if e["task"] in own]
    rest = {k: v for k, v in full.items() if k not in _entries(full) and k != "plan"}
    assert {k: seen[k] for k in rest} == rest


def test_a_tenant_sees_its_own_entries_of_every_round(api):
    _rounds(api, 2)
    svc = api.service
    for n in (1, 2):
        full = svc.get_round(OPS, n)
        assert {a["tenant"] for a in full["assignments"]} == {"alice", "bob"}
        for who in (ALICE, BOB):
            assert_tenant_view(full, svc.get_round(who, n), who.tenant)
    with pytest.raises(NotFound, match="no round 3"):
        svc.get_round(OPS, 3)


def test_the_tenant_view_check_can_fail(api):
    _rounds(api, 1)
    full = api.service.get_round(OPS, 1)
    with pytest.raises(AssertionError):
        assert_tenant_view(full, full, "alice")  # bob's entries left in
    leaky = copy.deepcopy(ReadViews._filter_round(full, ALICE))
    leaky["assignments"] = []
    with pytest.raises(AssertionError):
        assert_tenant_view(full, leaky, "alice")  # alice's own entries dropped


def test_rounds_page_forward_from_a_cursor_and_latest_without(api):
    _rounds(api, 5)
    svc = api.service
    latest, nxt = svc.list_rounds(OPS, limit=2)
    assert [r["round"] for r in latest] == [4, 5] and nxt is None
    walked, after = [], 0
    for _ in range(10):
        page, cursor = svc.list_rounds(OPS, limit=2, after=after)
        walked += [r["round"] for r in page]
        if cursor is None:
            break
        after = int(cursor)
    assert walked == [r["round"] for r in svc.list_rounds(OPS, limit=100)[0]] == [1, 2, 3, 4, 5]


def test_audit_pages_cover_the_log_once_in_order(api):
    _rounds(api, 2)
    svc = api.service
    whole = svc.audit_page(limit=10_000, after=0)["entries"]
    assert whole and whole == sorted(whole, key=lambda e: e["seq"])
    walked, after = [], 0
    while True:
        page = svc.audit_page(limit=3, after=after)
        walked += page["entries"]
        if page["next"] is None:
            break
        after = page["next"]
    assert walked == whole


def test_accounts_count_tasks_by_state_and_list_tenants_by_page(api):
    _rounds(api, 2)
    svc = api.service
    for who in ("alice", "bob"):
        view = svc.tenant_view(OPS, who)
        tasks = api.client.get(f"/v1/tasks?tenant={who}", headers=api.h("ops")).json()["tasks"]
        assert view["tasks"] == {s: sum(t["state"] == s for t in tasks) for s in TASK_STATES}
        assert sum(view["tasks"].values()) == 2  # one task a round each
    with pytest.raises(NotFound):
        svc.tenant_view(OPS, "carol")
    names, cursor = [], ""
    for _ in range(10):
        page, nxt = svc.tenants(OPS, limit=1, after=cursor)
        names += [a["tenant"] for a in page]
        if nxt is None:
            break
        cursor = nxt
    assert names == sorted({"ops", "alice", "bob"}) == [a["tenant"] for a in svc.tenants(OPS, limit=100)[0]]
