"""Scopes: token roles, expiry, list/revoke/rotate, one Authorization header, /metrics by role,
rate limits before and after authentication, and the append-only audit log."""

from __future__ import annotations

import sqlite3
import subprocess
import time

import httpx
import pytest

from gensolver.service import Settings, create_app
from gensolver.service.auth import TokenCache, add_token, list_tokens, revoke_token, rotate_token, verify_token
from gensolver.service.errors import Unauthorized
from gensolver.service.storage import SCHEMA_VERSION, Store

from .conftest import GENSOLVER, gentask, make_api
from .test_api import is_problem


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(GENSOLVER + ["serve", "token", *args], capture_output=True, text=True, timeout=120)


def test_token_lifecycle_through_the_cli_against_a_running_server(tmp_path, server_factory):
    db = tmp_path / "market.db"
    ops = cli("add", "ops", "--role", "operator", "--db", str(db)).stdout.strip()
    alice = cli("add", "alice", "--db", str(db), "--expires-in", "30d").stdout.strip()
    srv = server_factory(db=db)
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        me = c.get("/v1/me", headers={"Authorization": f"Bearer {alice}"}).json()
        assert me["role"] == "tenant" and me["expires"] > time.time() + 29 * 86400
        assert c.get("/v1/me", headers={"Authorization": f"Bearer {ops}"}).json()["role"] == "operator"
        listed = cli("list", "--db", str(db))
        assert listed.returncode == 0 and "alice" in listed.stdout and "operator" in listed.stdout
        assert alice.split("_", 2)[2] not in listed.stdout  # never a secret (gs_<id>_<secret>; it may hold "_")
        alice_id = alice.split("_")[1]
        # rotate: a new token works, the old one is refused from the next request on
        new = cli("rotate", alice_id, "--db", str(db))
        assert new.returncode == 0, new.stderr
        new_token = new.stdout.strip()
        is_problem(c.get("/v1/me", headers={"Authorization": f"Bearer {alice}"}), 401, "header.authorization")
        assert c.get("/v1/me", headers={"Authorization": f"Bearer {new_token}"}).json()["tenant"] == "alice"
        # revoke
        assert cli("revoke", new_token.split("_")[1], "--db", str(db)).returncode == 0
        is_problem(c.get("/v1/me", headers={"Authorization": f"Bearer {new_token}"}), 401)
        # every change is in the audit log, oldest first, paged by cursor
        h = {"Authorization": f"Bearer {ops}"}
        first = c.get("/v1/audit?limit=2", headers=h).json()
        rest = c.get(f"/v1/audit?after={first['next']}", headers=h).json()
        actions = [e["action"] for e in first["entries"] + rest["entries"]]
        assert actions == ["token.add", "token.add", "token.rotate", "token.revoke"] and rest["next"] is None
        is_problem(c.get("/v1/audit", headers={"Authorization": f"Bearer {alice}"}), 401)  # rotated away
    bad = cli("revoke", "000000000000", "--db", str(db))
    assert bad.returncode == 2 and "no token" in bad.stderr
    assert cli("add", "x", "--db", str(db), "--role", "root").returncode == 2
    assert cli("add", "x", "--db", str(db), "--expires-in", "soon").returncode == 2


def test_expiry_revocation_and_the_cache(tmp_path):
    store = Store(tmp_path / "m.db")
    try:
        now = time.time()
        tok = add_token(store, "alice", expires=now + 100)
        cache = TokenCache()
        assert verify_token(store, f"Bearer {tok}", cache, now=now).tenant == "alice"
        with pytest.raises(Unauthorized):  # the clock passed the expiry (cached or not)
            verify_token(store, f"Bearer {tok}", cache, now=now + 101)
        with pytest.raises(Unauthorized):
            verify_token(store, f"Bearer {tok}", None, now=now + 101)
        assert verify_token(store, f"Bearer {tok}", cache, now=now).tenant == "alice"  # cached again
        revoke_token(store, tok.split("_")[1])
        with pytest.raises(Unauthorized):  # the cache noticed the token change
            verify_token(store, f"Bearer {tok}", cache, now=time.time() + 1)
        old = add_token(store, "bob", admin=True)
        new = rotate_token(store, old.split("_")[1], grace=50)
        assert verify_token(store, f"Bearer {old}", cache, now=time.time()).admin  # within the grace
        with pytest.raises(Unauthorized):
            verify_token(store, f"Bearer {old}", cache, now=time.time() + 51)
        assert verify_token(store, f"Bearer {new}", cache).admin
        assert [t["status"] for t in list_tokens(store)] == ["revoked", "active", "active"]
        with pytest.raises(ValueError, match="expires"):
            add_token(store, "carol", expires=now - 1)
    finally:
        store.close()


def test_one_authorization_header_and_address_limits(tmp_path):
    gen = make_api(tmp_path, address_rate_limit=5.0, address_rate_burst=5)
    api = next(gen)
    try:
        two = [("Authorization", f"Bearer {api.tokens['alice']}"), ("Authorization", f"Bearer {api.tokens['ops']}")]
        is_problem(api.client.get("/v1/me", headers=two), 400, "header.authorization")
        # a made-up token per request is limited by the client's address before any token is read
        statuses = [api.client.get("/v1/me", headers={"Authorization": f"Bearer gs_{k:012x}_fake"}).status_code
                    for k in range(12)]
        assert 429 in statuses and set(statuses) <= {401, 429}
    finally:
        gen.close()


def test_metrics_by_role_and_bounded_with_many_tenants(tmp_path):
    db = tmp_path / "m.db"
    store = Store(db)
    with store.write() as conn:
        conn.executemany("INSERT INTO tenants(tenant, balance, weight) VALUES(?, ?, 1.0)",
                         [(f"t{k:05d}", 100.0 + k) for k in range(10_000)])
    ops, alice = add_token(store, "ops", admin=True), add_token(store, "alice")
    store.close()
    from fastapi.testclient import TestClient

    with TestClient(create_app(Settings(db=db)), raise_server_exceptions=False) as c:
        public = c.get("/metrics")
        assert public.status_code == 200 and len(public.content) < 100_000
        assert b"tenant=" not in public.content and b"gensolver_tenants 10000.0" in public.content
        full = c.get("/metrics", headers={"Authorization": f"Bearer {ops}"}).content
        assert full.count(b"gensolver_tenant_credit_balance_credits{") == 10_000
        assert b'gensolver_tenant_credit_balance_credits{tenant="t00007"} 107.0' in full
        is_problem(c.get("/metrics", headers={"Authorization": f"Bearer {alice}"}), 403)
        is_problem(c.get("/metrics", headers={"Authorization": "Bearer gs_nope_nope"}), 401)


def test_the_audit_log_is_append_only_and_records_rounds(api):
    api.client.post("/v1/tasks", json=gentask("a1", value=20.0), headers=api.h("alice"))
    n = api.client.post("/v1/rounds", headers=api.h("ops")).json()["round"]
    page = api.client.get("/v1/audit", headers=api.h("ops")).json()
    rounds = [e for e in page["entries"] if e["action"] == "round.clear"]
    assert [e["subject"] for e in rounds] == [str(n)] and rounds[0]["actor"] == "request"
    is_problem(api.client.get("/v1/audit", headers=api.h("alice")), 403)
    with api.service.store.write() as db:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("UPDATE audit SET actor = 'x'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        with api.service.store.write() as db:
            db.execute("DELETE FROM audit")


def test_a_layout_1_database_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     "INSERT INTO meta VALUES('schema_version', '1');"
                     "CREATE TABLE tokens(id TEXT PRIMARY KEY, tenant TEXT NOT NULL, admin INTEGER NOT NULL,"
                     " salt BLOB NOT NULL, digest BLOB NOT NULL, created REAL NOT NULL);")
    db.close()
    store = Store(path)
    try:
        tok = add_token(store, "alice", expires=time.time() + 60)
        assert verify_token(store, f"Bearer {tok}").tenant == "alice"
        assert store.one("SELECT value FROM meta WHERE key='schema_version'")["value"] == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_a_layout_2_database_gets_per_tenant_task_ids(tmp_path):
    """Tasks of layout 2 were keyed by their bare name; layout 3 keys them TENANT/NAME."""
    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES('schema_version', '2');"
        "CREATE TABLE tasks(id TEXT PRIMARY KEY, tenant TEXT NOT NULL, state TEXT NOT NULL, task TEXT NOT NULL,"
        " source TEXT NOT NULL, submitted REAL NOT NULL, seq INTEGER NOT NULL, remaining REAL NOT NULL, placement TEXT,"
        " memory REAL, waited REAL NOT NULL DEFAULT 0, wait_since REAL NOT NULL, progress_round INTEGER,"
        " started_round INTEGER, finished_round INTEGER);"
        "CREATE TABLE feedback(seq INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT NOT NULL, tenant TEXT NOT NULL,"
        " at REAL NOT NULL, memory_gib REAL, progress REAL);"
        "INSERT INTO tasks(id, tenant, state, task, source, submitted, seq, remaining, wait_since) VALUES"
        " ('job', 'alice', 'waiting', '{\"id\": \"job\", \"tenant\": \"alice\"}', '{}', 0, 1, 5, 0);"
        "INSERT INTO feedback(task, tenant, at, memory_gib) VALUES ('job', 'alice', 0, 3.0);")
    db.close()
    store = Store(path)
    try:
        row = store.one("SELECT id, name, task FROM tasks")
        assert (row["id"], row["name"]) == ("alice/job", "job")
        assert '"id":"alice/job"' in row["task"].replace(" ", "")
        assert store.one("SELECT task FROM feedback")["task"] == "alice/job"
    finally:
        store.close()


def test_the_token_cache_keeps_no_answer_read_before_a_change(tmp_path):
    """Threads verify tokens concurrently (off the event loop on PostgreSQL): an answer read
    before a token change that another thread has already seen is not kept, and the cache's
    version never moves back when a thread read an older one."""
    store = Store(tmp_path / "m.db")
    try:
        tok = add_token(store, "alice")
        cache = TokenCache()
        seen = cache.sync(store)  # thread A reads the version, then (later) the token's row
        verified = verify_token(store, f"Bearer {tok}", None)
        revoke_token(store, tok.split("_")[1])
        assert cache.sync(store) == seen + 1  # thread B saw the revocation
        cache.put(tok, (verified, None), seen)  # A's answer, read before it, comes too late
        assert tok not in cache.entries

        class Lagging:  # a reader whose snapshot is older than the cache's version
            @staticmethod
            def one(sql, params=()):
                return {"value": str(seen)}

        assert cache.sync(Lagging()) == seen and cache.version == seen + 1
        cache.put(tok, (verified, None), seen)
        assert tok not in cache.entries
        with pytest.raises(Unauthorized):
            verify_token(store, f"Bearer {tok}", cache)
    finally:
        store.close()
