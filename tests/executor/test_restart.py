"""An executor killed mid-plan and restarted on its journal loses nothing and runs nothing twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from gensolver.executor import read_journal, write_plan
from gensolver.executor.procs import is_alive

from .helpers import MIB, child, events, kill_groups, markers, plan_of, wait_for

RUN = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"


def _gensolver(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", RUN, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kw)


def _started_pids(journal: Path) -> list[int]:
    return [r["pid"] for r in read_journal(journal) if r["event"] == "started"]


def test_killed_executor_resumes_from_its_journal(tmp_path: Path) -> None:
    m = tmp_path / "markers"
    m.mkdir()
    # every child waits for a release file, so timing on a loaded machine cannot change the story
    plan = plan_of({"gpu0": 1, "gpu1": 1, "gpu2": 1, "gpu3": 1}, {
        # started by the first executor, alive while it is dead: the second one must adopt them
        "a": {"at": [("gpu0", 0, 60)], "memory": 0.25, "command": child(m, 10 * MIB, -1)},
        "b": {"at": [("gpu1", 0, 60)], "memory": 0.25, "command": child(m, 10 * MIB, -1)},
        # due later: normally started by the second executor
        "c": {"at": [("gpu2", 4, 60)], "memory": 0.5, "command": child(m, 10 * MIB, -1)},
        "d": {"at": [("gpu3", 4, 60)], "memory": 0.5, "command": child(m, 10 * MIB, -1)},
    })
    plan_file = tmp_path / "plan.json"
    write_plan(plan, plan_file)
    journal = tmp_path / "journal.jsonl"
    args = ("run", str(plan_file), "--backend", "sim", "--journal", str(journal), "--time-scale", "0.5",
            "--poll", "0.02", "--grace", "2", "--log-dir", str(tmp_path / "logs"), "--json")
    first = _gensolver(*args)
    try:
        wait_for(lambda: len(_started_pids(journal)) >= 2, 60, what="a and b started")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
        before = read_journal(journal)
        assert not events(before, "task_finished")
        pids = {r["task"]: r["pid"] for r in events(before, "started")}
        assert {"a", "b"} <= set(pids) and all(is_alive(p) for p in pids.values())
        second = _gensolver(*args)
        wait_for(lambda: len(_started_pids(journal)) == 4, 60, what="c and d started")
        (m / "release").write_text("")
        out, _ = second.communicate(timeout=90)
        assert second.returncode == 0, out
    finally:
        (m / "release").write_text("")
        kill_groups(_started_pids(journal))
        if first.poll() is None:
            first.kill()
        first.communicate()
    after = read_journal(journal)
    assert after[: len(before)] == before  # append-only
    assert len(events(after, "restart")) == 1
    assert {r["task"]: r["pid"] for r in events(after, "adopted")} == pids
    started = [r["task"] for r in events(after, "started")]
    assert sorted(started) == ["a", "b", "c", "d"]  # each launched exactly once
    outcomes = {r["task"]: r["outcome"] for r in events(after, "task_finished")}
    # adopted processes are not the executor's children: their exit status is unknown ("exited")
    assert outcomes == {t: "exited" if t in pids else "completed" for t in "abcd"}
    runs = sorted(mk["env"]["GENSOLVER_TASK"] for mk in markers(m))
    assert runs == ["a", "b", "c", "d"]  # nothing lost, nothing run twice
    assert after[-1]["event"] == "finished"


def test_restart_relaunches_a_lost_process_and_refuses_a_second_executor(tmp_path: Path) -> None:
    m = tmp_path / "markers"
    m.mkdir()
    plan = plan_of({"gpu0": 1}, {"a": {"at": [("gpu0", 0, 60)], "memory": 0.25,
                                      "command": child(m, 10 * MIB, 30.0, 0, 0.2)}})
    plan_file = tmp_path / "plan.json"
    write_plan(plan, plan_file)
    journal = tmp_path / "journal.jsonl"
    args = ("run", str(plan_file), "--backend", "sim", "--journal", str(journal), "--time-scale", "0.5", "--poll", "0.02")
    first = _gensolver(*args)
    try:
        wait_for(lambda: _started_pids(journal), 60, what="a started")
        # a second executor on a live journal is refused (bad input, exit 2)
        other = _gensolver(*args)
        out, _ = other.communicate(timeout=60)
        assert other.returncode == 2 and "in use by another executor" in out
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
        (pid,) = _started_pids(journal)
        os.killpg(pid, signal.SIGKILL)  # the task dies with its executor
        wait_for(lambda: not is_alive(pid), 10, what="task gone")
        second = _gensolver(*args)
        out, _ = second.communicate(timeout=90)
        assert second.returncode == 0, out
    finally:
        kill_groups(_started_pids(journal))
        if first.poll() is None:
            first.kill()
        first.communicate()
    after = read_journal(journal)
    (lost,) = events(after, "lost", "a")
    assert lost["pid"] == pid and lost["action"] == "restart"
    assert [r["attempt"] for r in events(after, "started", "a")] == [1, 2]
    resumed = [mk["env"]["GENSOLVER_RESUME"] for mk in sorted(markers(m), key=lambda mk: mk["t"])]
    assert resumed == ["0", "1"]
    assert events(after, "task_finished", "a")[0]["outcome"] == "completed"
