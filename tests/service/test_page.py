"""The live page in headless Chromium against a real server: what is drawn is what the API says."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from html.parser import HTMLParser

import httpx
import pytest

from .conftest import gentask, token_direct

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), shutil.which("google-chrome"))
                 if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (Debian packages 'chromium' and "
                                                         "'chromium-driver'; .ci/run installs them)")


class Page(HTMLParser):
    """The chart's rectangles, each table's rows, and the status line of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.rects: list[dict[str, str]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.status: dict[str, str] = {}
        self._table: str | None = None
        self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "rect" and "alloc" in (a.get("class") or ""):
            self.rects.append(a)
        elif tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self._table:
            self.tables[self._table].append([])
        elif tag == "td" and self._in_body:
            self._cell = []
        elif tag == "div" and a.get("id") == "status":
            self.status = a

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def dump(url: str, tmp_path) -> Page:
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=4000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    page = Page()
    page.feed(out.stdout)
    return page


def test_live_page_draws_rounds_allocations_credits_and_queue(tmp_path, server_factory):
    db = tmp_path / "market.db"
    ops = token_direct(db, "ops", admin=True)
    alice = token_direct(db, "alice")
    H, A = {"Authorization": f"Bearer {ops}"}, {"Authorization": f"Bearer {alice}"}
    srv = server_factory("--gpus", "n0:2x80", db=db)
    with httpx.Client(base_url=srv.url, timeout=10) as c:
        for k in range(4):
            c.post("/v1/tasks", json=gentask(f"a{k}", preferred="30Gi", duration="8m", value=30 + k), headers=A)
        c.post("/v1/tasks", json=gentask("b0", preferred="70Gi", duration="8m", value=80, tenant="bob"), headers=H)
        c.post("/v1/rounds", headers=H)
        c.post("/v1/rounds", headers=H)
        c.post("/v1/tasks", json=gentask("late", preferred="75Gi", duration="8m", value=1), headers=A)
        rounds = c.get("/v1/rounds?limit=12", headers=H).json()["rounds"]
        tenants = c.get("/v1/tenants", headers=H).json()["tenants"]
        queue = c.get("/v1/tasks?state=waiting", headers=H).json()["tasks"]
    page = dump(f"{srv.url}/?refresh=500#token={ops}", tmp_path)
    # polled and redrawn in place several times (no reload: the counter lives in the page)
    assert int(page.status.get("data-updates", "0")) >= 2, page.status
    drawn = sorted((r["data-round"], r["data-task"], r["data-gpu"], float(r["data-start"]), float(r["data-end"]))
                   for r in page.rects)
    expected = sorted((str(r["round"]), a["task"], g, a["start"], a["start"] + min(a["length"], 5))
                      for r in rounds for a in r["assignments"] for g in a["gpus"])
    assert drawn == expected and len(drawn) >= 4
    assert [row[0] for row in page.tables["rounds"]] == [str(r["round"]) for r in reversed(rounds)]
    assert [row[3] for row in page.tables["rounds"]] == [f"{r['welfare']:.2f}" for r in reversed(rounds)]
    credits = {row[0]: row[1] for row in page.tables["credits"]}
    assert credits == {t["tenant"]: f"{t['balance']:.2f}" for t in tenants}
    assert [row[0] for row in page.tables["queue"]] == [t["id"] for t in queue] and "late" in credits.keys() | {
        t["id"] for t in queue}
    # a tenant's page shows only its own allocations and account
    mine = dump(f"{srv.url}/?refresh=500#token={alice}", tmp_path)
    assert mine.rects and {r["data-tenant"] for r in mine.rects} == {"alice"}
    assert [row[0] for row in mine.tables["credits"]] == ["alice"]


class Browser:
    """Headless Chromium driven over the DevTools protocol (one page; ``value(js)`` evaluates)."""

    def __init__(self, url: str, tmp_path) -> None:
        import json
        import re
        from urllib.parse import quote

        from websockets.sync.client import connect

        self.proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                      f"--user-data-dir={tmp_path / 'chromium-cdp'}", "--remote-debugging-address=127.0.0.1",
                                      "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        found: dict[str, int] = {}
        said = threading.Event()

        def watch() -> None:  # reads Chromium's log to its end (the pipe never fills)
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
                if m and not said.is_set():
                    found["port"] = int(m.group(1))
                    said.set()
            said.set()  # it exited

        threading.Thread(target=watch, daemon=True).start()
        if not said.wait(120) or "port" not in found:
            self.proc.kill()
            raise AssertionError("Chromium did not open its DevTools port within 120 s")
        port = found["port"]
        target = httpx.put(f"http://127.0.0.1:{port}/json/new?{quote(url, safe='')}", timeout=30).json()
        self.ws = connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=30).__enter__()
        self._id = 0
        self._json = json

    def value(self, expression: str):
        self._id += 1
        self.ws.send(self._json.dumps({"id": self._id, "method": "Runtime.evaluate",
                                       "params": {"expression": expression, "returnByValue": True}}))
        while True:
            msg = self._json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self._id:
                return msg["result"]["result"].get("value")

    def wait(self, what: str, expression: str, timeout: float = 120.0):
        """Evaluate ``expression`` until it is truthy (a deadline decides, not a sleep)."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.value(expression)
            if got:
                return got
            assert time.monotonic() < deadline, f"the page: {what} not within {timeout:g} s"
            time.sleep(0.1)

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait(timeout=30)


STATUS = "document.getElementById('status').dataset"
ROUNDS = "[...document.querySelectorAll('#rounds tbody tr')].map(r => r.cells[0].textContent)"


def _answers_304(client: httpx.Client, ops: dict) -> float:
    """304 answers the server counted on the rounds view (read from /metrics, not from the page)."""
    total = 0.0
    for line in client.get("/metrics", headers=ops).text.splitlines():
        if line.startswith("gensolver_http_requests_total{") and 'status="304"' in line and "/v1/rounds" in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_live_page_polls_with_etags_and_redraws_only_on_change(tmp_path, server_factory):
    db = tmp_path / "market.db"
    ops = token_direct(db, "ops", admin=True)
    alice = token_direct(db, "alice")
    H, A = {"Authorization": f"Bearer {ops}"}, {"Authorization": f"Bearer {alice}"}
    srv = server_factory("--gpus", "n0:2x80", db=db)
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        for k in range(3):
            c.post("/v1/tasks", json=gentask(f"a{k}", preferred="30Gi", duration="8m", value=30 + k), headers=A)
        assert c.post("/v1/rounds", headers=H).status_code == 201
        browser = Browser(f"{srv.url}/?refresh=200#token={ops}", tmp_path)
        try:
            # unchanged views: polled again and again, answered 304, and not redrawn
            browser.wait("three polls answered 304", f"Number({STATUS}.notModified || 0) >= 12")
            status = browser.value(f"({{...{STATUS}}})")
            assert int(status["redraws"]) < int(status["updates"]), status
            assert _answers_304(c, H) >= 3  # the server's own count, independent of the page
            assert browser.value(ROUNDS) == ["1"]
            # a change: the next poll gets a 200 with a new tag, and the page shows it
            before = int(status["redraws"])
            assert c.post("/v1/rounds", headers=H).status_code == 201
            browser.wait("the new round drawn", f"JSON.stringify({ROUNDS}) === '[\"2\",\"1\"]'")
            assert int(browser.value(f"{STATUS}.redraws")) > before
            rounds = c.get("/v1/rounds?limit=12", headers=H).json()["rounds"]
            drawn = browser.value("[...document.querySelectorAll('rect.alloc')].map(r => r.dataset.round + ' ' + "
                                  "r.dataset.task + ' ' + r.dataset.gpu).sort()")
            assert drawn == sorted(f"{r['round']} {a['task']} {g}" for r in rounds for a in r["assignments"]
                                   for g in a["gpus"])
        finally:
            browser.close()
