"""``gensolver run JOBS.yaml --market``: GenTasks executed round by round on simulated GPUs,
each round cleared by the one market engine.

Checked independently of the code under test: every round's assignments and charges equal the
event log of ``simulate(policy="market")`` deciding at round boundaries only (the simulator's
own engine loop, not this command's), no GPU is over its memory in any round (summed from the
printed rounds), every task finishes, and a crashing process fails the run (exit 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.market.spec import load_gentasks
from gensolver.model.tasks import GpuSpec
from gensolver.sim import simulate
from tests.market.event_log import sim_state

SLEEP = ["python", "-c", "import time; time.sleep(120)"]  # still running when its lease ends


def _doc(name: str, tenant: str, preferred: int, minutes: int, value: float, urgency: float,
         command: list[str] = SLEEP, arrival: int = 2) -> str:
    """One GenTask (60 s steps), released at step ``arrival`` (the second round at lease 2:
    both the command and the simulator see every task arrive before a boundary)."""
    return (f"apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\n"
            f"metadata: {{name: {name}, labels: {{tenant: {tenant}}}}}\n"
            f"spec:\n  containers: [{{name: c, command: {json.dumps(command)}}}]\n"
            f"  genResources:\n    gpuMemory: {{preferred: {preferred}Gi, urgencyFactor: {urgency}}}\n"
            f"    computeTime: {{duration: {minutes}m, arrival: {arrival}m, preemptible: true}}\n"
            f"    value: {value}\n")


def _jobs(tmp_path: Path, docs: list[str]) -> Path:
    path = tmp_path / "jobs.yaml"
    path.write_text("---\n".join(docs))
    return path


def _run(capsys, jobs: Path, market: dict, *extra: str, scale: str = "0.002") -> tuple[int, dict | None, str]:
    """``gensolver run JOBS --market`` on simulated GPUs; a 2-step lease of 60 s steps lasts
    ``120 * scale`` wall seconds, and a sleeping task is stopped at its end (outcome expired)."""
    rc = main(["run", str(jobs), "--market", json.dumps(market), "--backend", "sim", "--time-scale", scale,
               "--poll", "0.01", "--grace", "0.2", "--json", *extra])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if out.strip() else None), err


def _sim_rounds(events, times: list[float]) -> list[tuple[dict, dict]]:
    """``({task: (gpus, memory)}, {task: charge})`` of a simulation at each of ``times``."""
    return [sim_state(events, at) for at in times]


def test_run_clears_every_round_with_the_market_engine(tmp_path, capsys):
    jobs = _jobs(tmp_path, [_doc("a0", "alice", 50, 7, 50, 0.5), _doc("a1", "alice", 30, 3, 60, 0.5),
                            _doc("b0", "bob", 40, 4, 40, 0.9), _doc("b1", "bob", 40, 3, 40, 0.9)])
    lease = 2
    rc, doc, err = _run(capsys, jobs, {"gpus": "80", "lease": lease, "progress": "model"})
    assert rc == 0, err
    assert doc["ok"] and doc["unfinished"] == [] and doc["failed"] == []
    rounds = doc["rounds"]
    # independent capacity check: the committed memory of every round fits the 80 GiB GPU
    for r in rounds:
        assert sum(a["memory"] for a in r["assignments"]) <= 80 + 1e-9, r
        assert set(r["outcomes"]) == {a["task"] for a in r["assignments"]}
    assert {t for r in rounds for t in r["finished"]} == {"a0", "a1", "b0", "b1"}
    # the simulator's market, deciding at boundaries only, on the same tasks: same rounds
    tasks = load_gentasks(jobs, step_seconds=60.0)
    res = simulate(tasks, policy="market", gpus=[GpuSpec("gpu0", 80.0)], lease=lease, checkpoint_steps=0.0,
                   policy_options={"between": False})
    expected = _sim_rounds(res.events, [r["time"] for r in rounds])
    charged = 0
    for r, (placed, charges) in zip(rounds, expected):
        assert {a["task"]: (a["gpus"], a["memory"]) for a in r["assignments"]} == placed, r["round"]
        assert r["charges"].keys() == charges.keys(), r["round"]
        assert all(abs(r["charges"][k] - charges[k]) < 1e-9 for k in charges), r["round"]
        charged += bool(charges)
    assert charged > 0, "contended rounds set prices"
    assert max(rec.finish for rec in res.tasks.values()) <= rounds[-1]["time"] + lease


def test_the_replay_comparison_can_fail(tmp_path, capsys):
    """The comparison above sees a different schedule: the same jobs with the GPU halved."""
    jobs = _jobs(tmp_path, [_doc("a0", "alice", 30, 3, 50, 0.5), _doc("b0", "bob", 30, 3, 40, 0.9)])
    rc, doc, err = _run(capsys, jobs, {"gpus": "80", "lease": 2, "progress": "model"})
    assert rc == 0, err
    tasks = load_gentasks(jobs, step_seconds=60.0)
    res = simulate(tasks, policy="market", gpus=[GpuSpec("gpu0", 40.0)], lease=2, checkpoint_steps=0.0,
                   policy_options={"between": False})
    got = [{a["task"]: (a["gpus"], a["memory"]) for a in r["assignments"]} for r in doc["rounds"]]
    assert got != [p for p, _ in _sim_rounds(res.events, [r["time"] for r in doc["rounds"]])]


def test_a_completed_process_is_done_and_never_launched_again(tmp_path, capsys):
    """A process that exits 0 before the model's estimate ends its task: 30 minutes of work,
    yet one round (the executor stops waiting once every process has ended; scale 1 gives the
    process its whole 120 s lease, far more than it needs)."""
    done = ["python", "-c", "pass"]
    jobs = _jobs(tmp_path, [_doc("a0", "alice", 30, 30, 50, 0.5, done, arrival=0)])
    rc, doc, err = _run(capsys, jobs, {"gpus": "80", "lease": 2}, scale="1")
    assert rc == 0, err
    assert [(r["outcomes"], r["finished"]) for r in doc["rounds"]] == [({"a0": "completed"}, ["a0"])]


def test_a_crashing_process_fails_the_run(tmp_path, capsys):
    """Its lease lasts 120 wall seconds (scale 1): the process exits long before, and the round
    ends with it (the executor stops waiting once every process has ended)."""
    crash = ["python", "-c", "import sys; sys.exit(3)"]
    jobs = _jobs(tmp_path, [_doc("a0", "alice", 30, 3, 50, 0.5, crash, arrival=0)])
    rc, doc, _ = _run(capsys, jobs, {"gpus": "80", "lease": 2}, scale="1")
    assert rc == 1 and doc is not None and not doc["ok"] and doc["failed"] == ["a0"]


@pytest.mark.parametrize(("market", "extra", "field"), [
    ({"lease": 0}, (), "--market: lease"),
    ({"colour": 1}, (), "--market: expected a JSON object"),
    ({"credit": {"clearing": "fast"}}, (), "clearing"),
    ({"gpus": "x"}, (), "--gpus"),
    ({"progress": "guess"}, (), "--market: progress"),
    ({"step_seconds": 0}, (), "--market: step_seconds"),
    ({}, ("--feedback", "j.jsonl"), "--feedback: not with --market"),
])
def test_bad_market_runs_are_refused_before_anything_runs(tmp_path, capsys, market, extra, field):
    jobs = _jobs(tmp_path, [_doc("a0", "alice", 30, 3, 50, 0.5)])
    rc, doc, err = _run(capsys, jobs, market, *extra)
    assert rc == 2 and doc is None and field in err and "Traceback" not in err
    assert not (tmp_path / "j.jsonl").exists()
