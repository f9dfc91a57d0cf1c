"""The market as an HTTP service other schedulers can call (``gensolver serve``).

:func:`create_app` builds a FastAPI app from :class:`Settings`: a stateless ``POST /v1/solve``
answering the JSON of ``gensolver solve --json``, and a durable market (GenTasks, rounds,
payments with certified intervals, per-tenant credits) in SQLite, with token access, Prometheus
metrics and a live page. See ``docs/how-to/service.md``.

Modules: :mod:`.settings`, :mod:`.app` (the factory and the request guard), :mod:`.routes`,
:mod:`.schemas` (request/response models and the formats' JSON Schemas), :mod:`.state` (tasks,
rounds, credits), :mod:`.market_glue` (the one module using the market, mechanisms and solvers),
:mod:`.storage` (SQLite WAL), :mod:`.auth` (tokens, rate limits), :mod:`.metrics`,
:mod:`.errors` (problem+json), :mod:`.page` (the live page), :mod:`.connections` (deadlines,
head limits and the connection cap of the HTTP server), :mod:`.strict` (the strict reading of
bodies), :mod:`.idempotency` (``Idempotency-Key``).

Needs the ``service`` extra (``pip install "gensolver[service]"``: fastapi, uvicorn, httpx,
prometheus-client).
"""

from __future__ import annotations

from .settings import Settings, parse_gpus

__all__ = ["Settings", "parse_gpus", "create_app"]


def create_app(settings: Settings | None = None):
    """Build the service app (see :func:`gensolver.service.app.create_app`)."""
    from .app import create_app as _create

    return _create(settings)
