"""A real ``gensolver serve`` (uvicorn on 127.0.0.1) killed with SIGKILL loses nothing it accepted."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from .conftest import gentask, token_cli, token_direct


def balances_from_ledger(client: httpx.Client, h: dict, rounds: int) -> dict[str, float]:
    """Each tenant's balance recomputed from every round's credit changes."""
    out: dict[str, float] = {}
    for n in range(1, rounds + 1):
        for c in client.get(f"/v1/rounds/{n}", headers=h).json()["credits"]:
            out[c["tenant"]] = out.get(c["tenant"], 0.0) + c["amount"]
    return out


def test_kill_9_during_submissions_and_rounds_loses_nothing(tmp_path, server_factory):
    db = tmp_path / "market.db"
    ops, alice, bob = token_cli(db, "ops", admin=True), token_direct(db, "alice"), token_direct(db, "bob")
    H = {name: {"Authorization": f"Bearer {tok}"} for name, tok in (("ops", ops), ("alice", alice), ("bob", bob))}
    srv = server_factory("--round-seconds", "0.05", "--gpus", "n0:2x80", db=db)
    accepted: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def submit(worker: int) -> None:
        tenant = "alice" if worker % 2 == 0 else "bob"
        with httpx.Client(base_url=srv.url, timeout=60.0) as c:
            k = 0
            while not stop.is_set():
                name = f"w{worker}-{k}"
                try:
                    r = c.post("/v1/tasks", json=gentask(name, preferred="10Gi", duration="5m", value=10.0),
                               headers=H[tenant])
                except httpx.HTTPError:
                    return  # the server died under us: this one was not acknowledged
                if r.status_code == 201:
                    with lock:
                        accepted.add(name)
                k += 1

    workers = [threading.Thread(target=submit, args=(w,)) for w in range(4)]
    for w in workers:
        w.start()
    with httpx.Client(base_url=srv.url, timeout=60.0) as c:
        # wait until some tasks are in and some rounds cleared, then kill while both go on
        # (a deadline, not a count of polls: a loaded machine takes longer to get there)
        deadline = time.monotonic() + 180.0
        while time.monotonic() < deadline:
            health = c.get("/healthz").json()
            if len(accepted) >= 40 and health["rounds"] >= 3:
                break
            threading.Event().wait(0.05)
    srv.kill9()
    stop.set()
    for w in workers:
        w.join(timeout=10)
    assert len(accepted) >= 40

    again = server_factory("--gpus", "n0:2x80", db=db)
    with httpx.Client(base_url=again.url, timeout=60.0) as c:
        stored = {t["id"] for t in c.get("/v1/tasks?limit=5000", headers=H["ops"]).json()["tasks"]}
        assert accepted <= stored, sorted(accepted - stored)[:5]
        rounds = c.get("/healthz").json()["rounds"]
        assert rounds >= 3
        listed = [r["round"] for r in c.get("/v1/rounds?limit=500", headers=H["ops"]).json()["rounds"]]
        assert listed == list(range(max(1, rounds - 499), rounds + 1))
        before = {t: c.get(f"/v1/tenants/{t}", headers=H["ops"]).json()["balance"] for t in ("alice", "bob")}
        assert before == pytest.approx({k: v for k, v in balances_from_ledger(c, H["ops"], rounds).items()
                                        if k in before})
        # the next round is the next number, at the next time, and opens no account twice
        nxt = c.post("/v1/rounds", headers=H["ops"]).json()
        assert nxt["round"] == rounds + 1 and nxt["time"] == rounds * 5
        assert not [e for e in nxt["credits"] if e["reason"] == "budget" and e["tenant"] in before]
        after = {t: c.get(f"/v1/tenants/{t}", headers=H["ops"]).json()["balance"] for t in ("alice", "bob")}
        for t in before:
            delta = sum(e["amount"] for e in nxt["credits"] if e["tenant"] == t)
            assert after[t] == pytest.approx(before[t] + delta)


def test_restart_keeps_rounds_tasks_and_credits(tmp_path, server_factory):
    db = tmp_path / "market.db"
    ops, alice = token_direct(db, "ops", admin=True), token_direct(db, "alice")
    H = {"Authorization": f"Bearer {ops}"}
    A = {"Authorization": f"Bearer {alice}"}
    srv = server_factory(db=db)
    with httpx.Client(base_url=srv.url, timeout=60.0) as c:
        for k in range(6):
            assert c.post("/v1/tasks", json=gentask(f"t{k}", preferred="50Gi", duration="30m", value=20 + k),
                          headers=A).status_code == 201
        first = c.post("/v1/rounds", headers=H).json()
        c.delete("/v1/tasks/t5", headers=A)
        tasks = c.get("/v1/tasks", headers=H).json()["tasks"]
        tenant = c.get("/v1/tenants/alice", headers=A).json()
    srv.kill9()
    again = server_factory(db=db)
    with httpx.Client(base_url=again.url, timeout=60.0) as c:
        assert c.get("/v1/rounds/1", headers=H).json() == first
        assert c.get("/v1/tasks", headers=H).json()["tasks"] == tasks
        assert c.get("/v1/tenants/alice", headers=A).json() == tenant
        assert c.get("/v1/tasks/t5", headers=A).json()["state"] == "cancelled"
        second = c.post("/v1/rounds", headers=H).json()
        assert second["round"] == 2
        # running tasks kept their work done in round 1 (5 steps at full speed of 30)
        running = {t["id"]: t for t in c.get("/v1/tasks?state=running", headers=H).json()["tasks"]}
        for a in first["assignments"]:
            if a["task"] in running and a["memory"] == 50.0:
                assert running[a["task"]]["remaining"] == pytest.approx(25.0)
