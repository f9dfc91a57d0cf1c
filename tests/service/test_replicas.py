"""Two real ``gensolver serve`` replicas (uvicorn on 127.0.0.1) on one real PostgreSQL server.

Submissions go to both, rounds are asked of both at once, and (in the kill variants) replicas
are killed with SIGKILL and restarted meanwhile. The certificates read the database directly:
every acknowledged submission stored once, the stored rounds numbered 1..R with no gap, each
round's credit rows exactly those of its answer (none applied twice), no GPU over capacity in
any round, and every balance equal to its ledger (the sum of its credit rows).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from .conftest import gentask, token_direct
from .test_market import overfilled

ARGS = ("--gpus", "n0:2x80")


def _post(url: str, path: str, headers: dict, **kw: Any) -> httpx.Response | None:
    try:
        return httpx.post(url + path, headers=headers, timeout=60.0, **kw)
    except httpx.HTTPError:
        return None  # the replica died under us (or was restarting): not acknowledged


def certify(url: str) -> dict[str, Any]:
    """Facts read straight from the database (not through the service), checked for consistency."""
    import psycopg

    with psycopg.connect(url) as db:
        tasks = db.execute("SELECT id, name, tenant, task FROM tasks").fetchall()
        rounds = db.execute("SELECT n, detail FROM rounds ORDER BY n").fetchall()
        credit_rows = Counter(dict(db.execute("SELECT round, COUNT(*) FROM credits GROUP BY round").fetchall()))
        balances = dict(db.execute("SELECT tenant, balance FROM tenants").fetchall())
        ledgers = dict(db.execute("SELECT tenant, SUM(amount) FROM credits GROUP BY tenant").fetchall())
    numbers = [n for n, _ in rounds]
    assert numbers == list(range(1, len(numbers) + 1)), "stored rounds have a gap or a duplicate"
    specs = {tid: json.loads(t) for tid, _, _, t in tasks}
    gpus = [{"id": f"n0-gpu{k}", "memory": 80.0, "compute": 1.0} for k in range(2)]
    for n, detail in rounds:
        doc = json.loads(detail)
        assert doc["round"] == n
        assert credit_rows.get(n, 0) == len(doc["credits"]), f"round {n}: credit rows differ from its answer"
        ids = {g for a in doc["assignments"] for g in a["gpus"]}
        assert ids <= {g["id"] for g in gpus}, ids
        assert overfilled(doc["assignments"], gpus, specs) == [], f"round {n} overfills a GPU"
    assert set(balances) == set(ledgers)
    for tenant, balance in balances.items():
        assert balance == pytest.approx(ledgers[tenant], abs=1e-6), tenant
    return {"names": Counter((tenant, name) for _, name, tenant, _ in tasks), "rounds": len(numbers),
            "details": {n: json.loads(d) for n, d in rounds}}


def run_replicas(pg_url: str, server_factory: Any, *, kills: int, per_worker: int) -> None:
    H = {t: {"Authorization": f"Bearer {token_direct(pg_url, t, admin=t == 'ops')}"} for t in ("ops", "alice", "bob")}
    servers = [server_factory(*ARGS, db=pg_url) for _ in range(2)]
    urls = [s.url for s in servers]
    accepted: list[tuple[str, str]] = []
    answered: list[int] = []
    lock = threading.Lock()
    submitting = threading.Event()
    stop = threading.Event()

    def submit(worker: int) -> None:
        slot, tenant = worker % 2, ("alice", "bob")[worker // 2 % 2]
        for k in range(per_worker):
            name = f"w{worker}-{k}"
            r = _post(urls[slot], "/v1/tasks", H[tenant],
                      json=gentask(name, preferred="10Gi", duration="5m", value=10.0 + k % 7))
            if r is not None and r.status_code == 201:
                with lock:
                    accepted.append((tenant, name))
            elif r is None:
                time.sleep(0.05)

    def rounds(slot: int) -> None:
        while not stop.is_set():
            r = _post(urls[slot], "/v1/rounds", H["ops"])
            if r is not None and r.status_code == 201:
                with lock:
                    answered.append(r.json()["round"])
            elif r is None:
                time.sleep(0.05)

    workers = [threading.Thread(target=submit, args=(w,)) for w in range(4)]
    clearers = [threading.Thread(target=rounds, args=(s,)) for s in range(2)]
    for t in workers + clearers:
        t.start()
    submitting.set()
    try:
        for i in range(kills):  # kill a replica once both kinds of work have gone on since the last kill
            seen = (len(accepted), len(answered))
            deadline = time.monotonic() + 120
            while (len(accepted) < seen[0] + 5 or len(answered) < seen[1] + 2) and any(w.is_alive() for w in workers):
                assert time.monotonic() < deadline, "no progress within 120 s"
                time.sleep(0.02)
            slot = i % 2
            servers[slot].kill9()
            servers[slot] = server_factory(*ARGS, db=pg_url, timeout=180.0)
            urls[slot] = servers[slot].url
        for w in workers:
            w.join(timeout=300)
    finally:
        stop.set()
        for t in workers + clearers:
            t.join(timeout=60)
    assert len(accepted) >= 4 * per_worker // 2 and len(answered) >= 2

    facts = certify(pg_url)
    for key in accepted:
        assert facts["names"][key] == 1, key
    assert len(answered) == len(set(answered)), "a round number was answered twice"
    assert set(answered) <= set(range(1, facts["rounds"] + 1))

    # the next round on either replica sees what the other accepted: clear the queue, then cross over
    with httpx.Client(timeout=30.0) as c:
        for tenant, name in facts["names"]:
            c.delete(f"{urls[0]}/v1/tasks/{name}?tenant={tenant}", headers=H["ops"])
        for src, dst, name in ((1, 0, "cross-a"), (0, 1, "cross-b")):
            assert c.post(f"{urls[src]}/v1/tasks", json=gentask(name, preferred="10Gi", duration="5m", value=50.0),
                          headers=H["alice"]).status_code == 201
            doc = c.post(f"{urls[dst]}/v1/rounds", headers=H["ops"]).json()
            assert f"alice/{name}" in {a["task"] for a in doc["assignments"]}, doc["assignments"]
    certify(pg_url)


def test_two_replicas_on_postgres_apply_each_round_once(pg_url, server_factory):
    run_replicas(pg_url, server_factory, kills=0, per_worker=15)
    import psycopg

    # the certificate can fail: the credits of a cleared round (the first that has any; which
    # one depends on how the replicas' rounds interleaved) applied twice
    with psycopg.connect(pg_url) as db:
        first = db.execute("SELECT MIN(round) FROM credits WHERE round >= 1").fetchone()[0]
        assert first is not None, "no cleared round moved credits"
        db.execute("INSERT INTO credits(round, time, tenant, amount, reason, task) "
                   "SELECT round, time, tenant, amount, reason, task FROM credits WHERE round = %s", (first,))
    with pytest.raises(AssertionError, match="credit rows differ"):
        certify(pg_url)


def test_two_replicas_killed_with_sigkill_lose_nothing(pg_url, server_factory):
    run_replicas(pg_url, server_factory, kills=2, per_worker=25)


@pytest.mark.slow
def test_two_replicas_each_killed_five_times(pg_url, server_factory):
    run_replicas(pg_url, server_factory, kills=10, per_worker=120)

