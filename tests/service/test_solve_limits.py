"""``POST /v1/solve`` limits that hold under load: a deterministic work budget by default and
the wall-clock ``time_limit`` as an honoured upper bound."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from gensolver.instances import arbitrary
from gensolver.model import from_dict
from gensolver.service import routes
from gensolver.service.market_glue import solve_budget
from gensolver.verify import check_allocation

from .conftest import make_api
from .test_api import INSTANCE, is_problem

#: what must not depend on the machine's load (``seconds`` and ``details`` timings may)
SAME = ("status", "welfare", "bound", "winners", "method", "mechanism", "payments", "revenue", "limits")


@pytest.fixture
def roomy(tmp_path):
    # a wall-clock bound far above the work budget's idle time, so a loaded CI machine answers too
    yield from make_api(tmp_path, max_solve_seconds=300.0, request_timeout=400.0)


def _busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("query", ["method=auto&work=0.3", "method=auto&mechanism=vcg&work=0.3",
                                   "method=auto&mechanism=core&work=0.3"])
def test_the_same_request_answers_the_same_idle_and_loaded(roomy, seed, query):
    doc = arbitrary(n_goods=48, n_bids=240, seed=seed).to_dict()
    h = roomy.h("alice")
    idle = roomy.client.post(f"/v1/solve?{query}", json=doc, headers=h)
    assert idle.status_code == 200, idle.text
    hogs = _busy(2)  # a busy loop on each of the two cores
    try:
        loaded = roomy.client.post(f"/v1/solve?{query}", json=doc, headers=h)
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    assert loaded.status_code == 200, loaded.text
    a, b = idle.json(), loaded.json()
    for key in SAME:
        assert a.get(key) == b.get(key), key
    assert a["limits"] == {"budget": "work", "work": 0.3, "time_limit": 300.0}
    # an independent certificate: the winners fit, and the welfare is theirs
    instance = from_dict(doc)
    check = check_allocation(instance, a["winners"])
    assert check.feasible and check.welfare == pytest.approx(a["welfare"])
    assert a["bound"] is None or a["bound"] >= a["welfare"] - 1e-6


def test_the_budget_named_in_the_answer(api):
    assert solve_budget("auto", None) == solve_budget("greedy", None) == "work"
    assert solve_budget("cpsat", None) == "wall clock"
    assert solve_budget("auto", "vcg") == solve_budget("greedy", "lavi-swamy") == "work"
    assert solve_budget("auto", "core") == "work"
    assert solve_budget("greedy", "vcg") == solve_budget("greedy", "core") == "wall clock"
    assert solve_budget("auto", "pay-as-bid") == "wall clock"
    r = api.client.post("/v1/solve?method=greedy&mechanism=vcg&time_limit=2", json=INSTANCE, headers=api.h("alice"))
    assert r.status_code == 200 and r.json()["limits"] == {"budget": "wall clock", "work": None, "time_limit": 2.0}
    # default work is the server's --max-solve-work; beyond it, or not finite, is refused by name
    r = api.client.post("/v1/solve", json=INSTANCE, headers=api.h("alice"))
    assert r.json()["limits"] == {"budget": "work", "work": 5.0, "time_limit": 10.0}
    is_problem(api.client.post("/v1/solve?work=6", json=INSTANCE, headers=api.h("alice")), 422, "query.work")
    is_problem(api.client.post("/v1/solve?work=0", json=INSTANCE, headers=api.h("alice")), 422, "query.work")
    is_problem(api.client.post("/v1/solve?work=inf", json=INSTANCE, headers=api.h("alice")), 422, "query.work")


def test_the_wall_clock_bound_is_honoured_and_the_quota_held(tmp_path, monkeypatch):
    release = threading.Event()
    started = threading.Event()

    def stuck(doc, **kw):  # a solve that outlives any time_limit until the test releases it
        started.set()
        release.wait(60)
        return {"stuck": True}

    monkeypatch.setattr(routes, "solve_document", stuck)
    for api in make_api(tmp_path, max_solves_per_tenant=1):
        h = api.h("alice")
        try:
            body = is_problem(api.client.post("/v1/solve?time_limit=0.2", json=INSTANCE, headers=h), 503,
                              "query.time_limit")
            assert "time_limit=0.2" in body["detail"]
            assert started.is_set()
            # the abandoned solve still runs, so it still counts against alice's one solve
            is_problem(api.client.post("/v1/solve", json=INSTANCE, headers=h), 429)
        finally:
            release.set()
