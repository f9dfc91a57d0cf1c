"""Connection hygiene of ``gensolver serve``: deadlines, a bounded request head, a connection cap.

uvicorn closes a keep-alive connection left idle after a response (``timeout_keep_alive``), but
by itself it neither bounds how long a client may take to send a request's head or body, nor
how large the head may grow (its httptools parser buffers a header value until it ends), nor how
many connections are open. One client could therefore hold the server with slow or idle
connections, or push it out of memory with a huge header. :func:`protocol_class` returns a
subclass of uvicorn's httptools protocol for one :class:`~gensolver.service.Settings` that adds:

* **head deadline** (``header_timeout``): from the moment a connection opens, or the first byte
  of a request after a keep-alive pause, the whole head must arrive within the deadline; it is
  one deadline, not reset by each byte, so a client trickling a byte a second is cut off.
  Answered ``408`` (closed silently when not one byte of a request came).
* **body deadline** (``body_timeout``): from the end of the head, the whole body must arrive
  within the deadline; ``408`` otherwise (the route sees the client as gone).
* **head size and count** (``max_header_bytes``, ``max_headers``): a head (request line and
  header fields) longer or with more fields is answered ``431`` as soon as the limit is
  passed, before the rest is read.
* **connection cap** (``max_connections``): beyond it, the connection that has waited longest
  for its request's head or body, or sits idle between requests, is closed (``503`` if a
  request had begun) so that the new one is served; a new connection is refused with ``503``
  only when every open connection has a request being answered. A flood of slow or idle
  connections therefore cannot keep a prompt client (a probe of ``/healthz``) out.
* **cap per client address** (``max_connections_per_address``): a connection from an address
  that already holds that many is closed as soon as it is accepted, before any parser or
  deadline is set up and without an answer. One client opening 20,000 connections then costs
  the server one ``getpeername`` and one close for each beyond its share, instead of a
  protocol, a parser, a timer and the eviction of another connection, so the accept queue
  keeps up and other clients' probes are answered promptly (figures:
  ``benchmarks/bench_service_connections.py``).

Every answer is ``application/problem+json`` with ``Connection: close``; the server then
half-closes the connection and drops what the client still sends for ``LINGER_SECONDS``, so the
client reads the answer rather than a reset. The deadlines are
timers of the event loop (no polling); the waiting connections are kept in insertion order,
so each eviction is O(1).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from .errors import PROBLEM_JSON, PROBLEM_TYPE

if TYPE_CHECKING:  # pragma: no cover
    import asyncio

    from .settings import Settings

__all__ = ["protocol_class", "HardenedProtocol"]

# what a connection is doing: waiting for a head, reading a body, answering, idle between requests
_HEAD, _BODY, _BUSY, _IDLE, _DRAIN = "head", "body", "busy", "idle", "drain"
#: seconds a refused connection keeps reading (and dropping) what the client still sends, so
#: that the client reads the answer instead of a reset (a "lingering close")
LINGER_SECONDS = 2.0


class _HeadTooLarge(Exception):
    """Raised inside a parser callback to stop reading a head over its limits."""


class HardenedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with deadlines, head limits and a connection cap.

    The limits are class attributes set by :func:`protocol_class`; see the module docstring.
    """

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100
    max_connections: int = 4096

    max_per_address: int = 0

    def __init__(self, **kwargs: Any) -> None:
        # Built for every accepted connection, so kept cheap: uvicorn's own set-up (a parser and
        # a dozen attributes) waits until connection_made keeps the connection (_admit).
        self._kwargs: dict[str, Any] | None = kwargs
        self.server_state = kwargs["server_state"]
        self._address: str | None = None

    def _admit(self) -> None:
        """uvicorn's set-up of the protocol, once the connection is kept."""
        assert self._kwargs is not None
        super().__init__(**self._kwargs)
        self._kwargs = None
        self._phase = _HEAD
        self._timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0      # bytes read while the head is incomplete (the parser buffers them)
        self._head_fields = 0
        self._head_size = 0       # request line and header fields parsed so far
        self._began = False       # whether a byte of the current request arrived
        self._refusal: tuple[int, str] | None = None

    # -- the server-wide queue of connections waiting on their client (oldest first)
    def _waiting(self) -> OrderedDict[HardenedProtocol, None]:
        waiting = getattr(self.server_state, "gensolver_waiting", None)
        if waiting is None:
            waiting = OrderedDict()
            self.server_state.gensolver_waiting = waiting  # type: ignore[attr-defined]
        return waiting

    def _should_upgrade_to_ws(self) -> bool:
        # The service has no WebSocket route: an Upgrade request is answered as plain HTTP. (A
        # connection handed to another protocol would also never give back its address's place.)
        return False

    def _unsupported_upgrade_warning(self) -> None:
        self.logger.debug("Upgrade request answered as plain HTTP.")

    def _per_address(self) -> dict[str, int]:
        counts = getattr(self.server_state, "gensolver_per_address", None)
        if counts is None:
            counts = {}
            self.server_state.gensolver_per_address = counts  # type: ignore[attr-defined]
        return counts

    def _enter(self, phase: str, timeout: float | None) -> None:
        """Switch to ``phase``, (re)arming the deadline ``timeout`` seconds from now (none: no deadline)."""
        self._phase = phase
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting = self._waiting()
        if phase == _BUSY:
            waiting.pop(self, None)
        else:
            waiting.pop(self, None)
            waiting[self] = None
        if timeout is not None:
            self._timer = self.loop.call_later(timeout, self._expire)

    def _answer(self, status: int, detail: str, *, kind: str, headers: dict[str, str] | None = None) -> None:
        """Write one problem document with ``Connection: close`` and close the connection."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting().pop(self, None)
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if cycle.response_started:  # an answer is under way: it cannot be replaced, only cut
                self.transport.close()
                return
            cycle.disconnected = True  # the route sees the client gone and its answer is dropped
            cycle.response_complete = True
            cycle.message_event.set()
        body = json.dumps({"type": PROBLEM_TYPE + kind, "title": STATUS_LINE[status][13:-2].decode(),
                           "status": status, "detail": detail}).encode()
        lines = [STATUS_LINE[status], b"content-type: " + PROBLEM_JSON.encode() + b"\r\n",
                 b"content-length: " + str(len(body)).encode() + b"\r\n", b"connection: close\r\n"]
        lines += [k.lower().encode() + b": " + v.encode() + b"\r\n" for k, v in (headers or {}).items()]
        self.transport.write(b"".join(lines) + b"\r\n" + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._phase = _DRAIN
            self._timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:  # pragma: no cover - TCP transports can
            self.transport.close()

    def _expire(self) -> None:
        """A deadline passed: 408 if a request had begun, else close quietly."""
        self._timer = None
        if self._phase == _BODY and self.cycle is not None and self.cycle.response_complete:
            self._waiting().pop(self, None)  # answered without reading the whole body: nothing to tell
            self.transport.close()
        elif self._phase == _BODY:
            self._answer(408, f"the request body did not arrive within {self.body_timeout:g} s (--body-timeout)",
                         kind="request-timeout")
        elif self._phase == _HEAD and self._began:
            self._answer(408, f"the request head did not arrive within {self.header_timeout:g} s (--header-timeout)",
                         kind="request-timeout")
        else:
            self._waiting().pop(self, None)
            self.transport.close()

    def _evict(self) -> None:
        """Closed to make room for a new connection (see the module docstring)."""
        if self._began:
            self._answer(503, "the server is at its connection limit and this request was the slowest (--max-connections)",
                         kind="overloaded", headers={"Retry-After": "1"})
        else:
            self._waiting().pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.transport.close()

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if self.max_per_address:
            peer = transport.get_extra_info("peername")
            address = peer[0] if isinstance(peer, tuple) and peer else str(peer)
            counts = self._per_address()
            held = counts.get(address, 0)
            if held >= self.max_per_address:  # refused before anything is built: a flood costs little
                transport.abort()
                return
            counts[address] = held + 1
            self._address = address
        self._admit()
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            waiting = self._waiting()
            if not waiting:
                self._answer(503, f"the server holds {self.max_connections} connections, all busy (--max-connections)",
                             kind="overloaded", headers={"Retry-After": "1"})
                return
            victim = next(iter(waiting))
            victim._evict()
        self._enter(_HEAD, self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._address is not None:
            counts = self._per_address()
            left = counts.pop(self._address, 1) - 1
            if left > 0:
                counts[self._address] = left
            self._address = None
        if self._kwargs is not None:  # refused in connection_made: nothing was set up
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting().pop(self, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._phase == _DRAIN:
            return
        if self._phase == _IDLE:
            self._enter(_HEAD, self.header_timeout)
        if self._phase == _HEAD:
            self._began = True
            self._head_bytes += len(data)
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if self._refusal is not None:
                status, detail = self._refusal
                self._answer(status, detail, kind="header-too-large")
            else:
                self.logger.warning("Invalid HTTP request received.")
                self._answer(400, "invalid HTTP request", kind="bad-request")
            return
        if self._phase == _HEAD and self._head_bytes > self.max_header_bytes:
            self._answer(431, f"the request head is larger than {self.max_header_bytes} bytes (--max-header-bytes)",
                         kind="header-too-large")

    # -- parser callbacks
    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._began = True
        if len(self.url) > self.max_header_bytes:
            self._refusal = (431, f"the request line is longer than {self.max_header_bytes} bytes (--max-header-bytes)")
            raise _HeadTooLarge

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_fields += 1
        if self._head_fields > self.max_headers:
            self._refusal = (431, f"the request has more than {self.max_headers} header fields (--max-headers)")
            raise _HeadTooLarge
        self._head_size += len(name) + len(value) + 4
        if len(self.url) + self._head_size > self.max_header_bytes:
            self._refusal = (431, f"the request head is larger than {self.max_header_bytes} bytes (--max-header-bytes)")
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_bytes = 0
        self._head_fields = 0
        self._head_size = 0
        self._enter(_BODY, self.body_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._enter(_BUSY, None)
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self._phase == _BUSY and not self.pipeline:
            self._began = False
            self._enter(_IDLE, None)  # uvicorn's keep-alive timer closes it if it stays idle


def protocol_class(settings: Settings) -> type[HardenedProtocol]:
    """A :class:`HardenedProtocol` subclass with the limits of ``settings`` (pass it as uvicorn's ``http``)."""
    return type("GensolverHttpProtocol", (HardenedProtocol,), {
        "header_timeout": float(settings.header_timeout), "body_timeout": float(settings.body_timeout),
        "max_header_bytes": int(settings.max_header_bytes), "max_headers": int(settings.max_headers),
        "max_connections": int(settings.max_connections),
        "max_per_address": int(settings.max_connections_per_address)})
