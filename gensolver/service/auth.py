"""Access: tokens stored hashed, with a role and an expiry, and per-client rate limits.

A token is ``gs_<id>_<secret>``: ``id`` (12 hex digits) finds its row, ``secret`` (32 random
bytes, URL-safe base64) is checked against ``sha256(salt || secret)`` with a per-token random
salt, compared in constant time. The database never holds a secret, so a copy of it grants no
access. A token has a *role*: ``tenant`` (acts for its tenant only) or ``operator`` (also clears
rounds and reads every tenant); it may expire, and it may be revoked or rotated
(:func:`revoke_token`, :func:`rotate_token`; ``gensolver serve token ...``). Each of those
changes bumps ``meta.tokens_version``, so a serving process drops the tokens it had verified
and a revoked token is refused from the next request on; each is written to the audit log.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .errors import Forbidden, NotFound, TooManyRequests, Unauthorized
from .storage import Store, audit

__all__ = ["Principal", "add_token", "verify_token", "RateLimiter", "check_tenant_name", "list_tokens",
           "revoke_token", "rotate_token", "ROLES", "TokenCache"]

_PREFIX = "gs_"
#: the roles a token may have
ROLES = ("tenant", "operator")


@dataclass(frozen=True)
class Principal:
    """Who is calling: a tenant, and whether the token is an operator's."""

    tenant: str
    admin: bool
    token_id: str
    expires: float | None = None

    @property
    def role(self) -> str:
        return "operator" if self.admin else "tenant"

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
            raise Forbidden(f"{what} needs an operator token (gensolver serve token add NAME --role operator)")


def check_tenant_name(tenant: object) -> str:
    """A tenant name: 1-64 characters of letters, digits, ``-``, ``_``, ``.`` (bounded metric labels)."""
    if not isinstance(tenant, str) or not 1 <= len(tenant) <= 64 or \
            not all(c.isascii() and (c.isalnum() or c in "-_.") for c in tenant):
        raise InputError(f"tenant: 1-64 characters of letters, digits, '-', '_', '.', got {tenant!r}")
    return tenant


def _digest(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode("utf-8")).digest()


def _bump(db: Any) -> None:
    db.execute("INSERT INTO meta(key, value) VALUES('tokens_version', '1') ON CONFLICT(key) "
               "DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)")


def _insert(db: Any, tenant: str, admin: bool, expires: float | None, now: float) -> str:
    token_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    db.execute("INSERT INTO tokens(id, tenant, admin, salt, digest, created, expires) VALUES(?,?,?,?,?,?,?)",
               (token_id, tenant, int(admin), salt, _digest(salt, secret), now, expires))
    return f"{_PREFIX}{token_id}_{secret}"


def _check_expiry(expires: float | None, now: float) -> float | None:
    if expires is None:
        return None
    if isinstance(expires, bool) or not isinstance(expires, (int, float)) or not math.isfinite(expires) \
            or expires <= now:
        raise InputError(f"expires: a Unix time in the future, got {expires!r}")
    return float(expires)


def add_token(store: Store, tenant: str, *, admin: bool = False, expires: float | None = None,
              actor: str = "cli") -> str:
    """Create a token for ``tenant`` (an operator's if ``admin``; valid until the Unix time
    ``expires``, or for ever), store it hashed and return it (shown once)."""
    check_tenant_name(tenant)
    now = time.time()
    expires = _check_expiry(expires, now)
    with store.write() as db:
        token = _insert(db, tenant, admin, expires, now)
        token_id = token[len(_PREFIX):].split("_", 1)[0]
        audit(db, actor=actor, action="token.add", subject=token_id,
              detail={"tenant": tenant, "role": ROLES[int(admin)], "expires": expires})
        _bump(db)
    return token


def list_tokens(store: Store) -> list[dict[str, Any]]:
    """Every token's id, tenant, role, creation, expiry and revocation (never a secret)."""
    rows = store.query("SELECT id, tenant, admin, created, expires, revoked FROM tokens ORDER BY created, id")
    now = time.time()
    out = []
    for r in rows:
        status = "revoked" if r["revoked"] is not None and r["revoked"] <= now else \
            "expired" if r["expires"] is not None and r["expires"] <= now else "active"
        out.append({"id": r["id"], "tenant": r["tenant"], "role": ROLES[int(r["admin"])], "created": r["created"],
                    "expires": r["expires"], "revoked": r["revoked"], "status": status})
    return out


def revoke_token(store: Store, token_id: str, *, actor: str = "cli", at: float | None = None) -> None:
    """Revoke token ``token_id`` now (or from the Unix time ``at``).

    Raises
    ------
    NotFound
        No such token.
    """
    now = time.time()
    when = now if at is None else float(at)
    with store.write() as db:
        row = db.execute("SELECT tenant, revoked FROM tokens WHERE id = ?", (token_id,)).fetchone()
        if row is None:
            raise NotFound(f"no token {token_id!r}", field="id")
        if row["revoked"] is None or row["revoked"] > when:
            db.execute("UPDATE tokens SET revoked = ? WHERE id = ?", (when, token_id))
            audit(db, actor=actor, action="token.revoke", subject=token_id, detail={"tenant": row["tenant"], "at": when})
            _bump(db)


def rotate_token(store: Store, token_id: str, *, expires: float | None = None, grace: float = 0.0,
                 actor: str = "cli") -> str:
    """A new token for the tenant and role of ``token_id``; the old one stops working after
    ``grace`` seconds (at once by default). Returns the new token.

    Raises
    ------
    NotFound
        No such token, or one already revoked.
    """
    now = time.time()
    expires = _check_expiry(expires, now)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace < 1e9:
        raise InputError(f"grace: seconds in [0, 1e9), got {grace!r}")
    with store.write() as db:
        row = db.execute("SELECT tenant, admin, revoked FROM tokens WHERE id = ?", (token_id,)).fetchone()
        if row is None or (row["revoked"] is not None and row["revoked"] <= now):
            raise NotFound(f"no active token {token_id!r}", field="id")
        token = _insert(db, row["tenant"], bool(row["admin"]), expires, now)
        db.execute("UPDATE tokens SET revoked = ? WHERE id = ?", (now + grace, token_id))
        new_id = token[len(_PREFIX):].split("_", 1)[0]
        audit(db, actor=actor, action="token.rotate", subject=token_id,
              detail={"tenant": row["tenant"], "new": new_id, "old_revoked": now + grace, "expires": expires})
        _bump(db)
    return token


class TokenCache:
    """Verified tokens (token -> principal), dropped whenever ``meta.tokens_version`` changes.

    Safe for threads (replicas on PostgreSQL verify tokens off the event loop): the version
    only moves forward, and a token verified by a thread is kept only if the cache's version is
    still the one that thread read before reading the token's row. So a cached answer was read
    after the latest token change that any request using it had seen.
    """

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self.version = -1
        self.entries: dict[str, tuple[Principal, float | None]] = {}
        self.lock = threading.Lock()

    def sync(self, store: Store) -> int:
        """Read the stored version, drop every entry if it is newer than the cache's; the version read."""
        row = store.one("SELECT value FROM meta WHERE key = 'tokens_version'")
        version = 0 if row is None else int(row["value"])
        with self.lock:
            if version > self.version:
                self.entries.clear()
                self.version = version
        return version

    def put(self, token: str, entry: tuple[Principal, float | None], version: int) -> None:
        """Keep ``entry``, verified after reading ``version`` (:meth:`sync`), unless tokens changed since."""
        with self.lock:
            if version != self.version:
                return
            if len(self.entries) >= self.size:
                self.entries.clear()
            self.entries[token] = entry


def verify_token(store: Store, header: str | None, cache: TokenCache | None = None, *,
                 now: float | None = None) -> Principal:
    """The :class:`Principal` of an ``Authorization: Bearer <token>`` header.

    ``cache`` spares the lookup and the hash for tokens seen before (one small read checks
    that no token changed since).

    Raises
    ------
    Unauthorized
        No header, not a bearer token, or an unknown, wrong, expired or revoked token (one
        message for all).
    """
    if not header:
        raise Unauthorized("missing Authorization: Bearer <token> header", field="header.authorization")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("expected Authorization: Bearer <token>", field="header.authorization")
    bad = Unauthorized("unknown, invalid, expired or revoked token", field="header.authorization")
    if not token.startswith(_PREFIX) or len(token) > 200:
        raise bad
    now = time.time() if now is None else now
    version = 0
    if cache is not None:
        version = cache.sync(store)
        hit = cache.entries.get(token)
        if hit is not None:
            if hit[1] is not None and hit[1] <= now:
                raise bad
            return hit[0]
    token_id, _, secret = token[len(_PREFIX):].partition("_")
    if not token_id or not secret:
        raise bad
    row = store.one("SELECT tenant, admin, salt, digest, expires, revoked FROM tokens WHERE id = ?", (token_id,))
    if row is None or not hmac.compare_digest(_digest(row["salt"], secret), row["digest"]):
        raise bad
    ends = [t for t in (row["expires"], row["revoked"]) if t is not None]
    end = min(ends) if ends else None
    if end is not None and end <= now:
        raise bad
    who = Principal(row["tenant"], bool(row["admin"]), token_id, end)
    if cache is not None:
        cache.put(token, (who, end), version)
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
