"""The round timer's lease: one replica's timer clears rounds (SQLite and PostgreSQL)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any, Iterator

import httpx
import pytest

from gensolver.service.lease import LeaseLost, RoundLease
from gensolver.service.storage import open_store


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path) -> str:
    return str(tmp_path / "market.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


@pytest.fixture
def stores(db):
    opened = [open_store(db) for _ in range(4)]
    try:
        yield opened
    finally:
        for s in opened:
            s.close()


def test_one_holder_renewal_and_handover(stores):
    clock = Clock()
    a, b = (RoundLease(s, ttl=30.0, clock=clock) for s in stores[:2])
    assert a.acquire() and not b.acquire()
    clock.now += 20
    assert a.acquire() and not b.acquire()      # a renews: b still waits
    clock.now += 29
    assert not b.acquire()                       # a's renewed lease runs 30 s from its renewal
    clock.now += 2
    assert b.acquire() and not a.acquire()      # a stopped renewing (died): b takes over
    b.release()
    assert a.acquire()                           # a released lease is free at once
    a.release()
    a.release()                                  # releasing twice, or a lease not held, is harmless
    assert b.acquire()
    a.release()
    assert not a.acquire()


def test_simultaneous_takers_one_winner(stores):
    clock = Clock()
    leases = [RoundLease(stores[i % 4], ttl=30.0, clock=clock) for i in range(8)]
    barrier = threading.Barrier(8)
    won: list[bool] = [False] * 8

    def take(i: int) -> None:
        barrier.wait()
        won[i] = leases[i].acquire()

    for rnd in range(3):  # a free lease, then an expired one, twice
        threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sum(won) == 1, (rnd, won)
        won = [False] * 8
        clock.now += 31


def test_holder_is_named_and_read_back(stores):
    clock = Clock()
    a = RoundLease(stores[0], ttl=30.0, clock=clock, holder="replica-a")
    assert a.holder_now() is None
    assert a.acquire()
    assert a.holder_now() == ("replica-a", pytest.approx(clock.now + 30.0))
    a.release()
    assert a.holder_now() is None
    with pytest.raises(ValueError, match="holder"):
        RoundLease(stores[0], ttl=30.0, holder="two words")


def test_the_lease_outlasts_the_period():
    from gensolver.service import Settings

    assert Settings(round_seconds=2.0).round_lease == 6.0
    assert Settings(round_seconds=2.0, round_lease_seconds=2.5).round_lease == 2.5
    with pytest.raises(ValueError, match="round_lease_seconds"):
        Settings(round_seconds=2.0, round_lease_seconds=2.0)
    with pytest.raises(ValueError, match="round_lease_seconds"):
        Settings(round_seconds=2.0, round_lease_seconds=-1.0)


# ---------------------------------------------------------------- two real replicas
#: a short period, a lease far longer than a loaded machine's tick (a false handover would need
#: the leader to miss every renewal for LEASE seconds)
PERIOD, LEASE = 0.25, 15.0
REPLICA_ARGS = ("--gpus", "n0:2x80", "--round-seconds", str(PERIOD), "--round-lease-seconds", str(LEASE))


class Ledger:
    """The periodic rounds and the lease row, read straight from the database."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.db = psycopg.connect(url, autocommit=True)

    def rounds(self) -> list[tuple[int, float, str]]:
        """``(round, committed at, replica)`` of every periodic round, in round order."""
        rows = self.db.execute("SELECT r.n, r.at, a.detail FROM rounds r JOIN audit a ON a.action = 'round.clear' "
                               "AND a.subject = CAST(r.n AS TEXT) AND a.actor = 'periodic' ORDER BY r.n").fetchall()
        return [(int(n), float(at), json.loads(detail)["replica"]) for n, at, detail in rows]

    def lease(self) -> tuple[str, float] | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'round_timer'").fetchone()
        if row is None:
            return None
        until, _, holder = row[0].partition(" ")
        return holder, float(until)

    def wait(self, what: str, ok: Any, timeout: float = 180.0) -> list[tuple[int, float, str]]:
        """Poll until ``ok(rounds)`` holds (a deadline, not a fixed sleep, decides)."""
        deadline = time.monotonic() + timeout
        while True:
            rounds = self.rounds()
            if ok(rounds):
                return rounds
            assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s; rounds {rounds[-5:]}"
            time.sleep(0.05)


def holder_blocks(rounds: list[tuple[int, float, str]]) -> list[str]:
    """The replicas that cleared ``rounds``, one entry per run of consecutive rounds."""
    order = [who for _, _, who in sorted(rounds)]
    return [who for i, who in enumerate(order) if i == 0 or order[i - 1] != who]


def test_holder_blocks_catch_interleaved_timers():
    assert holder_blocks([(1, 0.0, "a"), (2, 0.1, "a"), (3, 0.2, "b")]) == ["a", "b"]
    assert holder_blocks([(1, 0.0, "a"), (2, 0.1, "b"), (3, 0.2, "a")]) == ["a", "b", "a"]  # two timers at once


def _by(rounds: list[tuple[int, float, str]], replica: str) -> list[tuple[int, float, str]]:
    return [r for r in rounds if r[2] == replica]


def test_one_real_replica_clears_each_round_and_a_killed_ones_timer_is_taken_over(pg_url, server_factory):
    """Two real ``gensolver serve`` processes on one PostgreSQL with ``--round-seconds``: the
    periodic rounds come from one replica at a time (blocks, never interleaved); a stopped
    leader hands over at once (before its lease would have run out); a ``kill -9``'d one is
    taken over only once its lease ran out, and then promptly."""
    from .conftest import gentask, token_direct
    from .test_replicas import certify

    h = {"Authorization": f"Bearer {token_direct(pg_url, 'alice')}"}
    first, second = (server_factory(*REPLICA_ARGS, db=pg_url) for _ in range(2))
    name = {s.url: httpx.get(s.url + "/healthz", timeout=60).json()["replica"] for s in (first, second)}
    assert len(set(name.values())) == 2
    for k in range(3):  # long tasks: every period has work, so every timer tick that holds the lease clears
        r = httpx.post(second.url + "/v1/tasks", headers=h, timeout=60,
                       json=gentask(f"long-{k}", preferred="10Gi", duration="100h", value=10.0 + k))
        assert r.status_code == 201, r.text
    ledger = Ledger(pg_url)
    try:
        # 1. both alive: one timer clears (the other never does)
        rounds = ledger.wait("four periodic rounds", lambda rs: len(rs) >= 4)
        leader = rounds[0][2]
        assert leader in name.values() and {r[2] for r in rounds} == {leader}, rounds
        assert ledger.lease()[0] == leader
        old, other = (first, second) if name[first.url] == leader else (second, first)
        follower = name[other.url]
        rounds = ledger.wait("four more", lambda rs: len(rs) >= len(rounds) + 4)
        assert _by(rounds, follower) == [], "the replica without the lease cleared a round"

        # 2. the leader stops (SIGTERM): it releases the lease, the follower takes over at once
        held = ledger.lease()
        assert held is not None and held[0] == leader
        old.stop()
        assert old.proc is not None and old.proc.returncode in (0, 128 + 15, -15)  # its own exit, not stop()'s kill
        assert ledger.lease() is None or ledger.lease()[0] == follower
        rounds = ledger.wait("the follower's first round", lambda rs: _by(rs, follower))
        took = _by(rounds, follower)[0]
        assert took[1] < held[1], f"took over at {took[1]:.3f}, not before the lease's end {held[1]:.3f}"

        # 3. a new replica joins while the follower holds the lease: it clears nothing
        joined = server_factory(*REPLICA_ARGS, db=pg_url)
        newcomer = httpx.get(joined.url + "/healthz", timeout=60).json()["replica"]
        since = len(_by(ledger.rounds(), follower))
        rounds = ledger.wait("four rounds with the newcomer up", lambda rs: len(_by(rs, follower)) >= since + 4)
        assert _by(rounds, newcomer) == []

        # 4. the follower is killed (-9): nobody clears until its lease ran out, then the newcomer does
        other.kill9()
        held = ledger.lease()
        assert held is not None and held[0] == follower  # final: a dead replica renews nothing
        rounds = ledger.wait("the newcomer's first round", lambda rs: _by(rs, newcomer), timeout=LEASE + 180.0)
        took = _by(rounds, newcomer)[0]
        assert took[1] >= held[1], f"took over at {took[1]:.3f}, before the lease ran out at {held[1]:.3f}"
    finally:
        ledger.db.close()
    # each round cleared once, by one replica at a time: three blocks in holder order
    assert holder_blocks(rounds) == [leader, follower, newcomer], holder_blocks(rounds)
    facts = certify(pg_url)  # rounds 1..R with no gap, credits equal to the answers, balances to ledgers
    assert facts["rounds"] >= len(rounds) and {r[0] for r in rounds} <= set(range(1, facts["rounds"] + 1))


# ---------------------------------------------------------------- fencing at commit
def test_fence_refuses_a_lost_an_expired_and_an_absent_lease(stores):
    clock = Clock()
    a, b = (RoundLease(s, ttl=30.0, clock=clock, holder=h) for s, h in zip(stores[:2], ("a", "b")))
    with pytest.raises(LeaseLost, match="nobody"):
        with stores[0].write() as db:
            a.fence(db)
    assert a.acquire()
    with stores[0].write() as db:
        a.fence(db)                              # held and unexpired: passes
    clock.now += 30.0
    with stores[0].write() as db:
        a.fence(db)                              # up to and including its end, as acquire() reads it
    assert not b.acquire()
    clock.now += 0.5
    with pytest.raises(LeaseLost, match="ran out"):
        with stores[0].write() as db:
            a.fence(db)
    assert b.acquire()
    with pytest.raises(LeaseLost, match="to b"):
        with stores[0].write() as db:
            a.fence(db)


@contextlib.contextmanager
def _two_services(pg_url: str, tmp_path) -> Iterator[tuple[Any, Any, Any]]:
    """Two in-process services (two replicas) on one PostgreSQL, with ``alice``'s token."""
    from .conftest import gentask, make_api

    gens = [make_api(tmp_path / name, db=pg_url, gpus="n0:2x80") for name in ("a", "b")]
    apis = [next(g) for g in gens]
    try:
        for k in range(3):
            r = apis[0].client.post("/v1/tasks", headers=apis[0].h("alice"),
                                    json=gentask(f"t{k}", preferred="10Gi", duration="100h", value=10.0 + k))
            assert r.status_code == 201, r.text
        yield apis[0], apis[1], [api.client.app.state.service for api in apis]
    finally:
        for g in gens:
            g.close()


def test_a_replica_stalled_past_its_lease_does_not_commit_its_round(pg_url, tmp_path):
    """Replica A takes the lease and starts a round; it stalls (held on an event inside the
    clearing) until its lease has run out and B has taken it. A's commit is refused by the
    fence (nothing of its round is applied); B then clears round 1, and only B's round exists."""
    with _two_services(pg_url, tmp_path) as (api_a, api_b, (svc_a, svc_b)):
        clock = Clock()
        lease_a = RoundLease(svc_a.store, ttl=30.0, clock=clock, holder=svc_a.replica)
        lease_b = RoundLease(svc_b.store, ttl=30.0, clock=clock, holder=svc_b.replica)
        stalled, resume = threading.Event(), threading.Event()
        clear = svc_a.glue.clear

        def stalling_clear(*args: Any, **kwargs: Any) -> Any:
            stalled.set()
            assert resume.wait(120), "the test never resumed the stalled replica"
            return clear(*args, **kwargs)

        svc_a.glue.clear = stalling_clear
        outcome: dict[str, Any] = {}

        def replica_a_tick() -> None:
            assert lease_a.acquire()
            try:
                outcome["doc"] = svc_a.clear_round(trigger="periodic", fence=lease_a.fence)
            except Exception as exc:  # noqa: BLE001 - the test inspects it
                outcome["error"] = exc

        t = threading.Thread(target=replica_a_tick)
        t.start()
        assert stalled.wait(120)
        assert not lease_b.acquire()                 # A's lease still runs
        clock.now += 31.0                            # A stalls past its lease's end ...
        assert lease_b.acquire()                     # ... and B takes the lease
        resume.set()
        t.join(180)
        assert not t.is_alive()
        assert isinstance(outcome.get("error"), LeaseLost), outcome
        assert svc_a.next_round == 1
        ops = api_b.h("ops")
        assert api_b.client.get("/v1/rounds", headers=ops).json()["rounds"] == []
        waiting = api_b.client.get("/v1/tasks?state=waiting&limit=10", headers=ops).json()["tasks"]
        assert len(waiting) == 3                     # A's assignments were rolled back
        doc = svc_b.clear_round(trigger="periodic", fence=lease_b.fence)
        assert doc["round"] == 1 and doc["assignments"]
        audit = api_b.client.get("/v1/audit?limit=1000", headers=ops).json()["entries"]
        clears = [e for e in audit if e["action"] == "round.clear"]
        assert [(e["subject"], e["detail"]["replica"]) for e in clears] == [("1", svc_b.replica)]
        # A, fenced off, cannot clear while B holds the lease, even without a stall
        svc_a.glue.clear = clear
        with pytest.raises(LeaseLost, match="lost"):
            svc_a.clear_round(trigger="periodic", fence=lease_a.fence)
        assert api_a.client.get("/v1/rounds", headers=api_a.h("ops")).json()["rounds"][-1]["round"] == 1


def test_the_same_replica_commits_when_its_lease_holds(pg_url, tmp_path):
    """The control of the stall test: the same stall, but within the lease, commits."""
    with _two_services(pg_url, tmp_path) as (_api_a, _api_b, (svc_a, _svc_b)):
        clock = Clock()
        lease_a = RoundLease(svc_a.store, ttl=30.0, clock=clock, holder=svc_a.replica)
        assert lease_a.acquire()
        clock.now += 29.0
        doc = svc_a.clear_round(trigger="periodic", fence=lease_a.fence)
        assert doc["round"] == 1 and doc["assignments"]
