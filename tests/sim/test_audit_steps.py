"""audit_log's per-event checks, each fed a log that breaks exactly one rule."""

from __future__ import annotations

import pytest

from gensolver.sim import audit_log

UP = {"time": 0.0, "kind": "gpu_up", "gpus": ["g"], "memory": 10.0, "compute": 1.0}
ARRIVE = {"time": 0.0, "kind": "arrive", "task": "a", "work": 2.0}
START = {"time": 0.0, "kind": "start", "task": "a", "gpus": ["g"], "memory": 4.0, "compute": 1.0, "speed": 1.0}
FINISH = {"time": 2.0, "kind": "finish", "task": "a"}


def test_a_clean_log_passes() -> None:
    report = audit_log([UP, ARRIVE, START, FINISH], require_complete=True)
    assert report.ok and report.finished == ("a",) and report.executed["a"] == pytest.approx(2.0)


@pytest.mark.parametrize(("log", "needle"), [
    ([UP, ARRIVE, {**FINISH, "time": 1.0}], "finish of a task that is not running"),
    ([UP, ARRIVE, {"time": 1.0, "kind": "stop", "task": "a"}], "stop of a task that is not running"),
    ([UP, ARRIVE, START, {**FINISH, "time": 1.0}], "executed 1 != work 2"),
    ([UP, ARRIVE, {**START, "memory": 11.0}, FINISH], "over capacity"),
    ([UP, ARRIVE, START, FINISH, {"time": 1.0, "kind": "arrive", "task": "b", "work": 1.0}], "time goes backwards"),
    ([UP, {"time": 0.0, "kind": "teleport"}], "unknown event kind 'teleport'"),
    ([UP, {"time": 0.0, "kind": ["start"]}], "unknown event kind"),
    ([UP, {"time": 0.0, "kind": "credit", "tenant": "t", "amount": -1.0}], "balance"),
])
def test_each_broken_rule_is_named(log: list[dict], needle: str) -> None:
    report = audit_log(log)
    assert not report.ok and any(needle in v for v in report.violations), report.violations
