"""Connection hygiene of a real ``gensolver serve`` (uvicorn on 127.0.0.1): slow heads, slow
bodies and idle connections are closed, huge heads refused with 431, and a flood of waiting
connections cannot keep a prompt client out. Counts are bounded (a few hundred sockets); the
20,000-connection figure is measured by ``benchmarks/bench_service_connections.py``."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import psutil
import pytest

from gensolver.service import Settings

from .conftest import gentask, token_direct


def raw(srv, data: bytes = b"", *, timeout: float = 60.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    if data:
        s.sendall(data)
    return s


def read_answer(s: socket.socket) -> tuple[int | None, bytes]:
    """The status and whole answer the server sends before closing (None: closed without one)."""
    chunks = []
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    s.close()
    data = b"".join(chunks)
    if not data:
        return None, data
    return int(data.split(b" ", 2)[1]), data


def server_connections(srv) -> int:
    """Established TCP connections the server process holds on its port."""
    conns = psutil.Process(srv.proc.pid).net_connections(kind="tcp")
    return sum(1 for c in conns if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == srv.port)


def test_huge_heads_are_431_and_the_server_stays_up(server_factory):
    srv = server_factory("--max-header-bytes", "8192", "--max-headers", "20")
    # a 1 MiB header: refused once the limit is passed, the answer read after the whole send
    s = raw(srv, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
    try:
        s.sendall(b"a" * (1 << 20))
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, body = read_answer(s)
    assert status == 431, body[:300]
    assert b"application/problem+json" in body and b"--max-header-bytes" in body
    # too many header fields, each small
    many = b"".join(b"X-H%d: v\r\n" % k for k in range(30))
    status, body = read_answer(raw(srv, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"))
    assert status == 431 and b"--max-headers" in body
    # a long request line
    status, body = read_answer(raw(srv, b"GET /healthz?" + b"q" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert status == 431
    # a head within the limits is served, on the same server
    status, body = read_answer(raw(srv, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4000
                                   + b"\r\nConnection: close\r\n\r\n"))
    assert status == 200, body[:300]


def test_slow_heads_slow_bodies_and_idle_connections_are_closed(tmp_path, server_factory):
    db = tmp_path / "market.db"
    alice = token_direct(db, "alice")
    srv = server_factory("--header-timeout", "2", "--body-timeout", "2", "--keep-alive-timeout", "2", db=db)
    # a head trickled a byte at a time, faster than the deadline: the deadline is for the whole head
    s = raw(srv, b"GET /healthz HTTP/1.1\r\n")
    s.settimeout(0.2)
    t0 = time.monotonic()
    got = b""
    while not got and time.monotonic() - t0 < 60:
        try:
            s.sendall(b"X")
            got = s.recv(65536) or b"<closed>"
        except TimeoutError:
            continue
        except OSError:
            break
    s.settimeout(60)
    rest = read_answer(s)[1]
    assert (got + rest).startswith(b"HTTP/1.1 408"), got + rest
    assert b"--header-timeout" in got + rest
    # a body announced but never sent whole
    head = (f"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
            "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n").encode()
    status, body = read_answer(raw(srv, head + b'{"apiVersion": '))
    assert status == 408 and b"--body-timeout" in body
    # a connection that never sends a byte is closed quietly
    assert read_answer(raw(srv)) == (None, b"")
    # an idle keep-alive connection is closed after its answer
    s = raw(srv, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    status, data = read_answer(s)  # returns only once the server closed the connection
    assert status == 200 and data.count(b"HTTP/1.1 ") == 1
    # and nothing was stored by the cut-off submission
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        assert c.get("/v1/tasks", headers={"Authorization": f"Bearer {alice}"}).json()["tasks"] == []


def test_a_flood_of_waiting_connections_cannot_keep_prompt_clients_out(tmp_path, server_factory):
    db = tmp_path / "market.db"
    alice = token_direct(db, "alice")
    cap = 40
    srv = server_factory("--max-connections", str(cap), "--header-timeout", "300", "--rate-limit", "0", db=db)
    idle = [raw(srv, timeout=120) for _ in range(150)]
    slow = [raw(srv, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", timeout=120) for _ in range(150)]
    try:
        h = {"Authorization": f"Bearer {alice}"}
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/healthz").status_code == 200
            r = c.post("/v1/tasks", json=gentask("prompt"), headers=h)
            assert r.status_code == 201, r.text
        # the server holds at most its cap, whatever was opened
        deadline = time.monotonic() + 60
        while server_connections(srv) > cap and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server_connections(srv) <= cap
        # the evicted slow heads were told why (503), the idle ones were closed quietly
        answers = [read_answer(s) for s in slow[:100]]
        assert sum(1 for st, _ in answers if st == 503) >= 100 - cap
        assert all(st in (None, 503) for st, _ in answers)
        assert sum(1 for st, _ in (read_answer(s) for s in idle[:100]) if st is None) == 100
    finally:
        for s in idle + slow:
            s.close()


def test_a_route_over_its_time_is_503():
    from gensolver.service.app import Guard
    from gensolver.service.auth import RateLimiter
    from gensolver.service.metrics import Metrics

    never = asyncio.Event()

    async def stuck(scope, receive, send):
        await never.wait()

    guard = Guard(stuck, service=None, limiter=RateLimiter(0, 1), metrics=Metrics(), max_body=100,
                  request_timeout=0.2)

    async def call():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=guard), base_url="http://t") as c:
            return await c.get("/slow")

    r = asyncio.run(call())
    assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json"
    assert "--request-timeout" in r.json()["detail"] and r.headers["retry-after"] == "1"


@pytest.mark.parametrize("field, value", [("header_timeout", 0), ("body_timeout", -1), ("max_header_bytes", 100),
                                          ("max_headers", 0), ("max_connections", 1.5), ("request_timeout", 5),
                                          ("max_connections_per_address", -1)])
def test_bad_limits_are_refused_naming_the_setting(field, value):
    with pytest.raises(ValueError, match=field):
        Settings(**{field: value})


def test_one_address_beyond_its_cap_is_closed_at_once_and_others_are_served(tmp_path, server_factory):
    """The flood comes from 127.0.0.2; the prompt client from 127.0.0.1 (both loopback). Deadlines
    are far away (300 s), so a connection closed here was closed by the per-address cap."""
    db = tmp_path / "market.db"
    alice = token_direct(db, "alice")
    cap = 5
    srv = server_factory("--max-connections-per-address", str(cap), "--header-timeout", "300",
                         "--rate-limit", "0", db=db)

    def from_flood(data: bytes = b"") -> socket.socket:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=60, source_address=("127.0.0.2", 0))
        if data:
            s.sendall(data)
        return s

    def held_by(address: str) -> int:
        conns = psutil.Process(srv.proc.pid).net_connections(kind="tcp")
        return sum(1 for c in conns if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == srv.port
                   and c.raddr and c.raddr.ip == address)

    held = [from_flood() for _ in range(cap)]
    deadline = time.monotonic() + 60
    while held_by("127.0.0.2") < cap and time.monotonic() < deadline:
        time.sleep(0.05)
    assert held_by("127.0.0.2") == cap
    try:
        # beyond the cap: closed without an answer, idle or with a request head begun
        assert read_answer(from_flood()) == (None, b"")
        assert read_answer(from_flood(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")) == (None, b"")
        assert held_by("127.0.0.2") == cap
        # another address is served, a submission included
        h = {"Authorization": f"Bearer {alice}"}
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/healthz").status_code == 200
            assert c.post("/v1/tasks", json=gentask("prompt"), headers=h).status_code == 201
        # the connections within the cap were kept: each still answers
        held[0].sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_answer(held[0])[0] == 200
        # a closed one frees its place for the same address
        while held_by("127.0.0.2") >= cap and time.monotonic() < deadline:
            time.sleep(0.05)
        status, _ = read_answer(from_flood(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
        assert status == 200
    finally:
        for s in held:
            s.close()


def test_no_cap_per_address_when_it_is_zero(server_factory):
    srv = server_factory("--max-connections-per-address", "0", "--header-timeout", "300")
    many = [socket.create_connection(("127.0.0.1", srv.port), timeout=60) for _ in range(20)]
    try:
        many[-1].sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_answer(many[-1])[0] == 200
    finally:
        for s in many:
            s.close()


def test_an_upgrade_request_is_plain_http_and_gives_its_place_back(server_factory):
    srv = server_factory("--max-connections-per-address", "1", "--header-timeout", "300")
    upgrade = (b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
               b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    for _ in range(3):  # one place for the address: each must be given back when its connection closes
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=60, source_address=("127.0.0.2", 0))
        s.sendall(upgrade)
        head = s.recv(65536)
        assert head.startswith(b"HTTP/1.1 200"), head[:200]
        s.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the server has seen the close once it holds nothing from .2
            conns = psutil.Process(srv.proc.pid).net_connections(kind="tcp")
            if not any(c.raddr and c.raddr.ip == "127.0.0.2" and c.status == psutil.CONN_ESTABLISHED for c in conns):
                break
            time.sleep(0.05)
