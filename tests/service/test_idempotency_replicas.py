"""``Idempotency-Key`` across replicas: the claim of a key is one atomic insert in the shared
database, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from gensolver.service.auth import TokenCache, add_token
from gensolver.service.idempotency import Idempotency, InProgress
from gensolver.service.storage import open_store

SCOPE = {"type": "http", "method": "POST", "path": "/v1/rounds", "query_string": b""}


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path) -> str:
    return str(tmp_path / "market.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


@pytest.fixture
def replicas(db):
    """Two replicas' views of one database: each its own store (connection) and cache."""
    stores = [open_store(db), open_store(db)]
    try:
        yield stores
    finally:
        for s in stores:
            s.close()


class Route:
    """A route that runs only when let go, counting its runs (the effect a retry must not repeat)."""

    def __init__(self, status: int = 201) -> None:
        self.runs = 0
        self.status = status
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    async def __call__(self, send: Any) -> None:
        self.runs += 1
        self.entered.set()
        await self.go.wait()
        await send({"type": "http.response.start", "status": self.status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"round": %d}' % self.runs})


class Answer:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def replayed(self) -> bool:
        return (b"idempotent-replayed", b"true") in self.messages[0]["headers"]

    @property
    def body(self) -> bytes:
        return self.messages[1]["body"]


def _headers(token: str, key: str = "round-1") -> dict[bytes, bytes]:
    return {b"authorization": f"Bearer {token}".encode(), b"idempotency-key": key.encode()}


def test_one_key_to_two_replicas_at_once_runs_once(replicas):
    token = add_token(replicas[0], "ops", admin=True)
    a = Idempotency(replicas[0], TokenCache(), wait=0.2, poll=0.01)
    b = Idempotency(replicas[1], TokenCache(), wait=0.2, poll=0.01)

    async def scenario() -> None:
        route = Route()
        first = Answer()
        job = asyncio.ensure_future(a.handle(SCOPE, _headers(token), b"", route, first))
        await route.entered.wait()
        # the same key on the other replica while the first runs: 409 in progress, not a second run
        with pytest.raises(InProgress) as err:
            await b.handle(SCOPE, _headers(token), b"", route, Answer())
        assert err.value.status == 409 and err.value.field == "header.idempotency-key"
        # a patient retry waits for the first answer and replays it
        b.wait = 60.0
        second = Answer()
        waiting = asyncio.ensure_future(b.handle(SCOPE, _headers(token), b"", route, second))
        await asyncio.sleep(0.05)
        route.go.set()
        await asyncio.gather(job, waiting)
        assert route.runs == 1
        assert first.status == second.status == 201 and first.body == second.body == b'{"round": 1}'
        assert not first.replayed and second.replayed

    asyncio.run(scenario())


def test_a_failed_first_request_frees_the_key(replicas):
    token = add_token(replicas[0], "ops", admin=True)
    a = Idempotency(replicas[0], TokenCache(), wait=0.2, poll=0.01)
    b = Idempotency(replicas[1], TokenCache(), wait=0.2, poll=0.01)

    async def scenario() -> None:
        bad = Route(status=500)
        bad.go.set()
        answer = Answer()
        await a.handle(SCOPE, _headers(token), b"", bad, answer)
        assert answer.status == 500
        good = Route()
        good.go.set()
        answer = Answer()
        await b.handle(SCOPE, _headers(token), b"", good, answer)
        assert good.runs == 1 and answer.status == 201 and not answer.replayed

    asyncio.run(scenario())
    rows = replicas[0].query("SELECT status FROM idempotency")
    assert [int(r["status"]) for r in rows] == [201]


def test_simultaneous_claims_one_winner(db, replicas):
    """Eight threads on four connections claim one key at the same instant: exactly one wins."""
    stores = replicas + [open_store(db), open_store(db)]
    try:
        keepers = [Idempotency(s, TokenCache()) for s in stores]
        barrier = threading.Barrier(8)
        got: list[str] = []

        def claim(i: int) -> None:
            barrier.wait()
            got.append(keepers[i % 4]._claim("ops", "k", "digest")[0])

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(got) == ["claimed"] + ["pending"] * 7
    finally:
        for s in stores[2:]:
            s.close()


def test_a_killed_replicas_claim_is_taken_over_when_stale(replicas):
    # a claim left behind (its replica died before answering) blocks the key until it is stale
    assert Idempotency(replicas[0], TokenCache())._claim("ops", "k", "d")[0] == "claimed"
    assert Idempotency(replicas[1], TokenCache(), stale=3600.0)._claim("ops", "k", "d")[0] == "pending"
    assert Idempotency(replicas[1], TokenCache(), stale=0.0)._claim("ops", "k", "d")[0] == "claimed"
