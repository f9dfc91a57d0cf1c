"""What a run reports (:mod:`gensolver.executor.report`): ``ok`` decided by the documented
success outcomes, each task's record found by id, and the ``gensolver.feedback/v1`` document
written whole and read back with the standard JSON reader."""

from __future__ import annotations

import json

import pytest

from gensolver.executor.report import FEEDBACK_SCHEMA, SUCCESS_OUTCOMES, ExecutionReport, UsageFeedback


def _fb(task: str, outcome: str) -> UsageFeedback:
    return UsageFeedback(task, outcome, 0 if outcome == "completed" else -9, 3 * 2**30, 4 * 2**30, 12.5, 2,
                         outcome == "killed", ("GPU-a",))


@pytest.mark.parametrize(("outcomes", "ok"), [(["completed", "expired", "exited"], True),
                                               (["completed", "killed"], False), (["failed"], False), ([], True)])
def test_ok_means_every_task_succeeded(outcomes: list[str], ok: bool) -> None:
    report = ExecutionReport("p", "d" * 64, None, tuple(_fb(f"t{k}", o) for k, o in enumerate(outcomes)), 0, 1.0)
    assert report.ok is ok
    assert ok == all(o in ("completed", "expired", "exited") for o in outcomes)
    assert SUCCESS_OUTCOMES == {"completed", "expired", "exited"}  # the documented list
    assert dict(report.outcomes) == {f"t{k}": o for k, o in enumerate(outcomes)}


def test_the_feedback_document_round_trips(tmp_path) -> None:
    report = ExecutionReport("plan-1", "ab" * 32, str(tmp_path / "j"), (_fb("a", "completed"), _fb("b", "killed")),
                             1, 3.25)
    assert report.for_task("b").over_grant and report.for_task("a").exit_code == 0
    with pytest.raises(KeyError):
        report.for_task("c")
    path = tmp_path / "feedback.json"
    report.write_feedback(path)
    doc = json.loads(path.read_text())
    assert doc["schema"] == FEEDBACK_SCHEMA == "gensolver.feedback/v1"
    assert (doc["plan"], doc["digest"], doc["restarts"], doc["seconds"]) == ("plan-1", "ab" * 32, 1, 3.25)
    assert doc["tasks"][1] == {"task": "b", "outcome": "killed", "exit_code": -9, "peak_memory": 3 * 2**30,
                               "granted_memory": 4 * 2**30, "run_seconds": 12.5, "attempts": 2,
                               "over_grant": True, "devices": ["GPU-a"]}
    assert path.read_text().endswith("\n") and [p.name for p in tmp_path.iterdir()] == ["feedback.json"]
