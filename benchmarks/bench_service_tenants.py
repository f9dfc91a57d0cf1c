"""Operator views with many tenants: a page of ``GET /v1/tenants`` and ``/metrics``.

Issue 30's goals: with 10,000 tenants a page of ``/v1/tenants`` in at most 50 ms at p99, and
``/metrics`` without a token under 100 KB with no per-tenant balance. Each tenant has a token,
an account (as after a round) and two tasks; the pages are read through a real
``gensolver serve`` on 127.0.0.1 with one keep-alive connection, walking every page once and
then the first page repeatedly.

Usage::

    .venv/bin/python benchmarks/bench_service_tenants.py                  # 10,000 tenants
    .venv/bin/python benchmarks/bench_service_tenants.py --tenants 2000   # quicker

Prints one Markdown table (report ``uptime`` beside it); exit status 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from gensolver.service.auth import add_token
from gensolver.service.storage import Store


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))]


def populate(db: Path, n: int) -> str:
    store = Store(db, synchronous="normal")
    ops = add_token(store, "ops", admin=True)
    now = time.time()
    with store.write() as conn:
        conn.executemany("INSERT INTO tokens(id, tenant, admin, salt, digest, created) VALUES(?,?,0,x'00',x'00',?)",
                         [(f"{k:012x}", f"tenant-{k:05d}", now) for k in range(n)])
        conn.executemany("INSERT INTO tenants(tenant, balance, weight) VALUES(?,?,1.0)",
                         [(f"tenant-{k:05d}", 1000.0 - k % 100) for k in range(n)])
        rows = []
        for k in range(n):
            for j in range(2):
                t, name = f"tenant-{k:05d}", f"job-{j}"
                rows.append((f"{t}/{name}", t, name, "waiting" if j else "done",
                             json.dumps({"id": f"{t}/{name}", "tenant": t}), now, 2 * k + j + 1))
        conn.executemany("INSERT INTO tasks(id, tenant, name, state, task, source, submitted, seq, remaining, "
                         "wait_since) VALUES(?,?,?,?,?,'{}',?,?,1.0,0)", rows)
    store.close()
    return ops


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tenants", type=int, default=10_000)
    ap.add_argument("--limit", type=int, default=100, help="page size")
    ap.add_argument("--repeat", type=int, default=200, help="reads of the first page")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    db = Path(tempfile.mkdtemp(prefix="gensolver-tenants-bench-")) / "m.db"
    ops = populate(db, args.tenants)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-c", "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))",
                               "serve", "--db", str(db), "--port", str(port), "--rate-limit", "0",
                               "--address-rate-limit", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        h = {"Authorization": f"Bearer {ops}"}
        with httpx.Client(base_url=url, headers=h, timeout=60) as c:
            walk, after, seen = [], "", 0
            while True:
                t0 = time.perf_counter()
                page = c.get("/v1/tenants", params={"limit": args.limit, "after": after}).json()
                walk.append(time.perf_counter() - t0)
                seen += len(page["tenants"])
                if page["next"] is None:
                    break
                after = page["next"]
            first = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                assert c.get("/v1/tenants", params={"limit": args.limit}).status_code == 200
                first.append(time.perf_counter() - t0)
            public = httpx.get(url + "/metrics", timeout=60).content
            full = c.get("/metrics").content
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(db.parent, ignore_errors=True)
    p99 = max(pct(walk, 99), pct(first, 99))
    ok = p99 <= 0.050 and len(public) < 100_000 and b"tenant=" not in public and seen == args.tenants + 1
    print("| tenants | page | pages walked | walk p50 / p99 ms | first page p50 / p99 ms | /metrics public KB "
          "| tenant series public | /metrics operator KB |")
    print("|---:|---:|---:|---|---|---:|---:|---:|")
    print(f"| {args.tenants} | {args.limit} | {len(walk)} | {1e3 * pct(walk, 50):.1f} / {1e3 * pct(walk, 99):.1f} | "
          f"{1e3 * pct(first, 50):.1f} / {1e3 * pct(first, 99):.1f} | {len(public) / 1e3:.1f} | "
          f"{public.count(b'tenant=')} | {len(full) / 1e3:.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "tenants": args.tenants, "limit": args.limit, "pages": len(walk), "seen": seen,
            "walk_p50_ms": 1e3 * pct(walk, 50), "walk_p99_ms": 1e3 * pct(walk, 99),
            "first_p50_ms": 1e3 * pct(first, 50), "first_p99_ms": 1e3 * pct(first, 99), "page_p99_ms": 1e3 * p99,
            "metrics_public_kb": len(public) / 1e3, "metrics_public_tenant_series": public.count(b"tenant="),
            "metrics_operator_kb": len(full) / 1e3, "met": ok}))
    print(f"\ngoals (page p99 <= 50 ms, public /metrics < 100 KB without tenant series): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
