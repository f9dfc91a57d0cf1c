"""Problem details (RFC 9457): every error the service answers, as ``application/problem+json``.

:class:`ServiceError` and its subclasses are the domain errors of the service; the readers'
errors (:class:`~gensolver.model.InstanceError`, :class:`~gensolver.market.SpecError`,
:class:`~gensolver.executor.PlanError`) and FastAPI's request validation errors are mapped by the
one handler :func:`problem_response`, which names the offending field in ``field`` (a JSON
pointer into the body, or ``query.NAME`` / ``path.NAME`` / ``header.NAME``).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..errors import GensolverError

__all__ = ["ServiceError", "BadRequest", "Unauthorized", "Forbidden", "NotFound", "Conflict", "TooLarge",
           "TooManyRequests", "UnsupportedMediaType", "problem_response", "problem", "PROBLEM_TYPE", "PROBLEM_JSON"]

PROBLEM_JSON = "application/problem+json"
#: ``type`` URI prefix of the service's problems (documented in docs/how-to/service.md)
PROBLEM_TYPE = "urn:gensolver:problem:"


class ServiceError(GensolverError):
    """A request the service refuses; ``status`` is the HTTP status (4xx, or 503)."""

    status = 400
    title = "Bad request"
    kind = "bad-request"

    def __init__(self, detail: str, *, field: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.headers = headers or {}


class BadRequest(ServiceError):
    status, title, kind = 422, "Invalid input", "invalid-input"


class Unauthorized(ServiceError):
    status, title, kind = 401, "Unauthorized", "unauthorized"


class Forbidden(ServiceError):
    status, title, kind = 403, "Forbidden", "forbidden"


class NotFound(ServiceError):
    status, title, kind = 404, "Not found", "not-found"


class Conflict(ServiceError):
    status, title, kind = 409, "Conflict", "conflict"


class TooLarge(ServiceError):
    status, title, kind = 413, "Request body too large", "too-large"


class UnsupportedMediaType(ServiceError):
    status, title, kind = 415, "Unsupported media type", "unsupported-media-type"


class TooManyRequests(ServiceError):
    status, title, kind = 429, "Too many requests", "rate-limited"


class ServiceUnavailable(ServiceError):
    """A bound of the server's own was reached (a solve past its wall-clock ``time_limit``)."""

    status, title, kind = 503, "Service unavailable", "unavailable"


def problem(status: int, title: str, detail: str, *, kind: str, field: str | None = None,
            instance: str | None = None, headers: dict[str, str] | None = None) -> Response:
    """One ``application/problem+json`` response."""
    body: dict[str, Any] = {"type": PROBLEM_TYPE + kind, "title": title, "status": status, "detail": detail}
    if field is not None:
        body["field"] = field
    if instance is not None:
        body["instance"] = instance
    extra = dict(headers or {})
    if status == 401:
        extra.setdefault("WWW-Authenticate", "Bearer")
    return Response(json.dumps(body), status_code=status, media_type=PROBLEM_JSON, headers=extra)


def _loc_field(loc: tuple[Any, ...] | list[Any]) -> str:
    """FastAPI's error location as the documented ``field``: ``query.time_limit``, ``/slots/0``."""
    parts = list(loc)
    if not parts:
        return ""
    where, rest = str(parts[0]), parts[1:]
    if where == "body":
        return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in rest) if rest else ""
    return ".".join([where] + [str(p) for p in rest])


async def problem_response(request: Request, exc: Exception) -> Response:
    """The one exception handler: any error becomes a problem document naming the field."""
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    from ..executor.plan import PlanError
    from ..market.spec import SpecError
    from ..model.validate import InstanceError

    path = request.url.path
    if isinstance(exc, ServiceError):
        return problem(exc.status, exc.title, exc.detail, kind=exc.kind, field=exc.field, instance=path,
                       headers=exc.headers)
    if isinstance(exc, (InstanceError, PlanError)):
        return problem(422, "Invalid document", str(exc), kind="invalid-document", field=exc.pointer, instance=path)
    if isinstance(exc, SpecError):
        return problem(422, "Invalid GenTask", str(exc), kind="invalid-gentask", field=exc.field, instance=path)
    if isinstance(exc, RequestValidationError):
        errors = exc.errors()
        first = errors[0] if errors else {}
        field = _loc_field(first.get("loc", ()))
        detail = f"{field or 'request'}: {first.get('msg', 'invalid')}"
        return problem(422, "Invalid request", detail, kind="invalid-request", field=field, instance=path)
    if isinstance(exc, HTTPException):
        kind = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        return problem(exc.status_code, str(exc.detail), str(exc.detail), kind=kind, instance=path,
                       headers=dict(exc.headers or {}))
    # not a domain error: a bug. Still a problem document (never a traceback), logged by uvicorn.
    import logging

    logging.getLogger("gensolver.service").exception("unhandled error on %s", path)
    return problem(500, "Internal error", f"{type(exc).__name__} (see the server log)", kind="internal", instance=path)
