"""The journal of ``gensolver run JOBS.yaml --market ... --journal FILE``: what makes a market
run resumable.

The file is an executor journal (:class:`gensolver.executor.Journal`: one JSON object per line,
``seq``, ``time`` and ``event`` first, each line flushed and fsync'd before the run goes on, an
exclusive lock while a run holds it, a last line cut short by a crash dropped on reopening,
anything else refused with the file left untouched). Its records:

``market``    schema (``gensolver.market-journal/v1``), token (random: the run's processes
              carry it as ``GENSOLVER_MARKET_RUN``), jobs (SHA-256 of the jobs file),
              options (the ``--market`` options, defaults filled in, but ``max_rounds``:
              a resumed run may be given more), backend
``round``     round (1, 2, ...), record (the round as printed: time, assignments, charges,
              finished, failed, outcomes), state (what the next round starts from: the
              engine's :meth:`~gensolver.market.engine.CreditEngine.state`, balances included,
              each unfinished task's observed work, the placements kept: bounded by the
              tasks not yet done, as the engine's state is)
``finished``  ok, unfinished, failed (the run ended)

A ``round`` record is written once the round's processes have ended and their outcomes are
read, so a round in the journal is never run again: rerunning the same command with the same
journal continues from the round after the last one recorded (a round cut short by SIGTERM or
a crash is cleared again, identically, and its processes launched again; processes a crash
left running, found by their ``GENSOLVER_MARKET_RUN``, are stopped first). A journal whose run
has ended (``finished``) is only printed again. A journal of another run (other jobs, options or
backend), or damaged before its last line, is refused (exit 2).
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
from typing import Any

from ..errors import JournalError
from ..executor.journal import Journal

__all__ = ["MARKET_JOURNAL_SCHEMA", "RUN_ENV", "MarketJournal", "jobs_digest", "stop_leftovers"]

MARKET_JOURNAL_SCHEMA = "gensolver.market-journal/v1"
#: the environment variable every process of a journaled market run carries (its token)
RUN_ENV = "GENSOLVER_MARKET_RUN"
#: the fields of a round's ``record`` and of its ``state``, with the JSON type each must have
RECORD_FIELDS: dict[str, Any] = {"round": int, "time": (int, float), "assignments": list, "charges": dict, "finished": list,
                 "failed": list, "outcomes": dict}
STATE_FIELDS: dict[str, Any] = {"engine": dict, "work": dict, "placed": dict}


def jobs_digest(data: bytes) -> str:
    """SHA-256 of the jobs file's bytes (a journal belongs to one jobs file)."""
    return hashlib.sha256(data).hexdigest()


class MarketJournal:
    """A market run's journal at ``path``, opened for ``identity`` (jobs digest, options,
    backend): created with its ``market`` record, or read back and checked.

    Attributes
    ----------
    rounds : list of (record, state)
        Every round recorded, in order.
    finished : dict or None
        The ``finished`` record, when the run had ended.

    Raises
    ------
    JournalError
        Locked by another run, not a journal, not a market journal, written for another run,
        or a record that is not what this module writes (the message names the line and the
        field); the file is left untouched.
    """

    def __init__(self, path: str | os.PathLike[str], identity: dict[str, Any]) -> None:
        self.path = str(path)
        self._journal = Journal(path)
        try:
            self.rounds: list[tuple[dict[str, Any], dict[str, Any]]] = []
            self.finished: dict[str, Any] | None = None
            records = self._journal.records
            #: the journal existed (a run wrote it before): its processes may be left running
            self.reopened = bool(records)
            if not records:
                self._journal.append("market", schema=MARKET_JOURNAL_SCHEMA, token=secrets.token_hex(8), **identity)
            else:
                self._read(records, identity)
            self.token = str(self._journal.records[0].get("token"))
        except BaseException:
            self._journal.close()
            raise

    def _bad(self, line: int, what: str) -> JournalError:
        return JournalError(f"{self.path}: line {line}: {what}; the file is left untouched")

    def _read(self, records: list[dict[str, Any]], identity: dict[str, Any]) -> None:
        head = records[0]
        if head.get("event") != "market" or head.get("schema") != MARKET_JOURNAL_SCHEMA:
            raise JournalError(f"{self.path} is not a market journal (its first record is "
                               f"{head.get('event')!r}, not 'market' of {MARKET_JOURNAL_SCHEMA}); "
                               f"the file is left untouched")
        if not isinstance(head.get("token"), str) or not head["token"]:
            raise self._bad(1, "field 'token' is missing or not a string")
        for key, want in identity.items():
            if head.get(key) != want:
                raise JournalError(f"{self.path} belongs to another market run: its {key} differs from this "
                                   f"command's; give a new --journal to start a new run (the file is left untouched)")
        for line, rec in enumerate(records[1:], start=2):
            if self.finished is not None:
                raise self._bad(line, f"a {rec['event']!r} record after 'finished'")
            if rec["event"] == "finished":
                self.finished = rec
            elif rec["event"] == "round":
                self.rounds.append(self._round(line, rec))
            else:
                raise self._bad(line, f"unknown event {rec['event']!r} (expected 'round' or 'finished')")

    def _round(self, line: int, rec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        n = len(self.rounds) + 1
        record, state = rec.get("record"), rec.get("state")
        if rec.get("round") != n or not isinstance(record, dict) or record.get("round") != n:
            raise self._bad(line, f"expected round {n}, got {rec.get('round')!r}")
        if not isinstance(state, dict):
            raise self._bad(line, "field 'state' is not an object")
        for where, doc, fields in (("record", record, RECORD_FIELDS), ("state", state, STATE_FIELDS)):
            for key, kind in fields.items():
                if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool):
                    raise self._bad(line, f"field '{where}.{key}' is missing or not a {_kind(kind)}")
        for tid, work in state["work"].items():
            if isinstance(work, bool) or not isinstance(work, (int, float)) or not math.isfinite(work):
                raise self._bad(line, f"field 'state.work.{tid}' is not a finite number")
        for tid, place in state["placed"].items():
            if not (isinstance(place, list) and len(place) == 2 and isinstance(place[0], list)
                    and isinstance(place[1], (int, float)) and not isinstance(place[1], bool)):
                raise self._bad(line, f"field 'state.placed.{tid}' is not [gpus, memory]")
        return record, state

    def round(self, record: dict[str, Any], state: dict[str, Any]) -> None:
        """Record a round that has run (its processes ended, their outcomes read)."""
        self._journal.append("round", round=record["round"], record=record, state=state)
        self.rounds.append((record, state))

    def finish(self, *, ok: bool, unfinished: list[str], failed: list[str]) -> None:
        self.finished = self._journal.append("finished", ok=ok, unfinished=unfinished, failed=failed)

    def close(self) -> None:
        self._journal.close()


def _kind(kind: Any) -> str:
    return "number" if isinstance(kind, tuple) else {int: "integer", list: "list", dict: "object"}[kind]


def stop_leftovers(token: str, *, grace: float) -> int:
    """Stop every live process of this user tagged ``GENSOLVER_MARKET_RUN=token``: what a run
    killed outright (SIGKILL, a crash) left running. SIGTERM, then SIGKILL after ``grace``
    seconds; returns how many there were."""
    import signal
    import time

    from ..executor.procs import find_all_by_env

    found = find_all_by_env(RUN_ENV, token)
    _signal(found, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while find_all_by_env(RUN_ENV, token) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal(find_all_by_env(RUN_ENV, token), signal.SIGKILL)
    return len(found)


def _signal(pids: set[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:  # gone meanwhile
            pass
