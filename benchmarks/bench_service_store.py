"""Submissions to a real ``gensolver serve`` on each storage backend: SQLite and PostgreSQL.

50 concurrent clients (asyncio, one keep-alive connection each, one tenant each), every client
built and connected before the timed window; then each posts its share of GenTasks. The default
client (``--client raw``) writes HTTP/1.1 by hand with its requests encoded beforehand, so its own
CPU (reported) is a small fraction of the server's: with ``--client httpx`` the client took about
4 ms of CPU per request, three times the server's, and on 2 cores it, not the server, bounded the
rate. Reported per backend: submissions/s, p50/p99 latency, and the check that
every acknowledged task is stored exactly once (read back through the API). Backends:

- ``sqlite``: one replica on a SQLite file (``--synchronous full``, the default);
- ``postgresql``: one replica on PostgreSQL;
- ``postgresql-2``: two replicas on one PostgreSQL, the clients split between them.

Goals (issue 30): >= 500/s on SQLite and >= 300/s on PostgreSQL from 50 clients on 2 quiet
cores, p99 under 300 ms. The client runs on the same machine (its CPU competes with the
servers'); the load average is printed beside the figures, and the CPU time per submission of
the service processes, of the PostgreSQL server the benchmark started (its postmaster and
backends; not shown for ``--postgres``) and of the client, which depend less on the load.

Usage::

    .venv/bin/python benchmarks/bench_service_store.py                    # starts its own PostgreSQL
    .venv/bin/python benchmarks/bench_service_store.py --tasks 500        # shorter
    .venv/bin/python benchmarks/bench_service_store.py --postgres postgresql://USER@HOST:PORT/DB

Without ``--postgres`` a throw-away PostgreSQL server is started with the tests' helper
(``tests/service/pgserver.py``: ``initdb`` in a temporary folder, 127.0.0.1; run from the
repository root with ``PYTHONPATH=.``). Durability differs between the backends by default:
that server runs with ``fsync=off`` (a commit waits for no disk), while SQLite runs with
``synchronous=full`` (each group commit is synced). ``--pg-fsync`` starts it as an operator would
run it instead (``fsync=on``, ``synchronous_commit=on``); the table says which was used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from gensolver.service.auth import add_token
from gensolver.service.storage import open_store

CLIENTS = 50


def gentask(name: str, k: int) -> dict:
    return {"apiVersion": "scheduling.gen.io/v1alpha1", "kind": "GenTask", "metadata": {"name": name},
            "spec": {"genResources": {"gpuMemory": {"preferred": f"{8 + k % 40}Gi", "minRequired": f"{4 + k % 20}Gi",
                                                    "urgencyFactor": 0.5},
                                      "computeTime": {"duration": f"{5 + k % 30}m"}, "value": 10.0 + k % 50}}}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))]


class Server:
    """One ``gensolver serve`` process on a free port of 127.0.0.1."""

    def __init__(self, db: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-c", "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))",
               "serve", "--db", db, "--port", str(self.port), "--rate-limit", "0", "--address-rate-limit", "0",
               "--gpus", "node0:8x80,node1:8x80", "--log-level", "warning"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(1200):
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the server process (Linux /proc; PostgreSQL's own not included)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


class RawClient:
    """One keep-alive HTTP/1.1 connection written and read by hand (requests encoded before the
    timed window): a client whose own CPU per request is a small fraction of the server's, so
    the figure measures the server (httpx costs about 4 ms of client CPU per request here)."""

    def __init__(self, url: str, token: str) -> None:
        self.host, port = url.split("//", 1)[1].split(":")
        self.port = int(port)
        self.token = token

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def encode(self, path: str, doc: dict) -> bytes:
        body = json.dumps(doc).encode()
        return (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body

    async def send(self, request: bytes) -> int:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return int(head.split(b" ", 2)[1])

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def submit_raw(urls: list[str], tokens: list[str], n_tasks: int) -> tuple[list[float], dict[int, int], set[str], float]:
    clients = [RawClient(urls[i % len(urls)], tokens[i]) for i in range(CLIENTS)]
    await asyncio.gather(*(c.open() for c in clients))
    share = n_tasks // CLIENTS
    requests = [[clients[i].encode("/v1/tasks", gentask(f"c{i}-{k}", k)) for k in range(share)] for i in range(CLIENTS)]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    acked: set[str] = set()

    async def run(i: int) -> None:
        for k, req in enumerate(requests[i]):
            t0 = time.perf_counter()
            status = await clients[i].send(req)
            latencies.append(time.perf_counter() - t0)
            statuses[status] = statuses.get(status, 0) + 1
            if status == 201:
                acked.add(f"tenant{i}/c{i}-{k}")

    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(run(i) for i in range(CLIENTS)))
    wall, client_cpu = time.perf_counter() - t0, time.process_time() - c0
    for c in clients:
        await c.close()
    return latencies, statuses, acked, wall, client_cpu


async def submit_all(urls: list[str], tokens: list[str], admin: str, n_tasks: int, client: str = "raw") -> dict:
    if client == "raw":
        latencies, statuses, acked, wall, client_cpu = await submit_raw(urls, tokens, n_tasks)
        return await _report(urls, admin, n_tasks, latencies, statuses, acked, wall, client_cpu)
    clients = [httpx.AsyncClient(base_url=urls[i % len(urls)], headers={"Authorization": f"Bearer {tokens[i]}"},
                                 timeout=60) for i in range(CLIENTS)]
    await asyncio.gather(*(c.get("/healthz") for c in clients))  # connected before the timed window
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    acked: set[str] = set()
    share = n_tasks // CLIENTS

    async def run(i: int) -> None:
        for k in range(share):
            name = f"c{i}-{k}"
            t0 = time.perf_counter()
            r = await clients[i].post("/v1/tasks", json=gentask(name, k))
            latencies.append(time.perf_counter() - t0)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            if r.status_code == 201:
                acked.add(f"tenant{i}/{name}")

    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(run(i) for i in range(CLIENTS)))
    wall, client_cpu = time.perf_counter() - t0, time.process_time() - c0
    for c in clients:
        await c.aclose()
    return await _report(urls, admin, n_tasks, latencies, statuses, acked, wall, client_cpu)


async def _report(urls: list[str], admin: str, n_tasks: int, latencies: list[float], statuses: dict[int, int],
                  acked: set[str], wall: float, client_cpu: float) -> dict:
    share = n_tasks // CLIENTS
    stored: list[str] = []
    async with httpx.AsyncClient(base_url=urls[0], headers={"Authorization": f"Bearer {admin}"}, timeout=60) as c:
        after = None
        while True:
            page = (await c.get("/v1/tasks", params={"limit": 1000, **({"after": after} if after else {})})).json()
            stored += [t["key"] for t in page["tasks"]]
            after = page["next"]
            if after is None:
                break
    total = share * CLIENTS
    return {"tasks": total, "seconds": wall, "per_s": total / wall, "client_cpu_ms": 1e3 * client_cpu / total,
            "p50_ms": 1e3 * pct(latencies, 50),
            "p99_ms": 1e3 * pct(latencies, 99), "statuses": statuses, "lost": len(acked - set(stored)),
            "duplicated": len(stored) - len(set(stored))}


def postgres_cpu_seconds(data_dir: Path | None) -> float:
    """User + system CPU seconds of a PostgreSQL server's processes now alive (the postmaster,
    read from ``postmaster.pid`` in ``data_dir``, and its children), or NaN."""
    if data_dir is None:
        return float("nan")
    try:
        main = psutil.Process(int((data_dir / "postmaster.pid").read_text().split()[0]))
        total = 0.0
        for proc in [main, *main.children(recursive=True)]:
            try:
                t = proc.cpu_times()
                total += t.user + t.system
            except psutil.Error:  # a backend that ended meanwhile
                pass
        return total
    except (OSError, ValueError, IndexError, psutil.Error):
        return float("nan")


def bench(db: str, replicas: int, n_tasks: int, client: str = "raw", pg_data: Path | None = None) -> dict:
    store = open_store(db)
    try:
        admin = add_token(store, "ops", admin=True)
        tokens = [add_token(store, f"tenant{i}") for i in range(CLIENTS)]
    finally:
        store.close()
    servers = [Server(db) for _ in range(replicas)]
    try:
        cpu0, pg0 = sum(s.cpu_seconds() for s in servers), postgres_cpu_seconds(pg_data)
        out = asyncio.run(submit_all([s.url for s in servers], tokens, admin, n_tasks, client))
        out["server_cpu_ms"] = 1e3 * (sum(s.cpu_seconds() for s in servers) - cpu0) / out["tasks"]
        out["postgres_cpu_ms"] = 1e3 * (postgres_cpu_seconds(pg_data) - pg0) / out["tasks"]
        return out
    finally:
        for s in servers:
            s.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2000, help="GenTasks in all (split among 50 clients)")
    ap.add_argument("--postgres", default=None, help="a postgresql:// URL of an empty database (default: start one)")
    ap.add_argument("--backends", default="sqlite,postgresql,postgresql-2")
    ap.add_argument("--client", default="raw", choices=["raw", "httpx"],
                    help="raw: hand-written HTTP/1.1 (little client CPU); httpx: one httpx.AsyncClient per client")
    ap.add_argument("--pg-fsync", action="store_true",
                    help="run the started PostgreSQL with fsync=on, synchronous_commit=on (default: fsync=off)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    pg = None
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for backend in args.backends.split(","):
                if backend == "sqlite":
                    db = str(Path(tmp) / "market.db")
                else:
                    if args.postgres is None and pg is None:
                        from tests.service.pgserver import PgServer

                        pg = PgServer(fsync=args.pg_fsync).start()
                    db = args.postgres if args.postgres is not None else pg.new_database()
                pg_data = pg.dir / "data" if pg is not None and backend != "sqlite" else None
                results[backend] = bench(db, 2 if backend.endswith("-2") else 1, args.tasks, args.client, pg_data)
        finally:
            if pg is not None:
                pg.stop()
    print(f"# bench_service_store ({os.cpu_count()} CPUs, {CLIENTS} {args.client} clients, load average "
          f"{os.getloadavg()[0]:.1f} at the end)\n")
    if args.postgres is None and any(b != "sqlite" for b in results):
        print("PostgreSQL (started here): " + ("fsync=on, synchronous_commit=on" if args.pg_fsync else
              "fsync=off (commits wait for no disk; SQLite: synchronous=full); --pg-fsync for fsync=on") + "\n")
    print("| backend | GenTasks | submissions/s | p50 ms | p99 ms | server / PostgreSQL / client CPU ms per submission "
          "| lost / duplicated | statuses | goal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for backend, r in results.items():
        goal = ">= 500/s, p99 < 300 ms" if backend == "sqlite" else ">= 300/s, p99 < 300 ms"
        print(f"| {backend} | {r['tasks']} | {r['per_s']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
              f"{r['server_cpu_ms']:.2f} / {r['postgres_cpu_ms']:.2f} / {r['client_cpu_ms']:.2f} | "
              f"{r['lost']} / {r['duplicated']} | {r['statuses']} | {goal} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"clients": CLIENTS, "client": args.client, "pg_fsync": args.pg_fsync, "backends": {
            b: {**r, "statuses": {str(k): v for k, v in r["statuses"].items()}} for b, r in results.items()}}))


if __name__ == "__main__":
    main()
