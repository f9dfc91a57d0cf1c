"""Executor hardening (issue 20, items 10, 11, 15): log names, log size, the whole process tree
at expiry, a launch interrupted by the executor's death, --json with children's output,
bounded --sim-devices."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gensolver.executor import (
    ExecutorPolicy,
    Journal,
    ManualClock,
    PlanRunner,
    SimulatedBackend,
    read_journal,
    write_plan,
)
from gensolver.executor.procs import is_alive

from .helpers import MIB, events, kill_groups, plan_of, wait_for

SAY = "import os, sys; print('I am', os.environ['GENSOLVER_TASK']); sys.stdout.flush()"


def _sim(plan, tmp: Path) -> SimulatedBackend:
    return SimulatedBackend([(d.id, d.memory) for d in plan.devices], state_dir=tmp / "sim")


def test_log_and_usage_file_names_do_not_collide(tmp_path: Path) -> None:
    names = ["a b", "a_b", "a%20b", "x/y", "..", "é"]
    plan = plan_of({f"gpu{k}": 1 for k in range(len(names))},
                   {n: {"at": [(f"gpu{k}", 0, 2)], "memory": 0.25, "command": (sys.executable, "-c", SAY)}
                    for k, n in enumerate(names)})
    logs = tmp_path / "logs"
    # a manual clock stands at plan time 0: every child exits inside its window, however slow the machine
    ex = PlanRunner(plan, backend=_sim(plan, tmp_path), journal=tmp_path / "j.jsonl", log_dir=logs, poll_interval=0.02,
                    clock=ManualClock())
    report = ex.run(timeout=60)
    assert {f.task: f.outcome for f in report.feedback} == dict.fromkeys(names, "completed")
    files = sorted(p for p in logs.iterdir())
    assert len(files) == len(names) and all(p.parent == logs for p in files)
    said = sorted(p.read_text().strip() for p in files)
    assert said == sorted(f"I am {n}" for n in names)
    usage = {SimulatedBackend.child_env(_sim(plan, tmp_path), f"run:{n}")["GENSOLVER_SIM_USAGE_FILE"] for n in names}
    assert len(usage) == len(names)


def test_a_task_log_is_capped(tmp_path: Path) -> None:
    flood = "import sys\nfor _ in range(600): sys.stdout.write('x' * 65536)\nsys.stdout.flush()"  # ~39 MB
    plan = plan_of({"gpu0": 1}, {"loud": {"at": [("gpu0", 0, 30)], "memory": 0.25,
                                          "command": (sys.executable, "-c", flood)}})
    ex = PlanRunner(plan, backend=_sim(plan, tmp_path), journal=tmp_path / "j.jsonl", log_dir=tmp_path / "logs",
                    poll_interval=0.02, log_max_bytes=MIB, clock=ManualClock())
    report = ex.run(timeout=60)
    assert report.feedback[0].outcome == "completed"
    (log,) = (tmp_path / "logs").iterdir()
    size = log.stat().st_size
    assert MIB <= size <= MIB + 200, size
    assert log.read_bytes().rstrip().endswith(b"bytes]")
    with pytest.raises(ValueError, match="log_max_bytes"):
        PlanRunner(plan, backend=_sim(plan, tmp_path), log_max_bytes=0)


GRANDCHILD = r"""
import subprocess, sys, time
p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)  # setsid
open(sys.argv[1], "w").write(str(p.pid))
time.sleep(120)
"""


def test_expiry_ends_a_setsid_grandchild_too(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    plan = plan_of({"gpu0": 1}, {"t": {"at": [("gpu0", 0, 3)], "memory": 0.25,
                                       "command": (sys.executable, "-c", GRANDCHILD, str(pidfile))}})
    clock = ManualClock()
    ex = PlanRunner(plan, backend=_sim(plan, tmp_path), journal=tmp_path / "j.jsonl", poll_interval=0.02,
                    policy=ExecutorPolicy(grace=0.5), clock=clock)

    def expire_once_the_grandchild_exists() -> None:
        wait_for(lambda: pidfile.exists() and pidfile.read_text(), 60, what="the grandchild's pid")
        clock.set(3.0)  # the grant ends
        while not done.wait(0.02):  # then the grace period passes
            clock.advance(0.1)

    done = threading.Event()
    thread = threading.Thread(target=expire_once_the_grandchild_exists, daemon=True)
    gpid = None
    try:
        thread.start()
        try:
            report = ex.run(timeout=60)
        finally:
            done.set()
        gpid = int(pidfile.read_text())
        assert report.feedback[0].outcome == "expired"
        wait_for(lambda: not is_alive(gpid), 10, what="the setsid grandchild gone")
    finally:
        if gpid is not None:
            kill_groups([gpid])


def test_a_launch_cut_by_the_executors_death_is_labelled_lost(tmp_path: Path) -> None:
    plan = plan_of({"gpu0": 1}, {"t": {"at": [("gpu0", 0, 2)], "memory": 0.25, "command": ("true",)}})
    journal = tmp_path / "j.jsonl"
    j = Journal(journal)
    j.append("plan", plan=plan.name, digest=plan.digest, t0=time.time() - 100, time_scale=1.0, pid=1)
    j.append("launching", task="t", run=0, attempt=1, run_id="nobody-has-this-id:t:0:1")
    j.close()
    PlanRunner(plan, backend=_sim(plan, tmp_path), journal=journal, poll_interval=0.02).run(timeout=30)
    recs = read_journal(journal)
    (skipped,) = events(recs, "skipped", "t")
    assert "window closed before memory was free" not in skipped["reason"]
    assert "launching" in skipped["reason"]
    assert events(recs, "task_finished", "t")[0]["outcome"] == "lost"


def test_run_json_is_json_without_a_log_dir(tmp_path: Path) -> None:
    plan = plan_of({"gpu0": 1}, {"t": {"at": [("gpu0", 0, 2)], "memory": 0.25, "command": (sys.executable, "-c", SAY)}})
    write_plan(plan, tmp_path / "plan.json")
    script = Path(sys.executable).parent / "gensolver"
    if not script.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    out = subprocess.run([str(script), "run", str(tmp_path / "plan.json"), "--backend", "sim", "--json",
                          "--time-scale", "60", "--poll", "0.02"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["tasks"][0]["outcome"] == "completed"
    assert "I am t" in out.stderr  # the child's output is not lost: it goes to stderr


@pytest.mark.parametrize("value, message", [("lots", "--log-max-bytes: not a memory size"),
                                            ("0", "--log-max-bytes must be at least 1 byte")])
def test_run_refuses_a_bad_log_cap(tmp_path: Path, capsys, value: str, message: str) -> None:
    from gensolver.cli import main

    plan = plan_of({"gpu0": 1}, {"t": {"at": [("gpu0", 0, 2)], "memory": 0.25, "command": ("true",)}})
    write_plan(plan, tmp_path / "plan.json")
    assert main(["run", str(tmp_path / "plan.json"), "--backend", "sim", "--log-max-bytes", value]) == 2
    assert message in capsys.readouterr().err


def test_sim_devices_are_bounded() -> None:
    with pytest.raises(ValueError, match="at most 1024 simulated devices"):
        SimulatedBackend.from_specs(["100000000:16Gi"])
    with pytest.raises(ValueError, match="at most 1024 simulated devices"):
        SimulatedBackend.from_specs(["1000:16Gi", "25:16Gi"])
    assert len(SimulatedBackend.from_specs(["1024:1Gi"]).devices()) == 1024
