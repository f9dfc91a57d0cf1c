"""The journal of finished cells (``cells.jsonl``): one JSON line per cell, flushed and fsync'd.

An interrupted run resumes from it without redoing finished cells. A torn last line (a crash
mid-write) is ignored and truncated; any other damage raises :class:`JournalError` naming
``cells.jsonl:LINE`` and the field. On resume, cells whose journalled error is a worker or an
instance-load error (``worker:``, ``instance:``) are run again; a solver's error stays (rerun
with ``--fresh``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

from ..errors import JournalError
from .suites import SuiteEntry

__all__ = ["JOURNAL", "JournalError", "cell_key", "read_journal"]

#: file name of the journal of finished cells in the output folder
JOURNAL = "cells.jsonl"


def cell_key(entry: SuiteEntry, method: str, mechanism: str | None, per_solve_limit: float | None) -> str:
    """Identity of a cell in the journal: instance and checksum, method, mechanism, per-solve limit.

    The limit enters by value only, so a journal whose rows name it ``time_limit`` (the field's
    deprecated name) resumes under the same ``per_solve_limit``.
    """
    limit = per_solve_limit if per_solve_limit is not None else "-"
    return f"{entry.name}|{entry.sha256[:16]}|{method}|{mechanism or '-'}|{limit}"


#: journal row fields and their kinds (``key``, ``instance``, ``method`` and ``status`` are required)
_ROW_FIELDS: dict[str, str] = {
    "key": "str", "instance": "str", "method": "str", "status": "str",
    "family": "str?", "mechanism": "str?", "error": "str?", "mechanism_note": "str?", "worker": "str?",
    "welfare": "num?", "seconds": "num?", "bound": "num?", "per_solve_limit": "num?", "time_limit": "num?", "finished": "num?",
    "payments_seconds": "num?", "revenue": "num?", "max_regret": "num?", "wall_seconds": "num?",
    "slots": "int?", "bids": "int?", "bidders": "int?",
    "payments_exact": "bool?", "payments_note": "str?", "payment_bounds": "obj?",
}


def _check_row(row: Any, where: str) -> dict[str, Any]:
    """A journal row, checked field by field (``where`` is ``cells.jsonl:LINE``)."""
    if not isinstance(row, dict):
        raise JournalError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for name, kind in _ROW_FIELDS.items():
        v = row.get(name)
        if v is None:
            if not kind.endswith("?"):
                raise JournalError(f"{where}: /{name}: missing")
            continue
        base = kind.rstrip("?")
        if base == "str":
            ok = isinstance(v, str)
            want = "a string"
        elif base == "bool":
            ok = isinstance(v, bool)
            want = "true or false"
        elif base == "obj":
            ok = isinstance(v, dict)
            want = "an object"
        elif base == "int":
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
            want = "a non-negative integer"
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            want = "a finite number"
        if not ok:
            raise JournalError(f"{where}: /{name}: expected {want}, got {v!r}"[:300])
    return row


def _read_journal(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, int], int]:
    """``(rows by key, line number by key, byte length of the intact part)``.

    A last line without its newline that does not parse is a write torn by a crash: it is left
    out (and the length excludes it). Any other damage raises :class:`JournalError`.
    """
    rows: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return rows, lines, 0
    except OSError as exc:
        raise JournalError(f"{path}: cannot read: {exc.strerror or exc}") from None
    pos = 0
    number = 0
    while pos < len(data):
        number += 1
        nl = data.find(b"\n", pos)
        last = nl < 0
        end = len(data) if last else nl
        raw = data[pos:end]
        where = f"{path}:{number}"
        try:
            text = raw.decode("utf-8")
            row = json.loads(text) if text.strip() else None
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            if last:
                return rows, lines, pos  # torn tail
            why = f"not UTF-8 text (byte {exc.start})" if isinstance(exc, UnicodeDecodeError) else "invalid JSON"
            raise JournalError(f"{where}: {why}; remove the line, or run again with --fresh to redo every cell") from None
        if row is not None:
            try:
                _check_row(row, where)
            except JournalError as exc:
                raise JournalError(f"{exc}; remove the line, or run again with --fresh to redo every cell") from None
            rows[row["key"]] = row
            lines[row["key"]] = number
        pos = len(data) if last else nl + 1
    return rows, lines, len(data)


def read_journal(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Finished cells by key; a torn last line (a crash mid-write) is ignored.

    Raises
    ------
    JournalError
        Any other damage: a line that is not UTF-8 JSON, or a row with a missing or bad field
        (the message names ``cells.jsonl:LINE`` and the field).
    """
    return _read_journal(Path(path))[0]


class _Journal:
    def __init__(self, path: Path, intact: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size:
            with open(path, "r+b") as fh:
                if fh.seek(0, os.SEEK_END) > intact:  # drop a torn tail left by a crash
                    fh.truncate(intact)
                if intact:  # a last row without its newline must not glue onto the next one
                    fh.seek(intact - 1)
                    if fh.read(1) != b"\n":
                        fh.write(b"\n")
        self.fh = open(path, "a", encoding="utf-8")

    def append(self, row: Mapping[str, Any]) -> None:
        self.fh.write(json.dumps(row, allow_nan=False, default=str) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _finished(row: Mapping[str, Any] | None) -> bool:
    """Whether a journalled cell counts as done on resume: not a worker or instance-load error."""
    if row is None:
        return False
    return not (row.get("status") == "error" and str(row.get("error") or "").startswith(("worker:", "instance:")))
