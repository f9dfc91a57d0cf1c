"""``gensolver run --backend slurm`` against a real Slurm (slurmctld, slurmd, slurmdbd on localhost).

Time is scaled so that jobs are short: a plan second is ``SCALE`` wall seconds (the 180-s
bundled ``smoke-gpu-0`` plan takes 9 s). Each check reads ``sacct`` (the accounting database),
never gensolver's own report: the node each job ran on, its gres (``AllocTRES``), its start
time against the plan's start (``Start >= t0 + start * SCALE`` and within a few seconds of it),
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

ROOT = Path(__file__).resolve().parents[2]
RUN = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"
#: wall seconds per plan second in these tests
SCALE = 0.05
#: seconds a job may start after its begin time (scheduler passes every second, plus sacct's second resolution)
LATE = 4.0


def _cli(cluster, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=timeout,
                          env=cluster.env, cwd=ROOT)


def _plan(tmp_path: Path, instance: str) -> Path:
    out = tmp_path / "plan.json"
    done = subprocess.run([sys.executable, "-c", RUN, "plan", str(ROOT / "instances" / "smoke" / instance),
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
                       shards_per_gpu: int) -> list[str]:
    """Every way the accounting records differ from the plan (an empty list: they agree)."""
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
        due = t0 + run.start * SCALE
        if start < math.floor(due) - 1e-6 or start > due + LATE:
            problems.append(f"{key}: started {start - t0:.1f} s after t0, the plan says {run.start * SCALE:.1f} s")
        starts[key] = (run.start, start)
    for a, (pa, sa) in starts.items():
        for b, (pb, sb) in starts.items():
            if pa < pb and sa > sb:
                problems.append(f"{a} (plan {pa:g}) started after {b} (plan {pb:g})")
    return problems


def test_run_backend_slurm_puts_every_job_where_the_plan_put_it(slurm, tmp_path: Path) -> None:
    plan = _plan(tmp_path, "smoke-gpu-0.json.gz")
    journal = tmp_path / "slurm.journal"
    done = _cli(slurm, "run", str(plan), "--backend", "slurm", "--device-map", f"*={slurm.node}",
                "--journal", str(journal), "--time-scale", str(SCALE), "--grace", "1", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    records = _journal(journal)
    ids = [r["job"] for r in records if r["event"] == "submitted"]
    rows = _sacct(slurm, ids)
    assert check_against_plan(plan, records, rows, slurm.node, slurm.shards_per_gpu) == []
    # the checker fails on a wrong record: the same jobs checked against another node
    assert any("the plan put it on 'elsewhere'" in p
               for p in check_against_plan(plan, records, rows, "elsewhere", slurm.shards_per_gpu))
    # ... and on a start order swapped (the first and last job's records exchanged)
    first, last = ids[0], ids[-1]
    swapped = dict(rows)
    swapped[first], swapped[last] = dict(rows[last], JobID=first), dict(rows[first], JobID=last)
    assert check_against_plan(plan, records, swapped, slurm.node, slurm.shards_per_gpu) != []
    # a rerun with the same journal adopts every job and submits none
    again = _cli(slurm, "run", str(plan), "--backend", "slurm", "--device-map", f"*={slurm.node}",
                 "--journal", str(journal), "--time-scale", str(SCALE), "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _journal(journal) == records
    report = json.loads(again.stdout)
    assert sorted(j["job"] for j in report["jobs"]) == sorted(ids)
    names = slurm.run("sacct", "-X", "--parsable2", "--noheader", "--format=JobID,JobName", "--starttime=now-1hour",
                      f"--name={','.join(r['name'] for r in records if r['event'] == 'submitted')}")
    assert len(names.stdout.split()) == len(ids), names.stdout  # each run submitted exactly once


def test_rerun_after_timeout_adopts_and_interrupt_cancels(slurm, tmp_path: Path) -> None:
    plan = _plan(tmp_path, "smoke-gpu-0.json.gz")
    journal = tmp_path / "slurm.journal"
    base = ["run", str(plan), "--backend", "slurm", "--device-map", f"*={slurm.node}", "--journal", str(journal),
            "--time-scale", "1"]
    # a first run gives up after 2 s: jobs are journaled and keep pending/running
    first = _cli(slurm, *base, "--timeout", "2")
    assert first.returncode == 1 and "--timeout" in first.stderr
    records = _journal(journal)
    ids = [r["job"] for r in records if r["event"] == "submitted"]
    assert len(ids) == 3
    # the second run adopts them (no new submission), then is interrupted: scancel ends every job
    proc = subprocess.Popen([sys.executable, "-c", RUN, *base], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=slurm.env, cwd=ROOT)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, out + err
    assert "cancelled job(s)" in err
    after = _journal(journal)
    assert [r for r in after if r["event"] == "submitted"] == [r for r in records if r["event"] == "submitted"]
    assert after[-1] == {"event": "cancelled", "jobs": sorted(ids)}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        states = {r["State"].split(" ")[0] for r in _sacct(slurm, ids).values()}
        if states == {"CANCELLED"}:
            break
        time.sleep(0.5)
    assert states == {"CANCELLED"}
