"""The HTTP routes, one :class:`fastapi.APIRouter` per resource (solve, tasks and feedback,
rounds, tenants, operations); see docs/how-to/service.md for the API with examples.

=========================  ===========================================================  ==========
route                      does                                                         who
=========================  ===========================================================  ==========
``POST /v1/solve``         solve an instance document; the JSON of ``gensolver solve``  any token
``POST /v1/tasks``         submit GenTasks (JSON object or list, or YAML documents)     tenant
``GET /v1/tasks``          list tasks (own; every tenant's for an operator)             tenant
``GET /v1/tasks/{id}``     one task                                                     owner
``DELETE /v1/tasks/{id}``  cancel it                                                    owner
``POST /v1/rounds``        clear a round now                                            operator
``GET /v1/rounds``         recent rounds (a tenant sees its own entries)                tenant
``GET /v1/rounds/{n}``     one round: allocation, payments with intervals, plan         tenant
``GET /v1/tenants``        every tenant's account                                       operator
``GET /v1/tenants/{t}``    credits, usage, ledger                                       owner
``POST /v1/feedback``      an executor's usage report on a running task                 owner
``GET /v1/me``              the token's tenant and role                                 any token
``GET /v1/schemas/{kind}`` the JSON Schema of instance, gpuround or plan documents      anyone
``GET /livez``             liveness: the event loop answers (no database, O(1))         anyone
``GET /healthz``           liveness, configuration and task counts (counted <= 1 s ago) anyone
``GET /readyz``            readiness (the database answers)                             anyone
``GET /metrics``           Prometheus exposition (per tenant: operator token)           anyone
``GET /v1/audit``          the audit log (``limit``, ``after``)                        operator
=========================  ===========================================================  ==========
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any, Literal, Optional

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from ..schemas import load_schema
from .auth import Principal, verify_token
from .errors import PROBLEM_JSON, BadRequest, ServiceUnavailable, TooManyRequests
from .market_glue import solve_document
from .metrics import CONTENT_TYPE_LATEST
from .schemas import (
    SCHEMA_KINDS,
    AuditPage,
    FeedbackIn,
    Health,
    Me,
    Problem,
    RoundDetail,
    RoundList,
    SolveResult,
    TaskList,
    TaskView,
    TenantList,
    TenantView,
    ref,
)
from .state import MarketService

__all__ = ["register_routes", "ROUTERS"]

_bearer = HTTPBearer(auto_error=False, description="a token from `gensolver serve token add TENANT --db PATH`")

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
           "description": desc}
    for code, desc in ((401, "no or bad token"), (403, "another tenant's data, or an operator's action"),
                       (404, "not found"), (409, "conflict with the stored state"), (413, "body too large"),
                       (415, "unsupported media type"), (422, "invalid input (field named)"), (429, "rate limited"),
                       (503, "a bound of the server reached (a solve past its time_limit)"))
}
_PATH_ID = Path(min_length=1, max_length=253, description="task name (metadata.name)")
_TENANT_Q = Query(None, min_length=1, max_length=64,
                  description="the task's tenant (operators, when two tenants use the name)")


def _service(request: Request) -> MarketService:
    return request.app.state.service


async def principal(request: Request,
                    credentials: Optional[HTTPAuthorizationCredentials] = Depends(_bearer)) -> Principal:
    """The authentication dependency: the caller's :class:`Principal` from its bearer token
    (``async``: a known token is a dictionary lookup after one read of the tokens' version, a
    new one one indexed read), then the token's own rate limit (the client address had its limit
    before, in the guard). The reads run on the event loop, also on PostgreSQL where each is a
    round trip: sending them to the thread pool cost 0.2-0.3 ms of server CPU per request and
    lowered the submission rate (``benchmarks/bench_service_store.py``)."""
    return _authenticate(request)


def _authenticate(request: Request) -> Principal:
    header = request.headers.get("authorization")
    who = verify_token(_service(request).store, header, request.app.state.token_cache)
    request.app.state.limiter.check("token:" + who.token_id)
    return who


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"the body is not JSON ({exc})", field="") from None


#: one router per resource; :func:`register_routes` adds them all to an app
solve_router = APIRouter()
tasks_router = APIRouter()
rounds_router = APIRouter()
tenants_router = APIRouter()
operations_router = APIRouter()
ROUTERS = (solve_router, tasks_router, rounds_router, tenants_router, operations_router)



@solve_router.post("/v1/solve", response_model=SolveResult, responses=_ERRORS, tags=["stateless"],
          summary="Solve one instance (the JSON of `gensolver solve --json`)",
          openapi_extra={"requestBody": {"required": True, "content": {
              "application/json": {"schema": ref("gensolver.instance/v1")}}}})
async def post_solve(request: Request, who: Principal = Depends(principal),
                     method: str = Query("auto", min_length=1, max_length=64, description="solver method"),
                     time_limit: Optional[float] = Query(
                         None, gt=0, description="wall-clock bound in seconds, from the body's arrival to the answer "
                                                 "(at most the server's --max-solve-seconds, its default); 503 beyond"),
                     work: Optional[float] = Query(
                         None, gt=0, description="deterministic budget in work units of method auto and mechanisms vcg, core "
                                                 "and lavi-swamy (at most the server's --max-solve-work, its default)"),
                     mechanism: Optional[str] = Query(
                         None, min_length=1, max_length=64, description="also price with this mechanism (vcg, core, ...)"),
                     alpha: Optional[float] = Query(
                         None, description="mechanism lavi-swamy only: the scaling of the lottery (a finite number "
                                           ">= 1), fixed before the reports, so the lottery is truthful in "
                                           "expectation; without it alpha comes from the reports (truthful: false)"),
                     ) -> Any:
    settings = request.app.state.settings
    time_limit = _bounded(time_limit, settings.max_solve_seconds, "query.time_limit", "seconds")
    work = _bounded(work, settings.max_solve_work, "query.work", "work units")
    doc = await _json_body(request)
    running = request.app.state.solves
    quota = settings.max_solves_per_tenant
    if running.get(who.tenant, 0) >= quota:
        raise TooManyRequests(f"tenant {who.tenant!r} already runs {quota} solves (--max-solves-per-tenant); "
                              "retry when one is done", headers={"Retry-After": "1"})
    running[who.tenant] = running.get(who.tenant, 0) + 1

    def release(_: Any = None) -> None:
        running[who.tenant] -= 1
        if not running[who.tenant]:
            del running[who.tenant]

    job = asyncio.ensure_future(run_in_threadpool(solve_document, doc, method=method, time_limit=time_limit,
                                                  mechanism=mechanism, work=work, alpha=alpha))
    done, _ = await asyncio.wait({job}, timeout=time_limit)
    if not done:
        # the solve keeps its thread until its budget ends and keeps counting against the
        # tenant's quota until then; the client gets an honest 503, never a load-dependent answer
        job.add_done_callback(release)
        raise ServiceUnavailable(f"the solve did not finish within time_limit={time_limit:g} s of wall clock "
                                 f"(work budget {work:g} units; the server is loaded); retry later or raise time_limit",
                                 field="query.time_limit", headers={"Retry-After": "5"})
    release()
    return job.result()


def _bounded(value: Optional[float], largest: float, field: str, unit: str) -> float:
    if value is None:
        return largest
    if not math.isfinite(value) or value > largest:
        raise BadRequest(f"{field.split('.')[-1]} must be a finite number of {unit} in (0, {largest:g}]", field=field)
    return value

@tasks_router.post("/v1/tasks", response_model=TaskList, status_code=201, responses={**_ERRORS, 200: {
    "model": TaskList, "description": "every task was already accepted (a retry): the stored tasks"}},
    tags=["market"], summary="Submit GenTasks (all or none)",
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": {"anyOf": [{"$ref": "#/components/schemas/GenTask"},
                                                  {"type": "array", "items": {"$ref": "#/components/schemas/GenTask"}}]}},
        "application/yaml": {"schema": {"type": "string", "description": "one or more GenTask YAML documents"}}}}})
async def post_tasks(request: Request, who: Principal = Depends(principal)) -> Any:
    body = await request.body()
    views, created = await run_in_threadpool(_service(request).submit, who, body,
                                             request.headers.get("content-type", ""))
    return JSONResponse({"tasks": views}, status_code=201 if created else 200)

@tasks_router.get("/v1/tasks", response_model=TaskList, responses=_ERRORS, tags=["market"], summary="List tasks")
def get_tasks(request: Request, who: Principal = Depends(principal),
              state: Optional[Literal["waiting", "running", "done", "cancelled"]] = Query(None),
              tenant: Optional[str] = Query(None, min_length=1, max_length=64),
              limit: int = Query(500, ge=1, le=5000),
              after: int = Query(0, ge=0, le=2 ** 62, description="the `next` of the previous page")) -> Any:
    body = _service(request).list_tasks_json(who, state=state, tenant=tenant, limit=limit, after=after)
    return Response(body, media_type="application/json")  # TaskList, spliced (the response_model documents it)

@tasks_router.get("/v1/tasks/{task_id}", response_model=TaskView, responses=_ERRORS, tags=["market"], summary="One task")
def get_task(request: Request, task_id: str = _PATH_ID, who: Principal = Depends(principal),
             tenant: Optional[str] = _TENANT_Q) -> Any:
    return _service(request).get_task(who, task_id, tenant)

@tasks_router.delete("/v1/tasks/{task_id}", response_model=TaskView, responses=_ERRORS, tags=["market"],
            summary="Cancel a task")
def delete_task(request: Request, task_id: str = _PATH_ID, who: Principal = Depends(principal),
                tenant: Optional[str] = _TENANT_Q) -> Any:
    return _service(request).cancel(who, task_id, tenant)

@rounds_router.post("/v1/rounds", response_model=RoundDetail, status_code=201, responses=_ERRORS, tags=["market"],
          summary="Clear a round now (operator)")
def post_round(request: Request, who: Principal = Depends(principal)) -> Any:
    who.require_admin("clearing a round")
    return _service(request).clear_round(trigger="request")

@rounds_router.get("/v1/rounds", response_model=RoundList, responses=_ERRORS, tags=["market"], summary="Recent rounds")
def get_rounds(request: Request, who: Principal = Depends(principal),
               limit: int = Query(20, ge=1, le=500),
               after: Optional[int] = Query(None, ge=0, le=2 ** 62,
                                            description="rounds after this number, oldest first (default: the latest)")
               ) -> Any:
    rounds, nxt = _service(request).list_rounds(who, limit=limit, after=after)
    return {"rounds": rounds, "next": nxt}

@rounds_router.get("/v1/rounds/{n}", response_model=RoundDetail, responses=_ERRORS, tags=["market"],
         summary="One round: allocation, payments with intervals, plan")
def get_round(request: Request, n: int = Path(ge=1, le=2 ** 62), who: Principal = Depends(principal)) -> Any:
    return _service(request).get_round(who, n)

@tenants_router.get("/v1/tenants", response_model=TenantList, responses=_ERRORS, tags=["market"],
         summary="Every tenant's account (operator)")
def get_tenants(request: Request, who: Principal = Depends(principal),
                limit: int = Query(100, ge=1, le=1000),
                after: str = Query("", max_length=64, description="the `next` of the previous page")) -> Any:
    tenants, nxt = _service(request).tenants(who, limit=limit, after=after)
    return {"tenants": tenants, "next": nxt}

@tenants_router.get("/v1/tenants/{tenant}", response_model=TenantView, responses=_ERRORS, tags=["market"],
         summary="A tenant's credits and usage")
def get_tenant(request: Request, tenant: str = Path(min_length=1, max_length=64),
               who: Principal = Depends(principal)) -> Any:
    return _service(request).tenant_view(who, tenant)

@tasks_router.post("/v1/feedback", response_model=TaskView, responses=_ERRORS, tags=["market"],
          summary="An executor's usage report on a running task")
def post_feedback(request: Request, report: FeedbackIn, who: Principal = Depends(principal)) -> Any:
    return _service(request).feedback(who, task_id=report.task, memory_bytes=report.memory_bytes,
                                      progress=report.progress, tenant=report.tenant)

@tenants_router.get("/v1/me", response_model=Me, responses=_ERRORS, tags=["market"], summary="Who the token belongs to")
def get_me(who: Principal = Depends(principal)) -> Any:
    return {"tenant": who.tenant, "admin": who.admin, "role": who.role, "expires": who.expires}

@operations_router.get("/v1/schemas/{kind}", tags=["formats"], summary="JSON Schema of a document format",
         responses={200: {"content": {"application/schema+json": {"schema": {"type": "object"}}}}, **_ERRORS})
def get_schema(kind: Literal["instance", "gpuround", "plan"]) -> Response:
    return Response(json.dumps(load_schema(SCHEMA_KINDS[kind])), media_type="application/schema+json")

@operations_router.get("/readyz", tags=["operations"], summary="Readiness: the database answers (503 otherwise)",
         responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}},
                    503: {"content": {"application/json": {"schema": {"type": "object"}}}}})
async def readyz(request: Request) -> Response:
    ok = await run_in_threadpool(_service(request).ready)
    return JSONResponse({"status": "ready" if ok else "not ready"}, status_code=200 if ok else 503)

@operations_router.get("/livez", tags=["operations"], summary="Liveness: the process answers (O(1), no database)",
                       responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}})
async def livez(request: Request) -> Response:
    """On the event loop itself: no thread, no database, nothing that grows with the tasks."""
    return JSONResponse({"status": "ok", "replica": _service(request).replica})

@operations_router.get("/healthz", response_model=Health, tags=["operations"],
                       summary="Liveness, configuration and the task counts (at most 1 s old)")
def healthz(request: Request) -> Any:
    return _service(request).status()

@operations_router.get("/metrics", tags=["operations"], summary="Prometheus metrics (per tenant with an operator token)",
         responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}, **_ERRORS})
async def metrics(request: Request) -> Response:
    """Aggregates for anyone; with an operator's ``Authorization: Bearer`` also the per-tenant series."""
    per_tenant = False
    if request.headers.get("authorization") is not None:
        who = _authenticate(request)
        who.require_admin("the per-tenant metrics")
        per_tenant = True
    await run_in_threadpool(_service(request).refresh_gauges)
    return Response(request.app.state.metrics.exposition(per_tenant=per_tenant), media_type=CONTENT_TYPE_LATEST)

@operations_router.get("/v1/audit", response_model=AuditPage, responses=_ERRORS, tags=["operations"],
         summary="The audit log of token, round and credit changes (operator)")
def get_audit(request: Request, who: Principal = Depends(principal),
              limit: int = Query(100, ge=1, le=1000),
              after: int = Query(0, ge=0, le=2 ** 62, description="the last seq of the previous page")) -> Any:
    who.require_admin("the audit log")
    return _service(request).audit_page(limit=limit, after=after)


def register_routes(app: FastAPI) -> None:
    """Add every API route to ``app`` (the routers of :data:`ROUTERS`)."""
    for router in ROUTERS:
        app.include_router(router)
