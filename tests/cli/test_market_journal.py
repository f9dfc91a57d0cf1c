"""Behaviour of :mod:`gensolver.cli.market_journal`: a market run's journal written, read back,
refused when it is not this run's or not what the module writes (the file left untouched), and
the processes a killed run left found and stopped."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gensolver.cli.market_journal import MARKET_JOURNAL_SCHEMA, RUN_ENV, MarketJournal, jobs_digest, stop_leftovers
from gensolver.errors import JournalError

IDENTITY = {"jobs": "ab" * 32, "options": {"lease": 5}, "backend": "local"}


def _round(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    record = {"round": n, "time": 5.0 * n, "assignments": [{"task": "a", "gpus": ["0"]}], "charges": {"t": 1.5},
              "finished": [], "failed": [], "outcomes": {}}
    state = {"engine": {"prices": {}}, "work": {"a": 2.5 * n}, "placed": {"a": [["0"], 8.0]}}
    return record, state


def _written(path: Path, rounds: int = 2, finish: bool = False) -> None:
    book = MarketJournal(path, IDENTITY)
    try:
        for n in range(1, rounds + 1):
            book.round(*_round(n))
        if finish:
            book.finish(ok=True, unfinished=[], failed=[])
    finally:
        book.close()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _rewrite(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))


def test_rounds_written_are_read_back_in_order(tmp_path):
    path = tmp_path / "run.journal"
    _written(path, rounds=3)
    lines = _lines(path)  # the file itself, read as plain JSON lines
    assert [r["event"] for r in lines] == ["market", "round", "round", "round"]
    assert lines[0]["schema"] == MARKET_JOURNAL_SCHEMA and lines[0]["jobs"] == IDENTITY["jobs"]
    book = MarketJournal(path, IDENTITY)
    try:
        assert book.reopened and book.finished is None
        assert book.rounds == [_round(n) for n in (1, 2, 3)]
        assert book.token == lines[0]["token"] and len(book.token) == 16
    finally:
        book.close()


def test_a_new_journal_gets_a_fresh_token_and_a_finished_run_reads_as_finished(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _written(a, finish=True)
    _written(b)
    assert _lines(a)[0]["token"] != _lines(b)[0]["token"]
    book = MarketJournal(a, IDENTITY)
    try:
        assert book.finished is not None and book.finished["ok"] is True and len(book.rounds) == 2
    finally:
        book.close()


def test_another_runs_journal_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "run.journal"
    _written(path)
    before = path.read_bytes()
    for key, value in (("jobs", "cd" * 32), ("options", {"lease": 6}), ("backend", "slurm")):
        with pytest.raises(JournalError, match=f"its {key} differs"):
            MarketJournal(path, {**IDENTITY, key: value})
    assert path.read_bytes() == before


def _bad(lines: list[dict[str, Any]], line: int, field: str, value: Any) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(lines))
    doc = out[line - 1]
    *parents, last = field.split(".")
    for p in parents:
        doc = doc[p]
    if value is _DROP:
        del doc[last]
    else:
        doc[last] = value
    return out


_DROP = object()


@pytest.mark.parametrize("line, field, value, message", [
    (2, "round", 2, "line 2: expected round 1"),
    (3, "record.round", 7, "line 3: expected round 2"),
    (2, "state", [], "line 2: field 'state' is not an object"),
    (2, "record.charges", _DROP, "line 2: field 'record.charges' is missing"),
    (2, "record.time", True, "line 2: field 'record.time' is missing or not a number"),
    (3, "state.placed", None, "line 3: field 'state.placed' is missing or not a object"),
    (2, "state.work.a", None, "line 2: field 'state.work.a' is not a finite number"),
    (2, "state.work.a", float("nan"), "line 2: field 'state.work.a' is not a finite number"),
    (3, "state.placed.a", [["0"], "8"], r"line 3: field 'state.placed.a' is not \[gpus, memory\]"),
    (2, "event", "other", "line 2: unknown event 'other'"),
    (1, "schema", "gensolver.market-journal/v0", "is not a market journal"),
    (1, "token", "", "line 1: field 'token' is missing"),
])
def test_a_damaged_record_is_refused_naming_line_and_field(tmp_path, line, field, value, message):
    path = tmp_path / "run.journal"
    _written(path)
    _rewrite(path, _bad(_lines(path), line, field, value))
    before = path.read_bytes()
    with pytest.raises(JournalError, match=message):
        MarketJournal(path, IDENTITY)
    assert path.read_bytes() == before


def test_a_record_after_finished_is_refused(tmp_path):
    path = tmp_path / "run.journal"
    _written(path, rounds=1, finish=True)
    lines = _lines(path)
    extra = {**lines[1], "seq": lines[-1]["seq"] + 1}
    _rewrite(path, lines + [extra])
    with pytest.raises(JournalError, match="line 4: a 'round' record after 'finished'"):
        MarketJournal(path, IDENTITY)


def test_jobs_digest_is_sha256_of_the_bytes():
    # FIPS 180-2's test vector for "abc"
    assert jobs_digest(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert jobs_digest(b"x: 1\n") == hashlib.sha256(b"x: 1\n").hexdigest() != jobs_digest(b"x: 2\n")


def test_stop_leftovers_stops_only_the_runs_own_processes(tmp_path):
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    mine = subprocess.Popen(sleep, env={**os.environ, RUN_ENV: "tok-mine"})
    other = subprocess.Popen(sleep, env={**os.environ, RUN_ENV: "tok-other"})
    try:
        assert stop_leftovers("tok-mine", grace=10.0) == 1
        assert mine.wait(timeout=30) == -signal.SIGTERM  # asked to stop first, not killed
        assert other.poll() is None  # another run's process is left alone
        assert stop_leftovers("tok-none", grace=0.0) == 0
    finally:
        for p in (mine, other):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)
