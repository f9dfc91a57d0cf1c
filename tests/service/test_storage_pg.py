"""The store's one interface on both backends: SQLite (embedded) and a real PostgreSQL server."""

from __future__ import annotations

import threading

import pytest

from gensolver.service.storage import StoreError, audit, open_store
from gensolver.service.storage_pg import translate_ddl, translate_sql

from .conftest import make_api
from .test_api import test_every_list_pages_by_cursor as _pages
from .test_api import test_names_are_per_tenant_and_freed_on_cancel as _names
from .test_api import test_submit_is_all_or_nothing_and_retries_are_safe as _submit
from .test_api import test_tenants_see_only_their_own as _tenants
from .test_market import MARKETS
from .test_market import test_feedback_replaces_the_progress_model as _feedback
from .test_market import test_rounds_respect_capacity_and_account_every_credit as _rounds
from .test_quotas import test_a_retried_round_returns_the_first_answer as _retried_round


def test_translation_keeps_quoted_text_and_types():
    assert translate_sql("SELECT ? || '?' || \"a?\" WHERE x LIKE '%a'") == "SELECT %s || '?' || \"a?\" WHERE x LIKE '%%a'"
    ddl = " ".join(translate_ddl())
    for sqlite_only in ("AUTOINCREMENT", "BLOB", " REAL", "RAISE(ABORT"):
        assert sqlite_only not in ddl


def test_write_commits_and_rolls_back(any_store):
    with any_store.write() as db:
        db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", ("k1", "v1"))
    with pytest.raises(ZeroDivisionError):
        with any_store.write() as db:
            db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", ("k2", "v2"))
            raise ZeroDivisionError("after a write")
    rows = any_store.query("SELECT key, value FROM meta WHERE key LIKE 'k%' ORDER BY key")
    assert [(r["key"], r[1]) for r in rows] == [("k1", "v1")]
    assert dict(rows[0]) == {"key": "k1", "value": "v1"}
    assert any_store.one("SELECT value FROM meta WHERE key = ?", ("nope",)) is None


def test_grouped_rolls_back_only_the_failing_call(any_store):
    def good(k):
        def fn(db):
            db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", (k, "x"))
            return k
        return fn

    def bad(db):
        db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", ("bad", "x"))
        raise ValueError("refused")

    out, errors = [], []

    def run(fn):
        try:
            out.append(any_store.grouped(fn))
        except ValueError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f,)) for f in (good("g1"), bad, good("g2"), good("g3"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(out) == ["g1", "g2", "g3"] and len(errors) == 1
    keys = {r["key"] for r in any_store.query("SELECT key FROM meta WHERE value = 'x'")}
    assert keys == {"g1", "g2", "g3"}


def test_audit_log_is_append_only_and_floats_round_trip(any_store):
    with any_store.write() as db:
        audit(db, actor="t", action="a", subject="s", detail={"x": 1})
        db.execute("INSERT INTO credits(round, time, tenant, amount, reason, task) VALUES(?,?,?,?,?,?)",
                   (1, 0.0, "alice", 0.1 + 0.2, "r", "t"))
        db.execute("INSERT INTO credits(round, time, tenant, amount, reason, task) VALUES(?,?,?,?,?,?)",
                   (1, 0.0, "alice", 1e15 + 1, "r", "t"))
    rows = any_store.query("SELECT seq, amount FROM credits ORDER BY seq")
    assert [r["amount"] for r in rows] == [0.1 + 0.2, 1e15 + 1]  # double precision, not 4-byte REAL
    assert rows[0]["seq"] < rows[1]["seq"]
    for stmt in ("UPDATE audit SET actor = 'x'", "DELETE FROM audit"):
        with pytest.raises(Exception, match="append-only"):
            with any_store.write() as db:
                db.execute(stmt)
    assert any_store.one("SELECT COUNT(*) AS c FROM audit WHERE actor = 't'")["c"] == 1


def test_a_bad_postgres_url_is_a_store_error(pg_server):
    with pytest.raises(StoreError, match="cannot connect"):
        open_store(pg_server.url("no_such_database"))


@pytest.fixture(params=["credit", "vcg"])
def pg_market_api(request, tmp_path, pg_url):
    yield from make_api(tmp_path, db=pg_url, gpus="n0:2x80", market=MARKETS[request.param])  # warns: the auction


# the service's key tests, run again with the state on PostgreSQL
def test_submit_on_postgres(pg_api):
    _submit(pg_api)


def test_tenants_see_only_their_own_on_postgres(pg_api):
    _tenants(pg_api)


def test_names_on_postgres(pg_api):
    _names(pg_api)


def test_pages_on_postgres(pg_api):
    _pages(pg_api)


def test_feedback_on_postgres(pg_api):
    _feedback(pg_api)


def test_rounds_and_credits_on_postgres(pg_market_api):
    _rounds(pg_market_api)


def test_a_retried_round_on_postgres(pg_api):
    _retried_round(pg_api)
