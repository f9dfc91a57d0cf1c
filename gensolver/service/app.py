"""The app factory: :func:`create_app` builds one independent service from its :class:`Settings`.

Nothing is kept in module globals: the database, the market, the metrics registry and the rate
limiter live on ``app.state.service``, so a process (a test) may run as many apps as it likes.
The periodic clearing loop runs in the app's lifespan; every error is answered by the one
problem+json handler of :mod:`.errors`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import RateLimiter, TokenCache
from .errors import PROBLEM_JSON, ServiceError, TooLarge, UnsupportedMediaType, problem_response
from .etag import with_etag
from .idempotency import Idempotency
from .lease import LeaseLost, RoundLease
from .metrics import Metrics
from .schemas import openapi_components
from .settings import Settings
from .state import YAML_TYPES, MarketService
from .strict import JSON_TYPES, loads_strict

__all__ = ["create_app", "Guard"]


class BadHeader(ServiceError):
    status, title, kind = 400, "Bad request", "bad-request"

log = logging.getLogger("gensolver.service")


class Guard:
    """ASGI middleware in front of every route: body size bound, rate limit, request metrics.

    A client address over its rate gets 429 with ``Retry-After`` before anything else is read
    (the token's own rate is checked once the token is verified, in the routes); a request with
    more than one ``Authorization`` header is refused (400); a body over ``max_body_bytes`` (by
    its ``Content-Length``, or counted while it streams) is answered 413 before any route reads
    it. Each answer is counted by route *template*.
    """

    def __init__(self, app: ASGIApp, *, service: MarketService, limiter: RateLimiter, metrics: Metrics,
                 max_body: int, request_timeout: float = 120.0, idempotency: Idempotency | None = None) -> None:
        self.app = app
        self.service = service
        self.limiter = limiter
        self.metrics = metrics
        self.max_body = max_body
        self.request_timeout = request_timeout
        self.idempotency = idempotency

    async def _refuse(self, send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        hdrs = [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(raw)).encode())]
        hdrs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": raw})

    async def _problem(self, send: Send, exc: ServiceError, path: str) -> None:
        doc = {"type": "urn:gensolver:problem:" + exc.kind, "title": exc.title, "status": exc.status,
               "detail": exc.detail, "instance": path}
        if exc.field is not None:
            doc["field"] = exc.field
        await self._refuse(send, exc.status, doc, exc.headers)

    @staticmethod
    def _check_body(path: str, content_type: bytes, body: bytes) -> None:
        """A body's media type (JSON; GenTasks also YAML) and, for JSON, the strict reading."""
        if not body:
            return
        media = content_type.decode("latin-1").split(";")[0].strip().lower()
        if media in JSON_TYPES:
            if path != "/v1/tasks":  # GenTasks are read strictly by the service, naming fields its way
                loads_strict(body)
            return
        if path == "/v1/tasks" and media in YAML_TYPES:
            return
        allowed = "application/json" + (" or application/yaml" if path == "/v1/tasks" else "")
        raise UnsupportedMediaType(f"send the body as {allowed}, not {media or 'no type'!r}",
                                   field="header.content-type")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ex = _Exchange(scope, send, self.metrics)
        raw_headers = scope.get("headers") or []
        headers = dict(raw_headers)
        try:
            self._check_client(scope, raw_headers)
        except ServiceError as exc:
            await self._answer(ex, exc)
            return
        refusal = self._length_refusal(headers.get(b"content-length"), ex.path)
        if refusal is not None:
            ex.status = refusal["status"]
            await self._refuse(send, ex.status, refusal)
            ex.done()
            return
        body = await self._read_body(scope, receive, ex)
        if body is None:  # the client left, or the body was too large (answered)
            return
        try:
            self._check_body(ex.path, headers.get(b"content-type", b""), body)
        except ServiceError as exc:
            await self._answer(ex, exc)
            return
        await self._dispatch(scope, receive, ex, headers, body)

    async def _answer(self, ex: _Exchange, exc: ServiceError) -> None:
        """Answer ``exc`` as problem+json before the app ran, and count it."""
        ex.status = exc.status
        await self._problem(ex.send, exc, ex.path)
        ex.done()

    def _check_client(self, scope: Scope, raw_headers: list[tuple[bytes, bytes]]) -> None:
        """The client address's rate (429) and a single ``Authorization`` header (400)."""
        client = scope.get("client") or ("?", 0)
        self.limiter.check(f"addr:{client[0]}")
        if sum(1 for k, _ in raw_headers if k == b"authorization") > 1:
            raise BadHeader("more than one Authorization header; send exactly one", field="header.authorization")

    def _too_large(self) -> TooLarge:
        return TooLarge(f"the body is larger than the {self.max_body} bytes allowed (--max-body-bytes)",
                        field="header.content-length")

    def _length_refusal(self, length: bytes | None, path: str) -> dict[str, Any] | None:
        """The problem document for a ``Content-Length`` over the bound (413) or not a count (400)."""
        if length is None:
            return None
        try:
            declared = int(length)
        except ValueError:
            declared = -1
        if not (declared > self.max_body or declared < 0):
            return None
        too_large = self._too_large()
        status = 413 if declared > self.max_body else 400
        kind, title = ("too-large", too_large.title) if declared > self.max_body else ("bad-request", "Bad request")
        detail = too_large.detail if declared > self.max_body else "Content-Length is not a non-negative integer"
        return {"type": "urn:gensolver:problem:" + kind, "title": title, "status": status, "detail": detail,
                "field": "header.content-length", "instance": path}

    async def _read_body(self, scope: Scope, receive: Receive, ex: _Exchange) -> bytes | None:
        """The whole (bounded) body, to replay to the app; None when the client left or it was too large (413 sent)."""
        chunks: list[bytes] = []
        size = 0
        more = scope.get("method") in ("POST", "PUT", "PATCH", "DELETE")
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                too_large = self._too_large()
                ex.status = 413
                await self._refuse(ex.send, 413, {"type": "urn:gensolver:problem:too-large", "title": too_large.title,
                                                  "status": 413, "detail": too_large.detail, "field": "body",
                                                  "instance": ex.path})
                ex.done()
                return None
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)

    async def _dispatch(self, scope: Scope, receive: Receive, ex: _Exchange, headers: dict[bytes, bytes],
                        body: bytes) -> None:
        """Run the app on the replayed body (through idempotency or ETags), bounded by ``request_timeout``."""
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def run(out: Send) -> None:
            await asyncio.wait_for(self.app(scope, replay, out), self.request_timeout)

        path = ex.path
        try:
            if self.idempotency is not None and scope.get("method") == "POST" and b"idempotency-key" in headers:
                await self.idempotency.handle(scope, headers, body, run, ex.send_wrapped)
            elif scope.get("method") == "GET" and path.startswith("/v1/"):
                await with_etag(headers, run, ex.send_wrapped)
            else:
                await run(ex.send_wrapped)
        except ServiceError as exc:
            if not ex.started:
                ex.status = exc.status
                await self._problem(ex.send, exc, path)
        except asyncio.TimeoutError:
            if not ex.started:  # a change the route had begun may still be committed
                ex.status = 503
                await self._refuse(ex.send, 503, {
                    "type": "urn:gensolver:problem:request-timeout", "title": "Request timed out", "status": 503,
                    "detail": f"no answer within {self.request_timeout:g} s (--request-timeout)", "instance": path},
                    {"Retry-After": "1"})
        finally:
            ex.done()


class _Exchange:
    """One HTTP request's answer so far: its status (500 until one is sent), whether it started, its metrics."""

    def __init__(self, scope: Scope, send: Send, metrics: Metrics) -> None:
        self.t0 = time.perf_counter()
        self.scope = scope
        self.send = send
        self.metrics = metrics
        self.path: str = scope.get("path", "")
        self.status = 500
        self.started = False

    async def send_wrapped(self, message: Message) -> None:
        """``send`` that notes the status the app answers."""
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.started = True
        await self.send(message)

    def done(self) -> None:
        """Count the answer by route template, method and status, and its seconds."""
        route = self.scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        self.metrics.http_requests.labels(template, self.scope.get("method", ""), str(self.status)).inc()
        self.metrics.http_seconds.labels(template).observe(time.perf_counter() - self.t0)


def create_app(settings: Settings | None = None) -> FastAPI:
    """A new service app (FastAPI) for ``settings`` (default: :class:`Settings` defaults).

    The database is opened (and the market state restored from it) here; the lifespan runs the
    periodic clearing (``round_seconds > 0``) and closes the database on shutdown.
    """
    from .page import register_page
    from .routes import register_routes

    settings = settings or Settings()
    metrics = Metrics()
    service = MarketService(settings, metrics)
    limiter = RateLimiter(settings.rate_limit, settings.rate_burst)
    address_limiter = RateLimiter(settings.address_rate_limit, settings.address_rate_burst)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = None
        if settings.round_seconds > 0:
            lease = RoundLease(service.store, ttl=settings.round_lease, holder=service.replica)
            task = asyncio.create_task(_clearing_loop(service, settings.round_seconds, lease))
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
            service.close()

    app = FastAPI(title="gensolver market service", version="1",
                  description="GPU sharing as a market: stateless solves and a durable market of GenTasks "
                              "(docs/how-to/service.md). Errors are application/problem+json naming the field.",
                  lifespan=lifespan, docs_url=None, redoc_url=None)  # no Swagger UI/ReDoc (they load a CDN)
    app.state.service = service
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.token_cache = TokenCache()
    idempotency = Idempotency(service.store, app.state.token_cache, stale=settings.request_timeout)
    app.state.limiter = limiter
    app.state.solves = {}  # tenant -> solves running now (the event loop's thread only)
    for exc_type in (ServiceError, RequestValidationError, StarletteHTTPException, ValueError, Exception):
        app.add_exception_handler(exc_type, problem_response)
    app.add_middleware(Guard, service=service, limiter=address_limiter, metrics=metrics, max_body=settings.max_body_bytes,
                       request_timeout=settings.request_timeout, idempotency=idempotency)
    register_routes(app)
    register_page(app)
    _extend_openapi(app)
    return app


async def _clearing_loop(service: MarketService, every: float, lease: RoundLease) -> None:
    """Clear a round every ``every`` seconds while some task waits or runs, on the one replica
    holding the round timer's ``lease`` (:mod:`.lease`)."""
    try:
        while True:
            await asyncio.sleep(every)
            try:
                if await run_in_threadpool(lease.acquire) and await run_in_threadpool(service.has_work):
                    await run_in_threadpool(service.clear_round, trigger="periodic", fence=lease.fence)
            except asyncio.CancelledError:
                raise
            except LeaseLost as exc:  # stalled past the lease: the round was rolled back, the new holder clears
                log.warning("periodic round not applied: %s", exc)
            except Exception:  # a failed round is logged; the market state was reloaded from the database
                log.exception("periodic round failed")
    finally:
        try:
            lease.release()
        except Exception:  # the database may be gone already; the lease then runs out
            log.exception("releasing the round timer's lease failed")


def _extend_openapi(app: FastAPI) -> None:
    """Add the shipped JSON Schemas as components of the OpenAPI document."""
    base = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = base()
            doc.setdefault("components", {}).setdefault("schemas", {}).update(openapi_components())
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
