"""``gensolver run --backend slurm`` against a real Slurm (slurmctld, slurmd, slurmdbd on localhost).

Time is scaled so that jobs are short: a plan second is ``min(0.05, 8 / last end)`` wall
seconds (the 360-s ``small-gpu-1`` plan takes 18 s, the 3600-s ``small-alibaba`` 8 s), and the
bundled plans run at once on 64 placeholder GPUs. Each check reads ``sacct`` (the accounting database),
never gensolver's own report: the node each job ran on, its gres (``AllocTRES``), its start
time against the plan's start (``Start >= t0 + start * scale`` and within a few seconds of it),
and the plan's order.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from gensolver.adapters.slurm import SACCT_FIELDS
from gensolver.executor import read_plan
from tests.patience import load_per_core, patience

#: one worker runs these tests, so that one cluster serves them (make test: pytest -n 2 --dist loadgroup)
pytestmark = pytest.mark.xdist_group("slurm")

ROOT = Path(__file__).resolve().parents[2]
RUN = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"
#: seconds a job may start after its begin time (scheduler passes every second, plus sacct's second resolution)
LATE = 4.0
#: seconds a job may hold its grant past its planned end (the issue's goal, on a quiet machine)
HOLD = 5.0


def _hold() -> float:
    """:data:`HOLD` times the load per core (1-minute average) when that is above 1.

    slurmctld, slurmd and the executor all wait for a CPU on a loaded machine: one job of
    ``test_a_preempted_task_is_stopped_completed_and_resumed_after_its_first_run`` ended more
    than 5 s past its planned end at a load of 5.5 on 2 cores (stress-ng on both, the suite on
    two workers, one more simulation). The goal is +5 s on a quiet machine
    (``benchmarks/bench_slurm_launch.py``); under load the slack grows with the load, as the
    ceilings of :mod:`tests.patience` do.
    """
    return HOLD * max(1.0, load_per_core())


def _plan(tmp_path: Path, instance: str) -> Path:
    out = tmp_path / "plan.json"
    from gensolver.bench.suites import bundled_suites_dir

    done = subprocess.run([sys.executable, "-c", RUN, "plan", str(bundled_suites_dir() / "smoke" / instance),
                           "--output", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def _sacct(cluster, ids: list[str]) -> dict[str, dict[str, str]]:
    out = cluster.run("sacct", "-X", "--parsable2", "--noheader", f"--format={','.join(SACCT_FIELDS)}",
                      f"--jobs={','.join(ids)}")
    assert out.returncode == 0, out.stderr
    rows = [dict(zip(SACCT_FIELDS, line.split("|"))) for line in out.stdout.splitlines()]
    return {r["JobID"]: r for r in rows}


def _epoch(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").timestamp()


def _journal(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_against_plan(plan_path: Path, journal: list[dict], rows: dict[str, dict[str, str]], node: str,
                       shards_per_gpu: int, scale: float, hold: float | None = None) -> list[str]:
    """Every way the accounting records differ from the plan (an empty list: they agree); with
    ``hold``, also every job that ended (sacct's End) more than ``hold`` seconds after its planned
    end. (Slurm holds a job's grant from its allocation, sacct's Start, to its End, whether or not
    slurmd has begun its script: the bound covers Slurm's launch latency too. The scripts get t0
    as their argument, not by ``--export=ALL,GENSOLVER_T0=...``, which made slurmd begin them
    about 0.5 s apart under load: the ~60 jobs of this file's first test then ended up to 24 s
    late; see ``benchmarks/bench_slurm_launch.py``.)"""
    plan = read_plan(plan_path)
    head = journal[0]
    t0 = float(head["t0"])
    ids = {r["key"]: r["job"] for r in journal if r["event"] == "submitted"}
    problems = []
    runs = [run for t in plan.tasks for run in plan.runs(t.id)]
    if sorted(ids) != sorted(f"{r.task}.{r.index}" for r in runs):
        problems.append(f"journaled runs {sorted(ids)} are not the plan's runs")
    starts = {}
    for run in runs:
        key = f"{run.task}.{run.index}"
        row = rows.get(ids.get(key, "?"))
        if row is None:
            problems.append(f"{key}: no sacct record")
            continue
        if row["State"] != "COMPLETED":
            problems.append(f"{key}: state {row['State']}")
        if row["NodeList"] != node:
            problems.append(f"{key}: ran on {row['NodeList']!r}, the plan put it on {node!r}")
        tres = dict(p.split("=", 1) for p in row["AllocTRES"].split(",") if "=" in p)
        caps = {d.id: d.memory for d in plan.devices}
        fraction = max(max(c, m / caps[d]) for d, (m, c) in run.grants.items())
        if fraction >= 1 - 1e-9 or len(run.devices) > 1:
            want = ("gres/gpu", str(len(run.devices)))
        else:
            want = ("gres/shard", str(max(1, math.ceil(fraction * shards_per_gpu - 1e-9))))
        if tres.get(want[0]) != want[1]:
            problems.append(f"{key}: AllocTRES {row['AllocTRES']!r} lacks {want[0]}={want[1]}")
        if row["Start"] in ("", "Unknown", "None"):
            problems.append(f"{key}: never started")
            continue
        start = _epoch(row["Start"])
        due = t0 + run.start * scale
        if start < math.floor(due) - 1e-6 or start > due + LATE:
            problems.append(f"{key}: started {start - t0:.1f} s after t0, the plan says {run.start * scale:.1f} s")
        starts[key] = (run.start, start)
        if hold is not None:
            due_end = t0 + run.end * scale
            if row["End"] in ("", "Unknown", "None") or _epoch(row["End"]) > due_end + hold:
                problems.append(f"{key}: held its grant until {row['End']!r}, past {due_end - t0:.1f} s after t0 "
                                f"(its planned end) plus {hold:g} s")
    for a, (pa, sa) in starts.items():
        for b, (pb, sb) in starts.items():
            if pa < pb and sa > sb:  # (sacct's Start has whole seconds; begin times are rounded up)
                problems.append(f"{a} (plan {pa:g}) started after {b} (plan {pb:g})")
    return problems


def _scale(plan_path: Path) -> float:
    """Wall seconds per plan second: a plan's last end lands 8 to 18 s after t0."""
    plan = read_plan(plan_path)
    last = max(e.end for e in plan.entries)
    return min(0.05, 8.0 / last)


def _device_map(plan_path: Path, node: str) -> list[str]:
    return [arg for d in read_plan(plan_path).devices for arg in ("--node-map", f"{d.id}={node}")]


def _main(cluster, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """``gensolver ARGS`` in this process against ``cluster`` (exit status, stdout, stderr)."""
    from gensolver.cli import main

    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    capsys.readouterr()
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_every_bundled_plan_runs_to_completion_where_the_plan_put_it(slurm, bundled_plans, tmp_path: Path,
                                                                      monkeypatch, capsys) -> None:
    """Goal of the adapter: every plan `gensolver plan` makes of the committed suites, all at once
    on the local Slurm (run --backend slurm), plus smoke-gpu-0 once more through `emit slurm` and
    its submit.sh, each job where and when the plan put it and ended by its planned end plus 5 s;
    then a rerun of one plan adopts its jobs and submits nothing."""
    procs = {}
    for name, plan in bundled_plans.items():
        journal = tmp_path / f"{name}.journal"
        procs[name] = subprocess.Popen(
            [sys.executable, "-c", RUN, "run", str(plan), "--backend", "slurm", *_device_map(plan, slurm.node),
             "--journal", str(journal), "--time-scale", repr(_scale(plan)), "--grace", "1", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=slurm.env, cwd=ROOT)
    emitted = tmp_path / "emitted"
    gpu0 = bundled_plans["smoke-gpu-0"]
    rc, out, err = _main(slurm, monkeypatch, capsys, "emit", "slurm", str(gpu0), "--out", str(emitted), "--node",
                         slurm.node, "--time-scale", repr(_scale(gpu0)), "--grace", "1")
    assert rc == 0, err
    t0 = int(time.time()) + 2
    submitted = subprocess.run(["bash", str(emitted / "submit.sh"), str(t0)], capture_output=True, text=True,
                               env=slurm.env, timeout=60)
    assert submitted.returncode == 0, submitted.stderr
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        summary = [(j["key"], j["outcome"], j["exit_code"], j["start"], j["end"])
                   for j in json.loads(out).get("jobs", [])] if out.strip().startswith("{") else out[-2000:]
        assert proc.returncode == 0, (name, summary, err[-2000:])
    for name, plan in bundled_plans.items():
        records = _journal(tmp_path / f"{name}.journal")
        rows = _sacct(slurm, [r["job"] for r in records if r["event"] == "submitted"])
        assert check_against_plan(plan, records, rows, slurm.node, slurm.shards_per_gpu, _scale(plan),
                                  hold=_hold()) == [], name
    # the emitted scripts, submitted by submit.sh: the same checks on what it printed ("key id" lines)
    ids = dict(line.split() for line in submitted.stdout.splitlines())
    deadline = time.monotonic() + patience(40)
    while time.monotonic() < deadline:
        rows = _sacct(slurm, list(ids.values()))
        if len(rows) == len(ids) and all(r["State"] in ("COMPLETED", "FAILED", "CANCELLED") for r in rows.values()):
            break
        time.sleep(1)
    records = [{"event": "plan", "t0": t0}] + [{"event": "submitted", "key": k, "job": v} for k, v in ids.items()]
    hold = _hold()  # one slack for the check and for the late record it must catch
    assert check_against_plan(gpu0, records, rows, slurm.node, slurm.shards_per_gpu, _scale(gpu0), hold=hold) == []
    # the hold check fails on a job that ended past its planned end + 5 s
    key, job = next(iter(ids.items()))
    run = next(r for t in read_plan(gpu0).tasks for r in read_plan(gpu0).runs(t.id) if f"{r.task}.{r.index}" == key)
    bound = t0 + run.end * _scale(gpu0) + hold
    late = dict(rows, **{job: dict(rows[job], End=datetime.fromtimestamp(math.ceil(bound) + 1).strftime("%Y-%m-%dT%H:%M:%S"))})
    assert [p for p in check_against_plan(gpu0, records, late, slurm.node, slurm.shards_per_gpu, _scale(gpu0),
                                          hold=hold) if "held its grant" in p] != []

    # the checker fails on wrong records: the same jobs against another node, or with starts swapped
    journal = tmp_path / "smoke-gpu-0.journal"
    records = _journal(journal)
    ids = [r["job"] for r in records if r["event"] == "submitted"]
    rows = _sacct(slurm, ids)
    assert any("the plan put it on 'elsewhere'" in p
               for p in check_against_plan(gpu0, records, rows, "elsewhere", slurm.shards_per_gpu, _scale(gpu0)))
    first, last = ids[0], ids[-1]
    swapped = dict(rows)
    swapped[first], swapped[last] = dict(rows[last], JobID=first), dict(rows[first], JobID=last)
    assert check_against_plan(gpu0, records, swapped, slurm.node, slurm.shards_per_gpu, _scale(gpu0)) != []
    # a rerun with the same journal adopts every job and submits none
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(gpu0), "--backend", "slurm",
                         *_device_map(gpu0, slurm.node), "--journal", str(journal), "--time-scale",
                         repr(_scale(gpu0)), "--json")
    assert rc == 0, out + err
    assert _journal(journal) == records
    assert sorted(j["job"] for j in json.loads(out)["jobs"]) == sorted(ids)
    # a submission cut off before it was journaled is found by its job name and adopted
    lines = journal.read_text().splitlines()
    lost = json.loads(lines[-1])
    journal.write_text("\n".join(lines[:-1]) + "\n")
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(gpu0), "--backend", "slurm",
                         *_device_map(gpu0, slurm.node), "--journal", str(journal), "--time-scale",
                         repr(_scale(gpu0)), "--json")
    assert rc == 0, out + err
    assert _journal(journal)[-1] == dict(lost, adopted=True)
    names = slurm.run("sacct", "-X", "--parsable2", "--noheader", "--format=JobID", "--starttime=now-1hour",
                      f"--name={lost['name']}")
    assert names.stdout.split() == [lost["job"]]  # submitted once only
    # a node Slurm does not have is refused before anything is submitted
    other = tmp_path / "other.journal"
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(gpu0), "--backend", "slurm", "--node-map",
                         "*=no-such-node", "--journal", str(other))
    assert rc == 2 and "no-such-node" in err and "--node-map" in err
    assert not other.exists()


def test_rerun_after_timeout_adopts_and_interrupt_cancels(slurm, tmp_path: Path, monkeypatch, capsys) -> None:
    plan = _plan(tmp_path, "smoke-gpu-0.json.gz")
    journal = tmp_path / "slurm.journal"
    base = ["run", str(plan), "--backend", "slurm", "--node-map", f"*={slurm.node}", "--journal", str(journal),
            "--time-scale", "1"]
    # a first run gives up after 2 s: jobs are journaled and keep pending/running
    rc, out, err = _main(slurm, monkeypatch, capsys, *base, "--timeout", "2")
    assert rc == 1 and "--timeout" in err
    records = _journal(journal)
    ids = [r["job"] for r in records if r["event"] == "submitted"]
    assert len(ids) == 3
    # the second run adopts them (no new submission), then is interrupted: scancel ends every job
    proc = subprocess.Popen([sys.executable, "-c", RUN, *base], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=slurm.env, cwd=ROOT)
    first_line = proc.stdout.readline()  # the run is following its jobs once it reports their states
    assert "(job " in first_line, first_line
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    out = first_line + out
    assert proc.returncode == 1, out + err
    assert "cancelled job(s)" in err
    after = _journal(journal)
    assert [r for r in after if r["event"] == "submitted"] == [r for r in records if r["event"] == "submitted"]
    assert after[-1] == {"event": "cancelled", "jobs": sorted(ids)}
    deadline = time.monotonic() + patience(20)
    while time.monotonic() < deadline:
        states = {r["State"].split(" ")[0] for r in _sacct(slurm, ids).values()}
        if states == {"CANCELLED"}:
            break
        time.sleep(0.5)
    assert states == {"CANCELLED"}


def test_a_failing_command_fails_the_run_and_its_exit_code_is_reported(slurm, tmp_path: Path, monkeypatch,
                                                                      capsys) -> None:
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    plan = plan_of({"gpu0": 40}, {"ok": {"at": [("gpu0", 0, 1)], "memory": 10, "compute": 0.5, "command": ["true"]},
                                  "bad": {"at": [("gpu0", 0, 1)], "memory": 10, "compute": 0.5,
                                          "command": ["sh", "-c", "exit 3"]}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    # a window of 60 wall seconds: `true` ends long before it, however late a loaded machine starts it
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(path), "--backend", "slurm", "--node-map",
                         f"gpu0={slurm.node}", "--time-scale", "60", "--json")
    assert rc == 1, out + err
    jobs = {j["key"]: j for j in json.loads(out)["jobs"]}
    rows = _sacct(slurm, [j["job"] for j in jobs.values()])
    assert (rows[jobs["ok.0"]["job"]]["State"], rows[jobs["ok.0"]["job"]]["ExitCode"]) == ("COMPLETED", "0:0")
    assert (rows[jobs["bad.0"]["job"]]["State"], rows[jobs["bad.0"]["job"]]["ExitCode"]) == ("FAILED", "3:0")
    assert rows[jobs["bad.0"]["job"]]["AllocTRES"].count("gres/shard=50") == 1


def _wait_ended(cluster, ids: list[str], timeout: float = 90.0) -> dict[str, dict[str, str]]:
    deadline = time.monotonic() + timeout
    while True:
        rows = _sacct(cluster, ids)
        ended = len(rows) == len(ids) and all(r["End"] not in ("", "Unknown", "None") and
                                              r["State"].split(" ")[0] not in ("PENDING", "RUNNING")
                                              for r in rows.values())
        if ended or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


def test_late_starts_get_the_remainder_or_do_not_start_and_planned_stops_complete(slurm, tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """t0 lies 10 s in the past (the submission is late by construction, not by load): a run planned
    for [0, 30) s starts with the remainder and is stopped at its planned end; one planned for
    [0, 5) s is over at submission and is not submitted (journaled skipped); one planned for
    [12, 20) s starts on time and is stopped at its end. None holds its grant past its planned end
    plus 5 s (sacct's End), and every stop at a planned end is COMPLETED 0:0, not FAILED 124."""
    from gensolver.adapters.slurm import SKIPPED_EXIT, SlurmOptions
    from gensolver.adapters.slurm_cluster import SlurmJournal, submit_plan
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    marker = tmp_path / "started"
    marker.mkdir()
    hold = ["sh", "-c", f'touch "{marker}/$GENSOLVER_TASK"; exec sleep 1000']
    plan = plan_of({"gpu0": 40, "gpu1": 40, "gpu2": 40},
                   {"late": {"at": [("gpu0", 0, 30)], "memory": 10, "compute": 0.5, "command": hold},
                    "gone": {"at": [("gpu1", 0, 5)], "memory": 10, "compute": 0.5, "command": hold},
                    "ontime": {"at": [("gpu2", 12, 20)], "memory": 40, "command": hold}})
    write_plan(plan, tmp_path / "plan.json")
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
    t0 = time.time() - 10
    journal = SlurmJournal(tmp_path / "j.journal")
    _, ids = submit_plan(plan, SlurmOptions(default_node=slurm.node, grace=1, cpus=2, mem="100M"), journal=journal,
                         script_dir=tmp_path / "scripts", t0=t0)
    # [0, 5) had ended 5 s before the submission: not submitted at all
    assert "gone.0" not in ids and journal.skipped == {"gone.0"} and "gone.0" not in SlurmJournal(journal.path).jobs
    rows = _wait_ended(slurm, list(ids.values()))
    got = {k: rows[v] for k, v in ids.items()}
    ends = {"late.0": 30, "ontime.0": 20}
    for key, row in got.items():
        assert row["End"] not in ("", "Unknown", "None"), (key, row)
        assert _epoch(row["End"]) <= t0 + ends[key] + _hold(), (key, row["End"], t0)
    assert not (marker / "gone").exists()
    for row in got.values():  # --cpus reach Slurm's allocation, --mem its request
        tres = dict(p.split("=", 1) for p in row["AllocTRES"].split(",") if "=" in p)
        assert tres.get("cpu") == "2", row["AllocTRES"]
    req = slurm.run("sacct", "-X", "--parsable2", "--noheader", "--format=ReqMem", f"--jobs={','.join(ids.values())}")
    assert req.stdout.split() == ["100M"] * len(ids), req.stdout
    assert (got["ontime.0"]["State"], got["ontime.0"]["ExitCode"]) == ("COMPLETED", "0:0")
    assert (marker / "ontime").exists() and _epoch(got["ontime.0"]["Start"]) >= math.floor(t0 + 12)
    # the late run: stopped at its end (COMPLETED) when it started with at least 1 s left, else skipped
    late = got["late.0"]
    if (marker / "late").exists():
        assert (late["State"], late["ExitCode"]) == ("COMPLETED", "0:0"), late
    else:
        assert (late["State"], late["ExitCode"]) == ("FAILED", f"{SKIPPED_EXIT}:0"), late


def test_a_planned_stop_exits_0_and_odd_task_ids_run_as_named(slurm, tmp_path: Path, monkeypatch, capsys) -> None:
    """`gensolver run --backend slurm` on tasks whose ids start with '-', hold a space, a '/' or shell
    syntax: every job runs (the command sees its own id) and is stopped at its planned end; the
    run exits 0; no payload ran."""
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    marker = tmp_path / "seen"
    marker.mkdir()
    ids = ["-rf", "a b", "x/y", "$(touch PWNED)", "'; touch PWNED; '"]
    hold = [sys.executable, "-c", "import os, sys, time; open(os.path.join(sys.argv[1], "
            "str(abs(hash(os.environ['GENSOLVER_TASK'])))), 'w').write(os.environ['GENSOLVER_TASK']); time.sleep(1000)",
            str(marker)]
    plan = plan_of({f"gpu{k}": 40 for k in range(len(ids))},
                   {t: {"at": [(f"gpu{k}", 0, 1)], "memory": 10, "compute": 0.25, "command": hold}
                    for k, t in enumerate(ids)})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    monkeypatch.chdir(tmp_path)
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(path), "--backend", "slurm", "--node-map",
                         f"*={slurm.node}", "--time-scale", "8", "--grace", "1", "--json",
                         "--journal", str(tmp_path / "j.journal"))
    assert rc == 0, out + err
    jobs = json.loads(out)["jobs"]
    assert sorted(j["key"] for j in jobs) == sorted(f"{t}.0" for t in ids)
    assert {(j["state"], j["exit_code"]) for j in jobs} == {("COMPLETED", "0:0")}
    assert sorted(p.read_text() for p in marker.iterdir()) == sorted(ids)
    assert not list(tmp_path.rglob("PWNED")) and not (ROOT / "PWNED").exists()
    rows = _sacct(slurm, [j["job"] for j in jobs])
    records = _journal(tmp_path / "j.journal")
    assert check_against_plan(path, records, rows, slurm.node, slurm.shards_per_gpu, 8.0, hold=_hold()) == []


def test_a_run_waiting_for_its_start_holds_no_gpu(slurm, tmp_path: Path, monkeypatch) -> None:
    """A run planned for [20, 24) s on a whole GPU is submitted at t0 with ``--begin`` and waits
    pending, holding nothing: a job outside the plan that needs every GPU of the node, submitted
    just after, starts and ends before the run's start (were the run holding its GPU while it
    waits, that job could not start before the run's end). The run then starts at its begin."""
    from gensolver.adapters.slurm import SlurmOptions
    from gensolver.adapters.slurm_cluster import SlurmJournal, submit_plan
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    plan = plan_of({"gpu0": 40}, {"later": {"at": [("gpu0", 20, 24)], "memory": 40, "command": ["true"]}})
    write_plan(plan, tmp_path / "plan.json")
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
    t0 = time.time()
    _, ids = submit_plan(plan, SlurmOptions(default_node=slurm.node, grace=1), journal=SlurmJournal(tmp_path / "j"),
                         script_dir=tmp_path / "scripts", t0=t0)
    every_gpu = slurm.run("sbatch", "--parsable", f"--nodelist={slurm.node}", f"--gres=gpu:{slurm.gpus}",
                          "--time=1", "--output=/dev/null", "--wrap", "true")
    assert every_gpu.returncode == 0, every_gpu.stderr
    other = every_gpu.stdout.strip().split(";")[0]
    rows = _wait_ended(slurm, [ids["later.0"], other])
    run, outside = rows[ids["later.0"]], rows[other]
    assert (outside["State"], run["State"]) == ("COMPLETED", "COMPLETED"), (outside, run)
    assert _epoch(outside["End"]) <= _epoch(run["Start"]), (outside, run)
    assert _epoch(outside["Start"]) < math.floor(t0 + 20) <= _epoch(run["Start"]), (outside, run, t0)


def test_a_gang_over_two_nodes_runs_on_both_in_the_planned_order(slurm, tmp_path: Path, monkeypatch,
                                                                   capsys) -> None:
    """A gang on two GPUs of each of two nodes (two more slurmd daemons of the test cluster), then a
    task on one of them: ``gensolver run --backend slurm`` exits 0; sacct shows the gang on both
    nodes with 4 GPUs, the command ran once per node (its rank from srun), the next task started
    after the gang in the plan's order, and nothing held its grant past its planned end + 5 s."""
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    n1, n2 = slurm.extra_nodes
    marker = tmp_path / "seen"
    marker.mkdir()
    note = ["sh", "-c", f'echo "$SLURM_NODEID $GENSOLVER_GANG_SIZE" > "{marker}/$GENSOLVER_TASK.$SLURMD_NODENAME"']
    gpus = [f"{n}/g{k}" for n in (n1, n2) for k in range(2)]
    plan = plan_of({d: 40 for d in gpus}, {"gang": {"at": [(d, 0, 2) for d in gpus], "memory": 40, "command": note},
                                          "next": {"at": [(f"{n2}/g0", 3, 6)], "memory": 40, "command": note}})
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(path), "--backend", "slurm", "--time-scale", "3",
                         "--grace", "1", "--json", "--journal", str(tmp_path / "j.journal"))
    assert rc == 0, out + err
    jobs = {j["key"]: j["job"] for j in json.loads(out)["jobs"]}
    rows = _sacct(slurm, list(jobs.values()))
    gang, after = rows[jobs["gang.0"]], rows[jobs["next.0"]]
    assert (gang["State"], after["State"]) == ("COMPLETED", "COMPLETED"), (gang, after)
    assert gang["NodeList"] == f"{n1.rstrip('0123456789')}[{n1[-1]}-{n2[-1]}]" and after["NodeList"] == n2, (gang, after)
    tres = dict(p.split("=", 1) for p in gang["AllocTRES"].split(",") if "=" in p)
    assert tres.get("gres/gpu") == "4" and tres.get("node") == "2", gang["AllocTRES"]
    assert sorted((p.name, p.read_text().split()) for p in marker.iterdir()) == [
        (f"gang.{n1}", ["0", "2"]), (f"gang.{n2}", ["1", "2"]), (f"next.{n2}", ["0"])]
    t0 = float(_journal(tmp_path / "j.journal")[0]["t0"])
    assert _epoch(gang["Start"]) <= _epoch(after["Start"]) and _epoch(after["Start"]) >= math.floor(t0 + 9)
    for row, end in ((gang, 2), (after, 6)):
        assert _epoch(row["End"]) <= t0 + end * 3 + _hold(), (row, t0)


def test_a_preempted_task_is_stopped_completed_and_resumed_after_its_first_run(slurm, tmp_path: Path, monkeypatch,
                                                                              capsys) -> None:
    """A task preempted at 3 s by another on its GPU and resumed at 6 s on another GPU (plan
    seconds, 3 wall seconds each): its first run is stopped at its planned end and recorded
    COMPLETED 0:0, not FAILED; the resumed run (``GENSOLVER_RESUME=1``) starts after the first
    ended (afterany) and at its planned start; everything ends by its planned end + 5 s."""
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    marker = tmp_path / "seen"
    marker.mkdir()
    hold = ["sh", "-c", f'echo "$GENSOLVER_RESUME" > "{marker}/$GENSOLVER_TASK.$GENSOLVER_RUN"; exec sleep 1000']
    plan = plan_of({"gpu0": 40, "gpu1": 40},
                   {"p": {"at": [("gpu0", 0, 3), ("gpu1", 6, 9)], "memory": 40, "command": hold},
                    "q": {"at": [("gpu0", 3, 6)], "memory": 40, "command": hold}})
    assert [(r.task, r.index) for t in plan.tasks for r in plan.runs(t.id)] == [("p", 0), ("p", 1), ("q", 0)]
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(path), "--backend", "slurm", "--node-map",
                         f"*={slurm.node}", "--time-scale", "3", "--grace", "1", "--json",
                         "--journal", str(tmp_path / "j.journal"))
    assert rc == 0, out + err
    jobs = {j["key"]: j for j in json.loads(out)["jobs"]}
    rows = _sacct(slurm, [j["job"] for j in jobs.values()])
    got = {k: rows[j["job"]] for k, j in jobs.items()}
    assert {k: (r["State"], r["ExitCode"]) for k, r in got.items()} == {k: ("COMPLETED", "0:0") for k in got}
    assert sorted((p.name, p.read_text().split()) for p in marker.iterdir()) == [
        ("p.0", ["0"]), ("p.1", ["1"]), ("q.0", ["0"])]  # every run ran; the second as a resume
    t0 = float(_journal(tmp_path / "j.journal")[0]["t0"])
    assert _epoch(got["p.1"]["Start"]) >= max(_epoch(got["p.0"]["End"]), math.floor(t0 + 18)), got
    assert _epoch(got["q.0"]["Start"]) >= math.floor(t0 + 9), got
    records = _journal(tmp_path / "j.journal")
    assert check_against_plan(path, records, rows, slurm.node, slurm.shards_per_gpu, 3.0, hold=_hold()) == []


def test_a_plan_that_does_not_fit_the_nodes_is_refused_before_anything_is_submitted(slurm, tmp_path: Path,
                                                                                      monkeypatch, capsys) -> None:
    """A run on 3 GPUs of a node that has 2, or a half GPU on a node without shards: exit 2 naming
    the run, the node and the count sinfo gives, and no job submitted (not even the run before
    it that fits), where sbatch would have refused it after the earlier runs were submitted."""
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    n1 = slurm.extra_nodes[0]
    for wide, needs in ((3, f"needs --gres=gpu:3 on node {n1}, which has 2 gpu"),
                        (0, f"needs --gres=shard:50 on node {n1}, which has 0 shard")):
        tasks = {"first": {"at": [(f"{n1}/g0", 0, 1)], "memory": 40, "command": ["true"]},
                 "late": ({"at": [(f"{n1}/g{k}", 1, 2) for k in range(wide)], "memory": 40} if wide else
                          {"at": [(f"{n1}/g0", 1, 2)], "memory": 10, "compute": 0.5})}
        path = tmp_path / f"plan{wide}.json"
        write_plan(plan_of({f"{n1}/g{k}": 40 for k in range(3)}, tasks), path)
        journal = tmp_path / f"j{wide}.journal"
        rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(path), "--backend", "slurm", "--journal",
                             str(journal), "--time-scale", "30")
        assert rc == 2 and needs in err and "run late.0" in err, err
        assert not journal.exists()
        assert _jobs_of(slurm, path) == []
    # the same query finds the jobs of a plan that fits (its first run alone)
    path = tmp_path / "fits.json"
    write_plan(plan_of({f"{n1}/g0": 40}, {"first": tasks["first"]}), path)
    # (a window of 600 wall seconds, so that it has not passed at submission however loaded the
    # machine: `true` ends at once, and the command returns when its job has ended)
    rc, out, err = _main(slurm, monkeypatch, capsys, "run", str(path), "--backend", "slurm", "--time-scale", "600")
    assert rc == 0, out + err
    assert len(_jobs_of(slurm, path, wait_for=1)) == 1, out + err


def _jobs_of(cluster, plan_path: Path, *, wait_for: int = 0) -> list[str]:
    """The names of the jobs the accounting database knows of one plan (gs-<digest>-...); with
    ``wait_for``, polled until at least that many are there (the controller sends job records to
    the accounting daemon asynchronously), bounded by a generous deadline."""
    deadline = time.monotonic() + 120.0
    while True:
        names = cluster.run("sacct", "-X", "--noheader", "--parsable2", "--format=JobName", "--starttime=now-1hour")
        assert names.returncode == 0, names.stderr
        found = [n for n in names.stdout.split() if n.startswith(f"gs-{read_plan(plan_path).digest}")]
        if len(found) >= wait_for or time.monotonic() > deadline:
            return found
        time.sleep(0.5)
