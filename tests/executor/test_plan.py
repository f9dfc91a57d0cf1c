"""Plans: merging, preemption points, JSON round trip, the independent check, a real solved round."""

from __future__ import annotations

import json

import pytest

from gensolver import solve
from gensolver.executor import (
    PLAN_SCHEMA,
    PlanError,
    check_plan,
    plan_from_dict,
    plot_plan,
    read_plan,
    to_plan,
    write_plan,
)
from gensolver.model import Bid, GpuRound, Instance, Slot, Task
from gensolver.model.tasks import uniform_gpus

from .helpers import GIB, plan_of


def test_consecutive_slots_merge_into_one_entry() -> None:
    plan = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 3)], "memory": 4, "compute": 0.5, "command": ["true"]}})
    (entry,) = plan.device("gpu0").entries
    assert (entry.start, entry.end, entry.memory, entry.compute) == (0.0, 3.0, 4 * GIB, 0.5)
    assert entry.slots == ("gpu0@0", "gpu0@1", "gpu0@2")
    assert entry.command == ("true",)
    assert plan.preemptions == ()
    assert len(plan.runs("a")) == 1


def test_different_grants_do_not_merge() -> None:
    slots = [Slot(f"g@{k}", {"memory": 8.0, "compute": 1.0}, "g", float(k), float(k + 1)) for k in range(2)]
    bid = Bid("b", "t", 1.0, {"g@0": {"memory": 2.0, "compute": 1.0}, "g@1": {"memory": 3.0, "compute": 1.0}})
    plan = to_plan(Instance(tuple(slots), (bid,)), ["b"])
    assert [(e.start, e.end, e.memory) for e in plan.device("g").entries] == [(0, 1, 2 * GIB), (1, 2, 3 * GIB)]
    (run,) = plan.runs("t")  # contiguous: one run, granted the smaller memory
    assert run.memory == 2 * GIB and plan.preemptions == ()


def test_gap_on_same_device_is_a_suspend_point_when_memory_fits() -> None:
    plan = plan_of({"gpu0": 16}, {
        "a": {"at": [("gpu0", 0, 1), ("gpu0", 2, 3)], "memory": 4},
        "b": {"at": [("gpu0", 1, 2)], "memory": 8},
    })
    (p,) = plan.preemptions
    assert (p.task, p.time, p.resume, p.kind, p.mode) == ("a", 1.0, 2.0, "gap", "suspend")
    assert p.from_devices == p.to_devices == ("gpu0",)
    assert check_plan(plan).ok


def test_gap_becomes_checkpoint_when_suspended_memory_would_not_fit() -> None:
    plan = plan_of({"gpu0": 16}, {
        "a": {"at": [("gpu0", 0, 1), ("gpu0", 2, 3)], "memory": 10},
        "b": {"at": [("gpu0", 1, 2)], "memory": 10},
    })
    (p,) = plan.preemptions
    assert p.mode == "checkpoint"
    assert check_plan(plan).ok  # a checkpointed task frees its memory


def test_move_between_devices_is_a_checkpoint_point() -> None:
    plan = plan_of({"gpu0": 16, "gpu1": 16}, {"a": {"at": [("gpu0", 0, 2), ("gpu1", 2, 4)], "memory": 4}})
    (p,) = plan.preemptions
    assert (p.kind, p.mode, p.from_devices, p.to_devices) == ("move", "checkpoint", ("gpu0",), ("gpu1",))
    assert [r.devices for r in plan.runs("a")] == [("gpu0",), ("gpu1",)]


def test_non_preemptible_task_with_gap_is_rejected() -> None:
    with pytest.raises(PlanError, match="not preemptible"):
        plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 1), ("gpu0", 2, 3)], "memory": 4, "preemptible": False}})


def test_slot_without_metadata_is_rejected_with_pointer() -> None:
    inst = Instance((Slot("s", {"memory": 8.0}),), (Bid("b", "t", 1.0, {"s": {"memory": 1.0}}),))
    with pytest.raises(PlanError, match="/slots/s/gpu"):
        to_plan(inst, ["b"])


def test_json_round_trip(tmp_path) -> None:
    plan = plan_of({"gpu0": 16, "gpu1": 8}, {
        "a": {"at": [("gpu0", 0, 1), ("gpu0", 2, 3)], "memory": 4, "compute": 0.25, "command": ["python", "-V"]},
        "b": {"at": [("gpu1", 0, 2), ("gpu0", 2, 3)], "memory": 2},
    })
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    doc = json.loads(path.read_text())
    assert doc["schema"] == PLAN_SCHEMA
    back = read_plan(path)
    assert back.to_dict() == plan.to_dict()
    assert back.digest == plan.digest
    assert back.preemptions == plan.preemptions and back.entries == plan.entries


def test_plan_reader_names_the_bad_place() -> None:
    doc = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 1)], "memory": 4}}).to_dict()
    doc["devices"][0]["entries"][0]["end"] = -1
    with pytest.raises(PlanError, match="/devices/0/entries/0/end"):
        plan_from_dict(doc)
    doc = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 1)], "memory": 4}}).to_dict()
    doc["tasks"][0]["command"] = "rm -rf /"
    with pytest.raises(PlanError, match="shell string"):
        plan_from_dict(doc)
    with pytest.raises(PlanError, match="/schema"):
        plan_from_dict({"schema": "nope"})


def test_plan_reader_refuses_unreadable_files_naming_them(tmp_path) -> None:
    with pytest.raises(PlanError, match="is a directory") as exc:
        read_plan(tmp_path)
    assert exc.value.path == str(tmp_path) and str(exc.value).startswith(str(tmp_path))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\x00\xff\xfe plan")
    with pytest.raises(PlanError, match="not a UTF-8 JSON file") as exc:
        read_plan(binary)
    assert str(exc.value).startswith(str(binary))
    missing = tmp_path / "missing.json"
    with pytest.raises(PlanError, match="no such file") as exc:
        read_plan(missing)
    assert str(exc.value).startswith(str(missing))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(PlanError, match="not JSON"):
        read_plan(deep)
    # a bad document names the file and the JSON pointer
    doc = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 1)], "memory": 4}}).to_dict()
    doc["devices"][0]["entries"][0]["end"] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(PlanError) as exc:
        read_plan(bad)
    assert str(exc.value).startswith(f"{bad}: /devices/0/entries/0/end: ")


def test_plan_reader_refuses_a_non_string_task_reference() -> None:
    doc = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 1), ("gpu0", 2, 3)], "memory": 4}}).to_dict()
    entry_task = json.loads(json.dumps(doc))
    entry_task["devices"][0]["entries"][0]["task"] = ["a"]
    with pytest.raises(PlanError, match="/devices/0/entries/0/task"):
        plan_from_dict(entry_task)
    point_task = json.loads(json.dumps(doc))
    point_task["preemptions"][0]["task"] = {"id": "a"}
    with pytest.raises(PlanError, match="/preemptions/0"):
        plan_from_dict(point_task)


def test_check_plan_catches_an_overcommitted_plan() -> None:
    doc = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 2)], "memory": 10},
                                 "b": {"at": [("gpu0", 2, 4)], "memory": 10}}).to_dict()
    assert check_plan(plan_from_dict(doc)).ok
    doc["devices"][0]["entries"][1]["start"] = 1.0  # b now overlaps a during [1, 2): 20 GiB on 16
    result = check_plan(plan_from_dict(doc))
    assert not result.ok
    (v,) = [v for v in result.violations if v.kind == "memory"]
    assert (v.device, v.time, v.used, v.capacity, v.tasks) == ("gpu0", 1.0, 20 * GIB, 16 * GIB, ("a", "b"))
    # a smaller device given explicitly is checked too
    assert not check_plan(plan_from_dict(doc), 8 * GIB).ok
    assert not check_plan(plan_from_dict(doc), {"gpu0": 8 * GIB}).ok


def test_check_plan_counts_memory_held_by_a_suspended_task() -> None:
    doc = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 1), ("gpu0", 2, 3)], "memory": 10},
                                 "b": {"at": [("gpu0", 1, 2)], "memory": 10}}).to_dict()
    doc["preemptions"][0]["mode"] = "suspend"  # a would keep 10 GiB while b holds 10 GiB
    result = check_plan(plan_from_dict(doc))
    assert not result.ok and result.violations[0].time == 1.0


def test_check_plan_catches_compute_overcommit() -> None:
    doc = plan_of({"gpu0": 16}, {"a": {"at": [("gpu0", 0, 2)], "memory": 1, "compute": 0.6},
                                 "b": {"at": [("gpu0", 0, 2)], "memory": 1, "compute": 0.3}}).to_dict()
    assert check_plan(plan_from_dict(doc)).ok
    doc["devices"][0]["entries"][1]["compute"] = 0.5
    assert [v.kind for v in check_plan(plan_from_dict(doc)).violations] == ["compute"]


def test_plan_from_a_real_solved_gpu_round(tmp_path) -> None:
    tasks = (
        Task("train", 12.0, 6.0, 2, 10.0, compute=0.5, command=("python", "train.py")),
        Task("infer", 4.0, 4.0, 3, 6.0, compute=0.25, command=("python", "serve.py")),
        Task("big", 16.0, 16.0, 1, 8.0, preemptible=False, command=("python", "big.py")),
        Task("gang", 8.0, 8.0, 1, 9.0, gpus=2, compute=0.25, command=("python", "gang.py")),
    )
    rnd = GpuRound(uniform_gpus([16, 16]), tasks, steps=4, step_seconds=30.0, memory_levels=2, name="r")
    inst = rnd.expand()
    alloc = solve(inst, method="auto")
    plan = to_plan(inst, alloc, {t.id: t for t in tasks})
    assert check_plan(plan).ok
    winners = {inst.bids[inst.bid_index[w]].bidder: inst.bids[inst.bid_index[w]] for w in alloc.winners}
    assert {t.id for t in plan.tasks} == set(winners)
    for tid, bid in winners.items():
        ents = plan.entries_of(tid)
        # every slot of the winning bid is covered exactly once, with the bid's grant
        assert sorted(s for e in ents for s in e.slots) == sorted(bid.demand)
        for e in ents:
            assert e.command == rnd.tasks[[t.id for t in tasks].index(tid)].command
            d = bid.demand[e.slots[0]]
            assert e.memory == int(d["memory"] * GIB) and e.compute == d["compute"]
            assert e.end - e.start == 30.0 * len(e.slots)
        assert len(plan.runs(tid)) == 1  # GpuRound bundles are contiguous: one run per task
    png = tmp_path / "plan.png"
    plot_plan(plan, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert read_plan(write_plan(plan, tmp_path / "p.json") or tmp_path / "p.json").to_dict() == plan.to_dict()


def test_plan_command_writes_a_checked_plan_and_gantt(tmp_path) -> None:
    from gensolver.cli import main

    rnd = GpuRound(uniform_gpus([1, 1]), (Task("a", 0.25, 0.25, 2, 10.0, command=("true",)),
                                          Task("b", 0.5, 0.5, 1, 8.0, command=("sleep", "0.1"))), steps=3, step_seconds=1)
    src = tmp_path / "round.json"
    src.write_text(json.dumps(rnd.to_dict()))
    assert main(["plan", str(src), "-o", str(tmp_path / "plan.json"), "--gantt", str(tmp_path / "plan.png")]) == 0
    plan = read_plan(tmp_path / "plan.json")
    assert check_plan(plan).ok and {t.id for t in plan.tasks} == {"a", "b"}
    assert plan.task("b").command == ("sleep", "0.1")
    assert (tmp_path / "plan.png").read_bytes()[:4] == b"\x89PNG"
