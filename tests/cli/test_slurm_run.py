"""Behaviour of :mod:`gensolver.cli.slurm_run` that needs no Slurm: the ``--node-map`` reader,
the outcome a job is reported with, the report and its exit status, and the checks made before
anything is submitted. Submitting, following and cancelling against real Slurm daemons are
tested in ``tests/adapters`` (they need slurmctld/slurmd)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer

from gensolver.adapters.slurm import SKIPPED_EXIT
from gensolver.cli.slurm_run import _outcome, _parse_map, _report, run_slurm


def _exit_code(call) -> int:
    with pytest.raises(typer.Exit) as info:
        call()
    return info.value.exit_code


def test_node_map_items_map_devices_and_a_default_node():
    assert _parse_map(["0=node-a", "gpu=1=node-b", "*=node-c"]) == ({"0": "node-a", "gpu=1": "node-b"}, "node-c")
    assert _parse_map([]) == ({}, None)


@pytest.mark.parametrize("items, message", [
    (["0"], "expects PLAN_DEVICE=NODE"), (["=n"], "expects PLAN_DEVICE=NODE"), (["0="], "expects PLAN_DEVICE=NODE"),
    (["0=a", "0=b"], "device '0' is mapped twice"),
])
def test_a_bad_node_map_exits_2_naming_the_option(items, message, capsys):
    assert _exit_code(lambda: _parse_map(items)) == 2
    err = capsys.readouterr().err
    assert "--node-map" in err and message in err


def test_a_late_start_reads_as_skipped_and_any_other_state_as_slurms():
    assert _outcome("FAILED", f"{SKIPPED_EXIT}:0") == "SKIPPED"
    assert _outcome("FAILED", f"{SKIPPED_EXIT + 1}:0") == "FAILED"
    assert _outcome("COMPLETED", "0:0") == "COMPLETED"
    assert _outcome("TIMEOUT", f"{SKIPPED_EXIT}:0") == "TIMEOUT"  # only a failed exit of that code is a skip


def _job(state: str, exit_code: str = "0:0", job: str = "1") -> SimpleNamespace:
    return SimpleNamespace(state=state, exit_code=exit_code, job_id=job, nodes="n1", start="s", end="e",
                           tres={"gres/gpu": "1"})


def _book(skipped: dict[str, bool]) -> SimpleNamespace:
    """A journal with runs skipped at submission (``key -> whether the run had a command``)."""
    return SimpleNamespace(skipped=set(skipped), records=[{"event": "skipped", "key": k, "command": c}
                                                          for k, c in skipped.items()])


PLAN = SimpleNamespace(name="p", digest="d")


@pytest.mark.parametrize("states, skipped, ok", [
    ({"a": _job("COMPLETED"), "b": _job("COMPLETED", job="2")}, {}, True),
    ({"a": _job("COMPLETED"), "b": _job("FAILED", "1:0", job="2")}, {}, False),
    ({"a": _job("COMPLETED"), "b": _job("FAILED", f"{SKIPPED_EXIT}:0", job="2")}, {}, False),
    ({"a": _job("COMPLETED")}, {"idle": False}, True),   # a run without a command whose end had passed
    ({"a": _job("COMPLETED")}, {"late": True}, False),   # a run with a command never ran
])
def test_the_report_lists_every_job_and_exits_1_unless_all_completed(states, skipped, ok, capsys):
    def report() -> None:
        _report(PLAN, Path("plan.yaml"), _book(skipped), states, as_json=True)

    if ok:
        report()
    else:
        assert _exit_code(report) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is ok and doc["backend"] == "slurm"
    # every job and every skipped run once; outcomes as the states and exit codes say
    assert sorted(j["key"] for j in doc["jobs"]) == sorted([*states, *skipped])
    for j in doc["jobs"]:
        if j["key"] in skipped:
            assert j["outcome"] == "SKIPPED" and j["job"] is None
        else:
            s = states[j["key"]]
            assert j["state"] == s.state and j["job"] == s.job_id
            skip = s.state == "FAILED" and s.exit_code.startswith(f"{SKIPPED_EXIT}:")
            assert j["outcome"] == ("SKIPPED" if skip else s.state)


def test_the_text_report_names_each_job(capsys):
    states = {"a": _job("COMPLETED"), "b": _job("FAILED", f"{SKIPPED_EXIT}:0", job="7")}
    assert _exit_code(lambda: _report(PLAN, Path("plan.yaml"), _book({"c": True}), states, as_json=False)) == 1
    out = capsys.readouterr().out
    assert "a: job 1 COMPLETED" in out and "b: job 7 SKIPPED" in out and "c: SKIPPED (not submitted" in out


def _run(plan: Path, **kw):
    args = dict(node_map=[], journal=None, time_scale=1.0, grace=1.0, poll=1.0, timeout=None, log_dir=None,
                as_json=True, options={})
    args.update(kw)
    return lambda: run_slurm(plan, **args)


def test_executor_only_options_and_bad_plans_exit_2_before_anything_is_submitted(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text("{not json")
    assert _exit_code(_run(plan, options={"--max-memory": "4Gi"})) == 2
    assert "--max-memory: not available with --backend slurm" in capsys.readouterr().err
    assert _exit_code(_run(plan)) == 2
    assert str(plan.name) in capsys.readouterr().err
    assert _exit_code(_run(plan, node_map=["oops"])) == 2
    assert "--node-map" in capsys.readouterr().err
