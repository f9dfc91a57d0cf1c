"""SIGTERM stops ``bench``, ``run``, ``simulate`` and ``serve`` with every process they started:
exit 143, no process of theirs left, every journal line whole.

Each command runs as a real subprocess in a session of its own (``start_new_session``), through
``_signal_driver.py`` (the real :func:`gensolver.cli.main`, plus a solver method ``block`` that marks a
file and blocks until killed). The test waits for an event (a marker file, a journal line, an
answering server), never for a time, so the signal always lands mid-work: the command's handler is
installed and its children are running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

from gensolver.cli.signals import descendants

psutil = pytest.importorskip("psutil")

DRIVER = Path(__file__).with_name("_signal_driver.py")
ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0  # seconds: a bound on a loaded machine, not an expected duration


def wait_for(cond: Callable[[], Any], what: str, proc: subprocess.Popen[str]) -> Any:
    deadline = time.monotonic() + WAIT
    while True:
        val = cond()
        if val:
            return val
        if proc.poll() is not None:
            raise AssertionError(f"the command exited ({proc.returncode}) before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "GENSOLVER_TEST_MARKS": str(tmp_path), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(DRIVER), *args], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def busy(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob("busy-*"))


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[int, str, list[int]]:
    """Signal ``proc`` and wait for it; returns its status, its stderr and the processes it had."""
    had = descendants(proc.pid)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc.returncode, err, had


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _session(proc: subprocess.Popen[str]) -> list[int]:
    group = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getsid(p.pid) == proc.pid and _alive(p.pid):
                group.append(p.pid)
        except OSError:
            pass
    return group


def assert_all_gone(proc: subprocess.Popen[str], had: list[int]) -> None:
    """Every process the command had, and every process of its session, has exited: the
    multiprocessing resource tracker exits by itself once the command has gone (end of file on its
    pipe), so the session is waited on (an event, bounded by ``WAIT``), never a fixed time."""
    deadline = time.monotonic() + WAIT
    while True:
        left = [p for p in had if _alive(p)]
        group = _session(proc)
        if not (left or group) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if left or group:  # leave nothing behind for the other tests either
        for pid in set(left) | set(group):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert not left, f"processes of the command still alive: {left}"
    assert not group, f"processes of its session still alive: {group}"


def journal_lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "a torn last line"
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_bench_stops_its_worker_pool_and_resource_tracker(tmp_path: Path, sig: int, status: int) -> None:
    out = tmp_path / "out"
    proc = start(tmp_path, "bench", "smoke", "-m", "greedy,block", "--per-solve-limit", "600", "-o", str(out), "-q",
                 "--no-plots")
    wait_for(lambda: busy(tmp_path) and (out / "cells.jsonl").exists() and (out / "cells.jsonl").read_text(),
             "a worker blocked in a cell after a journalled one", proc)
    rc, err, had = stop(proc, sig)
    assert rc == status, err
    assert len(had) >= 2, had  # the worker and the resource tracker at least
    assert "Traceback" not in err
    assert "relaunching" not in err  # the resource tracker was left to exit, not killed and restarted
    assert_all_gone(proc, had)
    rows = journal_lines(out / "cells.jsonl")
    assert rows and all(r["method"] == "greedy" for r in rows)  # the blocked cells are not journalled


def test_run_stops_its_tasks_and_their_children(tmp_path: Path) -> None:
    from tests.executor.helpers import child

    marks = tmp_path / "marks"
    marks.mkdir()
    cmd = list(child(marks, 1 << 20, -1))  # waits for a release that never comes
    doc = {"schema": "gensolver.plan/v1", "name": "sig", "time_unit": "s", "horizon": 6000.0,
           "devices": [{"id": "g0", "memory": 1 << 34, "compute": 1.0,
                        "entries": [{"task": "t0", "start": 0.0, "end": 6000.0, "memory": 1 << 30, "compute": 1.0,
                                     "command": cmd}]}],
           "tasks": [{"id": "t0", "bid": "b", "value": 1.0, "preemptible": True, "command": cmd}],
           "preemptions": [], "metadata": {}}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    journal = tmp_path / "run.jsonl"
    proc = start(tmp_path, "run", str(plan), "-b", "sim", "--time-scale", "0.02", "--poll", "0.02",
                 "--journal", str(journal))
    wait_for(lambda: list(marks.glob("*.json")), "the task's marker", proc)
    task_pid = json.loads(next(marks.glob("*.json")).read_text())["pid"]
    rc, err, had = stop(proc)
    assert rc == 143, err
    assert task_pid in had and "Traceback" not in err
    assert_all_gone(proc, had)
    events = [r["event"] for r in journal_lines(journal)]
    assert "started" in events


def test_simulate_stops_in_a_blocked_round(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    proc = start(tmp_path, "simulate", "synthetic:n=20,seed=1", "-p", "auction", "--method", "block", "--out",
                 str(out))
    wait_for(lambda: busy(tmp_path), "a solver-cleared market round in its solver", proc)
    rc, err, had = stop(proc)
    assert rc == 143, err
    assert "Traceback" not in err
    assert_all_gone(proc, had)
    assert not out.exists()  # the output folder it created is removed again, nothing half-written


def test_serve_stops_on_sigterm(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start(tmp_path, "serve", "--host", "127.0.0.1", "--port", str(port), "--db", str(tmp_path / "db.sqlite"))

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                return True
        except OSError as exc:
            return getattr(exc, "code", None) is not None  # any HTTP answer: it is serving
    wait_for(answers, "the server to answer", proc)
    rc, err, had = stop(proc)
    assert rc == 143, err
    assert "Traceback" not in err
    assert_all_gone(proc, had)


def test_importing_the_driver_adds_no_method() -> None:
    """Only the driver run as a program knows ``block``: pytest imports every module under tests/
    (``--doctest-modules``), and a blocking method there would hang each "every method" test."""
    import importlib.util

    from gensolver.solvers.registry import list_methods

    spec = importlib.util.spec_from_file_location("signal_driver_probe", DRIVER)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert "block" not in {m.name for m in list_methods()}


def test_reap_spares_the_resource_tracker_which_exits_with_the_command() -> None:
    """:func:`reap` leaves this process's resource tracker alone (killing it makes the next semaphore
    finaliser start a fresh one that outlives the command); the tracker exits once the command has."""
    code = (
        "import multiprocessing as mp, os, sys\n"
        "from multiprocessing import resource_tracker\n"
        "from gensolver.cli import signals\n"
        "lock = mp.get_context('spawn').Lock()  # a named semaphore: starts the tracker\n"
        "pid = resource_tracker._resource_tracker._pid\n"
        "signals.reap(grace=0.5)\n"
        "os.kill(pid, 0)  # raises when reap killed (and collected) it\n"
        "print(pid)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0, done.stderr
    tracker = int(done.stdout)
    deadline = time.monotonic() + WAIT
    while _alive(tracker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(tracker), "the resource tracker outlived its command"


_IN_DEL = """
import os, signal, sys, time
from gensolver.cli import signals

signals.install()


class Lost:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100_000):  # the handler runs here, inside __del__, where its exception is unraisable
            pass


try:
    obj = Lost()
    del obj
    print("survived", flush=True)
    while True:  # the old handler's exception was lost: this never ends (the test's timeout fails it)
        time.sleep(0.01)
except KeyboardInterrupt as exc:
    sys.exit(signals.exit_status(exc))
"""


def test_a_signal_landing_in_a_finaliser_still_stops_the_command() -> None:
    """A stop signal that lands in a ``__del__`` (or a weakref callback, where ``serve`` lost one in the
    random-moment stress) is raised again in the main thread: exit 143, no "Exception ignored"."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, "-c", _IN_DEL], env=env, capture_output=True, text=True,
                              timeout=WAIT)
    except subprocess.TimeoutExpired:
        raise AssertionError("the signal's exception was lost in __del__: the program ran on") from None
    assert done.returncode == 143, done.stderr
    assert "Exception ignored" not in done.stderr


def test_a_signal_during_the_teardown_still_gives_its_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGTERM landing after the command returned, while ``main`` restores the handlers (the stress
    saw ``bench`` exit 0 once): ``main`` returns 143 instead of letting ``Terminated`` escape (old code)
    or ignoring it."""
    import gensolver.cli as cli
    from gensolver.cli import signals

    real = signals.uninstall
    landed: list[int] = []

    def uninstall() -> None:
        if not landed:  # the signal lands here: recorded by the handler, which raises
            landed.append(1)
            signals._received.append(signal.SIGTERM)
            raise signals.Terminated(signal.SIGTERM)
        real()

    monkeypatch.setattr(cli, "_main", lambda argv: 0)
    monkeypatch.setattr(signals, "uninstall", uninstall)
    monkeypatch.setattr(signals, "reap", lambda grace=3.0: None)
    try:
        rc = cli.main([])
    except KeyboardInterrupt:
        pytest.fail("Terminated escaped main")
    assert rc == 143
    assert landed and signal.getsignal(signal.SIGTERM) is not signals._handler  # restored
