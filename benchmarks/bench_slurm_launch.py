"""How late slurmd starts batch scripts when many jobs are allocated at once, and how long the
jobs hold their grants past their planned ends (issue 31's "+5 s" goal), from the logs and
journals of one run of the real-Slurm test of all bundled plans at once.

slurmd launches batch jobs one at a time (``_rpc_batch_job`` takes a process-wide
``launch_mutex`` around ``_forkexec_slurmstepd``, Slurm 22.05 ``src/slurmd/slurmd/req.c``), so
one slow launch delays every later one. Submitted with ``--export=ALL,GENSOLVER_T0=...``, each
launch took about 0.5 s on this loaded machine: of 62 jobs allocated at once, the last began
27 s late, and the jobs whose windows had closed by then (the script exits at once) still held
their grants until then. With t0 passed as the script's argument instead, launches take
milliseconds. The batch script holds the bound from its launch: it computes what is left of its
window from the planned end and exits at once when nothing is left.
This script separates the two:

- ``lag``: slurmctld's allocation (``sched: Allocate`` / ``backfill: Started``) to slurmd's
  ``Launching batch job``;
- ``gap``: the time between successive launches of one slurmd (the serialised cost of a launch);
- ``over planned end``: slurmctld's ``_job_complete ... done`` minus ``t0 + end * time_scale``;
- ``over later of end and launch``: the same minus the later of the planned end and the launch
  (what the script controls).

Usage::

    pytest -n 0 --basetemp=OUT "tests/adapters/test_slurm_real.py::test_every_bundled_plan_runs_to_completion_where_the_plan_put_it"
    python benchmarks/bench_slurm_launch.py OUT

(``OUT/slurm0/log`` holds the daemons' logs, ``OUT/plans0`` the plans and
``OUT/test_every_bundled_plan_runs_t0`` the journals.) Say the machine's load (``uptime``) beside
the figures: the launch cost is CPU time.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path

STAMP = r"^\[(?P<at>[0-9T:.-]+)\] "


def _times(text: str, pattern: str) -> dict[str, float]:
    return {m["job"]: datetime.strptime(m["at"], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
            for m in re.finditer(STAMP + pattern, text, re.MULTILINE)}


def _stats(name: str, values: list[float]) -> str:
    values = sorted(values)
    if not values:
        return f"{name}: none"
    return (f"{name}: n={len(values)} median {statistics.median(values):.2f} s, p90 "
            f"{values[int(0.9 * (len(values) - 1))]:.2f} s, max {values[-1]:.2f} s, over 5 s: "
            f"{sum(v > 5 for v in values)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="pytest --basetemp of the bundled-plans real-Slurm test")
    args = parser.parse_args(argv)
    from gensolver.executor import read_plan

    logs = args.out / "slurm0" / "log"
    ctld = (logs / "slurmctld.log").read_text(errors="replace")
    alloc = _times(ctld, r"sched: Allocate JobId=(?P<job>\d+) ")
    alloc.update(_times(ctld, r"sched/backfill: _start_job: Started JobId=(?P<job>\d+) "))
    done = _times(ctld, r"_job_complete: JobId=(?P<job>\d+) done")
    launch: dict[str, float] = {}
    gaps: list[float] = []
    for log in sorted(logs.glob("slurmd-*.log")):
        mine = _times(log.read_text(errors="replace"), r"Launching batch job (?P<job>\d+) ")
        launch.update(mine)
        at = sorted(mine.values())
        gaps += [b - a for a, b in zip(at, at[1:]) if b - a < 5]  # within one burst
    over, over_launch = [], []
    for journal in sorted((args.out / "test_every_bundled_plan_runs_t0").glob("*.journal")):
        records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
        head = records[0]
        plan = read_plan(args.out / "plans0" / f"{journal.stem}.json")
        ends = {f"{r.task}.{r.index}": r.end for t in plan.tasks for r in plan.runs(t.id)}
        for rec in records:
            if rec.get("event") != "submitted" or rec["job"] not in done:
                continue
            planned = head["t0"] + ends[rec["key"]] * head["time_scale"]
            over.append(done[rec["job"]] - planned)
            if rec["job"] in launch:
                over_launch.append(done[rec["job"]] - max(planned, launch[rec["job"]]))
    print(_stats("lag (allocation to slurmd launch)", [launch[j] - alloc[j] for j in launch if j in alloc]))
    print(_stats("gap (successive launches of one slurmd)", gaps))
    print(_stats("over planned end", over))
    print(_stats("over later of planned end and launch", over_launch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
