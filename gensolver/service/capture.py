"""An ASGI answer recorded as the route sends it: the ``http.response.start`` message and the
body, optionally forwarded as it goes. Used where the service needs a route's whole answer
(:mod:`.etag` hashes it before sending; :mod:`.idempotency` stores what it forwarded)."""

from __future__ import annotations

from typing import Any

from starlette.types import Message, Send

__all__ = ["Captured"]


class Captured:
    """A ``send`` callable that records a route's answer; with ``forward``, also passes each
    message on unchanged."""

    def __init__(self, forward: Send | None = None) -> None:
        self.start: dict[str, Any] = {}
        self.chunks: list[bytes] = []
        self._forward = forward

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.start.update(message)
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
        if self._forward is not None:
            await self._forward(message)

    @property
    def status(self) -> int:
        """The answer's status (500 when the route sent no start message)."""
        return int(self.start.get("status", 500))

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The answer's headers as sent."""
        return [(k, v) for k, v in self.start.get("headers", [])]

    @property
    def body(self) -> bytes:
        """The whole body sent so far."""
        return b"".join(self.chunks)
