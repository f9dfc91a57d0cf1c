"""``Idempotency-Key`` on every ``POST``: a retried request gets the first answer, not a second effect.

A client that lost an answer (a timeout, a dropped connection) cannot tell whether its request
took effect; a second ``POST /v1/rounds`` would clear another round. With an
``Idempotency-Key: <1-200 printable ASCII characters>`` header, the first successful (2xx)
answer is stored with a fingerprint of the request (method, path, query, body), keyed by the
caller's tenant and the key, for ``ttl`` seconds; a request with the same key and the same
fingerprint is answered the stored answer (``Idempotent-Replayed: true``) without running
again; the same key with another request is a ``422`` naming ``header.idempotency-key``.
Errors are not stored: a refused request may be retried as is.

Concurrent requests with one key, to one replica or to several sharing a database: the first
claims the key atomically in the database (it inserts a pending row, ``status = 0``, under the
table's unique ``(tenant, key)``); the others wait for its answer (polling the row for up to
``wait`` seconds) and replay it, or get a ``409`` (``Retry-After``) while it is still in
progress. A failed request deletes its claim; the claim of a replica killed mid-request is
taken over once older than ``stale`` seconds (the server's ``--request-timeout``: no route
runs longer).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any, Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.types import Scope, Send

from .auth import TokenCache, verify_token
from .capture import Captured
from .errors import BadRequest, ServiceError
from .storage import Store

__all__ = ["Idempotency", "TTL_SECONDS"]

#: how long a stored answer is replayed
TTL_SECONDS = 24 * 3600.0


class BadKey(ServiceError):
    status, title, kind = 400, "Bad request", "bad-request"


class InProgress(ServiceError):
    status, title, kind = 409, "Conflict", "in-progress"


class Idempotency:
    """Stored first answers of ``POST`` requests carrying an ``Idempotency-Key`` (see the module)."""

    def __init__(self, store: Store, cache: TokenCache, *, ttl: float = TTL_SECONDS, wait: float = 10.0,
                 stale: float = 120.0, poll: float = 0.05) -> None:
        self.store = store
        self.cache = cache
        self.ttl = ttl
        self.wait = wait
        self.stale = stale
        self.poll = poll
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def handle(self, scope: Scope, headers: dict[bytes, bytes], body: bytes,
                     run: Callable[[Send], Awaitable[None]], send: Send) -> None:
        """Answer from the store, or ``run`` the app and store a 2xx answer."""
        key = headers[b"idempotency-key"].decode("latin-1")
        if not 1 <= len(key) <= 200 or not all(" " <= c <= "~" for c in key):
            raise BadKey("Idempotency-Key: 1-200 printable ASCII characters", field="header.idempotency-key")
        try:
            who = verify_token(self.store, headers.get(b"authorization", b"").decode("latin-1") or None, self.cache)
        except ServiceError:
            await run(send)  # the route answers 401; nothing to store
            return
        digest = hashlib.sha256(b"\0".join([scope.get("method", "").encode(), scope.get("path", "").encode(),
                                            scope.get("query_string", b""), body])).hexdigest()
        slot = (who.tenant, key)
        lock = self._locks.setdefault(slot, asyncio.Lock())
        try:
            async with lock:
                row = await self._claim_or_wait(who.tenant, key, digest)
                if row is not None:
                    hdrs = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in json.loads(row["headers"])]
                    await send({"type": "http.response.start", "status": int(row["status"]),
                                "headers": hdrs + [(b"idempotent-replayed", b"true")]})
                    await send({"type": "http.response.body", "body": bytes(row["body"])})
                    return
                await self._run_claimed(who.tenant, key, digest, run, send)
        finally:
            if not lock.locked() and self._locks.get(slot) is lock:
                del self._locks[slot]

    async def _claim_or_wait(self, tenant: str, key: str, digest: str) -> Any:
        """``None`` once this request holds the key's claim, or the stored answer to replay."""
        deadline = time.monotonic() + self.wait
        while True:
            state, row = await run_in_threadpool(self._claim, tenant, key, digest)
            if state == "claimed":
                return None
            if state == "done":
                return row
            if time.monotonic() >= deadline:
                raise InProgress("a request with this Idempotency-Key is still in progress (on this or another "
                                 "replica); retry to get its answer", field="header.idempotency-key",
                                 headers={"Retry-After": "1"})
            await asyncio.sleep(self.poll)

    async def _run_claimed(self, tenant: str, key: str, digest: str, run: Callable[[Send], Awaitable[None]],
                           send: Send) -> None:
        answer = Captured(forward=send)
        saved = False
        try:
            await run(answer)
            status = answer.status
            if 200 <= status < 300:
                hdrs_out = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in answer.headers
                            if k.lower() in (b"content-type", b"location")]
                await run_in_threadpool(self._save, tenant, key, digest, status, hdrs_out, answer.body)
                saved = True
        finally:
            if not saved:  # an error is not stored: free the key for a retry
                await asyncio.shield(run_in_threadpool(self._release, tenant, key, digest))

    def _claim(self, tenant: str, key: str, digest: str) -> tuple[str, Any]:
        """One transaction: ``("claimed", None)``, ``("pending", None)`` or ``("done", row)``."""
        now = time.time()
        with self.store.write() as db:
            db.execute("DELETE FROM idempotency WHERE at <= ? OR (status = 0 AND at <= ?)",
                       (now - self.ttl, now - self.stale))
            cur = db.execute("INSERT INTO idempotency(tenant, key, fingerprint, status, headers, body, at) "
                             "VALUES(?,?,?,0,'[]',?,?) ON CONFLICT(tenant, key) DO NOTHING",
                             (tenant, key, digest, b"", now))
            if cur.rowcount == 1:
                return "claimed", None
            row = db.execute("SELECT fingerprint, status, headers, body FROM idempotency WHERE tenant = ? AND key = ?",
                             (tenant, key)).fetchone()
        if row is None:  # gone between the two statements cannot happen in one transaction; be safe
            return "pending", None
        if row["fingerprint"] != digest:
            raise BadRequest("this Idempotency-Key was used with another request; use a new key",
                             field="header.idempotency-key")
        return ("pending", None) if int(row["status"]) == 0 else ("done", row)

    def _release(self, tenant: str, key: str, digest: str) -> None:
        with self.store.write() as db:
            db.execute("DELETE FROM idempotency WHERE tenant = ? AND key = ? AND fingerprint = ? AND status = 0",
                       (tenant, key, digest))

    def _save(self, tenant: str, key: str, digest: str, status: int, headers: list[list[str]], body: bytes) -> None:
        with self.store.write() as db:
            db.execute("UPDATE idempotency SET status = ?, headers = ?, body = ?, at = ? "
                       "WHERE tenant = ? AND key = ? AND fingerprint = ?",
                       (status, json.dumps(headers), body, time.time(), tenant, key, digest))
