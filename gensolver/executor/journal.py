"""The executor's append-only journal: one JSON object per line, each flushed and fsync'd.

Every state change of an :class:`~gensolver.executor.PlanRunner` is a record
``{"seq": n, "time": <seconds since the epoch>, "event": "<name>", ...}`` written *before* the
executor acts on it in memory, so the journal alone rebuilds the executor's state after a
crash. A last line cut short by a crash (no newline) is dropped when the journal is reopened;
anything else that is not a journal record (a bad line before the last, a file of another
kind) makes :class:`Journal` refuse the file and leave it untouched. An exclusive ``flock`` keeps two executors off one journal; the kernel releases
it when the holder dies, so a killed executor's journal can be reopened at once.

Events (fields besides seq, time, event)
----------------------------------------
``plan``            plan, digest, t0 (epoch of plan time 0), time_scale, pid
``restart``         pid (an executor reopened the journal)
``waiting``         task, run, free, need (memory was not free at the run's start)
``launching``       task, run, attempt, run_id (written before the process is spawned)
``started``         task, run, attempt, run_id, pid, pid_start, devices, grants, argv
``adopted``         task, run, attempt, pid (a restarted executor took over a live process)
``lost``            task, run, attempt, pid, action (``restart`` or ``skip``)
``usage``           task, run, attempt, pid, peak (bytes; written when the peak grows)
``over_grant``      task, run, attempt, pid, device, used, grant, action
``suspended``       task, run, attempt, pid, reason (``preemption`` or ``over_grant``), next_run
``resumed``         task, run, attempt, pid
``signalled``       task, run, attempt, pid, signal, reason
``exited``          task, run, attempt, pid, exit_code, outcome, run_seconds, peak
``skipped``         task, run, reason
``task_finished``   task, outcome, exit_code
``finished``        (the executor's loop ended)
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from ..errors import JournalError

__all__ = ["Journal", "JournalError", "read_journal"]


#: how every record starts on disk (``json.dumps`` of ``{"seq": 0, "time": ..., ...}``)
_FIRST_RECORD = b'{"seq": 0, '


def _is_record(rec: Any, seq: int) -> bool:
    """Whether ``rec`` is the journal record number ``seq``."""
    return (isinstance(rec, dict) and type(rec.get("seq")) is int and rec["seq"] == seq
            and isinstance(rec.get("event"), str))


def _parse(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """Records and the byte length of the intact prefix.

    The prefix ends at the first line that is unterminated, not a JSON object, or not the next
    journal record (``seq`` in order, an ``event`` name).
    """
    records: list[dict[str, Any]] = []
    good = 0
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # torn tail
        line = data[pos:nl]
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            break
        if not _is_record(rec, len(records)):
            break
        records.append(rec)
        pos = nl + 1
        good = pos
    return records, good


def _torn_tail(records: list[dict[str, Any]], tail: bytes) -> bool:
    """Whether ``tail`` (what follows the intact records) is a last line cut short by a crash.

    It must have no line end (every record is written as one line ending in a newline, so a
    complete bad line is never a torn write), and it must follow at least one record or itself
    be the start of the first record; zero bytes a crashed file system may leave are allowed.
    """
    if not tail or b"\n" in tail:
        return not tail
    if records:
        return True
    head = tail.rstrip(b"\0")
    return head.startswith(_FIRST_RECORD) or _FIRST_RECORD.startswith(head)


def read_journal(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every intact record of the journal at ``path`` (empty if it does not exist)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return _parse(data)[0]


def _read_all(fd: int, size: int) -> bytes:
    """The first ``size`` bytes of ``fd`` (``pread`` may return fewer than asked)."""
    chunks = []
    pos = 0
    while pos < size:
        chunk = os.pread(fd, size - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


class Journal:
    """An append-only JSON-lines journal (in memory only when ``path`` is ``None``).

    Parameters
    ----------
    path : path or None
        The journal file; created if missing, its records read back if present.

    Raises
    ------
    JournalError
        Another live process holds the journal's lock; the file cannot be opened; or it is not
        a journal (no intact record, or a bad line before its last one). A refused file is
        left exactly as it was.

    Notes
    -----
    Only a last line cut short by a crash (no newline) after intact records is cut off when
    the journal is opened.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self.records: list[dict[str, Any]] = []
        self._fd: int | None = None
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise JournalError(f"cannot open {self.path}: {exc.strerror or exc}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JournalError(f"{self.path} is in use by another executor (locked)") from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise JournalError(f"{self.path} is not a regular file")
            size = st.st_size
            data = _read_all(fd, size)
            self.records, good = _parse(data)
            if good != size:
                if not _torn_tail(self.records, data[good:]):
                    if not self.records:
                        raise JournalError(f"{self.path} is not a gensolver journal (its first line is not a journal "
                                           f"record); the file is left untouched")
                    line = len(self.records) + 1
                    raise JournalError(f"{self.path}: line {line} is not a journal record (only a last line cut short "
                                       f"by a crash can be dropped); the file is left untouched")
                os.ftruncate(fd, good)  # drop a torn tail left by a crash
                os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)  # also releases the lock
            raise
        self._fd = fd

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        """Write one record (flushed and fsync'd before returning) and return it."""
        rec = {"seq": len(self.records), "time": time.time(), "event": event, **fields}
        if self._fd is not None:
            line = (json.dumps(rec, allow_nan=False, default=str) + "\n").encode()
            view = memoryview(line)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            os.fsync(self._fd)
        self.records.append(rec)
        return rec

    def close(self) -> None:
        """Release the lock and the file (idempotent)."""
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
