"""The market service over HTTP: a real ``gensolver serve`` (uvicorn) on 127.0.0.1.

Measures, each against its goal (docs/how-to/service.md):

1. ``POST /v1/solve`` on a 2-bid round, keep-alive (one httpx client): p50 latency beside the
   solve's own time (``seconds.total`` of the answer, and ``solve()`` called in this process);
   the overhead is latency minus solve time. Goal: <= 10 ms at p50.
2. 50 concurrent clients (asyncio, one keep-alive connection each, 10 tenants) submitting 2,000
   GenTasks while the server clears a round every 0.25 s: submissions/s, p50/p99 latency, and
   the check that every acknowledged task is stored exactly once. Goal: >= 500/s on 2 cores.
3. A round over 200 waiting tasks (``POST /v1/rounds``): seconds. Goal: <= 1 s.

Usage::

    .venv/bin/python benchmarks/bench_service.py            # the full run (about a minute)
    .venv/bin/python benchmarks/bench_service.py --quick    # fewer requests
    .venv/bin/python benchmarks/bench_service.py --synchronous normal   # no fsync per commit

The client runs on the same machine as the server (its CPU time competes with the server's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from gensolver import solve
from gensolver.model import from_dict
from gensolver.service.auth import add_token
from gensolver.service.storage import Store

TWO_BIDS = {
    "schema": "gensolver.instance/v1", "name": "two-bids",
    "slots": [{"id": "g0t0", "capacity": {"memory": 80, "compute": 1.0}}],
    "bids": [{"id": "a", "bidder": "A", "value": 10, "demand": {"g0t0": {"memory": 60, "compute": 0.5}}},
             {"id": "b", "bidder": "B", "value": 6, "demand": {"g0t0": {"memory": 40, "compute": 0.5}}}],
}


def gentask(name: str, k: int) -> dict:
    return {"apiVersion": "scheduling.gen.io/v1alpha1", "kind": "GenTask", "metadata": {"name": name},
            "spec": {"genResources": {"gpuMemory": {"preferred": f"{8 + k % 40}Gi", "minRequired": f"{4 + k % 20}Gi",
                                                    "urgencyFactor": 0.5},
                                      "computeTime": {"duration": f"{5 + k % 30}m"}, "value": 10.0 + k % 50}}}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))]


class Server:
    def __init__(self, db: Path, *args: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-c", "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))",
               "serve", "--db", str(db), "--port", str(self.port), "--rate-limit", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the server process has used (Linux /proc)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


def bench_solve(url: str, token: str, n: int) -> dict:
    h = {"Authorization": f"Bearer {token}"}
    inst = from_dict(TWO_BIDS)
    local = []
    for _ in range(n):
        t0 = time.perf_counter()
        solve(inst, method="auto", time_limit=10.0)
        local.append(time.perf_counter() - t0)
    lat, server_solve = [], []
    with httpx.Client(base_url=url, headers=h, timeout=30) as c:
        for _ in range(20):  # warm up (imports, connection)
            c.post("/v1/solve", json=TWO_BIDS)
        for _ in range(n):
            t0 = time.perf_counter()
            r = c.post("/v1/solve", json=TWO_BIDS)
            lat.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
            server_solve.append(r.json()["seconds"]["total"])
    over = [a - b for a, b in zip(lat, server_solve)]
    return {"requests": n, "latency_p50_ms": 1e3 * statistics.median(lat),
            "solve_reported_p50_ms": 1e3 * statistics.median(server_solve),
            "solve_in_process_p50_ms": 1e3 * statistics.median(local),
            "overhead_p50_ms": 1e3 * statistics.median(over),
            "overhead_vs_in_process_p50_ms": 1e3 * (statistics.median(lat) - statistics.median(local))}


async def _submit_all(url: str, tokens: list[str], n_tasks: int, clients: int, admin: str, round_every: float) -> dict:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for k in range(n_tasks):
        queue.put_nowait(k)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    acked: list[str] = []
    stop = asyncio.Event()
    rounds = []

    async def client(i: int) -> None:
        h = {"Authorization": f"Bearer {tokens[i % len(tokens)]}"}
        async with httpx.AsyncClient(base_url=url, headers=h, timeout=60) as c:
            while True:
                try:
                    k = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                name = f"bench-{k}"
                t0 = time.perf_counter()
                r = await c.post("/v1/tasks", json=gentask(name, k))
                latencies.append(time.perf_counter() - t0)
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                if r.status_code == 201:
                    acked.append(name)

    async def clearer() -> None:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=60) as c:
            while True:
                try:
                    await asyncio.wait_for(stop.wait(), timeout=round_every)
                    return
                except asyncio.TimeoutError:
                    pass
                r = await c.post("/v1/rounds")
                if r.status_code == 201:
                    rounds.append(r.json()["seconds"]["total"])

    t0 = time.perf_counter()
    bg = asyncio.create_task(clearer())
    await asyncio.gather(*(client(i) for i in range(clients)))
    wall = time.perf_counter() - t0
    stop.set()
    await bg
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=60) as c:
        stored = [t["id"] for t in (await c.get("/v1/tasks", params={"limit": 5000})).json()["tasks"]]
    bench = [s for s in stored if s.startswith("bench-")]
    return {"tasks": n_tasks, "clients": clients, "seconds": wall, "submissions_per_s": n_tasks / wall,
            "p50_ms": 1e3 * pct(latencies, 50), "p99_ms": 1e3 * pct(latencies, 99), "statuses": statuses,
            "rounds_during": len(rounds), "round_p50_s": statistics.median(rounds) if rounds else None,
            "lost": len(set(acked) - set(bench)), "duplicated": len(bench) - len(set(bench)),
            "stored": len(bench)}


def bench_round(url: str, tokens: list[str], admin: str, n: int) -> dict:
    with httpx.Client(base_url=url, timeout=60) as c:
        for k in range(n):
            r = c.post("/v1/tasks", json=gentask(f"r-{k}", k), headers={"Authorization": f"Bearer {tokens[k % len(tokens)]}"})
            assert r.status_code == 201, r.text
        t0 = time.perf_counter()
        r = c.post("/v1/rounds", headers={"Authorization": f"Bearer {admin}"})
        wall = time.perf_counter() - t0
        doc = r.json()
    return {"waiting": n, "wall_s": wall, "server_s": doc["seconds"]["total"], "candidates": doc["candidates"],
            "bids": doc["bids"], "assigned": len(doc["assignments"]), "method": doc["method"], "status": doc["status"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests")
    ap.add_argument("--synchronous", default="full", choices=["full", "normal"])
    ap.add_argument("--mechanism", default=None,
                    help="clear rounds with the deprecated auction and this mechanism (default: the credit engine)")
    args = ap.parse_args()
    market = {} if args.mechanism is None else {"engine": "auction", "mechanism": args.mechanism}
    n_solve, n_tasks, clients = (100, 500, 50) if args.quick else (500, 2000, 50)
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for part in ("solve", "submit", "round"):
            db = Path(tmp) / f"{part}.db"
            store = Store(db)
            admin = add_token(store, "ops", admin=True)
            tokens = [add_token(store, f"tenant{i}") for i in range(10)]
            store.close()
            srv = Server(db, "--synchronous", args.synchronous, "--gpus", "node0:8x80,node1:8x80",
                         "--market", json.dumps(market))
            try:
                if part == "solve":
                    results[part] = bench_solve(srv.url, tokens[0], n_solve)
                elif part == "submit":
                    cpu0, mine0 = srv.cpu_seconds(), time.process_time()
                    results[part] = asyncio.run(_submit_all(srv.url, tokens, n_tasks, clients, admin, 0.25))
                    results[part]["server_cpu_s"] = srv.cpu_seconds() - cpu0
                    results[part]["client_cpu_s"] = time.process_time() - mine0
                else:
                    results[part] = bench_round(srv.url, tokens, admin, 200)
            finally:
                srv.stop()
    s, m, r = results["solve"], results["submit"], results["round"]
    print(f"# bench_service ({os.cpu_count()} CPUs, synchronous={args.synchronous}, mechanism={args.mechanism or 'credit engine'})\n")
    print("| measure | value | goal |\n|---|---|---|")
    print(f"| POST /v1/solve 2 bids: latency p50 | {s['latency_p50_ms']:.2f} ms | |")
    print(f"| solve time reported (p50) / in process (p50) | {s['solve_reported_p50_ms']:.2f} / {s['solve_in_process_p50_ms']:.2f} ms | |")
    print(f"| overhead p50 (latency - reported solve) | {s['overhead_p50_ms']:.2f} ms | <= 10 ms |")
    print(f"| overhead p50 (latency p50 - in-process solve p50) | {s['overhead_vs_in_process_p50_ms']:.2f} ms | <= 10 ms |")
    print(f"| {m['clients']} clients, {m['tasks']} GenTasks: submissions/s | {m['submissions_per_s']:.0f} | >= 500 |")
    print(f"| submission latency p50 / p99 | {m['p50_ms']:.1f} / {m['p99_ms']:.1f} ms | |")
    print(f"| server CPU per submission (rounds included) | {1e3 * m['server_cpu_s'] / m['tasks']:.2f} ms "
          f"(= {m['tasks'] / m['server_cpu_s']:.0f} submissions per CPU-second) | |")
    print(f"| client CPU per submission (httpx, same machine) | {1e3 * m['client_cpu_s'] / m['tasks']:.2f} ms | |")
    print(f"| load average (1 min) at the end | {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs | |")
    print(f"| rounds cleared meanwhile (p50 s) | {m['rounds_during']} ({m['round_p50_s'] or 0:.3f}) | |")
    print(f"| acknowledged and lost / duplicated | {m['lost']} / {m['duplicated']} (stored {m['stored']}, statuses {m['statuses']}) | 0 / 0 |")
    print(f"| round over {r['waiting']} waiting tasks | {r['wall_s']:.3f} s wall, {r['server_s']:.3f} s server "
          f"({r['candidates']} bidding, {r['bids']} bids, {r['assigned']} assigned, {r['method']}, {r['status']}) | <= 1 s |")


if __name__ == "__main__":
    main()
