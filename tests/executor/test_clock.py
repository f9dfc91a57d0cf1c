"""The runner's injectable clock: a manual clock moves only when told, and the runner obeys it."""

from __future__ import annotations

import threading

import pytest

from gensolver.executor import SYSTEM_CLOCK, ManualClock, PlanRunner, SimulatedBackend, read_journal

from .helpers import events, plan_of, wait_for


def test_manual_clock_stands_still_and_never_goes_back() -> None:
    clock = ManualClock(5.0, real_sleep=0.001)
    for _ in range(3):
        clock.sleep(10.0)
    assert clock.time() == 5.0 and clock.polls == 3
    assert clock.advance(1.5) == 6.5
    with pytest.raises(ValueError, match="cannot go back"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="cannot go back"):
        clock.set(6.0)
    with pytest.raises(TimeoutError, match="did not poll"):
        clock.wait_polls(1, timeout=0.05)  # nobody polls
    assert SYSTEM_CLOCK.time() > 1e9


def test_a_window_closes_only_when_the_clock_says(tmp_path) -> None:  # noqa: ANN001
    """A task due at plan time 5 is not launched however long the machine takes, until the clock
    reaches 5; then it runs, and its journal carries the clock's times."""
    plan = plan_of({"gpu0": 1}, {"late": {"at": [("gpu0", 5, 6)], "memory": 0.25, "command": ["true"]},
                                 "first": {"at": [("gpu0", 0, 1)], "memory": 0.25, "command": ["true"]}})
    clock = ManualClock(100.0)
    sim = SimulatedBackend([("gpu0", 1 << 30)], state_dir=tmp_path / "sim")
    records: list[dict] = []
    runner = PlanRunner(plan, backend=sim, journal=tmp_path / "j.jsonl", clock=clock, poll_interval=0.01,
                        on_event=records.append)
    thread = threading.Thread(target=runner.run, kwargs={"timeout": 60}, daemon=True)
    thread.start()
    wait_for(lambda: events(list(records), "task_finished", "first"), 60, what="first finished")
    clock.wait_polls(20)
    assert not events(list(records), "started", "late")  # many polls, the clock still before 5
    clock.set(105.0)
    thread.join(60)
    assert not thread.is_alive()
    journal = read_journal(tmp_path / "j.jsonl")
    assert {r["task"]: r["outcome"] for r in events(journal, "task_finished")} == {"first": "completed",
                                                                                  "late": "completed"}
    assert journal[0]["t0"] == 100.0 and events(journal, "started", "late")[0]["time"] == 105.0
