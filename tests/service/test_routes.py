"""Behaviour of :mod:`gensolver.service.routes`: the routers serve exactly the routes the module
documents, and each documented route is reachable with its method.

Certificate: the route table of the module docstring (the reference users read), parsed
independently of the routers, compared with what :func:`register_routes` adds to an app.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")

from fastapi import FastAPI  # noqa: E402

from gensolver.service import routes  # noqa: E402


def documented(doc: str) -> set[tuple[str, str]]:
    """``(METHOD, path)`` of each row of the docstring's route table (``{id}`` as ``{*}``)."""
    rows = re.findall(r"^``(GET|POST|PUT|DELETE|PATCH) (/[^`]*)``", doc, flags=re.M)
    return {(m, re.sub(r"\{[^}]*\}", "{*}", p)) for m, p in rows}


def served(app: FastAPI) -> set[tuple[str, str]]:
    """``(METHOD, path)`` of each operation the app publishes (its OpenAPI document)."""
    return {(m.upper(), re.sub(r"\{[^}]*\}", "{*}", p)) for p, ops in app.openapi()["paths"].items() for m in ops}


def test_register_routes_adds_exactly_the_documented_routes():
    app = FastAPI()
    routes.register_routes(app)
    table = documented(routes.__doc__ or "")
    assert len(table) >= 18
    assert served(app) == table


def test_each_router_holds_its_own_resource():
    by_router = [{r.path for r in router.routes} for router in routes.ROUTERS]
    assert all(by_router)
    assert sum(len(p) for p in by_router) == len(set().union(*by_router))  # no route in two routers
    assert all(p.startswith("/v1/tasks") or p == "/v1/feedback" for p in {r.path for r in routes.tasks_router.routes})
    assert all(p.startswith("/v1/rounds") for p in {r.path for r in routes.rounds_router.routes})


def test_the_comparison_can_fail():
    table = documented(routes.__doc__ or "")
    app = FastAPI()
    routes.register_routes(app)
    assert served(app) != table - {("GET", "/livez")}
    assert documented("``GET /v1/x``  does  who\n``PUT /v1/y/{id}``  x  y") == {("GET", "/v1/x"), ("PUT", "/v1/y/{*}")}


def test_every_documented_route_answers_its_method(api):
    """No documented route is 404 (unknown path) or 405 (wrong method) on a running app."""
    fill = {"{id}": "nope", "{n}": "1", "{t}": "alice", "{kind}": "instance"}
    for method, path in sorted(documented(routes.__doc__ or "")):
        for row in re.findall(rf"^``{method} (/[^`]*)``", routes.__doc__ or "", flags=re.M):
            if re.sub(r"\{[^}]*\}", "{*}", row) != path:
                continue
            url = row
            for k, v in fill.items():
                url = url.replace(k, v)
            r = api.client.request(method, url, headers=api.h("ops"))
            assert r.status_code != 405, (method, url)
            if r.status_code == 404:  # a 404 must be a thing not found, not an unknown route
                assert r.json().get("field", "").startswith("path."), (method, url, r.text)


def test_a_time_limit_over_the_largest_is_refused_naming_the_field(api):
    r = api.client.post("/v1/solve?time_limit=1e300", json={}, headers=api.h("alice"))
    assert r.status_code == 422 and r.json()["field"] == "query.time_limit", r.text
