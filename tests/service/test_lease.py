"""The round timer's lease: one replica's timer clears rounds (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

import pytest

from gensolver.service.lease import RoundLease
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
