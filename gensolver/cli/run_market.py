"""``gensolver run JOBS.yaml --market``: GenTasks executed round by round, each round cleared by
the one market engine (:class:`gensolver.market.engine.CreditEngine`), its progress fed back
from what the executor observed, resumable from its journal.

Round ``n`` (0, 1, ...) clears at market step ``n * lease``: the released tasks not done (waiting,
or running with their GPUs and memory, each with its observed work so far) go into a
:class:`gensolver.market.pool.TablePool`, :meth:`CreditEngine.round` commits its starts,
preemptions, memory levels and charges, and the committed tasks are laid out as one plan
(:func:`gensolver.executor.lease_plan`) and executed by the chosen backend.

What the engine sees of a task's progress (``progress``):

- ``"observed"`` (the default): each committed task holds its GPUs for the whole lease, and its
  progress is what the executor saw. A process that exits 0 (``completed``) is done, whatever
  its report said was left (its work, for calibration: its run time x ``task_speed(memory)``). A
  process still running at the lease's end (``expired``) did ``lease x task_speed(memory)``
  steps of work (whatever the jitter of its stop; only the time it ran if it was suspended over
  its memory grant) and goes on next round, even past its reported duration: it then bids with
  more work done than it reported, and the engine's rules on reports proved false (overrun,
  calibration) act on it, as in the simulator. A process that never started, vanished or ended
  without a status did the steps it ran. These are the rounds of ``simulate(policy=
  "market", policy_options={"between": False}, checkpoint_steps=0)`` on the same reports with
  the executor's truths (``Workload.truths``).
- ``"model"``: each task holds its GPUs until the model's estimate of its finish (or the lease's
  end) and is done when the model's work is (or when its process exits 0 earlier): the rounds
  of the same simulation with truthful reports, for jobs that run until stopped.

Under both, a process that crashes (non-zero exit) or is killed for exceeding its memory grant
(``crashed``, ``killed``) fails its task: it leaves the market (its GPUs are free next round)
and the run ends with exit 1 once the other tasks are done. A finished or failed task is never
launched again, and the engine forgets it (:meth:`CreditEngine.learn`, :meth:`CreditEngine.forget`).

With a journal (:mod:`gensolver.cli.market_journal`), every round that has run is recorded with
the state the next round starts from; the same command with the same journal continues the same
market after an interruption (SIGTERM, a crash) and never runs a recorded round again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import InputError
from ..model.tasks import GpuSpec, Task, task_speed

__all__ = ["MarketRound", "MarketRun", "Observation", "run_market_rounds"]

#: outcomes that fail a task (its process crashed, or was killed over its memory grant)
FAILED_OUTCOMES = ("crashed", "killed")
PROGRESS = ("observed", "model")


@dataclass(frozen=True)
class Observation:
    """What the executor saw of one task in one round: its ``outcome``, the plan seconds its
    processes ran (suspensions excluded), and whether it was suspended (over its memory grant
    under ``--over-grant suspend``)."""

    outcome: str
    seconds: float
    suspended: bool = False


@dataclass(frozen=True)
class MarketRound:
    """One cleared and executed round: ``{task: (gpus, memory)}`` committed, the credits each
    task paid, the tasks that finished and failed by its end, and each executed task's outcome."""

    round: int
    time: float
    assignments: dict[str, tuple[tuple[str, ...], float]]
    charges: dict[str, float]
    finished: tuple[str, ...]
    outcomes: dict[str, str]
    failed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "time": self.time,
                "assignments": [{"task": t, "gpus": list(g), "memory": m} for t, (g, m) in self.assignments.items()],
                "charges": self.charges, "finished": list(self.finished), "failed": list(self.failed),
                "outcomes": self.outcomes}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> MarketRound:
        """The round :meth:`to_dict` wrote (``KeyError``, ``TypeError`` or ``ValueError`` if not)."""
        return cls(int(doc["round"]), float(doc["time"]),
                   {str(a["task"]): (tuple(map(str, a["gpus"])), float(a["memory"])) for a in doc["assignments"]},
                   {str(k): float(v) for k, v in doc["charges"].items()}, tuple(map(str, doc["finished"])),
                   {str(k): str(v) for k, v in doc["outcomes"].items()}, tuple(map(str, doc["failed"])))


@dataclass
class MarketRun:
    """Every round of a market run; ``ok`` when every task finished and none failed.
    ``resumed``: the rounds read back from the journal (run before this command); ``ended``:
    the journal's run had ended (nothing was run)."""

    rounds: list[MarketRound] = field(default_factory=list)
    unfinished: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    resumed: int = 0
    ended: bool = False

    @property
    def ok(self) -> bool:
        return not self.unfinished and not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "gensolver.market-run/v1", "ok": self.ok, "rounds": [r.to_dict() for r in self.rounds],
                "unfinished": list(self.unfinished), "failed": list(self.failed), "resumed": self.resumed}


@dataclass
class _State:
    """What the next round starts from: each unfinished task's observed work and the placements
    kept (journaled with the engine's state; a finished or failed task leaves nothing here, so
    the state shrinks as the run goes on; the tasks failed are in the rounds' records)."""

    work: dict[str, float]
    placed: dict[str, tuple[tuple[str, ...], float]] = field(default_factory=dict)

    def to_dict(self, engine: Any) -> dict[str, Any]:
        return {"engine": engine.state(), "work": dict(self.work),
                "placed": {t: [list(g), m] for t, (g, m) in self.placed.items()}}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], known: set[str]) -> _State:
        unknown = sorted((set(doc["work"]) | set(doc["placed"])) - known)
        if unknown:
            raise InputError(f"state.work: task {unknown[0]!r} is not in the jobs")
        return cls({str(k): float(v) for k, v in doc["work"].items()},
                   {str(k): (tuple(map(str, g)), float(m)) for k, (g, m) in doc["placed"].items()})


def run_market_rounds(tasks: Sequence[Task], gpus: Sequence[GpuSpec], *, lease: int, step_seconds: float,
                      execute: Callable[[Any], dict[str, Observation]], max_rounds: int = 10_000,
                      engine_options: dict[str, Any] | None = None, progress: str = "observed",
                      journal: Any = None) -> MarketRun:
    """Clear and execute rounds until every task is done or failed (or ``max_rounds``).

    ``execute(plan)`` runs one round's :class:`~gensolver.executor.ExecutionPlan` and returns
    each task's :class:`Observation`. ``journal`` (a :class:`~gensolver.cli.market_journal.MarketJournal`):
    rounds already recorded there are not run again; the run goes on from the last one's state.

    Raises
    ------
    JournalError
        A journal whose last state does not fit these jobs or engine options.
    """
    from ..errors import JournalError
    from ..market.engine import CreditEngine

    engine = CreditEngine(**{"between": False, **(engine_options or {})})
    engine.lease = lease
    by_id = {t.id: t for t in tasks}
    st = _State({t.id: 0.0 for t in tasks})
    run = MarketRun()
    if journal is not None and journal.rounds:
        try:
            run.rounds = [MarketRound.from_dict(r) for r, _ in journal.rounds]
            st = _State.from_dict(journal.rounds[-1][1], set(by_id))
            engine.load_state(journal.rounds[-1][1]["engine"])
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(f"{journal.path}: its last round does not fit these jobs ({exc}); "
                               f"the file is left untouched") from None
        run.resumed = len(run.rounds)
    done_before = run.ended = journal is not None and journal.finished is not None
    for n in range(len(run.rounds), max_rounds):
        if not st.work or done_before:
            break
        rnd = _one_round(n, engine, st, by_id, gpus, lease=lease, step_seconds=step_seconds, execute=execute,
                         progress=progress)
        run.rounds.append(rnd)
        if journal is not None:
            journal.round(rnd.to_dict(), st.to_dict(engine))
    run.unfinished, run.failed = tuple(sorted(st.work)), tuple(t for r in run.rounds for t in r.failed)
    if journal is not None and not done_before:
        journal.finish(ok=run.ok, unfinished=list(run.unfinished), failed=list(run.failed))
    return run


def _one_round(n: int, engine: Any, st: _State, by_id: dict[str, Task], gpus: Sequence[GpuSpec], *, lease: int,
               step_seconds: float, execute: Callable[[Any], dict[str, Observation]], progress: str) -> MarketRound:
    """Clear round ``n``, run its plan, and fold what the executor saw into ``st`` (see the
    module docstring)."""
    from ..executor import lease_plan
    from ..market.pool import TablePool, TableTask

    now = float(n * lease)
    pool = TablePool(gpus, now=now, lease=lease)
    for tid, work in st.work.items():
        t = by_id[tid]
        if t.release <= now:
            g, m = st.placed.get(tid, ((), 0.0))
            pool.add(t, remaining=t.duration - work, gpus=g, memory=m, executed=work)
    engine.round(pool, True)
    placed = {s.id: (tuple(s.gpus), float(s.memory)) for s in pool.running()}
    charges: dict[str, float] = {}
    for act in pool.actions:
        if act[0] == "credit" and act[1]["note"] == "payment" and act[1].get("task"):
            charges[act[1]["task"]] = charges.get(act[1]["task"], 0.0) - float(act[1]["amount"])
    held, hold = {}, {}
    for tid, (g, m) in placed.items():
        rem = (by_id[tid].duration - st.work[tid]) / max(task_speed(by_id[tid], m), 1e-12)
        hold[tid] = lease if progress == "observed" else min(lease, math.ceil(rem - 1e-9))
        held[tid] = (g, m, hold[tid] * step_seconds)
    devices = {g.id: (g.memory, g.compute) for g in gpus}
    seen = execute(lease_plan(held, devices, by_id, name=f"round@{now:g}")) if held else {}
    done, failed = [], []
    for tid, (_, m) in placed.items():
        t, obs = by_id[tid], seen.get(tid, Observation("not_started", 0.0))
        speed = task_speed(t, m)
        if progress == "model":
            steps: float = lease
        elif obs.outcome == "expired" and not obs.suspended:
            steps = hold[tid]
        else:  # the time it ran, at most its hold (a late stop is not progress)
            steps = min(float(hold[tid]), max(0.0, obs.seconds) / step_seconds)
        st.work[tid] += steps * speed
        if obs.outcome in FAILED_OUTCOMES:
            failed.append(tid)
            engine.forget(tid)
        elif obs.outcome == "completed" or (progress == "model" and st.work[tid] >= t.duration - 1e-9):
            done.append(tid)
            work = min(st.work[tid], t.duration) if progress == "model" else st.work[tid]
            engine.learn(TableTask(t, remaining=t.duration - work, now=now, executed=work))
    for tid in done + failed:
        del st.work[tid]
    st.placed = {t: v for t, v in placed.items() if t in st.work}
    return MarketRound(n + 1, now, {t: held[t][:2] for t in held}, charges, tuple(done),
                       {t: o.outcome for t, o in seen.items()}, tuple(failed))


def load_market_tasks(path: Path, *, gpus: str, step_seconds: float) -> tuple[list[Task], tuple[GpuSpec, ...]]:
    """The GenTasks of ``path`` and the GPUs ``gpus`` (``"80,40"``, as ``gensolver round``)."""
    from .round_cmd import gentask_round

    rnd = gentask_round(path, gpus=gpus, steps=1, step_seconds=step_seconds)
    return list(rnd.tasks), tuple(rnd.gpus)


#: ``gensolver run --market`` keys: what each means
MARKET_KEYS = {"gpus": "GPU memories in GiB, one per GPU (as `gensolver round`, default 80,40)",
               "lease": "steps per round (default 5)", "step_seconds": "seconds of one step (default 60)",
               "max_rounds": "stop after this many rounds (default 10000)",
               "progress": "what a task's progress is: observed (by the executor, the default) or model",
               "credit": "CreditEngine options (as `gensolver serve --market '{\"credit\": ...}'`)"}


def _options(spec: str) -> dict[str, Any]:
    """The ``--market`` options with their defaults filled in (exit 2 naming a bad one)."""
    import json

    from .common import fail

    try:
        opts = json.loads(spec or "{}")
    except ValueError as exc:
        fail(f"--market: not JSON ({exc})")
    if not isinstance(opts, dict) or set(opts) - set(MARKET_KEYS):
        fail(f"--market: expected a JSON object with keys among {', '.join(MARKET_KEYS)}, got {spec!r}")
    out = {"gpus": "80,40", "lease": 5, "step_seconds": 60.0, "max_rounds": 10_000, "progress": "observed",
           "credit": {}, **opts}
    for key in ("lease", "max_rounds"):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            fail(f"--market: {key} must be a positive integer, got {v!r}")
    step = out["step_seconds"]
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step) or step <= 0:
        fail(f"--market: step_seconds must be a positive number, got {step!r}")
    if out["progress"] not in PROGRESS:
        fail(f"--market: progress must be one of {', '.join(PROGRESS)}, got {out['progress']!r}")
    if not isinstance(out["credit"], dict):
        fail(f"--market: credit must be a JSON object of CreditEngine options, got {out['credit']!r}")
    out["gpus"], out["step_seconds"] = str(out["gpus"]), float(step)
    return out


def market_command(jobs: Path, spec: str, *, backend: str, given: dict[str, bool], sim_devices: list[str],
                   time_scale: float, poll: float, as_json: bool, policy: Any, journal: Path | None = None) -> None:
    """``gensolver run JOBS.yaml --market SPEC [--journal FILE]``: the round loop above on
    ``backend`` (exit 1 when a task did not finish or failed; 2 for bad input or a journal that
    cannot be used; 3 when the devices are unavailable)."""
    import typer

    from ..errors import InputError, JournalError
    from ..executor import BackendError, ExecutorError, PlanRunner
    from ..executor.execution import EXECUTION_BACKENDS
    from ..market.engine import CreditEngine
    from .common import err_console, fail
    from .market_journal import RUN_ENV, MarketJournal, jobs_digest, stop_leftovers

    for option, on in given.items():
        if on:
            fail(f"{option}: not with --market (each round's plan is built and run in turn)")
    target = EXECUTION_BACKENDS.get(backend)
    if target.submits or target.open is None:
        fail(f"--backend {backend}: not with --market (its jobs are submitted, not run round by round)")
    opts = _options(spec)
    try:
        data = jobs.read_bytes()
        tasks, gpus = load_market_tasks(jobs, gpus=opts["gpus"], step_seconds=opts["step_seconds"])
        CreditEngine(**opts["credit"])  # bad engine options are refused before anything runs
    except OSError as exc:
        fail(f"{jobs}: {exc.strerror or exc}")
    except (InputError, ValueError, TypeError, UnicodeDecodeError) as exc:
        fail(f"--market: credit: {exc}" if opts["credit"] and "option" in str(exc) else str(exc))
    book = None
    if journal is not None:
        if journal.is_dir():
            fail(f"--journal: {journal} is a directory, not a file")
        try:
            same = {k: v for k, v in opts.items() if k != "max_rounds"}  # a resumed run may go further
            book = MarketJournal(journal, {"jobs": jobs_digest(data), "options": same, "backend": backend})
        except JournalError as exc:
            fail(f"--journal: {exc}")
        if book.reopened and book.finished is None:
            left = stop_leftovers(book.token, grace=policy.grace)
            if left:
                err_console.print(f"stopped {left} process(es) the interrupted run left running", highlight=False)
    env = {} if book is None else {RUN_ENV: book.token}

    def execute(plan: Any) -> dict[str, Observation]:
        gpu = target.open(plan, sim_devices=sim_devices)  # type: ignore[misc]
        try:
            report = PlanRunner(plan, backend=gpu, policy=policy, time_scale=time_scale, poll_interval=poll,
                                env=env).run()
        finally:
            gpu.close()
        suspends = policy.over_grant == "suspend"
        return {f.task: Observation(f.outcome, f.run_seconds / time_scale, suspends and f.over_grant)
                for f in report.feedback}

    try:
        run = run_market_rounds(tasks, gpus, lease=opts["lease"], step_seconds=opts["step_seconds"], execute=execute,
                                max_rounds=opts["max_rounds"], engine_options=dict(opts["credit"]),
                                progress=opts["progress"], journal=book)
    except JournalError as exc:
        fail(f"--journal: {exc}")
    except BackendError as exc:
        fail(str(exc), 3)
    except ExecutorError as exc:
        fail(f"{jobs}: {exc}")
    finally:
        if book is not None:
            book.close()
    _print(run, as_json=as_json)
    if not run.ok:
        raise typer.Exit(1)


def _print(run: MarketRun, *, as_json: bool) -> None:
    from .common import console, print_json

    if as_json:
        print_json(run.to_dict())
        return
    if run.ended:
        console.print("the run in the journal had ended; its rounds:", highlight=False)
    elif run.resumed:
        console.print(f"resumed after round {run.resumed} (from the journal)", highlight=False)
    for r in run.rounds:
        placed = ", ".join(f"{t} on {'+'.join(g)} ({m:g} GiB)" for t, (g, m) in r.assignments.items()) or "-"
        failed = f"; failed: {', '.join(r.failed)}" if r.failed else ""
        console.print(f"round {r.round} (step {r.time:g}): {placed}; finished: {', '.join(r.finished) or '-'}{failed}",
                      highlight=False, soft_wrap=True)
    console.print(f"{len(run.rounds)} rounds; unfinished: {', '.join(run.unfinished) or 'none'}; "
                  f"failed: {', '.join(run.failed) or 'none'}", highlight=False)
