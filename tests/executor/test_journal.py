"""The journal refuses a file that is not a journal and never cuts anything but a torn last line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensolver.executor import Journal, JournalError, read_journal


def _journal(path: Path, n: int = 2) -> bytes:
    with Journal(path) as j:
        j.append("plan", digest="x", t0=1.0, time_scale=1.0)
        for k in range(1, n):
            j.append("waiting", task="a", run=k)
    return path.read_bytes()


@pytest.mark.parametrize("content", [
    # a pretty-printed JSON document (a plan, an instance)
    json.dumps({"schema": "gensolver.plan/v1", "devices": [], "tasks": []}, indent=2).encode() + b"\n",
    # a one-line JSON document without a final newline
    json.dumps({"schema": "gensolver.instance/v1", "slots": [], "bids": []}).encode(),
    # JSON lines, but not journal records
    b'{"id": 1, "value": 2}\n{"id": 2, "value": 3}\n',
    # plain text
    b"some notes\nthat matter\n",
    b"\n",
], ids=["plan", "one-line-instance", "other-json-lines", "text", "blank-line"])
def test_a_file_that_is_not_a_journal_is_refused_and_left_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "victim.json"
    path.write_bytes(content)
    with pytest.raises(JournalError, match="not a gensolver journal"):
        Journal(path)
    assert path.read_bytes() == content
    # the lock was released: the file can be opened again (and is refused again)
    with pytest.raises(JournalError, match="not a gensolver journal"):
        Journal(path)


def test_a_bad_line_before_the_last_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    good = _journal(path, 3)
    lines = good.splitlines(keepends=True)
    for bad in (lines[0] + b"garbage\n" + b"".join(lines[1:]),       # a bad line in the middle
                good + b'{"seq": 3, "event": "sta\n',                  # a complete (terminated) bad last line
                lines[0] + lines[2] + lines[1]):                       # records out of order
        path.write_bytes(bad)
        with pytest.raises(JournalError, match="line 2|line 4"):
            Journal(path)
        assert path.read_bytes() == bad


def test_only_a_torn_last_line_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    good = _journal(path)
    path.write_bytes(good + b'{"seq": 2, "time": 17')  # a crash mid-write
    with Journal(path) as j:
        assert [r["seq"] for r in j.records] == [0, 1]
    assert path.read_bytes() == good
    # a crash during the very first record leaves a journal that opens empty
    first = tmp_path / "first.jsonl"
    first.write_bytes(b'{"seq": 0, "time": 1795')
    with Journal(first) as j:
        assert j.records == []
        j.append("plan", digest="x", t0=1.0, time_scale=1.0)
    assert [r["event"] for r in read_journal(first)] == ["plan"]


def test_a_journal_path_that_cannot_be_opened_is_a_journal_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="cannot open"):
        Journal(tmp_path)  # a directory
    a_file = tmp_path / "f"
    a_file.write_text("x")
    with pytest.raises(JournalError, match="cannot open"):
        Journal(a_file / "j.jsonl")  # under a file
