"""``ETag`` and ``If-None-Match`` on the ``GET /v1/...`` views (lists and details).

A ``200`` answer carries ``ETag: "<sha256 of the body, 32 hex>"`` (and ``Vary:
Authorization``: what a token sees depends on the token); a ``GET`` whose ``If-None-Match``
names that tag (or ``*``) is answered ``304 Not Modified`` with no body, so a poller re-reads
a page only when it changed. The tag is computed from the answer, so it changes exactly when
the answer does (on any replica).
"""

from __future__ import annotations

import hashlib
from typing import Awaitable, Callable

from starlette.types import Send

from .capture import Captured

__all__ = ["etag_of", "with_etag"]


def etag_of(body: bytes) -> str:
    """The strong entity tag of ``body``."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _matches(header: bytes, tag: str) -> bool:
    wanted = [t.strip() for t in header.decode("latin-1").split(",")]
    return "*" in wanted or tag in wanted or ("W/" + tag) in wanted


async def with_etag(headers: dict[bytes, bytes], run: Callable[[Send], Awaitable[None]], send: Send) -> None:
    """Run the route, buffer its answer, and send it with an ``ETag`` (or a ``304``)."""
    answer = Captured()
    await run(answer)
    body, status, out = answer.body, answer.status, answer.headers
    if status == 200:
        tag = etag_of(body)
        out += [(b"etag", tag.encode()), (b"vary", b"authorization")]
        if _matches(headers.get(b"if-none-match", b""), tag):
            kept = [(k, v) for k, v in out if k.lower() in (b"etag", b"vary", b"cache-control")]
            await send({"type": "http.response.start", "status": 304, "headers": kept})
            await send({"type": "http.response.body", "body": b""})
            return
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})
