"""``serve`` with ``market.engine: credit`` (the default): rounds cleared by the simulator's market engine.

Each round the service maps its stored tasks into :class:`gensolver.market.pool.TablePool`
and calls :class:`gensolver.market.engine.CreditEngine`. The test replays the same tasks
through the engine in memory, with the service's model of progress, and checks that every
round's assignments and charges are the same; capacity and the credit accounting are checked
independently of both.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess

import httpx

from gensolver.market.engine import CreditEngine
from gensolver.market.pool import TablePool
from gensolver.model.tasks import task_speed
from gensolver.service.market_glue import task_from_dict
from gensolver.service.settings import parse_gpus
from gensolver.sim import simulate
from tests.market.event_log import sim_state

from .conftest import GENSOLVER, gentask, make_api, token_direct
from .test_market import overfilled


def _replay(tasks: dict, gpus: str, lease: int, rounds: int, *, forget_at: int = -1) -> list[tuple[dict, dict]]:
    """Per round, ``({task: (gpus, memory)}, {task: charge})`` of the engine run in memory
    (``forget_at``: before that round, a fresh engine that keeps only the balances)."""
    eng = CreditEngine()
    eng.lease = lease
    rem = {k: float(t.duration) for k, t in tasks.items()}
    placed: dict[str, tuple[tuple[str, ...], float]] = {}
    out = []
    for n in range(rounds):
        now = n * lease
        if n == forget_at:
            balances, eng = dict(eng.bank.balances), CreditEngine()
            eng.lease = lease
            eng.bank.balances.update(balances)
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
    for api in make_api(tmp_path, gpus=gpus, market={"lease": lease}):  # the default engine
        assert api.client.get("/healthz").json()["engine"] == "credit"
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


def test_a_workload_through_real_serve_matches_simulate(tmp_path, server_factory):
    """8 tasks of two tenants through a real ``gensolver serve`` (uvicorn on 127.0.0.1), round
    by round, and the same tasks through ``simulate``: same assignments and charges."""
    gpus, lease = "n0:2x80", 5
    db = tmp_path / "market.db"
    ops, alice, bob = (token_direct(db, t, admin=t == "ops") for t in ("ops", "alice", "bob"))
    srv = server_factory("--gpus", gpus, "--step-seconds", "60",
                         "--market", json.dumps({"engine": "credit", "lease": lease}), db=db)
    auth = {t: {"Authorization": f"Bearer {k}"} for t, k in (("ops", ops), ("alice", alice), ("bob", bob))}
    with httpx.Client(base_url=srv.url, timeout=30.0) as http:
        for k in range(4):  # durations off the lease grid: no task ends exactly at a round
            a = gentask(f"a{k}", preferred="50Gi", duration=f"{6 + 3 * k}m", value=50 + k)
            b = gentask(f"b{k}", preferred="40Gi", duration=f"{13 - 2 * k}m", value=40, urgency=0.9)
            for doc, who in ((a, "alice"), (b, "bob")):
                doc["spec"]["genResources"]["computeTime"]["arrival"] = f"{lease}m"  # released at the 2nd round
                assert http.post("/v1/tasks", json=doc, headers=auth[who]).status_code in (200, 201)
        listed = http.get("/v1/tasks", headers=auth["ops"]).json()["tasks"]
        docs = []
        for _ in range(12):
            r = http.post("/v1/rounds", headers=auth["ops"])
            assert r.status_code == 201, r.text
            docs.append(r.json())
        assert {t["state"] for t in http.get("/v1/tasks", headers=auth["ops"]).json()["tasks"]} == {"done"}
    tasks = [task_from_dict(t["task"]) for t in listed]
    assert {t.release for t in tasks} == {lease}
    # the market policy deciding at round boundaries only, with no restore cost, as the service
    res = simulate(tasks, policy="market", gpus=parse_gpus(gpus), lease=lease, checkpoint_steps=0.0,
                   policy_options={"between": False})
    compared = 0
    for doc in docs:
        placed, charges = sim_state(res.events, doc["time"])
        assert {a["task"]: (a["gpus"], a["memory"]) for a in doc["assignments"]} == placed, doc["round"]
        got = {p["task"]: p["charge"] for p in doc["payments"] if p["charge"] > 0}
        assert got.keys() == charges.keys() and all(abs(got[k] - charges[k]) < 1e-9 for k in charges), doc["round"]
        compared += bool(placed)
    assert compared >= 4, "rounds with tasks running"


def _submit(api, lease: int) -> dict:
    for k in range(4):
        api.client.post("/v1/tasks", json=gentask(f"a{k}", preferred="50Gi", duration=f"{5 + 3 * k}m", value=50 + k),
                        headers=api.h("alice"))
        api.client.post("/v1/tasks", json=gentask(f"b{k}", preferred="40Gi", duration=f"{12 - 2 * k}m", value=40,
                                                  urgency=0.9), headers=api.h("bob"))
    listed = api.client.get("/v1/tasks", headers=api.h("ops")).json()["tasks"]
    return {t["key"]: task_from_dict(t["task"]) for t in listed}


def test_a_restarted_service_clears_as_if_it_never_stopped(tmp_path):
    """The engine's memory (tasks seen, prices, calibration) is committed with each round: a
    service restarted between rounds clears the rest as the engine run in one piece does."""
    gpus, lease = "n0:2x80", 5
    docs = []
    for part, rounds in enumerate((4, 8)):
        gen = make_api(tmp_path, gpus=gpus, market={"lease": lease})
        api = next(gen)
        try:
            if part == 0:
                tasks = _submit(api, lease)
            for _ in range(rounds):
                r = api.client.post("/v1/rounds", headers=api.h("ops"))
                assert r.status_code == 201, r.text
                docs.append(r.json())
        finally:
            gen.close()
    expected = _replay(tasks, gpus, lease, len(docs))
    priced = 0
    for doc, (placed, charges) in zip(docs, expected):
        assert {a["task"]: (a["gpus"], a["memory"]) for a in doc["assignments"]} == placed, doc["round"]
        got = {p["task"]: p["charge"] for p in doc["payments"] if p["charge"] > 0}
        assert got.keys() == charges.keys() and all(abs(got[k] - charges[k]) < 1e-9 for k in charges), doc["round"]
        priced += doc["round"] > 4 and any(v > 0 for v in doc["prices"].values())
    assert priced > 0, "prices after the restart carry the smoothed prices from before it"
    # the stored engine state names only tasks not yet done (it does not grow with every task seen)
    with sqlite3.connect(tmp_path / "market.db") as db:
        state = json.loads(db.execute("SELECT value FROM meta WHERE key = 'engine_state'").fetchone()[0])
        left = {r[0] for r in db.execute("SELECT id FROM tasks WHERE state IN ('waiting', 'running')")}
        done = {r[0] for r in db.execute("SELECT id FROM tasks WHERE state = 'done'")}
    assert done and set(state["seen"]) | set(state["slow"]) | set(state["short"]) <= left
    assert sum(state["arrived"].values()) >= len(done)


def test_the_replay_notices_a_lost_engine_memory(tmp_path):
    """The check above can fail: an engine that keeps only the balances at round 5 (as the
    service did before the engine's memory was stored) charges differently from the engine
    run in one piece."""
    gpus, lease = "n0:2x80", 5
    for api in make_api(tmp_path, gpus=gpus, market={"lease": lease}):
        tasks = _submit(api, lease)
    whole = _replay(tasks, gpus, lease, 12)
    cut = _replay(tasks, gpus, lease, 12, forget_at=4)
    assert whole[:4] == cut[:4] and whole != cut


def test_auction_options_need_the_deprecated_engine(tmp_path):
    """An option of the auction given to the credit engine would be ignored: it is refused,
    naming the field, before anything is written; so is a bad credit engine option."""
    for market, field in (({"mechanism": "vcg"}, "market.mechanism"), ({"time_limit": 0.2}, "market.time_limit"),
                          ({"credit": {"clearing": "fast"}}, "MarketConfig.credit"),
                          ({"engine": "auction", "credit": {"smith": 0.5}}, "MarketConfig.credit")):
        out = subprocess.run(GENSOLVER + ["serve", "--db", str(tmp_path / "refused.db"), "--port", "1",
                                          "--market", json.dumps(market)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and field in out.stderr and "Traceback" not in out.stderr, (market, out.stderr)
    assert not (tmp_path / "refused.db").exists()


def test_credit_engine_options_reach_the_engine(tmp_path):
    for api in make_api(tmp_path, market={"lease": 5, "credit": {"clearing": "solver", "smith": 0.5, "method": "lp"}}):
        eng = api.service.glue.engine
        assert (eng.clearing, eng.smith, eng.lease, eng.method) == ("solver", 0.5, 5, "lp")
        health = api.client.get("/healthz").json()
        assert health["method"] == "lp" and health["solver"] == "lp"  # the old key, kept one release
