"""The executor with :class:`SimulatedBackend` and real short-lived subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gensolver.executor import ExecutorPolicy, ManualClock, PlanRunner, SimulatedBackend, read_journal
from gensolver.executor.procs import proc_state

from .helpers import GIB, MIB, child, events, kill_groups, markers, plan_of, wait_for


class Harness:
    """Runs an executor in a thread, collecting its records; kills leftovers at teardown.

    Its executors run on a :class:`ManualClock` (``self.clock``, plan time 0 at clock 0 with
    ``time_scale=1``): a window opens or closes only when a test moves the clock, after waiting
    for the events it needs, so the machine's speed cannot change a story.
    """

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.clock = ManualClock()
        self.marker = tmp / "markers"
        self.marker.mkdir()
        self.records: list[dict[str, Any]] = []
        self.pids: list[int] = []
        self.thread: threading.Thread | None = None
        self.report = None
        self.error: BaseException | None = None

    def on_event(self, rec: dict[str, Any]) -> None:
        self.records.append(rec)
        if rec["event"] == "started":
            self.pids.append(rec["pid"])

    def executor(self, plan, backend=None, **kw: Any) -> PlanRunner:
        backend = backend or SimulatedBackend([(d.id, d.memory) for d in plan.devices], state_dir=self.tmp / "sim")
        kw.setdefault("poll_interval", 0.02)
        kw.setdefault("policy", ExecutorPolicy(grace=2.0))
        kw.setdefault("clock", self.clock)
        return PlanRunner(plan, backend=backend, journal=self.tmp / "journal.jsonl", on_event=self.on_event,
                        log_dir=self.tmp / "logs", **kw)

    def start(self, ex: PlanRunner) -> None:
        def target() -> None:
            try:
                self.report = ex.run(timeout=60)
            except BaseException as exc:  # surfaced by join()
                self.error = exc
        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 60.0):
        assert self.thread is not None
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "executor did not finish"
        if self.error is not None:
            raise self.error
        return self.report

    def wait_event(self, name: str, task: str | None = None, timeout: float = 60.0) -> dict[str, Any]:
        return wait_for(lambda: next(iter(events(list(self.records), name, task)), None), timeout, what=f"{name} {task}")

    def move_to(self, plan_time: float) -> None:
        """Move the clock to ``plan_time`` and wait until the executor has polled at that time."""
        target = self.clock.polls + 2
        self.clock.set(plan_time)
        wait_for(lambda: self.clock.polls >= target or self.thread is None or not self.thread.is_alive(), 60,
                 interval=0.005, what=f"the executor's polls at plan time {plan_time}")


@pytest.fixture
def harness(tmp_path: Path):
    h = Harness(tmp_path)
    yield h
    kill_groups(h.pids)


def test_start_order_times_env_and_feedback(harness: Harness) -> None:
    m = harness.marker
    plan = plan_of({"gpu0": 1}, {
        "a": {"at": [("gpu0", 0, 4)], "memory": 0.25, "compute": 0.5, "command": child(m, 100 * MIB, -1)},
        "b": {"at": [("gpu0", 2, 4)], "memory": 0.5, "compute": 0.25, "command": child(m, 200 * MIB, -1)},
    })
    harness.start(harness.executor(plan))
    wait_for(lambda: len(markers(m)) == 1, 60, what="a's marker")
    harness.move_to(1.999)  # b is not due yet
    assert not events(harness.records, "started", "b")
    harness.move_to(2.0)
    harness.wait_event("started", "b")
    wait_for(lambda: len(markers(m)) == 2, 60, what="b's marker")
    harness.wait_event("usage", "a")  # both usage reports seen before the children exit
    harness.wait_event("usage", "b")
    (m / "release").write_text("")
    report = harness.join()
    assert report.outcomes == {"a": "completed", "b": "completed"}
    journal = read_journal(harness.tmp / "journal.jsonl")
    started = {r["task"]: r for r in events(journal, "started")}
    assert started["a"]["time"] == 0.0 and started["b"]["time"] == 2.0  # each at its plan start
    runs = {mk["env"]["GENSOLVER_TASK"]: mk for mk in markers(m)}
    assert set(runs) == {"a", "b"}
    assert runs["a"]["t"] < runs["b"]["t"]
    env = runs["a"]["env"]
    assert env["CUDA_VISIBLE_DEVICES"] == "gpu0"
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=256M"
    assert env["GENSOLVER_MEMORY_LIMIT"] == str(GIB // 4)
    assert env["GENSOLVER_RESUME"] == "0"
    assert runs["b"]["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    fa = report.for_task("a")
    assert (fa.exit_code, fa.attempts, fa.granted_memory, fa.over_grant) == (0, 1, GIB // 4, False)
    assert fa.peak_memory == 100 * MIB
    assert fa.run_seconds == 2.0  # plan seconds on the clock, from its start to its exit
    doc = report.to_dict()
    assert doc["schema"] == "gensolver.feedback/v1" and json.dumps(doc)
    assert [r["seq"] for r in journal] == list(range(len(journal)))
    assert journal[-1]["event"] == "finished"


def test_waits_while_a_foreign_process_holds_the_memory(harness: Harness) -> None:
    plan = plan_of({"gpu0": 1}, {"a": {"at": [("gpu0", 0, 100)], "memory": 0.5,
                                      "command": child(harness.marker, 10 * MIB, 0.2)}})
    backend = SimulatedBackend([("gpu0", GIB)], state_dir=harness.tmp / "sim")
    env = dict(os.environ, GENSOLVER_SIM_USAGE_FILE=str(backend.state_dir / "foreign.usage"),
               CUDA_VISIBLE_DEVICES="gpu0")
    code = ("import sys, time; from gensolver.executor import report_usage; "
            "report_usage(900 * 2**20); print('ready', flush=True); time.sleep(60)")
    foreign = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert foreign.stdout is not None and foreign.stdout.readline().strip() == "ready"
        assert backend.memory_info("gpu0").free == GIB - 900 * MIB
        harness.start(harness.executor(plan, backend=backend))
        waiting = harness.wait_event("waiting", "a")
        assert waiting["need"] == GIB // 2 and waiting["free"] == GIB - 900 * MIB
        harness.move_to(50.0)  # polls go on, later in the window: still waiting
        assert not events(harness.records, "started"), "started into an OOM"
        harness.clock.advance(1.0)
        killed_at = harness.clock.time()
    finally:
        foreign.kill()
        foreign.wait()
    report = harness.join()
    assert report.outcomes == {"a": "completed"}
    assert harness.wait_event("started", "a")["time"] >= killed_at


@pytest.mark.parametrize("policy", ["warn", "suspend", "terminate"])
def test_over_grant_policies(harness: Harness, policy: str) -> None:
    plan = plan_of({"gpu0": 1}, {"a": {"at": [("gpu0", 0, 3)], "memory": 0.125,
                                      "command": child(harness.marker, 256 * MIB, 30)}})
    ex = harness.executor(plan, policy=ExecutorPolicy(over_grant=policy, grace=2.0))
    with pytest.warns(RuntimeWarning, match="over its grant") if policy == "warn" else _nothing():
        harness.start(ex)
        over = harness.wait_event("over_grant", "a")
        assert (over["used"], over["grant"], over["action"]) == (256 * MIB, 128 * MIB, policy)
        pid = over["pid"]
        if policy == "warn":
            harness.clock.wait_polls(5)
            assert proc_state(pid) in ("R", "S", "D")  # still running
            harness.move_to(3.0)  # its grant ends
        elif policy == "suspend":
            wait_for(lambda: proc_state(pid) == "T", 10, what="stopped state T")
            assert harness.wait_event("suspended", "a")["reason"] == "over_grant"
            harness.move_to(3.0)  # stopped until its run ends, then terminated
        else:
            wait_for(lambda: proc_state(pid) in (None, "Z"), 10, what="terminated process")
        report = harness.join()
    fb = report.for_task("a")
    assert fb.over_grant and fb.peak_memory == 256 * MIB
    if policy == "warn":
        assert fb.outcome == "expired"  # ran until its grant ended
        assert harness.wait_event("signalled", "a")["reason"] == "expired"
    else:
        assert fb.outcome == "killed"
        assert fb.exit_code == -15  # SIGTERM (after SIGCONT for the stopped one)
    assert proc_state(pid) in (None, "Z")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def test_preemption_suspend_resume_and_checkpoint_move(harness: Harness) -> None:
    m = harness.marker
    plan = plan_of({"gpu0": 1, "gpu1": 1}, {
        # gap on gpu0: suspended at t=2, resumed at t=3, expires at t=4
        "s": {"at": [("gpu0", 0, 2), ("gpu0", 3, 4)], "memory": 0.25, "command": child(m, 50 * MIB, 30)},
        # moves gpu0 -> gpu1 at t=2: SIGTERM, relaunched on gpu1 with GENSOLVER_RESUME=1
        "c": {"at": [("gpu0", 0, 2), ("gpu1", 2, 4)], "memory": 0.25, "command": child(m, 50 * MIB, 30, 0, 0.2)},
    })
    assert {p.task: p.mode for p in plan.preemptions} == {"s": "suspend", "c": "checkpoint"}
    harness.start(harness.executor(plan))
    wait_for(lambda: len(markers(m)) == 2, 60, what="both tasks running")
    harness.move_to(2.0)
    susp = harness.wait_event("suspended", "s")
    assert susp["reason"] == "preemption"
    wait_for(lambda: proc_state(susp["pid"]) == "T", 10, what="suspended task in state T")
    harness.wait_event("task_finished", "c")  # moved to gpu1, resumed from its checkpoint, done
    harness.move_to(3.0)
    resumed = harness.wait_event("resumed", "s")
    assert resumed["pid"] == susp["pid"] and resumed["time"] >= susp["time"]
    wait_for(lambda: proc_state(susp["pid"]) in ("R", "S"), 10, what="resumed task running")
    harness.move_to(4.0)
    report = harness.join()
    assert report.outcomes == {"s": "expired", "c": "completed"}
    runs = sorted((mk for mk in markers(m) if mk["env"]["GENSOLVER_TASK"] == "c"), key=lambda mk: mk["t"])
    assert [r["env"]["CUDA_VISIBLE_DEVICES"] for r in runs] == ["gpu0", "gpu1"]
    assert [r["env"]["GENSOLVER_RESUME"] for r in runs] == ["0", "1"]
    assert [e["outcome"] for e in events(harness.records, "exited", "c")] == ["preempted", "completed"]
    assert report.for_task("c").attempts == 2
    assert len([mk for mk in markers(m) if mk["env"]["GENSOLVER_TASK"] == "s"]) == 1  # resumed, not relaunched


def test_crashing_task_is_recorded(harness: Harness) -> None:
    plan = plan_of({"gpu0": 1}, {"bad": {"at": [("gpu0", 0, 5)], "memory": 0.25,
                                        "command": child(harness.marker, MIB, 0.0, 3)},
                                 "missing": {"at": [("gpu0", 0, 5)], "memory": 0.25,
                                             "command": ["/nonexistent/gensolver-test-binary"]}})
    report = harness.executor(plan).run(timeout=60)  # the clock stands at 0: both exit inside their window
    assert report.outcomes == {"bad": "crashed", "missing": "crashed"}
    assert report.for_task("bad").exit_code == 3
    assert report.for_task("missing").exit_code == 127
    assert not report.ok
    (ex,) = events(read_journal(harness.tmp / "journal.jsonl"), "exited", "missing")
    assert "FileNotFoundError" in ex["error"]
