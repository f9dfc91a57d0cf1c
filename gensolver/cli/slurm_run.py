"""``gensolver run PLAN --backend slurm``: submit a plan to Slurm, follow it, cancel on interrupt.

Called from :mod:`gensolver.cli.run_cmd` once the shared options are checked; the Slurm logic
itself lives in :mod:`gensolver.adapters.slurm`. A run stopped at its planned end is a planned
stop: its script exits 0 and Slurm records it ``COMPLETED``; a run that starts with less than a
second left before its planned end does not run its command and is reported ``SKIPPED``
(a run without a command has nothing to run: it exits 0, and one skipped at submission does
not fail the plan). Exit status: 0 when every job ``COMPLETED`` (planned stops included);
1 when one ended otherwise, or the run was interrupted (its jobs are cancelled with
``scancel``), or ``--timeout`` passed (the jobs keep going; rerun with the same ``--journal`` to
follow them again - nothing is submitted twice); 2 for bad input; 3 when Slurm's commands are
not installed.
"""

from __future__ import annotations

import signal
import tempfile
from pathlib import Path
from typing import Any, Callable

import typer
from rich.markup import escape

from .common import console, err_console, fail, print_json

__all__ = ["run_slurm"]

EXIT_TASK_FAILED = 1
EXIT_BACKEND_UNAVAILABLE = 3


class _Interrupted(Exception):
    pass


def _parse_map(items: list[str]) -> tuple[dict[str, str], str | None]:
    """``--node-map DEVICE=NODE`` items; ``*=NODE`` is the node of every other device."""
    nodes: dict[str, str] = {}
    default = None
    for item in items:
        name, sep, node = item.rpartition("=")
        if not sep or not name or not node:
            fail(f"--node-map expects PLAN_DEVICE=NODE (or *=NODE) with --backend slurm, got {item!r}")
        if name == "*":
            default = node
        elif name in nodes:
            fail(f"--node-map: device {name!r} is mapped twice")
        else:
            nodes[name] = node
    return nodes, default


def _outcome(state: str, exit_code: str) -> str:
    """A job's state for the report: ``SKIPPED`` for a batch script that started too late to run
    its command (it exits with :data:`gensolver.adapters.slurm.SKIPPED_EXIT`), else Slurm's state.
    A run stopped at its planned end exits 0 and is ``COMPLETED``."""
    from ..adapters.slurm import SKIPPED_EXIT

    return "SKIPPED" if state == "FAILED" and exit_code.split(":")[0] == str(SKIPPED_EXIT) else state


def run_slurm(plan_file: Path, *, node_map: list[str], journal: Path | None, time_scale: float, grace: float,
              poll: float, timeout: float | None, log_dir: Path | None, as_json: bool, options: dict[str, Any],
              tenant_map: Path | None = None) -> None:
    """Submit, follow and report (see the module docstring); ``options`` are the run options
    that only the executor understands, refused here when set."""
    from ..executor import PlanError, read_plan

    for option, value in options.items():
        if value:
            fail(f"{option}: not available with --backend slurm (Slurm runs the jobs, not gensolver's executor)")
    nodes, default = _parse_map(node_map)
    try:
        plan = read_plan(plan_file)
    except PlanError as exc:
        fail(str(exc))
    book = _open_journal(journal)
    opts = _slurm_options(book, nodes=nodes, default=default, time_scale=time_scale, grace=grace,
                          tenant_map=tenant_map, log_dir=log_dir)
    say = (lambda m: None) if as_json else (lambda m: console.print(escape(m), highlight=False))
    states = _submit_and_follow(plan, opts, book, journal=journal, poll=poll, timeout=timeout, say=say)
    _report(plan, plan_file, book, states, as_json=as_json)


def _open_journal(journal: Path | None) -> Any:
    """The Slurm journal at ``journal`` (in memory when None); exit 2 when it cannot be read."""
    from ..adapters.common import AdapterError
    from ..adapters.slurm_cluster import SlurmJournal

    try:
        return SlurmJournal(journal)
    except AdapterError as exc:
        fail(str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"--journal: cannot read {journal}: {getattr(exc, 'strerror', None) or exc}")


def _slurm_options(book: Any, *, nodes: dict[str, str], default: str | None, time_scale: float, grace: float,
                   tenant_map: Path | None, log_dir: Path | None) -> Any:
    """The submission options (the journal's own time scale wins); creates ``log_dir``; exit 2 on bad input."""
    from ..adapters.common import AdapterError
    from ..adapters.slurm import SlurmOptions, read_tenant_map

    try:
        kept = (book.head or {}).get("time_scale")
        if isinstance(kept, (int, float)) and kept != time_scale:
            err_console.print(f"[yellow]warning:[/] --time-scale {time_scale:g} is ignored: the journal keeps its "
                              f"time scale {kept:g}", highlight=False, soft_wrap=True)
            time_scale = float(kept)
        opts = SlurmOptions(nodes=nodes, default_node=default, default_field="--node-map", time_scale=time_scale,
                            grace=grace, tenants=read_tenant_map(tenant_map) if tenant_map is not None else {},
                            log_dir=None if log_dir is None else str(log_dir.resolve()))
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
    except AdapterError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"--log-dir: cannot create {log_dir}: {exc.strerror or exc}")
    return opts


def _submit_and_follow(plan: Any, opts: Any, book: Any, *, journal: Path | None, poll: float,
                       timeout: float | None, say: Callable[[str], None]) -> dict[str, Any]:
    """Submit ``plan`` and follow its jobs to their end: their final states by run key.

    SIGINT or SIGTERM cancels the live jobs with ``scancel`` and exits 1; Slurm's errors exit 1
    (2 for bad input, 3 when Slurm is not installed); ``--timeout`` exits 1 and leaves the jobs.
    """
    from ..adapters.common import AdapterError
    from ..adapters.slurm import SlurmError, SlurmUnavailableError
    from ..adapters.slurm_cluster import cancel, follow, submit_plan

    def interrupt(signum: int, _frame: Any) -> None:
        raise _Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    ids: dict[str, str] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="gensolver-slurm-") as tmp:
            scripts = journal.with_name(journal.name + ".slurm") if journal is not None else Path(tmp)
            _, ids = submit_plan(plan, opts, journal=book, script_dir=scripts, log=say)
            return follow(ids, poll=poll, timeout=timeout, log=say)
    except _Interrupted as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        live = sorted(set(ids.values()) or set(book.jobs.values()))
        try:
            cancel(live, journal=book)
        except SlurmError as err:
            fail(f"interrupted ({exc}); scancel failed: {err}", EXIT_TASK_FAILED)
        fail(f"interrupted ({exc}): cancelled job(s) {', '.join(live) or 'none'} with scancel", EXIT_TASK_FAILED)
    except AdapterError as exc:
        fail(str(exc))
    except SlurmUnavailableError as exc:
        fail(str(exc), EXIT_BACKEND_UNAVAILABLE)
    except SlurmError as exc:
        fail(str(exc), EXIT_TASK_FAILED)
    except TimeoutError as exc:
        fail(f"--timeout: {exc} (the jobs keep going; rerun with the same --journal to follow them)",
             EXIT_TASK_FAILED)
    except OSError as exc:
        fail(f"cannot write {exc.filename or ''}: {exc.strerror or exc}")
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)


def _report(plan: Any, plan_file: Path, book: Any, states: dict[str, Any], *, as_json: bool) -> None:
    """Print the jobs' outcomes (skipped runs included); exit 1 unless every job completed."""
    skipped = sorted(book.skipped)
    # a run without a command whose window passed had nothing to run: skipped, not failed
    idle = {r["key"] for r in book.records if r.get("event") == "skipped" and r.get("command") is False}
    ok = all(s.state == "COMPLETED" for s in states.values()) and set(skipped) <= idle
    outcome = {k: _outcome(s.state, s.exit_code) for k, s in states.items()}
    if as_json:
        print_json({"backend": "slurm", "plan": plan.name, "digest": plan.digest, "ok": ok,
                    "jobs": [{"key": k, "job": s.job_id, "state": s.state, "outcome": outcome[k],
                              "exit_code": s.exit_code,
                              "nodes": s.nodes, "start": s.start, "end": s.end, "tres": dict(s.tres)}
                             for k, s in sorted(states.items())]
                          + [{"key": k, "job": None, "state": "SKIPPED", "outcome": "SKIPPED", "exit_code": None,
                              "nodes": None, "start": None, "end": None, "tres": {}} for k in skipped]})
    else:
        console.print(f"[bold]{escape(plan.name or plan_file.name)}[/]: {len(states)} Slurm job(s)")
        for k, s in sorted(states.items()):
            console.print(f"  {escape(k)}: job {s.job_id} {outcome[k]} (exit {s.exit_code}) on {escape(s.nodes)}, "
                          f"{s.start} .. {s.end}", highlight=False)
        for k in skipped:
            console.print(f"  {escape(k)}: SKIPPED (not submitted: its planned end had passed)", highlight=False)
    if not ok:
        raise typer.Exit(EXIT_TASK_FAILED)
