"""``Idempotency-Key`` on every ``POST``: a retried request gets the first answer, not a second effect.

A client that lost an answer (a timeout, a dropped connection) cannot tell whether its request
took effect; a second ``POST /v1/rounds`` would clear another round. With an
``Idempotency-Key: <1-200 printable ASCII characters>`` header, the first successful (2xx)
answer is stored with a fingerprint of the request (method, path, query, body), keyed by the
caller's tenant and the key, for ``ttl`` seconds; a request with the same key and the same
fingerprint is answered the stored answer (``Idempotent-Replayed: true``) without running
again; the same key with another request is a ``422`` naming ``header.idempotency-key``.
Concurrent requests with one key wait for each other (one process). Errors are not stored: a
refused request may be retried as is.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any, Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.types import Message, Scope, Send

from .auth import TokenCache, verify_token
from .errors import BadRequest, ServiceError
from .storage import Store

__all__ = ["Idempotency", "TTL_SECONDS"]

#: how long a stored answer is replayed
TTL_SECONDS = 24 * 3600.0


class BadKey(ServiceError):
    status, title, kind = 400, "Bad request", "bad-request"


class Idempotency:
    """Stored first answers of ``POST`` requests carrying an ``Idempotency-Key`` (see the module)."""

    def __init__(self, store: Store, cache: TokenCache, *, ttl: float = TTL_SECONDS) -> None:
        self.store = store
        self.cache = cache
        self.ttl = ttl
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
                row = await run_in_threadpool(
                    self.store.one, "SELECT fingerprint, status, headers, body FROM idempotency "
                                    "WHERE tenant = ? AND key = ? AND at > ?", (who.tenant, key, time.time() - self.ttl))
                if row is not None:
                    if row["fingerprint"] != digest:
                        raise BadRequest("this Idempotency-Key was used with another request; use a new key",
                                         field="header.idempotency-key")
                    hdrs = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in json.loads(row["headers"])]
                    await send({"type": "http.response.start", "status": int(row["status"]),
                                "headers": hdrs + [(b"idempotent-replayed", b"true")]})
                    await send({"type": "http.response.body", "body": bytes(row["body"])})
                    return
                start: dict[str, Any] = {}
                chunks: list[bytes] = []

                async def capture(message: Message) -> None:
                    if message["type"] == "http.response.start":
                        start.update(message)
                    elif message["type"] == "http.response.body":
                        chunks.append(message.get("body", b""))
                    await send(message)

                await run(capture)
                status = int(start.get("status", 500))
                if 200 <= status < 300:
                    hdrs_out = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in start.get("headers", [])
                                if k.lower() in (b"content-type", b"location")]
                    await run_in_threadpool(self._save, who.tenant, key, digest, status, hdrs_out, b"".join(chunks))
        finally:
            if not lock.locked() and self._locks.get(slot) is lock:
                del self._locks[slot]

    def _save(self, tenant: str, key: str, digest: str, status: int, headers: list[list[str]], body: bytes) -> None:
        now = time.time()
        with self.store.write() as db:
            db.execute("DELETE FROM idempotency WHERE at <= ?", (now - self.ttl,))
            db.execute("INSERT INTO idempotency(tenant, key, fingerprint, status, headers, body, at) "
                       "VALUES(?,?,?,?,?,?,?) ON CONFLICT(tenant, key) DO UPDATE SET fingerprint=excluded.fingerprint, "
                       "status=excluded.status, headers=excluded.headers, body=excluded.body, at=excluded.at",
                       (tenant, key, digest, status, json.dumps(headers), body, now))
