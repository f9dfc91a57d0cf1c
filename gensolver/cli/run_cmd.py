"""``gensolver run`` (execute a plan) and ``gensolver plan`` (build one from a round).

Exit status of ``gensolver run``: 0 when every task's outcome is ``completed``, ``expired`` or
``exited``; 1 when some task crashed, was killed, lost or never started; 2 for bad input (plan,
options, a journal written for another plan or locked by a live executor); 3 when the backend is
unavailable (e.g. ``--backend nvml`` on a machine without an NVIDIA driver).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from .common import console, err_console, fail, print_json

__all__ = ["register", "EXIT_TASK_FAILED", "EXIT_BACKEND_UNAVAILABLE"]

EXIT_TASK_FAILED = 1
EXIT_BACKEND_UNAVAILABLE = 3


def _device_map(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, target = item.partition("=")
        if not sep or not name or not target:
            fail(f"--device-map expects NAME=UUID_OR_INDEX, got {item!r}")
        out[name] = target
    return out


def run_command(
    plan_file: Path = typer.Argument(..., help="A gensolver.plan/v1 JSON file."),
    backend: str = typer.Option("nvml", "--backend", "-b", help="nvml (real NVIDIA GPUs) or sim (simulated devices)."),
    journal: Optional[Path] = typer.Option(None, "--journal", "-j", help="Append-only journal; reuse it to resume after a crash."),
    sim_devices: List[str] = typer.Option([], "--sim-devices", help="COUNT:MEMORY of simulated devices, e.g. 2:16G (repeatable). Default: the plan's devices."),
    sim_state: Optional[Path] = typer.Option(None, "--sim-state", help="Folder of simulated usage reports (default: JOURNAL.sim, or a temporary folder)."),
    over_grant: str = typer.Option("warn", "--over-grant", help="Policy for a process over its memory grant: warn, suspend or terminate."),
    over_grant_tolerance: str = typer.Option("0", "--over-grant-tolerance", help="Bytes allowed beyond a grant (e.g. 256M)."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Wall seconds per plan second (0.01 runs 100x faster)."),
    grace: float = typer.Option(10.0, "--grace", help="Wall seconds between SIGTERM and SIGKILL."),
    preempt: str = typer.Option("plan", "--preempt", help="plan (follow each preemption point's mode) or checkpoint (always SIGTERM and relaunch)."),
    lost: str = typer.Option("restart", "--lost", help="On restart, a run whose process vanished: restart or skip."),
    poll: float = typer.Option(0.05, "--poll", help="Wall seconds between polls."),
    device_map: List[str] = typer.Option([], "--device-map", help="PLAN_DEVICE=UUID_OR_INDEX (repeatable)."),
    log_dir: Optional[Path] = typer.Option(None, "--log-dir", help="Write each process's output to LOG_DIR/<task>.<run>.<attempt>.log."),
    feedback: Optional[Path] = typer.Option(None, "--feedback", help="Write the gensolver.feedback/v1 usage records here."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Give up after this many wall seconds (processes keep running)."),
    as_json: bool = typer.Option(False, "--json", help="Print the feedback document as one JSON object."),
) -> None:
    """Execute PLAN_FILE: launch, watch, preempt and journal each task's processes."""
    from ..executor import (BackendError, Executor, ExecutorError, ExecutorPolicy, JournalError, NvmlBackend,
                            PlanError, SimulatedBackend, parse_memory, read_plan)

    try:
        plan = read_plan(plan_file)
    except PlanError as exc:
        fail(f"{plan_file}: {exc}")
    try:
        policy = ExecutorPolicy(over_grant=over_grant, over_grant_tolerance=parse_memory(over_grant_tolerance),
                                grace=grace, preempt=preempt, lost=lost)
    except ValueError as exc:
        fail(str(exc))
    if backend == "nvml":
        try:
            gpu = NvmlBackend()
        except BackendError as exc:
            fail(str(exc), EXIT_BACKEND_UNAVAILABLE)
    elif backend == "sim":
        state = sim_state
        if state is None and journal is not None:
            state = journal.with_name(journal.name + ".sim")
        try:
            if sim_devices:
                gpu = SimulatedBackend.from_specs(sim_devices, state_dir=state)
            else:
                missing = [d.id for d in plan.devices if d.memory is None]
                if missing:
                    fail(f"the plan does not give the memory of {missing}; pass --sim-devices COUNT:MEMORY")
                gpu = SimulatedBackend([(d.id, d.memory) for d in plan.devices], state_dir=state)  # type: ignore[misc]
        except ValueError as exc:
            fail(str(exc))
    else:
        fail(f"unknown backend {backend!r}; choose one of: nvml, sim")
    try:
        ex = Executor(plan, backend=gpu, journal=journal, policy=policy, time_scale=time_scale, poll_interval=poll,
                      device_map=_device_map(device_map), log_dir=log_dir)
        report = ex.run(timeout=timeout)
    except (ExecutorError, JournalError, ValueError) as exc:
        fail(str(exc))
    except TimeoutError as exc:
        fail(str(exc), EXIT_TASK_FAILED)
    finally:
        gpu.close()
    if feedback is not None:
        report.write_feedback(feedback)
    if as_json:
        print_json(report.to_dict())
    else:
        console.print(f"[bold]{plan.name or plan_file.name}[/]: {len(report.feedback)} tasks, "
                      f"{report.restarts} restart(s), {report.seconds:.2f} s")
        for f in report.feedback:
            peak = "—" if f.peak_memory is None else f"{f.peak_memory / (1 << 20):.1f} MiB"
            console.print(f"  {f.task}: {f.outcome} (exit {f.exit_code}, peak {peak} of "
                          f"{f.granted_memory / (1 << 20):.1f} MiB, {f.run_seconds:.2f} s, {f.attempts} attempt(s))")
    if not report.ok:
        raise typer.Exit(EXIT_TASK_FAILED)


def plan_command(
    file: Path = typer.Argument(..., help="A gensolver.gpuround/v1 round (tasks with commands) or a gensolver.instance/v1 instance with slot metadata."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the gensolver.plan/v1 JSON."),
    method: str = typer.Option("auto", "--method", "-m", help="Solver method."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", "-t", help="Seconds for the solver."),
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Also draw the plan as a PNG Gantt chart."),
) -> None:
    """Solve a round and write its execution plan (checked with check_plan)."""
    from ..executor import PlanError, check_plan, plot_plan, to_plan, write_plan
    from ..model import GpuRound, InstanceError, read_instance
    from ..solvers import solve

    try:
        doc = json.loads(file.read_text())
    except (OSError, ValueError):
        doc = None
    tasks = None
    try:
        if isinstance(doc, dict) and doc.get("schema") == "gensolver.gpuround/v1":
            rnd = GpuRound.from_dict(doc)
            instance = rnd.expand()
            tasks = {t.id: t for t in rnd.tasks}
        else:
            instance = read_instance(file)
        allocation = solve(instance, method=method, time_limit=time_limit)
        plan = to_plan(instance, allocation, tasks)
    except (InstanceError, PlanError, ValueError) as exc:
        fail(f"{file}: {exc}")
    check = check_plan(plan)
    if not check.ok:
        for v in check.violations:
            err_console.print(f"violation: {v}")
        fail("the plan breaks device capacities (see above)", 1)
    write_plan(plan, output)
    if gantt is not None:
        plot_plan(plan, gantt)
    console.print(f"wrote {output}: {len(plan.tasks)} tasks, {len(plan.entries)} entries on {len(plan.devices)} devices, "
                  f"{len(plan.preemptions)} preemption points")


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``plan`` to ``app``."""
    app.command("run")(run_command)
    app.command("plan")(plan_command)
