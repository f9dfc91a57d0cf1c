"""``gensolver run`` (execute a plan) and ``gensolver plan`` (build one from a round).

Exit status of ``gensolver run``: 0 when every task's outcome is ``completed``, ``expired`` or
``exited``; 1 when some task crashed, was killed, lost or never started; 2 for bad input (plan,
options, a journal written for another plan or locked by a live executor); 3 when the backend is
unavailable (e.g. ``--backend nvml`` on a machine without an NVIDIA driver).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import warnings
from pathlib import Path
from typing import Any, Iterator, List, Optional

import typer
from rich.markup import escape

from ..errors import MissingExtraError
from .choices import BACKENDS, BACKENDS_HELP, METHODS, choice
from .common import (
    check_output_dir,
    check_output_file,
    check_time_limit_option,
    console,
    err_console,
    fail,
    fail_reading,
    items_or_alias,
    print_json,
)
from .progress import task_progress, working
from .round_cmd import DEFAULT_GPUS, DEFAULT_STEP_SECONDS, DEFAULT_STEPS, gentask_round, is_gentask_file

__all__ = ["register", "EXIT_TASK_FAILED", "EXIT_BACKEND_UNAVAILABLE"]

EXIT_TASK_FAILED = 1
EXIT_BACKEND_UNAVAILABLE = 3

#: ``--gantt`` formats, by file suffix (no suffix: PNG)
GANTT_FORMATS = ("png", "svg", "pdf")


def _device_map(items: list[str], devices: list[str]) -> dict[str, str]:
    """``--device-map`` items as a dict; every name must be one of the plan's ``devices``."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, target = item.partition("=")
        if not sep or not name or not target:
            fail(f"--device-map expects NAME=UUID_OR_INDEX, got {item!r}")
        if name not in devices:
            fail(f"--device-map: the plan has no device {name!r} (its devices: {', '.join(devices) or 'none'})")
        if name in out:
            fail(f"--device-map: device {name!r} is mapped twice")
        out[name] = target
    return out


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name the same file (by identity when both exist, else by path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _distinct_outputs(files: dict[str, Path | None], dirs: dict[str, Path | None]) -> None:
    """Exit 2 when two outputs collide: one file given twice, or a file where another output's folder goes."""
    named = [(opt, p, True) for opt, p in files.items() if p is not None]
    named += [(opt, p, False) for opt, p in dirs.items() if p is not None]
    for k, (opt, p, is_file) in enumerate(named):
        for opt2, p2, is_file2 in named[k + 1:]:
            if is_file and is_file2 and _same_file(p, p2):
                fail(f"{opt2}: {p2} is also the {opt}; choose another path")
            for (oa, a, fa), (ob, b) in (((opt, p, is_file), (opt2, p2)), ((opt2, p2, is_file2), (opt, p))):
                if fa and Path(os.path.abspath(a)) in Path(os.path.abspath(b)).parents:
                    fail(f"{ob}: {b} would be inside {a}, which {oa} writes as a file")


def _number(value: float | None, option: str, *, positive: bool = True, what: str = "seconds") -> None:
    """Exit 2 unless ``value`` (when given) is a finite number above zero (or at least zero)."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        fail(f"{option} must be a {kind} number of {what}, got {value:g}")


def _check_device_sizes(plan: Any, gpu: Any, uuids: dict[str, str], plan_file: Path) -> None:
    """Exit 2 when a device is smaller than the largest grant the plan puts on it: that task
    could never start (the runner would wait for it until the end, then exit 1 with no word)."""
    memory = {d.uuid: d.memory for d in gpu.devices()}
    for e in sorted(plan.entries, key=lambda e: -e.memory):
        have = memory.get(uuids.get(e.device, ""))
        if have is not None and e.memory > have:
            fail(f"{plan_file}: task {e.task!r} is granted {e.memory} bytes on plan device {e.device!r}, but the "
                 f"{gpu.name} device {uuids[e.device]} has {have} bytes; pass larger --sim-devices or another "
                 "--device-map")


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    """``warnings.showwarning`` for the CLI: one line on stderr, no source location."""
    err_console.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)


@contextlib.contextmanager
def _clean_warnings() -> Iterator[None]:
    """Show every warning raised inside as a one-line ``warning: ...`` on stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _show_warning
        yield


#: wall seconds above which ``run`` says how long a plan will take and how to scale it
LONG_RUN_SECONDS = 300.0


def _say_how_long(horizon: float, time_scale: float, backend: str, *, resumed: bool) -> None:
    """A note on stderr when the plan will take long in wall time (not on a resumed journal)."""
    wall = horizon * time_scale
    if resumed or wall <= LONG_RUN_SECONDS:
        return
    faster = "" if backend != "sim" else (
        f"; simulated devices need not wait: --time-scale {max(1e-3, 60.0 / max(horizon, 1e-9)):.2g} "
        f"runs it in about a minute")
    err_console.print(f"note: the plan spans {horizon:g} plan seconds: at --time-scale {time_scale:g} this run "
                      f"takes up to {wall / 60:.0f} min (it ends when every task has ended){faster}",
                      highlight=False, soft_wrap=True)


def _os_error(exc: OSError) -> str:
    """``exc`` as ``cannot write PATH: reason``."""
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot write{where}: {exc.strerror or exc}"


def run_command(
    plan_file: Path = typer.Argument(..., help="A gensolver.plan/v1 JSON file."),
    backend: str = typer.Option("nvml", "--backend", "-b", **choice(BACKENDS), help=BACKENDS_HELP),
    journal: Optional[Path] = typer.Option(None, "--journal", "-j", help="Append-only journal; reuse it to resume after a crash (with --market: the market's rounds; the same command resumes the same market)."),
    sim_devices: List[str] = typer.Option([], "--sim-devices", help="COUNT:MEMORY of simulated devices, e.g. 2:16G (repeatable). Default: the plan's devices."),
    sim_state: Optional[Path] = typer.Option(None, "--sim-state", help="Folder of simulated usage reports (default: JOURNAL.sim, or a temporary folder)."),
    over_grant: str = typer.Option("warn", "--over-grant", **choice(("warn", "suspend", "terminate")), help="Policy for a process over its memory grant: warn, suspend or terminate."),
    over_grant_tolerance: str = typer.Option("0", "--over-grant-tolerance", help="Bytes allowed beyond a grant (e.g. 256M)."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Wall seconds per plan second (0.01 runs 100x faster)."),
    grace: float = typer.Option(10.0, "--grace", help="Wall seconds between SIGTERM and SIGKILL."),
    preempt: str = typer.Option("plan", "--preempt", **choice(("plan", "checkpoint")), help="plan (follow each preemption point's mode) or checkpoint (always SIGTERM and relaunch)."),
    lost: str = typer.Option("restart", "--lost", **choice(("restart", "skip")), help="On restart, a run whose process vanished: restart or skip."),
    poll: float = typer.Option(0.05, "--poll", help="Wall seconds between polls."),
    device_map: List[str] = typer.Option([], "--device-map", help="PLAN_DEVICE=UUID_OR_INDEX (repeatable): the GPU of a plan device (nvml, sim); with --backend slurm a deprecated alias of --node-map."),
    node_map: List[str] = typer.Option([], "--node-map", help="--backend slurm: PLAN_DEVICE=NODE (repeatable), or *=NODE for every device."),
    log_dir: Optional[Path] = typer.Option(None, "--log-dir", help="Write each process's output to LOG_DIR/<task>.<run>.<attempt>.log."),
    tenant_map: Optional[Path] = typer.Option(None, "--tenant-map", help="--backend slurm: YAML/JSON tenant -> {account, qos, partition}."),
    log_max_bytes: str = typer.Option("64Mi", "--log-max-bytes", help="Cap of each log file in --log-dir (a quantity such as 64Mi); a longer log is cut."),
    feedback: Optional[Path] = typer.Option(None, "--feedback", help="Write the gensolver.feedback/v1 usage records here."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Give up after this many wall seconds (processes keep running)."),
    as_json: bool = typer.Option(False, "--json", help="Print the feedback document as one JSON object."),
    mps: bool = typer.Option(False, "--mps", help="With --backend nvml: start (or check) the CUDA MPS control daemon."),
    market: Optional[str] = typer.Option(None, "--market", help="PLAN_FILE is GenTask YAML: clear rounds with the market engine (CreditEngine) and run each round's plan; JSON of gpus, lease, step_seconds, max_rounds, progress (observed: fed back from the executor, or model), credit (e.g. '{\"lease\": 5}'); with --journal, rerunning the same command resumes the market after an interruption."),
) -> None:
    """Execute PLAN_FILE: launch, watch, preempt and journal each task's processes (with --market: GenTasks, round by round)."""
    from ..executor import ExecutorPolicy
    from ..executor.execution import EXECUTION_BACKENDS

    # options first: nothing is read, created or launched before they are all good
    tolerance, log_cap = _check_run_options(backend, mps=mps, sim_devices=sim_devices, sim_state=sim_state,
                                            over_grant=over_grant, over_grant_tolerance=over_grant_tolerance,
                                            preempt=preempt, lost=lost, log_max_bytes=log_max_bytes,
                                            time_scale=time_scale, grace=grace, poll=poll, timeout=timeout)
    target = EXECUTION_BACKENDS.get(backend)
    if market is not None:  # gensolver.cli.run_market: GenTasks round by round through the one market engine
        from .run_market import market_command

        refused = {"--feedback": feedback is not None, "--device-map": bool(device_map), "--node-map": bool(node_map),
                 "--tenant-map": tenant_map is not None, "--sim-state": sim_state is not None, "--timeout": timeout is not None,
                 "--log-dir": log_dir is not None, "--mps": mps}
        return market_command(plan_file, market, backend=backend, given=refused, sim_devices=sim_devices,
                              time_scale=time_scale, poll=poll, as_json=as_json, journal=journal,
                              policy=ExecutorPolicy(over_grant=over_grant, over_grant_tolerance=tolerance, grace=grace,
                                                    preempt=preempt, lost=lost))
    # where results go: checked before any work
    check_output_file(journal, "--journal")
    check_output_file(feedback, "--feedback")
    check_output_dir(log_dir, "--log-dir")
    if target.submits:  # Slurm runs the jobs (gensolver.cli.slurm_run, gensolver.adapters.slurm)
        from .slurm_run import run_slurm

        nodes = items_or_alias(node_map, device_map, option="--node-map", old="--device-map",
                               where=" with --backend slurm")
        run_slurm(plan_file, node_map=nodes, journal=journal, time_scale=time_scale, grace=grace,
                  poll=max(poll, 0.5), timeout=timeout, log_dir=log_dir, as_json=as_json, tenant_map=tenant_map,
                  options={"--feedback": feedback, "--over-grant": over_grant != "warn",
                           "--over-grant-tolerance": tolerance != 0, "--preempt": preempt != "plan",
                           "--lost": lost != "restart"})
        return
    if tenant_map is not None:
        fail("--tenant-map: only with --backend slurm (it maps tenants to Slurm accounts)")
    if node_map:
        fail("--node-map: only with --backend slurm (it maps plan devices to nodes; --device-map maps them to GPUs)")
    state = _local_outputs(target, plan_file, sim_state=sim_state, journal=journal, feedback=feedback,
                           log_dir=log_dir)
    plan = _read_checked_plan(plan_file)
    mapping = _device_map(device_map, [d.id for d in plan.devices])
    resumed, time_scale = _resume_journal(journal, plan, time_scale)
    policy = ExecutorPolicy(over_grant=over_grant, over_grant_tolerance=tolerance, grace=grace, preempt=preempt,
                            lost=lost)
    gpu = _open_devices(target, plan, plan_file, mps=mps, sim_devices=sim_devices, state=state)
    report = _execute(plan, plan_file, gpu, mapping, backend=backend, resumed=resumed, journal=journal,
                      policy=policy, time_scale=time_scale, poll=poll, log_dir=log_dir, log_cap=log_cap,
                      timeout=timeout, as_json=as_json)
    _show_report(report, plan, plan_file, as_json=as_json, feedback=feedback)


def _check_run_options(backend: str, *, mps: bool, sim_devices: list[str], sim_state: Path | None, over_grant: str,
                       over_grant_tolerance: str, preempt: str, lost: str, log_max_bytes: str, time_scale: float,
                       grace: float, poll: float, timeout: float | None) -> tuple[int, int]:
    """Exit 2 for a bad ``run`` option; the over-grant tolerance and the log cap in bytes."""
    from ..executor import parse_memory
    from ..executor.execution import EXECUTION_BACKENDS
    from ..executor.runner import OVER_GRANT_POLICIES

    if backend not in EXECUTION_BACKENDS:
        fail(f"--backend: unknown backend {backend!r}; choose one of: {', '.join(EXECUTION_BACKENDS)}")
    target = EXECUTION_BACKENDS.get(backend)
    for option, key, given in (("--mps", "mps", mps), ("--sim-devices", "sim_devices", bool(sim_devices)),
                               ("--sim-state", "sim_state", sim_state is not None)):
        if given and key not in target.takes:
            takers = [b for b in EXECUTION_BACKENDS if key in EXECUTION_BACKENDS.get(b).takes]
            fail(f"{option}: only with --backend {' or '.join(takers)}")
    if over_grant not in OVER_GRANT_POLICIES:
        fail(f"--over-grant must be one of {', '.join(OVER_GRANT_POLICIES)}, got {over_grant!r}")
    if preempt not in ("plan", "checkpoint"):
        fail(f"--preempt must be plan or checkpoint, got {preempt!r}")
    if lost not in ("restart", "skip"):
        fail(f"--lost must be restart or skip, got {lost!r}")
    try:
        tolerance = parse_memory(over_grant_tolerance)
    except ValueError as exc:
        fail(f"--over-grant-tolerance: {exc}")
    try:
        log_cap = parse_memory(log_max_bytes)
    except ValueError as exc:
        fail(f"--log-max-bytes: {exc}")
    if log_cap < 1:
        fail(f"--log-max-bytes must be at least 1 byte, got {log_max_bytes!r}")
    _number(time_scale, "--time-scale", what="wall seconds per plan second")
    _number(grace, "--grace", positive=False)
    _number(poll, "--poll")
    _number(timeout, "--timeout")
    return tolerance, log_cap


def _local_outputs(target: Any, plan_file: Path, *, sim_state: Path | None, journal: Path | None,
                   feedback: Path | None, log_dir: Path | None) -> Path | None:
    """The simulated state folder (``JOURNAL.sim`` by default); exit 2 when two outputs collide."""
    state = sim_state
    state_option = "--sim-state"
    if "sim_state" in target.takes and state is None and journal is not None:
        state = journal.with_name(journal.name + ".sim")
        state_option = "--journal (its simulated state folder JOURNAL.sim)"
    check_output_dir(state, state_option)
    for option, path in (("--journal", journal), ("--feedback", feedback)):
        if path is not None and _same_file(path, plan_file):
            fail(f"{option}: {path} is the plan file; choose another path")
    _distinct_outputs({"--journal": journal, "--feedback": feedback}, {"--log-dir": log_dir, state_option: state})
    return state


def _read_checked_plan(plan_file: Path) -> Any:
    """The plan in ``plan_file``; exit 2 when it cannot be read or breaks a device's capacity."""
    from ..executor import PlanError, check_plan, read_plan

    try:
        plan = read_plan(plan_file)
    except PlanError as exc:
        fail(str(exc) if exc.path is not None else f"{plan_file}: {exc}")
    check = check_plan(plan)
    if not check.ok:
        for v in check.violations:
            err_console.print(f"violation: {escape(str(v))}", highlight=False, soft_wrap=True)
        fail(f"{plan_file}: the plan breaks device capacities (see above)")
    return plan


def _resume_journal(journal: Path | None, plan: Any, time_scale: float) -> tuple[bool, float]:
    """Whether ``journal`` resumes a run of ``plan``, and the time scale to use (the journal's own).

    Exit 2 for a file that is not this plan's journal, before anything is created or launched.
    """
    from ..executor import Journal, JournalError

    if journal is None or not journal.exists():
        return False, time_scale
    try:
        with Journal(journal) as old:
            first = old.records[0] if old.records else None
    except JournalError as exc:
        fail(f"--journal: {exc}")
    if first is not None:
        if first.get("event") != "plan" or first.get("digest") != plan.digest:
            fail(f"--journal: {journal} was written for another plan (digest {first.get('digest')!r}, "
                 f"this plan {plan.digest!r})")
        kept = first.get("time_scale")
        if isinstance(kept, (int, float)) and kept != time_scale:
            err_console.print(f"[yellow]warning:[/] --time-scale {time_scale:g} is ignored: the journal keeps "
                              f"its time scale {kept:g}", highlight=False, soft_wrap=True)
            time_scale = float(kept)
    return first is not None, time_scale


def _open_devices(target: Any, plan: Any, plan_file: Path, *, mps: bool, sim_devices: list[str],
                  state: Path | None) -> Any:
    """The backend's devices for ``plan``; exit 3 when the backend is unavailable, 2 for a bad option."""
    from ..executor import BackendError
    from ..executor.execution import PlanDevicesError

    assert target.open is not None  # an entry that does not submit opens its devices
    try:
        return target.open(plan, mps=mps, sim_devices=sim_devices, state_dir=state)
    except BackendError as exc:
        fail(str(exc), EXIT_BACKEND_UNAVAILABLE)
    except PlanDevicesError as exc:
        fail(f"{plan_file}: {exc}")
    except OSError as exc:
        fail(f"--sim-state: {_os_error(exc)}")
    except ValueError as exc:  # a bad --sim-devices spec
        msg = str(exc)
        fail(msg if msg.startswith("--sim-devices") else f"--sim-devices: {msg}")


def _resolve_plan_devices(plan: Any, plan_file: Path, gpu: Any, mapping: dict[str, str]) -> None:
    """Exit 2 unless every plan device names its own, large enough device of ``gpu``."""
    from ..executor import ExecutorError, resolve_devices

    taken: dict[str, str] = {}
    for name in sorted({e.device for e in plan.entries}):
        try:
            uuid = resolve_devices([name], gpu, mapping)[name]
        except ExecutorError as exc:
            fail(f"--device-map: {exc}" if name in mapping else f"{plan_file}: {exc}")
        if uuid in taken:  # two plan devices on one device: their grants would overlap
            other = taken[uuid]
            where = "--device-map" if name in mapping or other in mapping else str(plan_file)
            fail(f"{where}: plan devices {other!r} and {name!r} both name the {gpu.name} device {uuid}")
        taken[uuid] = name
    _check_device_sizes(plan, gpu, {name: uuid for uuid, name in taken.items()}, plan_file)


def _execute(plan: Any, plan_file: Path, gpu: Any, mapping: dict[str, str], *, backend: str, resumed: bool,
             journal: Path | None, policy: Any, time_scale: float, poll: float, log_dir: Path | None,
             log_cap: int, timeout: float | None, as_json: bool) -> Any:
    """Run ``plan`` on ``gpu`` to its end (closing ``gpu``) and return the runner's report.

    Exit 2 for a plan or journal the runner refuses, 1 on ``--timeout``.
    """
    from ..executor import ExecutorError, JournalError, PlanRunner

    try:
        _resolve_plan_devices(plan, plan_file, gpu, mapping)
        _say_how_long(plan.horizon, time_scale, backend, resumed=resumed)
        with _clean_warnings():
            with task_progress(len(plan.tasks), label=f"running {plan.name or plan_file.name}",
                               enabled=not as_json) as on_event:
                ex = PlanRunner(plan, backend=gpu, journal=journal, policy=policy, time_scale=time_scale,
                                poll_interval=poll, device_map=mapping, log_dir=log_dir, on_event=on_event,
                                log_max_bytes=log_cap)
                return ex.run(timeout=timeout)
    except ExecutorError as exc:
        fail(f"{plan_file}: {exc}")
    except JournalError as exc:
        fail(f"--journal: {exc}")
    except ValueError as exc:
        fail(str(exc))
    except TimeoutError as exc:
        fail(f"--timeout: {exc} (its processes keep running; rerun with the same --journal to take them back)",
             EXIT_TASK_FAILED)
    except OSError as exc:
        fail(_os_error(exc))
    finally:
        gpu.close()


def _show_report(report: Any, plan: Any, plan_file: Path, *, as_json: bool, feedback: Path | None) -> None:
    """Print the report, then write ``--feedback``; exit 1 when some task failed."""
    # the results are shown before --feedback is written, so a failing write loses nothing
    if as_json:
        print_json(report.to_dict())
    else:
        console.print(f"[bold]{escape(plan.name or plan_file.name)}[/]: {len(report.feedback)} tasks, "
                      f"{report.restarts} restart(s), {report.seconds:.2f} s")
        for f in report.feedback:
            peak = "—" if f.peak_memory is None else f"{f.peak_memory / (1 << 20):.1f} MiB"
            console.print(f"  {escape(f.task)}: {f.outcome} (exit {f.exit_code}, peak {peak} of "
                          f"{f.granted_memory / (1 << 20):.1f} MiB, {f.run_seconds:.2f} s, {f.attempts} attempt(s))")
    if feedback is not None:
        try:
            report.write_feedback(feedback)
        except OSError as exc:
            fail(f"--feedback: {_os_error(exc)}")
    if not report.ok:
        raise typer.Exit(EXIT_TASK_FAILED)


def _gantt_format(path: Path) -> str:
    """The ``--gantt`` format from the file suffix (no suffix: PNG); exit 2 for another suffix."""
    suffix = path.suffix[1:].lower()
    if not suffix:
        return "png"
    if suffix not in GANTT_FORMATS:
        fail(f"--gantt: cannot draw a {path.suffix!r} file; give a name ending in "
             f"{', '.join('.' + f for f in GANTT_FORMATS)}")
    return suffix


def plan_command(
    file: Path = typer.Argument(..., help="A gensolver.gpuround/v1 round (tasks with commands), GenTask YAML "
                                "(.yaml: made a round with --gpus/--steps/--step-seconds, as `gensolver round`) "
                                "or a gensolver.instance/v1 instance with slot metadata (also a bundled one: "
                                "smoke/smoke-gpu-0, or bundled:smoke/smoke-gpu-0)."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the gensolver.plan/v1 JSON."),
    method: str = typer.Option("auto", "--method", "-m", **choice(METHODS), help="Solver method."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", "-t", help="Seconds of the solve (the whole call; default: none)."),
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Also draw the plan as a PNG Gantt chart."),
    gpus: str = typer.Option(DEFAULT_GPUS, "--gpus", help="GenTask YAML: GPU memories in GiB (as `gensolver round`)."),
    steps: int = typer.Option(DEFAULT_STEPS, "--steps", help="GenTask YAML: steps in the round."),
    step_seconds: float = typer.Option(DEFAULT_STEP_SECONDS, "--step-seconds", help="GenTask YAML: seconds of one step."),
) -> None:
    """Solve a round and write its execution plan (checked with check_plan)."""
    fmt = _check_plan_options(file, output, gantt, method, time_limit)
    named, doc = _read_plan_input(file, gpus=gpus, steps=steps, step_seconds=step_seconds)
    plan = _solve_to_plan(file, named, doc, method=method, time_limit=time_limit)
    _write_plan_outputs(plan, output, gantt, fmt)


def _check_plan_options(file: Path, output: Path, gantt: Optional[Path], method: str,
                        time_limit: Optional[float]) -> Optional[str]:
    """``plan``'s options and output paths, before anything is solved or written (exit 2 naming
    the option); the Gantt chart's image format."""
    from ..solvers import UnknownMethodError, get_method

    try:
        get_method(method)
    except UnknownMethodError as exc:
        fail(f"--method: {exc}")
    check_time_limit_option(time_limit)
    check_output_file(output, "--output")
    check_output_file(gantt, "--gantt")
    fmt = _gantt_format(gantt) if gantt is not None else None
    for option, path in (("--output", output), ("--gantt", gantt)):
        if path is not None and _same_file(path, file):
            fail(f"{option}: {path} is the input file; choose another path")
    _distinct_outputs({"--output": output, "--gantt": gantt}, {})
    return fmt


def _read_plan_input(file: Path, *, gpus: str, steps: int, step_seconds: float) -> tuple[Any, Any]:
    """``plan``'s input: a bundled instance (first), or the document of a GenTask file (made a
    round) or of a JSON file (``None`` when it is not readable JSON: ``read_instance`` says why)."""
    from ..errors import InputError
    from ..model.inputs import loads_json, read_limited
    from .solve_cmd import bundled_or_none

    named = bundled_or_none(file)
    if named is not None:
        return named, None
    if is_gentask_file(file):
        try:
            return None, gentask_round(file, gpus=gpus, steps=steps, step_seconds=step_seconds).to_dict()
        except (OSError, InputError, ValueError, UnicodeDecodeError) as exc:
            fail_reading(file, exc)
    try:
        return None, loads_json(read_limited(file).decode("utf-8"))
    except (OSError, ValueError):  # InputError, JSONDecodeError, UnicodeDecodeError: read_instance says why
        return None, None


def _solve_to_plan(file: Path, named: Any, doc: Any, *, method: str, time_limit: Optional[float]) -> Any:
    """The instance (a ``gensolver.gpuround/v1`` round expanded, keeping its tasks' commands),
    solved and turned into a plan that :func:`~gensolver.executor.check_plan` accepts (exit 1
    naming the violations when it does not)."""
    from ..executor import PlanError, check_plan, to_plan
    from ..model import GpuRound, InstanceError, read_instance
    from ..solvers import BackendUnavailableError, solve

    tasks = None
    try:
        if isinstance(doc, dict) and doc.get("schema") == "gensolver.gpuround/v1":
            rnd = GpuRound.from_dict(doc)
            instance = rnd.expand()
            tasks = {t.id: t for t in rnd.tasks}
        else:
            instance = named if named is not None else read_instance(file)
        with working(f"{method}: solving {instance.n_bids} bids"):
            allocation = solve(instance, method=method, time_limit=time_limit)
        plan = to_plan(instance, allocation, tasks)
    except MissingExtraError:
        raise  # exit 3 and the pip install line (gensolver.cli.main)
    except BackendUnavailableError as exc:
        fail(f"--method: {exc}")
    except (InstanceError, PlanError, ValueError) as exc:
        fail(f"{file}: {exc}")
    check = check_plan(plan)
    if not check.ok:
        for v in check.violations:
            err_console.print(f"violation: {escape(str(v))}", highlight=False, soft_wrap=True)
        fail("the plan breaks device capacities (see above)", 1)
    return plan


def _write_plan_outputs(plan: Any, output: Path, gantt: Optional[Path], fmt: Optional[str]) -> None:
    """The plan to ``output`` and its chart to ``gantt``, each written whole; the chart is drawn
    before anything is written, so a drawing error leaves no half result."""
    from ..executor import plot_plan, write_plan
    from ..model.io import atomic_write

    chart = None
    if gantt is not None:
        buf = io.BytesIO()
        plot_plan(plan).savefig(buf, format=fmt, dpi=120)
        chart = buf.getvalue()
    try:
        write_plan(plan, output)
    except OSError as exc:
        fail(f"--output: {_os_error(exc)}")
    if gantt is not None and chart is not None:
        try:
            with atomic_write(gantt, "wb") as fh:
                fh.write(chart)
        except OSError as exc:
            fail(f"--gantt: {_os_error(exc)} (the plan was written to {output})")
    console.print(f"wrote {escape(str(output))}: {len(plan.tasks)} tasks, {len(plan.entries)} entries on "
                  f"{len(plan.devices)} devices, {len(plan.preemptions)} preemption points")

def register(app: typer.Typer) -> None:
    """Add ``run`` and ``plan`` to ``app``."""
    app.command("run")(run_command)
    app.command("plan")(plan_command)
