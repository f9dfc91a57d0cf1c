"""A flood of slow and idle connections against a real ``gensolver serve`` on 127.0.0.1.

Issue 30's goal: with 20,000 slow or idle connections from one client, ``/healthz`` and an
authenticated submission still answer within 1 s, the server's peak memory stays under
300 MB, and a 1 MiB header is answered 431.

The attack runs in ``--procs`` worker processes (each under the per-process file limit), all
from one client address (``--attacker-address``, 127.0.0.2 on the loopback): ``--connections``
sockets in all, half sending nothing, half a request head cut short; a socket the server closes
is reopened after ``--reopen`` seconds, so the pressure lasts ``--seconds``. Meanwhile the probe,
another client (127.0.0.1), opens a *new* connection every 0.25 s for a bare TCP handshake, for
``GET /livez``, ``GET /healthz`` and an authenticated ``POST /v1/tasks`` (requests written as
plain bytes, so that the probe's own CPU stays out of its timings), and the server's resident
memory, its CPU and the flood's, and the kernel's listen-queue drops (``ListenOverflows``) are
sampled: a handshake that takes over 1 s is a SYN dropped at a full listen queue and sent again.

Usage::

    .venv/bin/python benchmarks/bench_service_connections.py                      # 20,000 for 20 s
    .venv/bin/python benchmarks/bench_service_connections.py --connections 2000 --seconds 5   # quick

Prints one Markdown table; exit status 1 when a goal is missed. The client runs on the same
machine as the server (its CPU time competes with the server's); report ``uptime`` beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

from gensolver.service.auth import add_token
from gensolver.service.storage import Store


def _raise_nofile(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, need)) if hard != resource.RLIM_INFINITY else max(soft, need)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _attacker(port: int, n: int, seconds: float, reopen: float, opened: mp.Value, live: mp.Value, source: str) -> None:
    """``n`` sockets, half idle, half with a head cut short, each reopened ``reopen`` s after a close."""
    _raise_nofile(n + 256)

    async def slot(k: int, stop: float) -> None:
        while time.monotonic() < stop:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
            except OSError:
                await asyncio.sleep(reopen)
                continue
            with opened.get_lock():
                opened.value += 1
            with live.get_lock():
                live.value += 1
            try:
                if k % 2:
                    writer.write(b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: ")
                await asyncio.wait_for(reader.read(65536), timeout=max(0.01, stop - time.monotonic()))
            except (OSError, asyncio.TimeoutError):
                pass
            finally:
                with live.get_lock():
                    live.value -= 1
                writer.close()
            await asyncio.sleep(reopen)

    async def main() -> None:
        stop = time.monotonic() + seconds
        await asyncio.gather(*(slot(k, stop) for k in range(n)))

    asyncio.run(main())


def _request(port: int, request: bytes, timeout: float = 10.0) -> int:
    """Send one request on a new connection (``Connection: close``); the answer's status."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0


def _probe(url: str, token: str, stop: threading.Event, out: dict[str, list[float]]) -> None:
    """Every 0.25 s: a bare handshake, ``/livez``, ``/healthz`` and a submission, each on a new
    connection. The requests are plain bytes written beforehand, so the probe's own CPU (an HTTP
    client library's set-up is tens of ms on a loaded machine) stays out of the figures."""
    port = int(url.rsplit(":", 1)[1])
    k = 0
    while not stop.is_set():
        for what in ("connect", "livez", "healthz", "submit"):
            if what == "submit":
                body = ('{"apiVersion": "scheduling.gen.io/v1alpha1", "kind": "GenTask", "metadata": '
                        f'{{"name": "probe-{k}"}}, "spec": {{"genResources": {{"gpuMemory": '
                        '{"preferred": "10Gi"}}}}').encode()
                request, want = (b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                 b"Authorization: Bearer " + token.encode() + b"\r\n"
                                 b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
                                 + b"\r\n\r\n" + body), 201
                k += 1
            else:
                request, want = f"GET /{what} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(), 200
            t0 = time.perf_counter()
            try:
                if what == "connect":  # the TCP handshake alone: how long the listen queue kept us out
                    socket.create_connection(("127.0.0.1", port), timeout=10.0).close()
                    ok = True
                else:
                    ok = _request(port, request) == want
            except OSError:
                ok = False
            out[what].append(time.perf_counter() - t0 if ok else float("inf"))
        stop.wait(0.25)


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def _big_header(port: int) -> int:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
    try:
        s.sendall(b"a" * (1 << 20))
    except OSError:
        pass
    data = s.recv(64)
    s.close()
    return int(data.split(b" ", 2)[1]) if data else 0


def listen_overflows() -> int | None:
    """The kernel's count of connections dropped because a listen queue was full (Linux; for
    the whole network namespace, so other servers' drops count too), or ``None``."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return None
    for head, vals in zip(lines[::2], lines[1::2]):
        if head.startswith("TcpExt:"):
            table = dict(zip(head.split()[1:], vals.split()[1:]))
            return int(table["ListenOverflows"]) if "ListenOverflows" in table else None
    return None


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))] if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connections", type=int, default=20_000)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--reopen", type=float, default=1.0, help="seconds before a closed socket is reopened")
    ap.add_argument("--server-args", default="", help="extra `gensolver serve` options")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--attacker-address", default="127.0.0.2",
                    help="the flood's source address (the probes come from 127.0.0.1, another client)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="gensolver-conn-bench-"))
    db = tmp / "m.db"
    store = Store(db)
    token = add_token(store, "alice")
    store.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-c", "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))",
           "serve", "--db", str(db), "--port", str(port), "--rate-limit", "0", *args.server_args.split()]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        proc = psutil.Process(server.pid)
        rss0 = proc.memory_info().rss
        opened, live = mp.Value("q", 0), mp.Value("q", 0)
        per = -(-args.connections // args.procs)
        workers = [mp.Process(target=_attacker, args=(port, per, args.seconds, args.reopen, opened, live, args.attacker_address))
                   for _ in range(args.procs)]
        for w in workers:
            w.start()
        lat: dict[str, list[float]] = {"connect": [], "livez": [], "healthz": [], "submit": []}
        drops0 = listen_overflows()
        stop = threading.Event()
        probe = threading.Thread(target=_probe, args=(url, token, stop, lat))
        time.sleep(min(3.0, args.seconds / 4))  # let the flood build up first
        probe.start()
        peak_rss, peak_server_conns = rss0, 0
        cpu0, wall0 = _cpu(proc), time.monotonic()
        flood_cpu0 = sum(_cpu(psutil.Process(w.pid)) for w in workers)
        t_end = time.monotonic() + args.seconds - min(3.0, args.seconds / 4)
        while time.monotonic() < t_end:
            peak_rss = max(peak_rss, proc.memory_info().rss)
            peak_server_conns = max(peak_server_conns, proc.num_fds())
            time.sleep(0.2)
        drops1 = listen_overflows()
        server_cpu = (_cpu(proc) - cpu0) / (time.monotonic() - wall0)
        flood_cpu = (sum(_cpu(psutil.Process(w.pid)) for w in workers) - flood_cpu0) / (time.monotonic() - wall0)
        big = _big_header(port)
        stop.set()
        probe.join()
        for w in workers:
            w.join(timeout=args.seconds + 60)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    worst = {k: max(v) if v else float("inf") for k, v in lat.items()}
    ok = (worst["livez"] <= 1.0 and worst["healthz"] <= 1.0 and worst["submit"] <= 1.0 and peak_rss < 300e6
          and big == 431)
    drops = "n/a" if drops0 is None or drops1 is None else str(drops1 - drops0)
    print("| connections asked | opened (with reopens) | server fds at peak | listen-queue drops | "
          "TCP connect p50 / max s | /livez p50 / max s | /healthz p50 / max s | submission p50 / max s | "
          "probes | server RSS start / peak MB | 1 MiB header | server / flood CPU (cores) |")
    print("|---:|---:|---:|---:|---|---|---|---|---:|---|---:|---|")
    cells = " | ".join(f"{pct(lat[k], 50):.3f} / {worst[k]:.3f}" for k in ("connect", "livez", "healthz", "submit"))
    print(f"| {args.connections} | {opened.value} | {peak_server_conns} | {drops} | {cells} | "
          f"{len(lat['healthz'])} | {rss0 / 1e6:.0f} / {peak_rss / 1e6:.0f} | {big} | {server_cpu:.2f} / {flood_cpu:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "connections": args.connections, "seconds": args.seconds, "opened": opened.value,
            "listen_drops": None if drops == "n/a" else int(drops), "probes": len(lat["healthz"]),
            **{f"{k}_p50_s": pct(lat[k], 50) for k in lat}, **{f"{k}_max_s": worst[k] for k in lat},
            "rss_start_mb": rss0 / 1e6, "rss_peak_mb": peak_rss / 1e6, "big_header_status": big,
            "server_cores": server_cpu, "flood_cores": flood_cpu, "met": ok}))
    print(f"\ngoals (each /livez, /healthz and submission probe <= 1 s, peak RSS < 300 MB, 431): "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
