"""``gensolver.gpuround/v1`` documents: every bad field is an InstanceError naming it by JSON pointer.

Each case mutates a valid document (the ``to_dict`` of a real round) in one place and checks the
pointer and the reason; none of them may leak a KeyError/TypeError or be silently coerced.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import typer

from gensolver.model import GpuRound, GpuSpec, InstanceError, Task, uniform_gpus


def _round() -> GpuRound:
    tasks = (Task("t1", 30.0, 18.0, 2, 10.0, command=("sleep", "0.2")),
             Task("t2", 20.0, 10.0, 1, 5.0, tenant="team-a", command=("true",)))
    return GpuRound(uniform_gpus([80, 40]), tasks, 6, 1.0, 2, "r1", {"team-a": 7.5})


def _doc() -> dict[str, Any]:
    return json.loads(json.dumps(_round().to_dict()))


def _set(path: str, value: Any) -> Callable[[dict], None]:
    *parents, last = path.strip("/").split("/")

    def apply(doc: dict) -> None:
        cur: Any = doc
        for p in parents:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        cur[int(last) if isinstance(cur, list) else last] = value
    return apply


def _drop(path: str) -> Callable[[dict], None]:
    *parents, last = path.strip("/").split("/")

    def apply(doc: dict) -> None:
        cur: Any = doc
        for p in parents:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        del cur[int(last) if isinstance(cur, list) else last]
    return apply


BAD: list[tuple[Callable[[dict], None], str, str]] = [
    # top level: missing, wrong type, not an integer, out of range, unknown
    (_drop("/steps"), "/steps", "missing required field"),
    (_drop("/gpus"), "/gpus", "missing required field"),
    (_drop("/tasks"), "/tasks", "missing required field"),
    (_set("/steps", None), "/steps", "must be a positive integer, got null"),
    (_set("/steps", "six"), "/steps", "must be a positive integer, got str 'six'"),
    (_set("/steps", "6"), "/steps", "must be a positive integer"),
    (_set("/steps", 2.7), "/steps", "must be a positive integer, got float 2.7"),
    (_set("/steps", 6.0), "/steps", "must be a positive integer"),
    (_set("/steps", True), "/steps", "must be a positive integer"),
    (_set("/steps", 0), "/steps", "must be a positive integer"),
    (_set("/step_seconds", "x"), "/step_seconds", "must be a finite positive number, got str 'x'"),
    (_set("/step_seconds", -1), "/step_seconds", "must be a finite positive number"),
    (_set("/step_seconds", 0), "/step_seconds", "must be a finite positive number"),
    (_set("/step_seconds", float("inf")), "/step_seconds", "must be a finite positive number"),
    (_set("/step_seconds", None), "/step_seconds", "must be a finite positive number, got null"),
    (_set("/memory_levels", 0), "/memory_levels", "must be a positive integer"),
    (_set("/memory_levels", -3), "/memory_levels", "must be a positive integer"),
    (_set("/memory_levels", 2.5), "/memory_levels", "must be a positive integer"),
    (_set("/name", 5), "/name", "expected a string, got int 5"),
    (_set("/name", None), "/name", "expected a string, got null"),
    (_set("/budgets", [1]), "/budgets", "expected an object"),
    (_set("/budgets", None), "/budgets", "expected an object"),
    (_set("/budgets", {"team-a": -5}), "/budgets/team-a", "must be a finite non-negative number"),
    (_set("/budgets", {"team-a": "x"}), "/budgets/team-a", "must be a finite non-negative number, got str 'x'"),
    (_set("/budgets", {"team-a": float("nan")}), "/budgets/team-a", "must be a finite non-negative number"),
    (_set("/budgets", {"team-a": True}), "/budgets/team-a", "must be a finite non-negative number"),
    (_set("/budgets", {"team-b": 1.0}), "/budgets/team-b", "neither a task id nor a tenant"),
    (_set("/bogus", 1), "/bogus", "unknown field 'bogus'"),
    (_set("/gpus", {}), "/gpus", "expected a list, got dict"),
    (_set("/tasks", {}), "/tasks", "expected a list, got dict"),
    (_set("/gpus", []), "/gpus", "must not be empty"),
    # GPUs
    (_set("/gpus/0", 5), "/gpus/0", "expected an object, got int 5"),
    (_drop("/gpus/0/id"), "/gpus/0/id", "missing required field"),
    (_drop("/gpus/1/memory"), "/gpus/1/memory", "missing required field"),
    (_set("/gpus/0/bogus", 1), "/gpus/0/bogus", "unknown field 'bogus'"),
    (_set("/gpus/0/id", None), "/gpus/0/id", "expected a non-empty string, got null"),
    (_set("/gpus/0/id", 3), "/gpus/0/id", "expected a non-empty string, got int 3"),
    (_set("/gpus/0/id", ""), "/gpus/0/id", "expected a non-empty string"),
    (_set("/gpus/1/id", "gpu0"), "/gpus/1/id", "duplicate GPU id 'gpu0' (also /gpus/0)"),
    (_set("/gpus/0/memory", "80"), "/gpus/0/memory", "must be a finite positive number, got str '80'"),
    (_set("/gpus/0/memory", -80), "/gpus/0/memory", "must be a finite positive number"),
    (_set("/gpus/0/memory", 0), "/gpus/0/memory", "must be a finite positive number"),
    (_set("/gpus/0/memory", float("nan")), "/gpus/0/memory", "must be a finite positive number"),
    (_set("/gpus/0/memory", None), "/gpus/0/memory", "must be a finite positive number, got null"),
    (_set("/gpus/1/compute", "1"), "/gpus/1/compute", "must be a finite positive number"),
    (_set("/gpus/1/compute", False), "/gpus/1/compute", "must be a finite positive number"),
    (_set("/gpus/0/node", 0), "/gpus/0/node", "expected a string, got int 0"),
    (_set("/gpus/0/model", None), "/gpus/0/model", "expected a string, got null"),
    # tasks
    (_set("/tasks/1", 7), "/tasks/1", "expected an object, got int 7"),
    (_drop("/tasks/0/duration"), "/tasks/0/duration", "missing required field"),
    (_drop("/tasks/1/id"), "/tasks/1/id", "missing required field"),
    (_set("/tasks/0/bogus", 3), "/tasks/0/bogus", "unknown field 'bogus'"),
    (_set("/tasks/0/id", None), "/tasks/0/id", "expected a non-empty string, got null"),
    (_set("/tasks/1/id", 2), "/tasks/1/id", "expected a non-empty string, got int 2"),
    (_set("/tasks/1/id", "t1"), "/tasks/1/id", "duplicate task id 't1' (also /tasks/0)"),
    (_set("/tasks/1/duration", 2.5), "/tasks/1/duration", "must be a positive integer"),
    (_set("/tasks/1/duration", "2"), "/tasks/1/duration", "must be a positive integer"),
    (_set("/tasks/0/value", "10"), "/tasks/0/value", "must be a finite non-negative number"),
    (_set("/tasks/0/value", -1), "/tasks/0/value", "must be a finite non-negative number"),
    (_set("/tasks/0/value", float("nan")), "/tasks/0/value", "must be a finite non-negative number"),
    (_set("/tasks/0/preferred_memory", None), "/tasks/0/preferred_memory", "must be a finite non-negative number"),
    (_set("/tasks/0/min_memory", 40.0), "/tasks/0/min_memory", "need 0 < min_memory <= preferred_memory"),
    (_set("/tasks/0/urgency", 1.5), "/tasks/0/urgency", "must be in [0, 1]"),
    (_set("/tasks/0/compute", 0), "/tasks/0/compute", "must be in (0, 1]"),
    (_set("/tasks/0/preemptible", "no"), "/tasks/0/preemptible", "expected true or false, got str 'no'"),
    (_set("/tasks/0/preemptible", 1), "/tasks/0/preemptible", "expected true or false, got int 1"),
    (_set("/tasks/0/preemptible", None), "/tasks/0/preemptible", "expected true or false, got null"),
    (_set("/tasks/0/release", -1), "/tasks/0/release", "must be a non-negative integer"),
    (_set("/tasks/0/release", 0.5), "/tasks/0/release", "must be a non-negative integer"),
    (_set("/tasks/0/deadline", True), "/tasks/0/deadline", "must be an integer after release"),
    (_set("/tasks/0/deadline", "5"), "/tasks/0/deadline", "must be an integer after release"),
    (_set("/tasks/0/gpus", 0), "/tasks/0/gpus", "must be a positive integer"),
    (_set("/tasks/0/tenant", 5), "/tasks/0/tenant", "expected a string, got int 5"),
    (_set("/tasks/0/tenant", None), "/tasks/0/tenant", "expected a string, got null"),
    (_set("/tasks/0/command", 5), "/tasks/0/command", "expected a list of strings or a string, got int 5"),
    (_set("/tasks/0/command", None), "/tasks/0/command", "expected a list of strings or a string, got null"),
    (_set("/tasks/0/command", {"a": 1}), "/tasks/0/command", "expected a list of strings or a string"),
    (_set("/tasks/0/command", [1, 2]), "/tasks/0/command/0", "expected a string, got int 1"),
    (_set("/tasks/0/command", ["sleep", 1]), "/tasks/0/command/1", "expected a string, got int 1"),
    (_set("/tasks/0/command", ["sleep", None]), "/tasks/0/command/1", "expected a string, got null"),
    (_set("/tasks/0/command", "echo 'unclosed"), "/tasks/0/command", "cannot split"),
]


@pytest.mark.parametrize("mutate,pointer,message", BAD, ids=[f"{p}:{m[:30]}" for _, p, m in BAD])
def test_bad_round_field_is_named(mutate: Callable[[dict], None], pointer: str, message: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(InstanceError) as exc:
        GpuRound.from_dict(doc)
    assert exc.value.pointer == pointer, str(exc.value)
    assert message in exc.value.reason, str(exc.value)


@pytest.mark.parametrize("doc,pointer,message", [
    ([], "", "expected an object, got list"),
    (None, "", "expected an object, got NoneType"),
    ({"schema": "gensolver.instance/v1"}, "/schema", "expected 'gensolver.gpuround/v1'"),
])
def test_bad_round_document(doc: Any, pointer: str, message: str) -> None:
    with pytest.raises(InstanceError) as exc:
        GpuRound.from_dict(doc)
    assert exc.value.pointer == pointer and message in exc.value.reason


def test_valid_round_round_trips_unchanged() -> None:
    doc = _doc()
    rnd = GpuRound.from_dict(copy.deepcopy(doc))
    assert rnd.to_dict() == doc
    assert rnd.tasks[0].command == ("sleep", "0.2")
    assert rnd.tasks[1].tenant == "team-a" and dict(rnd.budgets) == {"team-a": 7.5}
    assert len(rnd.expand().bids) > 0


def test_optional_fields_take_their_defaults() -> None:
    doc = {"schema": "gensolver.gpuround/v1", "steps": 3, "gpus": [{"id": "g", "memory": 16}],
           "tasks": [{"id": "a", "preferred_memory": 8, "min_memory": 4, "duration": 1, "value": 2}]}
    rnd = GpuRound.from_dict(doc)
    assert (rnd.step_seconds, rnd.memory_levels, rnd.name, dict(rnd.budgets)) == (60.0, 3, "", {})
    assert rnd.gpus[0] == GpuSpec("g", 16)
    assert rnd.tasks[0].command == () and rnd.tasks[0].deadline is None and rnd.tasks[0].preemptible is True


@pytest.mark.parametrize("command,argv", [
    ("sleep 1", ("sleep", "1")),
    ("python train.py --name 'my run'", ("python", "train.py", "--name", "my run")),
    ("", ()),
    ([], ()),
    (["echo", "a b"], ("echo", "a b")),
])
def test_command_string_is_split_like_a_shell(command: Any, argv: tuple[str, ...]) -> None:
    doc = _doc()
    doc["tasks"][0]["command"] = command
    rnd = GpuRound.from_dict(doc)
    assert rnd.tasks[0].command == argv
    assert rnd.to_dict()["tasks"][0]["command"] == list(argv)


def test_hand_built_rounds_keep_numpy_numbers() -> None:
    # generators pass numpy integers and floats; they stay valid
    rnd = GpuRound(uniform_gpus([np.float64(16.0)]), (Task("a", 8.0, 4.0, np.int64(2), 3.0, preemptible=np.bool_(True)),),
                   np.int64(4), np.float64(30.0), np.int64(2))
    assert len(rnd.expand().bids) > 0


def test_budget_keyed_by_task_id_is_accepted() -> None:
    doc = _doc()
    doc["budgets"] = {"t1": 0, "team-a": 3}
    assert dict(GpuRound.from_dict(doc).budgets) == {"t1": 0, "team-a": 3}


@pytest.mark.parametrize("mutate,pointer", [
    (_drop("/steps"), "/steps"),                       # was KeyError 'steps'
    (_set("/steps", None), "/steps"),                  # was TypeError from int(None)
    (_set("/gpus/0/memory", "80"), "/gpus/0/memory"),  # was TypeError 'must be real number'
    (_set("/budgets", [1]), "/budgets"),               # was TypeError from dict([1])
    (_set("/tasks/0/id", None), "/tasks/0/id"),        # was TypeError from sorting None with str
])
def test_plan_command_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               mutate: Callable[[dict], None], pointer: str) -> None:
    from gensolver.cli.run_cmd import plan_command

    doc = _doc()
    mutate(doc)
    src = tmp_path / "round.json"
    src.write_text(json.dumps(doc))
    with pytest.raises(typer.Exit) as exc:
        plan_command(file=src, output=tmp_path / "plan.json", method="auto", time_limit=None, gantt=None)
    assert exc.value.exit_code == 2
    assert re.search(f"round.json: {re.escape(pointer)}: ", capsys.readouterr().err)
    assert not (tmp_path / "plan.json").exists()


# ---------------------------------------------------------------- integers beyond a double's range
# (fuzz finding, ``fuzz/corpus/api/big-task``): ``math.isfinite(10**400)`` raises OverflowError, and
# Python refuses ``repr`` of an int over 4,300 digits; both leaked from the model's checks.
HUGE = [10**400, -(10**400), 10**5000]


@pytest.mark.parametrize("value", HUGE, ids=["1e400", "-1e400", "1e5000"])
@pytest.mark.parametrize("name", ["preferred_memory", "min_memory", "value", "urgency", "elasticity", "compute"])
def test_a_task_number_beyond_a_double_is_refused_by_name(name: str, value: int) -> None:
    fields: dict[str, Any] = {"id": "t", "preferred_memory": 8.0, "min_memory": 4.0, "duration": 3, "value": 1.0,
                              name: value}
    with pytest.raises(InstanceError, match=f"/tasks/t/{name}: must be a finite non-negative number, got int of "
                                            r"about \d+ digits"):
        Task(**fields)


@pytest.mark.parametrize("name", ["duration", "gpus", "release", "deadline"])
def test_a_huge_negative_integer_is_named_without_printing_it(name: str) -> None:
    with pytest.raises(InstanceError, match=f"/tasks/t/{name}: .*got int of about 5000 digits"):
        Task(**{"id": "t", "preferred_memory": 8.0, "min_memory": 4.0, "duration": 3, "value": 1.0,
                name: -(10**5000)})


@pytest.mark.parametrize("value", HUGE, ids=["1e400", "-1e400", "1e5000"])
def test_a_round_number_beyond_a_double_is_refused_by_name(value: int) -> None:
    r = _round()
    with pytest.raises(InstanceError, match="/step_seconds: must be a finite positive number"):
        GpuRound(r.gpus, r.tasks, 6, value)
    with pytest.raises(InstanceError, match="/gpus/0/memory: must be a finite positive number"):
        GpuRound((GpuSpec("g", value),), r.tasks, 6)
    with pytest.raises(InstanceError, match="/budgets/team-a: must be a finite non-negative number"):
        GpuRound(r.gpus, r.tasks, 6, budgets={"team-a": value})
    with pytest.raises(InstanceError, match="int of about .* is neither a task id nor a tenant"):
        GpuRound(r.gpus, r.tasks, 6, budgets={value: 1.0})
