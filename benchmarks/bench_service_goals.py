"""Every measured goal of the service (issue 30) in one run, as one table.

Runs, one after the other, each in its own process group with a time limit:

1. ``bench_service_connections.py``: 20,000 slow or idle connections from one client (source
   address 127.0.0.2) for ``--flood-seconds``; meanwhile new connections from 127.0.0.1 time a
   bare handshake, ``/livez``, ``/healthz`` and an authenticated submission; the server's peak
   memory; a 1 MiB header.
2. ``bench_service_tenants.py``: 10,000 tenants; a page of ``GET /v1/tenants`` (p99 over a walk
   of every page and 200 reads of the first) and the size of ``/metrics`` without a token.
3. ``bench_service_store.py``: submissions from 50 clients (hand-written HTTP/1.1 on one
   keep-alive connection each, built and connected before the timed window) on SQLite
   (``--synchronous full``), on PostgreSQL (one replica) and, for information, on two replicas
   sharing one PostgreSQL (a throw-away server started and stopped by the benchmark).

Every part starts and stops its own servers; a part past its limit is interrupted (SIGINT, so
its clean-up runs: servers terminated, PostgreSQL stopped and its folder removed), then killed
with its whole process group. The load average and the number of CPUs are printed beside each
part: the goals are stated for 2 quiet cores, and the clients run on the same machine.

Usage (from the repository root)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_service_goals.py            # about 3 minutes
    PYTHONPATH=. .venv/bin/python benchmarks/bench_service_goals.py --quick    # smaller, a smoke run

Exit status 0 when every goal is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_part(script: str, args: list[str], limit: float, grace: float = 60.0) -> tuple[dict | None, str]:
    """Run ``benchmarks/script`` with ``args`` and ``--json``; its figures (None if it failed) and a note.

    Past ``limit`` seconds its process group gets SIGINT, and ``grace`` seconds later SIGKILL."""
    with tempfile.TemporaryDirectory(prefix="gensolver-goals-") as tmp:
        out = Path(tmp) / "figures.json"
        cmd = [sys.executable, str(HERE / script), *args, "--json", str(out)]
        before = _load()
        t0 = time.monotonic()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=HERE.parent, env=env)
        try:
            log, _ = proc.communicate(timeout=limit)
            note = ""
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)  # its finally blocks stop what it started
            try:
                log, _ = proc.communicate(timeout=grace)
            except subprocess.TimeoutExpired:
                log = ""
            note = f"interrupted after {limit:g} s; "
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # anything of the group still alive
            except ProcessLookupError:
                pass
            proc.wait()
        note += f"{time.monotonic() - t0:.0f} s, load {before} -> {_load()}"
        figures = json.loads(out.read_text()) if out.exists() else None
        if figures is None:
            note += "; no figures. Its output:\n" + "\n".join((log or "").splitlines()[-15:])
        return figures, note


def _s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f} s"


def rows(conn: dict | None, ten: dict | None, store: dict | None) -> list[tuple[str, str, str, bool]]:
    """(goal, bound, measured, met) for every goal; a part without figures is not met."""
    out: list[tuple[str, str, str, bool]] = []
    if conn is None:
        out.append(("20,000 connections from one client", "see the part's note", "no figures", False))
    else:
        n = conn["connections"]
        for key, name in (("livez", "/livez"), ("healthz", "/healthz"), ("submit", "authenticated submission")):
            worst = conn[f"{key}_max_s"]
            out.append((f"{name} under {n:,} connections (new connection each)", "<= 1 s, every probe",
                        f"p50 {_s(conn[f'{key}_p50_s'])}, max {_s(worst)} ({conn['probes']} probes)", worst <= 1.0))
        out.append((f"server peak RSS under {n:,} connections", "< 300 MB",
                    f"{conn['rss_peak_mb']:.0f} MB (start {conn['rss_start_mb']:.0f})", conn["rss_peak_mb"] < 300))
        out.append(("1 MiB header", "431", str(conn["big_header_status"]), conn["big_header_status"] == 431))
    if ten is None:
        out.append(("10,000 tenants", "see the part's note", "no figures", False))
    else:
        out.append((f"page of /v1/tenants ({ten['limit']}) with {ten['tenants']:,} tenants", "p99 <= 50 ms",
                    f"p99 {ten['page_p99_ms']:.1f} ms (walk p50 {ten['walk_p50_ms']:.1f}, first page p50 "
                    f"{ten['first_p50_ms']:.1f})", ten["page_p99_ms"] <= 50 and ten["seen"] == ten["tenants"] + 1))
        out.append(("/metrics without a token", "< 100 KB, no tenant series",
                    f"{ten['metrics_public_kb']:.1f} KB, {ten['metrics_public_tenant_series']} tenant series",
                    ten["metrics_public_kb"] < 100 and ten["metrics_public_tenant_series"] == 0))
    want = {"sqlite": 500, "postgresql": 300}
    backends = (store or {}).get("backends", {})
    for backend, r in backends.items():
        floor = want.get(backend)
        sound = r["lost"] == 0 and r["duplicated"] == 0
        measured = (f"{r['per_s']:.0f}/s, p99 {r['p99_ms']:.0f} ms, {r['tasks']} tasks, lost {r['lost']}, "
                    f"duplicated {r['duplicated']}")
        if floor is None:
            out.append((f"submissions, 50 clients, {backend} (information)", "none", measured, sound))
        else:
            out.append((f"submissions, 50 clients, {backend}", f">= {floor}/s, p99 < 300 ms", measured,
                        r["per_s"] >= floor and r["p99_ms"] < 300 and sound))
    for backend in want:
        if backend not in backends:
            out.append((f"submissions, 50 clients, {backend}", f">= {want[backend]}/s", "no figures", False))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2,000 connections, 1,000 tenants, 500 tasks: a smoke run")
    ap.add_argument("--flood-seconds", type=float, default=20.0)
    ap.add_argument("--tasks", type=int, default=2000, help="GenTasks per storage backend (50 clients)")
    ap.add_argument("--backends", default="sqlite,postgresql,postgresql-2")
    args = ap.parse_args(argv)
    connections, tenants, tasks = (2000, 1000, 500) if args.quick else (20_000, 10_000, args.tasks)
    print(f"# issue 30 goals: {os.cpu_count()} CPUs, load {_load()} at the start\n", flush=True)
    notes = {}
    conn, notes["connections"] = run_part("bench_service_connections.py",
                                          ["--connections", str(connections), "--seconds", str(args.flood_seconds)],
                                          limit=args.flood_seconds + 120)
    ten, notes["tenants"] = run_part("bench_service_tenants.py", ["--tenants", str(tenants)], limit=180)
    store, notes["store"] = run_part("bench_service_store.py", ["--tasks", str(tasks), "--backends", args.backends],
                                     limit=240)
    table = rows(conn, ten, store)
    print("| goal | bound | measured | met |")
    print("|---|---|---|---|")
    for goal, bound, measured, met in table:
        print(f"| {goal} | {bound} | {measured} | {'yes' if met else '**no**'} |")
    print()
    for part, note in notes.items():
        print(f"- {part}: {note}")
    if conn is not None:
        print(f"- connections: {conn['opened']:,} opened with reopens, {conn['listen_drops']} listen-queue drops, "
              f"server / flood CPU {conn['server_cores']:.2f} / {conn['flood_cores']:.2f} cores")
    if store is not None:
        for backend, r in store["backends"].items():
            print(f"- {backend}: CPU per submission: server {r['server_cpu_ms']:.2f} ms, PostgreSQL "
                  f"{r.get('postgres_cpu_ms', float('nan')):.2f} ms, client {r['client_cpu_ms']:.2f} ms")
    met = all(m for *_, m in table)
    print(f"\nevery goal met: {'yes' if met else 'no'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
