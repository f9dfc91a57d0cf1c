"""``gensolver run JOBS.yaml --market``: GenTasks executed round by round, each round cleared by
the one market engine (:class:`gensolver.market.engine.CreditEngine`).

Round ``n`` (0, 1, ...) clears at market step ``n * lease``: the released tasks with work left
(waiting, or running with their GPUs and memory) go into a
:class:`gensolver.market.pool.TablePool`, :meth:`CreditEngine.round` commits its starts,
preemptions, memory levels and charges, and the committed tasks are laid out as one plan
(:func:`gensolver.executor.lease_plan`: each task on its GPUs until it finishes or the lease
ends) and executed by the chosen backend. A task's progress over a round is the model's
(``lease x task_speed(memory)`` steps of work, as in ``gensolver serve`` without executor
reports), so the rounds are exactly those of ``simulate(policy="market",
policy_options={"between": False}, checkpoint_steps=0)`` on the same tasks, except that a task
whose process exits 0 (``completed``) is done then, whatever the model says is left (it is
never launched again). A process that crashes or is killed fails the run (exit 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..model.tasks import GpuSpec, Task, task_speed

__all__ = ["MarketRound", "MarketRun", "run_market_rounds"]

#: outcomes of a round's run that do not fail the run (a task still running at the end of its
#: lease is stopped there and continues in a later round)
OK_OUTCOMES = ("completed", "expired", "exited")


@dataclass(frozen=True)
class MarketRound:
    """One cleared and executed round: ``{task: (gpus, memory)}`` committed, the credits each
    task paid, the tasks that finished by its end, and each executed task's outcome."""

    round: int
    time: float
    assignments: dict[str, tuple[tuple[str, ...], float]]
    charges: dict[str, float]
    finished: tuple[str, ...]
    outcomes: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "time": self.time,
                "assignments": [{"task": t, "gpus": list(g), "memory": m} for t, (g, m) in self.assignments.items()],
                "charges": self.charges, "finished": list(self.finished), "outcomes": self.outcomes}


@dataclass
class MarketRun:
    """Every round of a market run; ``ok`` when every task finished and no process failed."""

    rounds: list[MarketRound] = field(default_factory=list)
    unfinished: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.unfinished and not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "gensolver.market-run/v1", "ok": self.ok, "rounds": [r.to_dict() for r in self.rounds],
                "unfinished": list(self.unfinished), "failed": list(self.failed)}


def run_market_rounds(tasks: Sequence[Task], gpus: Sequence[GpuSpec], *, lease: int, step_seconds: float,
                      execute: Callable[[Any], dict[str, str]], max_rounds: int = 10_000,
                      engine_options: dict[str, Any] | None = None) -> MarketRun:
    """Clear and execute rounds until every task is done (or ``max_rounds``).

    ``execute(plan)`` runs one round's :class:`~gensolver.executor.ExecutionPlan` and returns
    each task's outcome (``"completed"``, ``"expired"``, ``"crashed"``...).
    """
    from ..executor import lease_plan
    from ..market.engine import CreditEngine
    from ..market.pool import TablePool

    engine = CreditEngine(**{"between": False, **(engine_options or {})})
    engine.lease = lease
    by_id = {t.id: t for t in tasks}
    left = {t.id: float(t.duration) for t in tasks}
    placed: dict[str, tuple[tuple[str, ...], float]] = {}
    devices = {g.id: (g.memory, g.compute) for g in gpus}
    run = MarketRun()
    failed: list[str] = []
    for n in range(max_rounds):
        now = float(n * lease)
        if not left:
            break
        pool = TablePool(gpus, now=now, lease=lease)
        for tid, rem in left.items():
            if by_id[tid].release <= now:
                g, m = placed.get(tid, ((), 0.0))
                pool.add(by_id[tid], remaining=rem, gpus=g, memory=m)
        engine.round(pool, True)
        placed = {s.id: (tuple(s.gpus), float(s.memory)) for s in pool.running()}
        charges: dict[str, float] = {}
        for act in pool.actions:
            if act[0] == "credit" and act[1]["note"] == "payment" and act[1].get("task"):
                charges[act[1]["task"]] = charges.get(act[1]["task"], 0.0) - float(act[1]["amount"])
        held = {}
        for tid, (g, m) in placed.items():
            steps = min(float(lease), left[tid] / max(task_speed(by_id[tid], m), 1e-12))
            held[tid] = (g, m, math.ceil(steps - 1e-9) * step_seconds)
        outcomes = execute(lease_plan(held, devices, by_id, name=f"round@{now:g}")) if held else {}
        failed += [t for t, o in sorted(outcomes.items()) if o not in OK_OUTCOMES]
        done = []
        for tid, (_, m) in placed.items():  # the model's progress over the lease
            left[tid] -= lease * task_speed(by_id[tid], m)
            if left[tid] <= 1e-9 or outcomes.get(tid) == "completed":
                done.append(tid)
                del left[tid]
        placed = {t: v for t, v in placed.items() if t in left}
        run.rounds.append(MarketRound(n + 1, now, {t: held[t][:2] for t in held}, charges, tuple(done), outcomes))
        if failed:
            break
    run.unfinished, run.failed = tuple(sorted(left)), tuple(failed)
    return run


def load_market_tasks(path: Path, *, gpus: str, step_seconds: float) -> tuple[list[Task], tuple[GpuSpec, ...]]:
    """The GenTasks of ``path`` and the GPUs ``gpus`` (``"80,40"``, as ``gensolver round``)."""
    from .round_cmd import gentask_round

    rnd = gentask_round(path, gpus=gpus, steps=1, step_seconds=step_seconds)
    return list(rnd.tasks), tuple(rnd.gpus)


#: ``gensolver run --market`` keys: what each means
MARKET_KEYS = {"gpus": "GPU memories in GiB, one per GPU (as `gensolver round`, default 80,40)",
               "lease": "steps per round (default 5)", "step_seconds": "seconds of one step (default 60)",
               "max_rounds": "stop after this many rounds (default 10000)",
               "credit": "CreditEngine options (as `gensolver serve --market '{\"credit\": ...}'`)"}


def market_command(jobs: Path, spec: str, *, backend: str, given: dict[str, bool], sim_devices: list[str],
                   time_scale: float, poll: float, as_json: bool, policy: Any) -> None:
    """``gensolver run JOBS.yaml --market SPEC``: the round loop above on ``backend`` (exit 1 when a
    task did not finish or a process failed; 2 for bad input)."""
    import json

    import typer

    from ..errors import InputError
    from ..executor import BackendError, ExecutorError, PlanRunner
    from ..executor.execution import EXECUTION_BACKENDS
    from .common import console, fail, print_json

    for option, on in given.items():
        if on:
            fail(f"{option}: not with --market (each round's plan is built and run in turn)")
    target = EXECUTION_BACKENDS.get(backend)
    if target.submits or target.open is None:
        fail(f"--backend {backend}: not with --market (its jobs are submitted, not run round by round)")
    try:
        opts = json.loads(spec or "{}")
    except ValueError as exc:
        fail(f"--market: not JSON ({exc})")
    if not isinstance(opts, dict) or set(opts) - set(MARKET_KEYS):
        fail(f"--market: expected a JSON object with keys among {', '.join(MARKET_KEYS)}, got {spec!r}")
    lease, step, most = opts.get("lease", 5), opts.get("step_seconds", 60.0), opts.get("max_rounds", 10_000)
    for key, v in (("lease", lease), ("max_rounds", most)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            fail(f"--market: {key} must be a positive integer, got {v!r}")
    try:
        tasks, gpus = load_market_tasks(jobs, gpus=str(opts.get("gpus", "80,40")), step_seconds=float(step))
        engine_options = dict(opts.get("credit") or {})
        from ..market.engine import CreditEngine

        CreditEngine(**engine_options)  # bad engine options are refused before anything runs
    except OSError as exc:
        fail(f"{jobs}: {exc.strerror or exc}")
    except (InputError, ValueError, TypeError, UnicodeDecodeError) as exc:
        fail(f"--market: {exc}" if "credit" in opts and "option" in str(exc) else str(exc))

    def execute(plan: Any) -> dict[str, str]:
        gpu = target.open(plan, sim_devices=sim_devices)  # type: ignore[misc]
        try:
            report = PlanRunner(plan, backend=gpu, policy=policy, time_scale=time_scale, poll_interval=poll).run()
        finally:
            gpu.close()
        return {f.task: f.outcome for f in report.feedback}

    try:
        run = run_market_rounds(tasks, gpus, lease=lease, step_seconds=float(step), execute=execute,
                                max_rounds=most, engine_options=engine_options)
    except BackendError as exc:
        fail(str(exc), 3)
    except ExecutorError as exc:
        fail(f"{jobs}: {exc}")
    if as_json:
        print_json(run.to_dict())
    else:
        for r in run.rounds:
            placed = ", ".join(f"{t} on {'+'.join(g)} ({m:g} GiB)" for t, (g, m) in r.assignments.items()) or "-"
            console.print(f"round {r.round} (step {r.time:g}): {placed}; finished: {', '.join(r.finished) or '-'}",
                          highlight=False, soft_wrap=True)
        console.print(f"{len(run.rounds)} rounds; unfinished: {', '.join(run.unfinished) or 'none'}; "
                      f"failed: {', '.join(run.failed) or 'none'}", highlight=False)
    if not run.ok:
        raise typer.Exit(1)
