"""Access: tokens stored hashed, the authentication dependency, and per-client rate limits.

A token is ``gs_<id>_<secret>``: ``id`` (12 hex digits) finds its row, ``secret`` (32 random
bytes, URL-safe base64) is checked against ``sha256(salt || secret)`` with a per-token random
salt, compared in constant time. The database never holds a secret, so a copy of it grants no
access. Tokens belong to a tenant; an *admin* (operator) token may also clear rounds and read
every tenant's data.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import threading
import time
from dataclasses import dataclass

from .errors import Forbidden, TooManyRequests, Unauthorized
from .storage import Store

__all__ = ["Principal", "add_token", "verify_token", "RateLimiter", "check_tenant_name"]

_PREFIX = "gs_"


@dataclass(frozen=True)
class Principal:
    """Who is calling: a tenant, and whether the token is an operator's."""

    tenant: str
    admin: bool
    token_id: str

    def may_see(self, tenant: str) -> bool:
        """Own data, or any data with an operator token."""
        return self.admin or tenant == self.tenant

    def require(self, tenant: str, what: str, *, field: str | None = None) -> None:
        """Raise :class:`Forbidden` unless :meth:`may_see` ``tenant``."""
        if not self.may_see(tenant):
            raise Forbidden(f"{what} belongs to another tenant; tenant {self.tenant!r} may only use its own",
                            field=field)

    def require_admin(self, what: str) -> None:
        if not self.admin:
            raise Forbidden(f"{what} needs an operator token (gensolver serve token add NAME --admin)")


def check_tenant_name(tenant: object) -> str:
    """A tenant name: 1-64 characters of letters, digits, ``-``, ``_``, ``.`` (bounded metric labels)."""
    if not isinstance(tenant, str) or not 1 <= len(tenant) <= 64 or \
            not all(c.isascii() and (c.isalnum() or c in "-_.") for c in tenant):
        raise ValueError(f"tenant: 1-64 characters of letters, digits, '-', '_', '.', got {tenant!r}")
    return tenant


def _digest(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode("utf-8")).digest()


def add_token(store: Store, tenant: str, *, admin: bool = False) -> str:
    """Create a token for ``tenant``, store it hashed and return it (shown once)."""
    check_tenant_name(tenant)
    token_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    with store.write() as db:
        db.execute("INSERT INTO tokens(id, tenant, admin, salt, digest, created) VALUES(?,?,?,?,?,?)",
                   (token_id, tenant, int(admin), salt, _digest(salt, secret), time.time()))
    return f"{_PREFIX}{token_id}_{secret}"


def verify_token(store: Store, header: str | None, cache: dict[str, Principal] | None = None) -> Principal:
    """The :class:`Principal` of an ``Authorization: Bearer <token>`` header.

    ``cache`` (token -> principal) spares the lookup and the hash for tokens seen before.

    Raises
    ------
    Unauthorized
        No header, not a bearer token, or an unknown or wrong token (one message for all).
    """
    if not header:
        raise Unauthorized("missing Authorization: Bearer <token> header", field="header.authorization")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("expected Authorization: Bearer <token>", field="header.authorization")
    bad = Unauthorized("unknown or invalid token", field="header.authorization")
    if not token.startswith(_PREFIX) or len(token) > 200:
        raise bad
    if cache is not None and token in cache:
        return cache[token]
    token_id, _, secret = token[len(_PREFIX):].partition("_")
    if not token_id or not secret:
        raise bad
    row = store.one("SELECT tenant, admin, salt, digest FROM tokens WHERE id = ?", (token_id,))
    if row is None or not hmac.compare_digest(_digest(row["salt"], secret), row["digest"]):
        raise bad
    who = Principal(row["tenant"], bool(row["admin"]), token_id)
    if cache is not None:  # tokens are never changed once issued, so a verified one stays valid
        if len(cache) >= 10_000:
            cache.clear()
        cache[token] = who
    return who


class RateLimiter:
    """Token buckets, one per client key: ``rate`` requests per second, bursts of ``burst``.

    The number of buckets is bounded (the least recently used are dropped beyond
    ``max_clients``), so a flood of client addresses cannot grow memory without bound.
    """

    def __init__(self, rate: float, burst: int, *, max_clients: int = 10_000) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.max_clients = max_clients
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        """Take one request from ``key``'s bucket; :class:`TooManyRequests` when it is empty."""
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            level, last = self._buckets.pop(key, (self.burst, now))
            level = min(self.burst, level + (now - last) * self.rate)
            if level < 1.0:
                self._buckets[key] = (level, now)
                wait = max(1, math.ceil((1.0 - level) / self.rate))
                raise TooManyRequests(f"more than {self.rate:g} requests/s (burst {self.burst:g}); retry in {wait} s",
                                      headers={"Retry-After": str(wait)})
            self._buckets[key] = (level - 1.0, now)
            if len(self._buckets) > self.max_clients:
                self._buckets.pop(next(iter(self._buckets)))
