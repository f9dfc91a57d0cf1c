"""The round timer's lease: with ``--round-seconds`` and several replicas on one database, one
replica's timer clears rounds.

The lease is the ``meta`` row ``round_timer``, ``"<until, zero-padded> <holder>"``. Each tick a
replica takes or renews it with one conditional upsert: it succeeds when the row is absent,
expired (``until`` before now) or already the replica's own, and a replica clears a round only
when it holds the lease. The upsert is atomic on SQLite (``BEGIN IMMEDIATE``) and on
PostgreSQL (``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` re-checks the row it waited for), so
two replicas never both hold it. A replica that dies hands over once its lease runs out
(``ttl``: ``--round-lease-seconds``, three periods by default); one that stops releases it.

**Fencing.** Holding the lease when a round starts is not enough: a replica may stall (a long
pause, a slow solve, a swapped-out process) between taking the lease and committing the round,
past the lease's end, while another replica takes it and clears. The timer's round therefore
commits only after :meth:`RoundLease.fence` finds, inside the round's own write transaction,
that this replica still holds an unexpired lease; otherwise the transaction rolls back with
:class:`LeaseLost` and the round is not applied. The check and the commit are one transaction,
and a replica takes or renews the lease in a write transaction too (on PostgreSQL every write
transaction holds the replicas' write lock), so no replica can take the lease between the
check and the commit.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable

from ..errors import GensolverError, InputError

__all__ = ["LeaseLost", "RoundLease"]

_KEY = "round_timer"


def _stamp(t: float) -> str:
    return f"{max(t, 0.0):020.6f}"  # fixed width: text order is time order


class LeaseLost(GensolverError):
    """The replica no longer holds the round timer's lease when its round would commit."""


class RoundLease:
    """The round timer's lease on ``store`` for one replica (see the module).

    Parameters
    ----------
    store : Store
        The replica's store (SQLite or PostgreSQL).
    ttl : float
        Seconds a taken lease lasts without renewal.
    clock : callable, optional
        Wall-clock seconds (``time.time``); shared by the replicas through the database rows.
    holder : str, optional
        This replica's name in the lease row (a new random one by default); no spaces.
    """

    def __init__(self, store: Any, *, ttl: float, clock: Callable[[], float] = time.time,
                 holder: str | None = None) -> None:
        self.store = store
        self.ttl = float(ttl)
        self.clock = clock
        self.holder = uuid.uuid4().hex if holder is None else str(holder)
        if not self.holder or " " in self.holder:
            raise InputError(f"holder: a name without spaces, got {holder!r}")

    def holder_now(self) -> tuple[str, float] | None:
        """The lease row as ``(holder, until)``, or ``None`` when nobody holds it."""
        row = self.store.one("SELECT value FROM meta WHERE key = ?", (_KEY,))
        if row is None:
            return None
        until, _, holder = str(row["value"]).partition(" ")
        return holder, float(until)

    def acquire(self) -> bool:
        """Take or renew the lease; ``True`` when this replica holds it now."""
        now = self.clock()
        value = f"{_stamp(now + self.ttl)} {self.holder}"
        with self.store.write() as db:
            cur = db.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE "
                             "SET value = excluded.value WHERE meta.value < ? OR substr(meta.value, 22) = ?",
                             (_KEY, value, _stamp(now), self.holder))
            return int(cur.rowcount) == 1

    def release(self) -> None:
        """Give the lease up if held (a stopping replica hands over at once)."""
        with self.store.write() as db:
            db.execute("DELETE FROM meta WHERE key = ? AND substr(value, 22) = ?", (_KEY, self.holder))

    def fence(self, db: Any) -> None:
        """Inside a write transaction ``db``: raise :class:`LeaseLost` unless this replica holds
        the lease and it has not run out (the round's commit then rolls back)."""
        row = db.execute("SELECT value FROM meta WHERE key = ?", (_KEY,)).fetchone()
        now = self.clock()
        if row is None:
            raise LeaseLost(f"replica {self.holder} does not hold the round timer's lease (nobody does)")
        until, _, holder = str(row["value"]).partition(" ")
        if holder != self.holder:
            raise LeaseLost(f"replica {self.holder} lost the round timer's lease to {holder}")
        if until < _stamp(now):  # as in acquire(): a lease holds up to and including its end
            raise LeaseLost(f"replica {self.holder}'s round timer lease ran out {now - float(until):.3f} s ago")
