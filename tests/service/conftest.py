"""Fixtures of the service tests: in-process apps, tokens, and a real ``gensolver serve``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

fastapi = pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
httpx = pytest.importorskip("httpx", reason="the service extra (httpx) is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from gensolver import GensolverDeprecationWarning  # noqa: E402
from gensolver.service import Settings, create_app  # noqa: E402
from gensolver.service.auth import add_token  # noqa: E402
from tests.patience import patience  # noqa: E402


def gentask(name: str, *, preferred: str = "20Gi", minimum: str | None = None, duration: str = "10m",
            value: float | None = None, tenant: str | None = None, preemptible: bool = True, gpus: int = 1,
            urgency: float = 0.5) -> dict[str, Any]:
    """A GenTask document (JSON form)."""
    mem: dict[str, Any] = {"preferred": preferred, "urgencyFactor": urgency}
    if minimum is not None:
        mem["minRequired"] = minimum
    gen: dict[str, Any] = {"gpuMemory": mem, "computeTime": {"duration": duration, "preemptible": preemptible}}
    if value is not None:
        gen["value"] = value
    meta: dict[str, Any] = {"name": name}
    if tenant is not None:
        meta["labels"] = {"tenant": tenant}
    doc = {"apiVersion": "scheduling.gen.io/v1alpha1", "kind": "GenTask", "metadata": meta,
           "spec": {"genResources": gen}}
    if gpus > 1:
        doc["spec"]["containers"] = [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]
    return doc


@dataclass
class Api:
    """An in-process app with its client and tokens (``ops`` is the operator)."""

    client: TestClient
    tokens: dict[str, str] = field(default_factory=dict)

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    @property
    def service(self):
        return self.client.app.state.service


def deprecated_engine(market: Any) -> Any:
    """``pytest.warns`` of the deprecated auction engine when ``market`` (a ``--market``
    mapping or its JSON) names it, else a context that expects nothing: the suite makes a
    :class:`~gensolver.GensolverDeprecationWarning` an error, so every service started on the
    auction states the warning it gives."""
    doc = json.loads(market) if isinstance(market, str) else dict(market or {})
    if doc.get("engine") != "auction":
        return contextlib.nullcontext()
    return pytest.warns(GensolverDeprecationWarning, match="market engine 'auction' .* is deprecated")


def make_api(tmp_path: Path, **settings: Any) -> Iterator[Api]:
    """A service app on ``settings`` (a SQLite file in ``tmp_path`` unless ``db`` is given) with
    three tokens (``ops`` an admin, ``alice``, ``bob``), behind a TestClient; the deprecated
    auction engine's warning is expected (:func:`deprecated_engine`)."""
    settings.setdefault("db", tmp_path / "market.db")
    settings.setdefault("step_seconds", 60.0)
    settings.setdefault("market", {})
    with deprecated_engine(settings["market"]):
        app = create_app(Settings(**settings))
    store = app.state.service.store
    tokens = {"ops": add_token(store, "ops", admin=True), "alice": add_token(store, "alice"),
              "bob": add_token(store, "bob")}
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Api(client, tokens)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    yield from make_api(tmp_path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: the gensolver command line, run by this interpreter
GENSOLVER = [sys.executable, "-c", "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"]


def token_cli(db: Path, tenant: str, *, admin: bool = False) -> str:
    out = subprocess.run(GENSOLVER + ["serve", "token", "add", tenant, "--db", str(db)] + (["--admin"] if admin else []),
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


def token_direct(db: Path, tenant: str, *, admin: bool = False) -> str:
    """A token written straight into the database (what ``token add`` does, without a process)."""
    from gensolver.service.storage import open_store

    store = open_store(str(db))
    try:
        return add_token(store, tenant, admin=admin)
    finally:
        store.close()


@dataclass
class Server:
    """A real ``gensolver serve`` process (uvicorn) on 127.0.0.1."""

    db: Path | str  # a SQLite file or a postgresql:// URL
    port: int
    args: list[str]
    proc: subprocess.Popen | None = None
    log: Path | None = None
    logs: Path | None = None  # where the log goes (by default beside a SQLite file)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Server:
        """Start the process and wait until it answers ``/healthz`` on its own port, at most
        ``timeout`` seconds scaled by the machine's load (:func:`tests.patience.patience`)."""
        self.log = (self.logs or Path(self.db).parent) / f"serve.{self.port}.{int(time.time() * 1000)}.log"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log, "w") as fh:
            self.proc = subprocess.Popen(GENSOLVER + ["serve", "--db", str(self.db), "--port", str(self.port),
                                                      "--log-level", "warning"] + self.args,
                                         stdout=fh, stderr=subprocess.STDOUT, env=env)
        timeout = patience(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gensolver serve exited with {self.proc.returncode}: {self.log.read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200 and self._listening():
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"gensolver serve did not answer within {timeout:g} s: {self.log.read_text()}")

    def _listening(self) -> bool:
        """Whether *this* process holds the port: with tests on two workers, a port found free
        can be taken by another worker's server before ours binds it, and that server would
        answer ``/healthz`` for ours."""
        import psutil

        assert self.proc is not None
        try:
            conns = psutil.Process(self.proc.pid).net_connections(kind="tcp")
        except psutil.Error:
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == self.port for c in conns)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Any]:
    """``make(*args)`` starts a real server on a free port of 127.0.0.1 (stopped at the end)."""
    started: list[Server] = []

    def make(*args: str, db: Path | str | None = None, timeout: float = 60.0) -> Server:
        for attempt in range(3):  # a port found free may be taken before the server binds it
            srv = Server(db or tmp_path / "market.db", free_port(), list(args), logs=tmp_path)
            started.append(srv)
            try:
                return srv.start(timeout)
            except RuntimeError as exc:
                if attempt == 2 or "address already in use" not in str(exc).lower():
                    raise
        raise AssertionError("unreachable")

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A real PostgreSQL server on 127.0.0.1 for this test process (skipped, saying why, when
    PostgreSQL is not installed)."""
    from .pgserver import PgServer, why_not

    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    server = PgServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """The URL of a fresh, empty database on :func:`pg_server`."""
    return str(pg_server.new_database())


@pytest.fixture
def pg_api(tmp_path: Path, pg_url: str) -> Iterator[Api]:
    """:func:`api` with its state on PostgreSQL."""
    yield from make_api(tmp_path, db=pg_url)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A store of each backend, behind the one interface."""
    from gensolver.service.storage import open_store

    db = str(tmp_path / "market.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = open_store(db)
    try:
        yield store
    finally:
        store.close()
