"""A real Prometheus server scrapes a real ``gensolver serve``; the values read back through
Prometheus's HTTP API (``/api/v1/query``) are the ones the service's API reports."""

from __future__ import annotations

import shutil
import subprocess
import time

import httpx
import pytest

from tests.patience import patience

from .conftest import free_port, gentask, token_direct

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="the prometheus binary is not installed "
                                                           "(Debian package 'prometheus'; .ci/run installs it)")


@pytest.fixture
def prometheus(tmp_path):
    """``start(target)`` runs Prometheus scraping ``target`` every 0.5 s; returns its base URL."""
    procs = []

    def start(target: str, token: str | None = None) -> str:
        port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 500ms\n  evaluation_interval: 500ms\n"
            "scrape_configs:\n  - job_name: gensolver\n    scrape_interval: 500ms\n"
            + (f"    authorization: {{credentials: '{token}'}}\n" if token else "")
            + f"    static_configs:\n      - targets: ['{target}']\n")
        log = open(tmp_path / "prometheus.log", "w")
        proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
        procs.append((proc, log))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + patience(30)
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/-/ready", timeout=1).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"prometheus did not start: {(tmp_path / 'prometheus.log').read_text()[-2000:]}")

    yield start
    for proc, log in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def query(prom: str, expr: str, want: float, *, timeout: float = 20.0) -> float:
    """Poll ``expr`` until Prometheus reports ``want`` (scrapes are asynchronous); the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        body = httpx.get(prom + "/api/v1/query", params={"query": expr}, timeout=5).json()
        assert body["status"] == "success", body
        result = body["data"]["result"]
        if result:
            value = float(result[0]["value"][1])
            if value == pytest.approx(want, rel=1e-9, abs=1e-9):
                return value
        time.sleep(0.25)
    raise AssertionError(f"{expr}: Prometheus has {value}, the service reports {want}")


def test_prometheus_reads_the_service_metrics(tmp_path, server_factory, prometheus):
    db = tmp_path / "market.db"
    ops = token_direct(db, 'ops', admin=True)
    H = {"Authorization": f"Bearer {ops}"}
    A = {"Authorization": f"Bearer {token_direct(db, 'alice')}"}
    B = {"Authorization": f"Bearer {token_direct(db, 'bob')}"}
    srv = server_factory("--gpus", "n0:1x80", db=db)
    prom = prometheus(f"127.0.0.1:{srv.port}", ops)  # the operator's token: per-tenant series too
    with httpx.Client(base_url=srv.url, timeout=10) as c:
        for k in range(3):
            c.post("/v1/tasks", json=gentask(f"a{k}", preferred="30Gi", value=30 + k), headers=A)
            c.post("/v1/tasks", json=gentask(f"b{k}", preferred="60Gi", value=50 + k), headers=B)
        r1 = c.post("/v1/rounds", headers=H).json()
        r2 = c.post("/v1/rounds", headers=H).json()
        running = [t for t in c.get("/v1/tasks?state=running", headers=H).json()["tasks"]]
        c.post("/v1/feedback", json={"task": running[0]["id"], "memory_bytes": 12 * 2 ** 30},
               headers=H)
        waiting = len(c.get("/v1/tasks?state=waiting", headers=H).json()["tasks"])
        alice = c.get("/v1/tenants/alice", headers=A).json()
        bob = c.get("/v1/tenants/bob", headers=B).json()
    assert r1["assignments"]  # something was allocated and charged
    query(prom, "gensolver_rounds_total", 2)
    query(prom, "gensolver_round_clear_seconds_count", 2)
    query(prom, "gensolver_round_bids", r2["bids"])
    query(prom, "gensolver_round_welfare", r2["welfare"])
    query(prom, "gensolver_round_tasks", r2["candidates"])
    query(prom, 'gensolver_tasks{state="waiting"}', waiting)
    query(prom, 'gensolver_tenant_credit_balance_credits{tenant="alice"}', alice["balance"])
    query(prom, 'gensolver_tenant_credit_balance_credits{tenant="bob"}', bob["balance"])
    assert alice["spent"] + bob["spent"] > 0
    query(prom, 'gensolver_payments_credits_total{tenant="alice"}', alice["spent"])
    query(prom, 'gensolver_payments_credits_total{tenant="bob"}', bob["spent"])
    query(prom, 'sum(gensolver_executor_memory_bytes)', 12 * 2 ** 30)
    query(prom, 'gensolver_tasks_submitted_total{tenant="alice"}', 3)
    query(prom, 'sum(gensolver_http_requests_total{route="/v1/rounds",method="POST",status="201"})', 2)
    # no metric carries a task id as a label
    series = httpx.get(prom + "/api/v1/series", params={"match[]": '{job="gensolver"}'}, timeout=5).json()["data"]
    ids = {f"a{k}" for k in range(3)} | {f"b{k}" for k in range(3)}
    assert not [s for s in series if ids & set(s.values())]
