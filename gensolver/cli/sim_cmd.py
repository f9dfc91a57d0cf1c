"""``gensolver simulate``: compare scheduling policies on a trace, a synthetic workload or GenTasks."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from .common import console, fail

__all__ = ["register", "load_workload", "comparison_rows"]

SHARED_TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def load_workload(trace: str, *, traces_dir: Path | None = None, max_jobs: int | None = None,
                  nodes: int | None = None, compress: float | None = None, seed: int = 0):
    """A :class:`gensolver.sim.Workload` from ``alibaba``, ``philly``, ``synthetic:...`` or a GenTask YAML file."""
    from ..market.spec import load_gentasks
    from ..model.tasks import uniform_gpus
    from ..sim import Workload, parse_synthetic
    from ..sim.trace_workloads import alibaba_workload, philly_workload

    from ..instances.gpu import default_trace_dir

    base = traces_dir or default_trace_dir()
    kw = {k: v for k, v in {"max_jobs": max_jobs, "compress": compress}.items() if v is not None}
    if trace == "alibaba":
        return alibaba_workload(base / "alibaba-gpu-2023", nodes=nodes or 4, seed=seed, **{"compress": 8.0, **kw})
    if trace == "philly":
        return philly_workload(base / "philly" / "philly.csv", nodes=nodes or 4, seed=seed, **kw)
    if trace.startswith("synthetic"):
        return parse_synthetic(trace)
    p = Path(trace)
    if p.suffix in (".yaml", ".yml") or p.exists():
        tasks = load_gentasks(p)
        return Workload(p.name, tasks, uniform_gpus([80.0, 40.0, 24.0, 16.0], per_node=4), 60.0, {"source": "gentask"})
    raise ValueError(f"unknown trace {trace!r}: use alibaba, philly, synthetic:key=value,... or a GenTask YAML file")


def _parse_gpus(text: str):
    from ..model.tasks import uniform_gpus

    try:
        mems = [float(x) for x in text.replace("+", ",").split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--gpus: expected GiB per GPU like '80,40,24', got {text!r}") from None
    if not mems or any(m <= 0 for m in mems):
        raise ValueError(f"--gpus: expected positive GiB per GPU, got {text!r}")
    return uniform_gpus(mems, per_node=8)


def comparison_rows(results) -> list[dict]:
    """One dict per result with the headline metrics (steps, fractions, seconds)."""
    rows = []
    for r in results:
        m = r.metrics
        rows.append({"policy": r.policy, "done": f"{m.completed}/{m.tasks}", "avg_jct": m.avg_jct, "p95_jct": m.p95_jct,
                     "avg_wait": m.avg_wait, "makespan": m.makespan, "mem_util": m.memory_utilisation,
                     "compute_util": m.compute_utilisation, "preemptions": m.preemptions, "lost_work": m.lost_work,
                     "jain": m.jain, "rho_max": m.rho_max, "credits": m.credits_spent, "rounds": m.rounds,
                     "solver_s_per_round": m.solver_seconds_mean, "sim_seconds": r.wall_seconds})
    return rows


def simulate_command(
    trace: str = typer.Argument(..., help="alibaba | philly | synthetic:n=50,seed=1,rate=0.5 | GenTask YAML file"),
    policy: List[str] = typer.Option(["fcfs-whole-gpu", "fcfs-packing", "elastic", "finish-time-fair", "auction"],
                                     "--policy", "-p", help="Policy (repeat to compare)."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPU memories in GiB, e.g. '80,80,40,24' (default: the workload's)."),
    until: Optional[float] = typer.Option(None, "--until", help="Stop at this step."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write plots and results.json here."),
    fault: List[str] = typer.Option([], "--fault", help="gpu:ID@T1-T2 or node:NAME@T1-T2 (steps); repeatable."),
    mechanism: str = typer.Option("pay-as-bid", "--mechanism", help="Auction mechanism."),
    solver: str = typer.Option("auto", "--solver", help="Auction round solver."),
    time_limit: float = typer.Option(0.2, "--time-limit", help="Seconds per auction round solve."),
    lease: int = typer.Option(5, "--lease", help="Round length in steps."),
    max_jobs: Optional[int] = typer.Option(None, "--max-jobs", help="Trace: at most this many jobs."),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="Trace: number of nodes."),
    compress: Optional[float] = typer.Option(None, "--compress", help="Trace: divide arrival gaps by this."),
    seed: int = typer.Option(0, "--seed", help="Seed (trace memory model, synthetic workloads)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Simulate TRACE under each --policy and print a comparison table."""
    from ..market.spec import SpecError
    from ..sim import FaultError, SimError, UnknownPolicyError, WorkloadError, audit_log, parse_fault, simulate
    from ..traces import TraceError

    try:
        workload = load_workload(trace, max_jobs=max_jobs, nodes=nodes, compress=compress, seed=seed)
        cluster = _parse_gpus(gpus) if gpus else None
        faults = [parse_fault(f) for f in fault]
    except (SpecError, TraceError, WorkloadError, FaultError, ValueError, OSError) as exc:
        fail(str(exc))
    results = []
    for p in policy:
        opts = {"mechanism": mechanism, "solver": solver, "time_limit": time_limit} if p == "auction" else {}
        try:
            r = simulate(workload, policy=p, gpus=cluster, until=until, seed=seed, faults=faults, lease=lease,
                         policy_options=opts)
        except (UnknownPolicyError, SimError, ValueError) as exc:
            fail(str(exc))
        report = audit_log(r.events)
        if not report.ok:
            fail(f"audit failed for {p}: {report.violations[0]}", code=1)
        results.append(r)
    rows = comparison_rows(results)
    if as_json:
        print(json.dumps(rows, default=float))
    else:
        table = Table(title=f"{workload.name}: {len(workload.tasks)} tasks, {len(cluster or workload.gpus)} GPUs "
                            f"(times in steps of {workload.step_seconds:g} s)")
        cols = ["policy", "done", "avg_jct", "p95_jct", "avg_wait", "makespan", "mem_util", "compute_util",
                "preemptions", "lost_work", "jain", "rho_max", "credits", "solver_s_per_round", "sim_seconds"]
        for c in cols:
            table.add_column(c, justify="left" if c == "policy" else "right", no_wrap=True, min_width=len(c))
        for row in rows:
            table.add_row(*[row[c] if isinstance(row[c], str) else f"{row[c]:.3g}" for c in cols])
        from rich.console import Console

        Console(width=max(console.width, 240)).print(table)
    if out is not None:
        from ..sim.plots import write_plots

        out.mkdir(parents=True, exist_ok=True)
        paths = write_plots(results, out)
        (out / "results.json").write_text(json.dumps({"workload": workload.name, "info": dict(workload.info),
                                                     "rows": rows}, default=str, indent=1))
        if not as_json:
            console.print(f"wrote {len(paths)} plots and results.json to {out}")


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the CLI."""
    app.command("simulate")(simulate_command)
