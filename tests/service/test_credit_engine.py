"""``serve`` with ``market.engine: credit``: rounds cleared by the simulator's market engine.

Each round the service maps its stored tasks into :class:`gensolver.market.pool.TablePool`
and calls :class:`gensolver.market.engine.CreditEngine`. The test replays the same tasks
through the engine in memory, with the service's model of progress, and checks that every
round's assignments and charges are the same; capacity and the credit accounting are checked
independently of both.
"""

from __future__ import annotations

from gensolver.market.engine import CreditEngine
from gensolver.market.pool import TablePool
from gensolver.model.tasks import task_speed
from gensolver.service.market_glue import task_from_dict
from gensolver.service.settings import parse_gpus

from .conftest import gentask, make_api
from .test_market import overfilled


def _replay(tasks: dict, gpus: str, lease: int, rounds: int) -> list[tuple[dict, dict]]:
    """Per round, ``({task: (gpus, memory)}, {task: charge})`` of the engine run in memory."""
    eng = CreditEngine()
    eng.lease = lease
    rem = {k: float(t.duration) for k, t in tasks.items()}
    placed: dict[str, tuple[tuple[str, ...], float]] = {}
    out = []
    for n in range(rounds):
        now = n * lease
        for k in list(placed):  # the service's model of progress between rounds
            rem[k] -= lease * task_speed(tasks[k], placed[k][1])
            if rem[k] <= 1e-9:
                del placed[k], rem[k]
        pool = TablePool(parse_gpus(gpus), now=now, lease=lease)
        for k in rem:
            g, m = placed.get(k, ((), 0.0))
            pool.add(tasks[k], remaining=rem[k], gpus=g, memory=m)
        eng.round(pool, True)
        placed = {s.id: (s.gpus, s.memory) for s in pool.running()}
        charges: dict[str, float] = {}
        for a in pool.actions:
            if a[0] == "credit" and a[1]["note"] == "payment":
                charges[a[1]["task"]] = charges.get(a[1]["task"], 0.0) - a[1]["amount"]
        out.append(({k: (list(g), m) for k, (g, m) in placed.items()}, charges))
    return out


def test_serve_clears_rounds_with_the_credit_engine(tmp_path):
    gpus, lease = "n0:2x80", 5
    for api in make_api(tmp_path, gpus=gpus, market={"engine": "credit", "lease": lease}):
        for k in range(4):
            api.client.post("/v1/tasks", json=gentask(f"a{k}", preferred="50Gi", duration=f"{5 + 3 * k}m", value=50 + k),
                            headers=api.h("alice"))
            api.client.post("/v1/tasks", json=gentask(f"b{k}", preferred="40Gi", duration=f"{12 - 2 * k}m", value=40,
                                                      urgency=0.9), headers=api.h("bob"))
        listed = api.client.get("/v1/tasks", headers=api.h("ops")).json()["tasks"]
        tasks = {t["key"]: task_from_dict(t["task"]) for t in listed}
        health = api.client.get("/healthz").json()["gpus"]
        docs = []
        for _ in range(12):
            r = api.client.post("/v1/rounds", headers=api.h("ops"))
            assert r.status_code == 201, r.text
            docs.append(r.json())
        states = {t["state"] for t in api.client.get("/v1/tasks", headers=api.h("ops")).json()["tasks"]}
    assert states == {"done"}, "every task finishes"
    expected = _replay(tasks, gpus, lease, len(docs))
    paid_rounds = 0
    for doc, (placed, charges) in zip(docs, expected):
        assert doc["mechanism"] == "credit"
        assert overfilled(doc["assignments"], health, {k: {"compute": t.compute} for k, t in tasks.items()}) == []
        got = {a["task"]: (a["gpus"], a["memory"]) for a in doc["assignments"]}
        assert got == placed, doc["round"]
        got_charges = {p["task"]: p["charge"] for p in doc["payments"] if p["charge"] > 0}
        assert got_charges.keys() == charges.keys() and all(abs(got_charges[k] - charges[k]) < 1e-9 for k in charges)
        # accounting: every charge is a payment entry in the round's credits
        paid = sum(-c["amount"] for c in doc["credits"] if c["reason"] == "payment")
        assert abs(paid - doc["revenue"]) < 1e-9
        paid_rounds += paid > 0
    assert paid_rounds > 0, "overloaded rounds set prices"
