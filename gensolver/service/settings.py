"""Settings of one service instance: :class:`Settings` (frozen, validated on construction)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .._deprecation import option_alias
from ..errors import InputError
from ..model.tasks import GpuSpec

__all__ = ["Settings", "parse_gpus", "DEFAULT_GPUS"]

#: the cluster a service manages unless told otherwise: one node with four 80 GiB GPUs
DEFAULT_GPUS = "node0:4x80"

_GPU_GROUP = re.compile(r"^\s*([A-Za-z0-9_.-]+):(\d+)x(\d+(?:\.\d+)?)(?::([A-Za-z0-9_.-]+))?\s*$")


def parse_gpus(spec: str) -> tuple[GpuSpec, ...]:
    """GPUs from ``NODE:COUNTxGIB[:MODEL]`` groups separated by commas.

    ``"node0:4x80,node1:2x40:a100"`` is four 80 GiB GPUs on ``node0`` (``node0-gpu0`` ..
    ``node0-gpu3``) and two 40 GiB A100s on ``node1``; every GPU has compute capacity 1.0.

    Raises
    ------
    ValueError
        A malformed group, a zero count or size, or a node named twice.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"gpus: expected NODE:COUNTxGIB[:MODEL][,...], got {spec!r}")
    out: list[GpuSpec] = []
    nodes: set[str] = set()
    for part in spec.split(","):
        m = _GPU_GROUP.match(part)
        if not m:
            raise InputError(f"gpus: bad group {part!r} (expected NODE:COUNTxGIB[:MODEL], e.g. node0:4x80)")
        node, count, gib, model = m.group(1), int(m.group(2)), float(m.group(3)), m.group(4) or ""
        if count < 1 or count > 1024 or not gib > 0:
            raise InputError(f"gpus: group {part!r} needs 1..1024 GPUs of positive memory")
        if node in nodes:
            raise InputError(f"gpus: node {node!r} named twice")
        nodes.add(node)
        out.extend(GpuSpec(f"{node}-gpu{k}", gib, 1.0, node, model) for k in range(count))
    return tuple(out)


def _positive(name: str, value: Any, *, integer: bool = False, zero: bool = False) -> None:
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        kind = "integer" if integer else "number"
        raise InputError(f"{name}: must be a {'non-negative' if zero else 'positive'} {kind}, got {value!r}")


@dataclass(frozen=True)
class Settings:
    """Everything one service instance needs; :func:`gensolver.service.create_app` takes it.

    Attributes
    ----------
    db : str or Path
        SQLite database file (WAL journal); created if missing. ``":memory:"`` keeps nothing.
        A ``postgresql://USER@HOST:PORT/DATABASE`` URL keeps the state on a PostgreSQL server
        instead, which several replicas of the service may share (:mod:`.storage_pg`).
    gpus : str
        The cluster the market allocates, as :func:`parse_gpus` reads it.
    round_seconds : float
        Seconds between automatic clearings (``0``: only on ``POST /v1/rounds``). A periodic
        round is skipped when no task is waiting or running.
    round_lease_seconds : float
        Seconds the round timer's lease lasts unrenewed (:mod:`gensolver.service.lease`): with
        several replicas, how long the others wait before taking over a killed replica's timer.
        ``0``: three ``round_seconds``. It must exceed ``round_seconds``, or the holder's lease
        would lapse between its own renewals.
    step_seconds : float
        Seconds of one market time step (GenTask durations are rounded up to steps).
    market : Mapping
        :class:`gensolver.market.MarketConfig` fields (``lease``, ``mechanism``, ``method``,
        ``time_limit``, ``budget``, ...); one round advances the clock by ``lease`` steps.
        ``solver`` is the deprecated alias of ``method`` (a
        :class:`~gensolver.GensolverDeprecationWarning`; removed in the next release).
        ``mechanism="lavi-swamy"`` needs ``alpha`` (fixed before any report; refused without it).
    max_body_bytes : int
        Largest request body accepted (413 beyond).
    rate_limit : float
        Requests per second allowed per token, counted once the token is verified; ``0``: no limit.
    rate_burst : int
        Requests a token may make at once above the steady rate (token bucket size).
    address_rate_limit : float
        Requests per second allowed per client address, counted before any token is read (so
        a new made-up token per request is limited too); ``0``: no limit.
    address_rate_burst : int
        Burst of ``address_rate_limit``.
    max_solve_seconds : float
        Default and largest ``time_limit`` of ``POST /v1/solve``: the wall-clock safety bound of
        a solve, counted from the body's arrival to the answer (``503`` beyond it).
    max_solve_work : float
        Default and largest ``work`` of ``POST /v1/solve``: the deterministic budget, in the
        solver layer's work units (about a second each on a 2-core reference machine), of
        method ``auto`` and of mechanisms ``vcg``, ``core`` (with ``auto``) and ``lavi-swamy``; their answer
        then depends on the input only, not on the machine's load.
    synchronous : {"full", "normal"}
        SQLite ``synchronous`` setting: ``full`` fsyncs every commit (survives power loss);
        ``normal`` in WAL mode survives a killed process but may lose the last commits on power
        loss.
    header_timeout : float
        Seconds a client has to send a request's whole head (request line and header fields),
        counted from the connection's opening or the request's first byte; ``408`` beyond.
    body_timeout : float
        Seconds a client has to send a request's whole body once its head arrived; ``408`` beyond.
    keep_alive_timeout : float
        Seconds an idle keep-alive connection is kept open between requests.
    request_timeout : float
        Seconds a route may take to answer (more than ``max_solve_seconds``); ``503`` beyond.
    max_header_bytes : int
        Largest request head (request line and header fields), bytes; ``431`` beyond.
    max_headers : int
        Most header fields in one request; ``431`` beyond.
    max_tasks_per_tenant : int
        Most waiting and running tasks one tenant may hold; a submission beyond is a 403.
    max_solves_per_tenant : int
        Most ``POST /v1/solve`` one tenant may run at once; one more is a 429.
    max_connections : int
        Most open connections; beyond, the one waiting longest on its client is closed (see
        :mod:`gensolver.service.connections`).
    max_connections_per_address : int
        Most open connections from one client address; one more is closed as soon as it is
        accepted, without an answer, before anything is read (``0``: no such cap). Behind a
        proxy or an ingress every client shares the proxy's address: raise it or give ``0``.
    """

    db: str | Path = "gensolver-market.db"
    gpus: str = DEFAULT_GPUS
    round_seconds: float = 0.0
    round_lease_seconds: float = 0.0
    step_seconds: float = 60.0
    market: Mapping[str, Any] = field(default_factory=dict)
    max_body_bytes: int = 1 << 20
    rate_limit: float = 1000.0
    rate_burst: int = 2000
    address_rate_limit: float = 2000.0
    address_rate_burst: int = 4000
    max_solve_seconds: float = 10.0
    max_solve_work: float = 5.0
    synchronous: str = "full"
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive_timeout: float = 5.0
    request_timeout: float = 120.0
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100
    max_connections: int = 4096
    max_connections_per_address: int = 1024
    max_tasks_per_tenant: int = 10_000
    max_solves_per_tenant: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.db, (str, Path)) or not str(self.db):
            raise InputError(f"db: expected a file path, got {self.db!r}")
        parse_gpus(self.gpus)
        _positive("round_seconds", self.round_seconds, zero=True)
        _positive("round_lease_seconds", self.round_lease_seconds, zero=True)
        if 0 < self.round_lease_seconds <= self.round_seconds:
            raise InputError(f"round_lease_seconds: must exceed round_seconds ({self.round_seconds:g}), "
                             f"got {self.round_lease_seconds:g}")
        _positive("step_seconds", self.step_seconds)
        _positive("max_body_bytes", self.max_body_bytes, integer=True)
        _positive("rate_limit", self.rate_limit, zero=True)
        _positive("rate_burst", self.rate_burst, integer=True)
        _positive("address_rate_limit", self.address_rate_limit, zero=True)
        _positive("address_rate_burst", self.address_rate_burst, integer=True)
        _positive("max_solve_seconds", self.max_solve_seconds)
        _positive("max_solve_work", self.max_solve_work)
        for name in ("header_timeout", "body_timeout", "keep_alive_timeout", "request_timeout"):
            _positive(name, getattr(self, name))
        for name in ("max_header_bytes", "max_headers", "max_connections", "max_tasks_per_tenant",
                     "max_solves_per_tenant"):
            _positive(name, getattr(self, name), integer=True)
        _positive("max_connections_per_address", self.max_connections_per_address, integer=True, zero=True)
        if self.max_header_bytes < 1024:
            raise InputError(f"max_header_bytes: at least 1024, got {self.max_header_bytes}")
        if self.request_timeout <= self.max_solve_seconds:
            raise InputError(f"request_timeout: must exceed max_solve_seconds ({self.max_solve_seconds:g}), "
                             f"got {self.request_timeout:g}")
        if self.synchronous not in ("full", "normal"):
            raise InputError(f"synchronous: must be 'full' or 'normal', got {self.synchronous!r}")
        if not isinstance(self.market, Mapping):
            raise InputError(f"market: expected a mapping of MarketConfig fields, got {type(self.market).__name__}")
        object.__setattr__(self, "market", option_alias(dict(self.market), "solver", "method", where="market"))
        self.market_config()  # unknown or bad market options are refused here

    def market_config(self):
        """The :class:`gensolver.market.MarketConfig` of these settings."""
        from ..market import MarketConfig

        unknown = set(self.market) - set(MarketConfig.__dataclass_fields__)
        if unknown:
            raise InputError(f"market: unknown option(s) {sorted(unknown)}; valid: {sorted(MarketConfig.__dataclass_fields__)}")
        config = MarketConfig(**self.market)
        given = sorted(set(self.market) - {"lease", "engine", "credit"})
        if config.engine == "credit" and given:  # options of the deprecated auction, even at their defaults
            raise InputError(f"market.{given[0]}: an option of the deprecated engine 'auction' (give engine: "
                             f"'auction' to use it); the credit engine takes its options in 'credit'")
        if config.mechanism == "lavi-swamy" and config.alpha is None:
            raise InputError("market.alpha: mechanism 'lavi-swamy' needs alpha fixed before the reports (e.g. "
                             "--alpha 2); computed from each round's reports, the lottery is not truthful")
        return config

    @property
    def round_lease(self) -> float:
        """Seconds of the round timer's lease (:attr:`round_lease_seconds`, or three periods)."""
        return self.round_lease_seconds or 3 * self.round_seconds

    @property
    def gpu_specs(self) -> tuple[GpuSpec, ...]:
        """The GPUs of :attr:`gpus`."""
        return parse_gpus(self.gpus)
