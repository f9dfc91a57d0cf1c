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
        t0 = time.perf_counter()
        path = scope.get("path", "")
        status_box: dict[str, int] = {"status": 500}

        async def send_wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box["status"] = message["status"]
                status_box["started"] = 1
            await send(message)

        def done() -> None:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.http_requests.labels(template, scope.get("method", ""), str(status_box["status"])).inc()
            self.metrics.http_seconds.labels(template).observe(time.perf_counter() - t0)

        raw_headers = scope.get("headers") or []
        headers = dict(raw_headers)
        client = scope.get("client") or ("?", 0)
        try:
            self.limiter.check(f"addr:{client[0]}")
            if sum(1 for k, _ in raw_headers if k == b"authorization") > 1:
                raise BadHeader("more than one Authorization header; send exactly one", field="header.authorization")
        except ServiceError as exc:
            status_box["status"] = exc.status
            await self._problem(send, exc, path)
            done()
            return
        length = headers.get(b"content-length")
        too_large = TooLarge(f"the body is larger than the {self.max_body} bytes allowed (--max-body-bytes)",
                             field="header.content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                declared = -1
            if declared > self.max_body or declared < 0:
                status_box["status"] = 413 if declared > self.max_body else 400
                kind, title = ("too-large", too_large.title) if declared > self.max_body else ("bad-request", "Bad request")
                detail = too_large.detail if declared > self.max_body else "Content-Length is not a non-negative integer"
                await self._refuse(send, status_box["status"], {"type": "urn:gensolver:problem:" + kind, "title": title,
                                                                "status": status_box["status"], "detail": detail,
                                                                "field": "header.content-length", "instance": path})
                done()
                return
        # read the (bounded) body now, then replay it to the app
        chunks: list[bytes] = []
        size = 0
        more = scope.get("method") in ("POST", "PUT", "PATCH", "DELETE")
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                status_box["status"] = 413
                await self._refuse(send, 413, {"type": "urn:gensolver:problem:too-large", "title": too_large.title,
                                               "status": 413, "detail": too_large.detail, "field": "body",
                                               "instance": path})
                done()
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            self._check_body(path, headers.get(b"content-type", b""), body)
        except ServiceError as exc:
            status_box["status"] = exc.status
            await self._problem(send, exc, path)
            done()
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def run(out: Send) -> None:
            await asyncio.wait_for(self.app(scope, replay, out), self.request_timeout)

        try:
            if self.idempotency is not None and scope.get("method") == "POST" and b"idempotency-key" in headers:
                await self.idempotency.handle(scope, headers, body, run, send_wrapped)
            elif scope.get("method") == "GET" and path.startswith("/v1/"):
                await with_etag(headers, run, send_wrapped)
            else:
                await run(send_wrapped)
        except ServiceError as exc:
            if "started" not in status_box:
                status_box["status"] = exc.status
                await self._problem(send, exc, path)
        except asyncio.TimeoutError:
            if "started" not in status_box:  # a change the route had begun may still be committed
                status_box["status"] = 503
                await self._refuse(send, 503, {
                    "type": "urn:gensolver:problem:request-timeout", "title": "Request timed out", "status": 503,
                    "detail": f"no answer within {self.request_timeout:g} s (--request-timeout)", "instance": path},
                    {"Retry-After": "1"})
        finally:
            done()


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
