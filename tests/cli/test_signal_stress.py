"""SIGTERM at random moments (``benchmarks/stress_sigterm.py``, bounded): whatever the moment, the
command exits 143 (or is killed by the signal outside its handler, or had finished), leaves no process
and tears no journal. The moments are seeded; the checks hold at any moment, so no assertion depends on
the machine's speed. The full run (20 per command) is the benchmark's; ``-m slow`` runs 5 per command.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")  # serve's trials need the [service] extra

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "stress_sigterm.py"
_spec = importlib.util.spec_from_file_location("stress_sigterm", _PATH)
assert _spec is not None and _spec.loader is not None
stress_sigterm = importlib.util.module_from_spec(_spec)
sys.modules["stress_sigterm"] = stress_sigterm
_spec.loader.exec_module(stress_sigterm)


def _check(results) -> None:
    for r in results:
        assert r.ok, (r.command, r.delay, r.kind, r.status, r.left, r.torn)


def test_one_random_moment_per_command() -> None:
    _check(stress_sigterm.stress(stress_sigterm.COMMANDS, 1, seed=32))


@pytest.mark.slow
def test_five_random_moments_per_command() -> None:
    results = stress_sigterm.stress(stress_sigterm.COMMANDS, 5, seed=7)
    _check(results)
    assert "| bench | 5 |" in stress_sigterm.table(results)


def test_a_process_left_behind_is_caught(tmp_path: Path) -> None:
    """The left-alive check can fail: a program that starts a task in a session of its own (recording
    its pid, as ``run``'s tasks do) and dies on SIGTERM without stopping it."""
    code = ("import subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
            "open('task-pids', 'w').write(f'{p.pid}\\n')\n"
            "time.sleep(600)\n")
    marker = tmp_path / "task-pids"
    res = stress_sigterm.trial("run", 0.0, tmp_path, program=[sys.executable, "-c", code], ready=marker.exists,
                               wait=5.0)  # the task sleeps 600 s: still there after any wait
    assert res.left and not res.ok


def test_torn_journals_and_a_damaged_database_are_caught(tmp_path: Path) -> None:
    """The journal and database checks can fail: a torn last line, a line that is not JSON, a
    ``simulate --out`` folder without its results, a database file that is not SQLite."""
    (tmp_path / "cells.jsonl").write_text('{"a": 1}\n{"b": ')
    (tmp_path / "run.jsonl").write_text('{"a": 1}\nnot json\n')
    assert len(stress_sigterm._torn("bench", tmp_path, 143)) == 3
    (tmp_path / "out").mkdir()
    assert any("results.json" in t for t in stress_sigterm._torn("simulate", tmp_path, 143))
    (tmp_path / "db.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    assert any("db.sqlite" in t for t in stress_sigterm._torn("serve", tmp_path, 143))
    good = tmp_path / "good"
    good.mkdir()
    with sqlite3.connect(good / "db.sqlite") as con:
        con.execute("create table t (x)")
    (good / "j.jsonl").write_text('{"a": 1}\n')
    assert stress_sigterm._torn("serve", good, 143) == []
