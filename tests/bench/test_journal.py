"""Resuming from a damaged journal (``cells.jsonl``).

A torn last line (a crash mid-write) is dropped and its cell redone; any other damage is an
error, exit 2, that names ``cells.jsonl:LINE`` and the field, and changes no file.
Each test damages a copy of the output of one real ``gensolver bench smoke -m greedy`` run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gensolver.bench import read_journal, run_suite
from gensolver.cli import main

ARGS = ["smoke", "-m", "greedy", "--jobs", "1", "--no-plots", "--quiet"]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "out"
    assert main(["bench", *ARGS, "--out", str(out)]) == 0
    return out


@pytest.fixture()
def out(first_run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "out"
    shutil.copytree(first_run, dest)
    return dest


def _lines(out: Path) -> list[bytes]:
    return (out / "cells.jsonl").read_bytes().splitlines()


def _write(out: Path, lines: list[bytes], tail: bytes = b"") -> None:
    (out / "cells.jsonl").write_bytes(b"".join(ln + b"\n" for ln in lines) + tail)


def _edit(line: bytes, **changes: object) -> bytes:
    row = json.loads(line)
    for k, v in changes.items():
        if v is KeyError:
            del row[k]
        else:
            row[k] = v
    return json.dumps(row).encode()


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _bench(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["bench", *ARGS, "--out", str(out)])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return rc, cap.out, " ".join(cap.err.split())


@pytest.mark.parametrize(
    ("line", "damage", "shown"),
    [
        (3, {"status": KeyError}, "/status: missing"),
        (4, {"welfare": "abc"}, "/welfare: expected a finite number, got 'abc'"),
        (2, {"welfare": float("nan")}, "/welfare: expected a finite number, got nan"),
        (5, {"key": None}, "/key: missing"),
        (1, {"bids": -3}, "/bids: expected a non-negative integer, got -3"),
    ],
)
def test_a_bad_field_names_the_line_and_changes_nothing(out: Path, capsys: pytest.CaptureFixture[str], line: int,
                                                        damage: dict[str, object], shown: str) -> None:
    lines = _lines(out)
    lines[line - 1] = _edit(lines[line - 1], **damage)
    _write(out, lines)
    before = _snapshot(out)
    rc, _, err = _bench(out, capsys)
    assert rc == 2
    assert f"{out / 'cells.jsonl'}:{line}: {shown}" in err
    assert _snapshot(out) == before  # nothing lost, no half result


@pytest.mark.parametrize(("bad", "shown"), [(b'{"key": "x", broken', "invalid JSON"),
                                            (b"\xff\xfe not utf-8", "not UTF-8 text"),
                                            (b"[1, 2]", "expected a JSON object")])
def test_a_damaged_line_before_the_last_is_an_error(out: Path, capsys: pytest.CaptureFixture[str], bad: bytes,
                                                    shown: str) -> None:
    lines = _lines(out)
    _write(out, lines[:2] + [bad] + lines[2:])
    before = _snapshot(out)
    rc, _, err = _bench(out, capsys)
    assert rc == 2
    assert f"{out / 'cells.jsonl'}:3: {shown}" in err
    assert _snapshot(out) == before
    with pytest.raises(ValueError, match=r"cells\.jsonl:3: "):  # JournalError
        read_journal(out / "cells.jsonl")


def test_a_row_that_does_not_match_its_key_is_an_error(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(out)
    other = json.loads(lines[1])["instance"]
    lines[0] = _edit(lines[0], instance=other)
    _write(out, lines)
    before = _snapshot(out)
    rc, _, err = _bench(out, capsys)
    assert rc == 2
    assert f"{out / 'cells.jsonl'}:1: /instance" in err and "do not match the key" in err
    assert _snapshot(out) == before


@pytest.mark.parametrize("tail", [b"\xff\xfe garbage", b'{"key": "smoke-arbitrary|cd9b', b"{"])
def test_a_torn_last_line_is_dropped(out: Path, capsys: pytest.CaptureFixture[str], tail: bytes) -> None:
    lines = _lines(out)
    _write(out, lines, tail)
    assert set(read_journal(out / "cells.jsonl")) == {json.loads(ln)["key"] for ln in lines}
    rc, stdout, err = _bench(out, capsys)
    assert rc == 0, err
    assert f"0 run, {len(lines)} resumed" in stdout
    assert _lines(out) == lines  # the torn bytes are gone, the rows are kept


def test_a_torn_row_is_redone(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(out)
    _write(out, lines[:-1], lines[-1][:40])  # the crash cut the last row
    rc, stdout, err = _bench(out, capsys)
    assert rc == 0, err
    assert f"1 run, {len(lines) - 1} resumed" in stdout
    after = _lines(out)
    assert after[:-1] == lines[:-1] and len(after) == len(lines)
    assert json.loads(after[-1])["key"] == json.loads(lines[-1])["key"]


def test_fresh_ignores_a_damaged_journal(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(out)
    _write(out, lines[:1] + [b"garbage"] + lines[1:])
    capsys.readouterr()
    assert main(["bench", *ARGS, "--fresh", "--out", str(out)]) == 0
    assert len(read_journal(out / "cells.jsonl")) == len(lines)


def test_run_suite_raises_journal_error(out: Path) -> None:
    lines = _lines(out)
    lines[2] = _edit(lines[2], status=7)
    _write(out, lines)
    with pytest.raises(ValueError, match=r"cells\.jsonl:3: /status: expected a string, got 7"):
        run_suite("smoke", methods=["greedy"], out_dir=out, progress=False, plots=False)
