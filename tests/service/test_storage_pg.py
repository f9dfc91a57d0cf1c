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


def _batch(*fns):
    """Items of one group commit, as :func:`~gensolver.service.storage.group_commit` queues them."""
    return [[fn, None, None, threading.Event()] for fn in fns]


def _put(key):
    def fn(db):
        db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", (key, "b"))
        return key
    return fn


def _refused(db):
    db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", ("refused", "b"))
    raise ValueError("refused by the call's own code")


def test_one_batch_keeps_the_calls_that_succeed(any_store):
    """One batch, deterministically (not left to thread timing): the refused call's insert is
    rolled back to its savepoint, its neighbours' are committed, each caller gets its own answer."""
    batch = _batch(_put("b1"), _refused, _put("b2"), _put("b3"))
    any_store._run_batch(batch)
    assert all(it[3].is_set() for it in batch)
    assert [it[1] for it in batch] == ["b1", None, "b2", "b3"]
    assert [type(it[2]) for it in batch] == [type(None), ValueError, type(None), type(None)]
    assert {r["key"] for r in any_store.query("SELECT key FROM meta WHERE value = 'b'")} == {"b1", "b2", "b3"}


def test_a_database_error_in_a_pipelined_batch_fails_it_whole(pg_url):
    """On PostgreSQL a batch is pipelined, so a server error may surface in another call's code:
    then nothing of the batch is stored and every caller gets an error (none is told its change
    is stored when it is not); the connection serves the next batch."""
    store = open_store(pg_url)
    try:
        store._run_batch(_batch(_put("dup")))

        def duplicate(db):  # the server refuses it; the error is read later, in the pipeline
            db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", ("dup", "b"))
            return "dup"

        batch = _batch(_put("c1"), duplicate, _put("c2"), _refused, _put("c3"))
        store._run_batch(batch)
        stored = {r["key"] for r in store.query("SELECT key FROM meta WHERE value = 'b'")}
        for it, key in zip(batch, ["c1", "dup", "c2", "refused", "c3"]):  # told stored <=> stored
            assert it[3].is_set() and (it[2] is None) == (key in stored and key != "dup")
        assert all(it[2] is not None and it[1] is None for it in batch) and stored == {"dup"}
        after = _batch(_put("d1"))
        store._run_batch(after)
        assert after[0][1] == "d1" and after[0][2] is None
        assert {r["key"] for r in store.query("SELECT key FROM meta WHERE value = 'b'")} == {"dup", "d1"}
    finally:
        store.close()


@pytest.mark.parametrize("n_ids, n_tenants", [(1, 1), (3, 2), (450, 130)])
def test_the_one_read_of_a_submission_matches_the_plain_queries(any_store, n_ids, n_tenants):
    """:func:`_read_for_submit` (one statement, chunked beyond 400 ids or 100 tenants) against
    one plain query per value."""
    from gensolver.service.state import _read_for_submit

    states = ["waiting", "running", "done", "cancelled"]
    with any_store.write() as db:
        for k in range(600):
            db.execute("INSERT INTO tasks(id, tenant, name, state, task, source, submitted, seq, remaining, "
                       "wait_since) VALUES(?,?,?,?,'{}','{}',0,?,1,0)",
                       (f"t{k % 150}/n{k}", f"t{k % 150}", f"n{k}", states[k % 7 % 4], 10 * k + 3))
    ids = [f"t{k % 150}/n{k}" for k in range(0, 1200, 1200 // n_ids)][:n_ids]  # half stored, half not
    tenants = [f"t{k}" for k in range(n_tenants)]
    with any_store.write() as db:
        seq, lives, found = _read_for_submit(db, ids, tenants)
    assert seq == any_store.one("SELECT MAX(seq) FROM tasks")[0] == 5993
    for tenant in tenants:
        assert lives[tenant] == any_store.one("SELECT COUNT(*) FROM tasks WHERE tenant = ? AND state IN "
                                              "('waiting', 'running')", (tenant,))[0]
    assert set(found) == {i for i in ids if any_store.one("SELECT 1 FROM tasks WHERE id = ?", (i,))}
    assert all(found[i]["name"] == i.split("/")[1] and found[i]["id"] == i for i in found)
