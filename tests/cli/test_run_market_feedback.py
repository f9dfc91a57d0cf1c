"""``gensolver run --market``: later rounds follow what the executor observed, not the reports.

The independent side is the simulator: ``simulate(policy="market")`` deciding at round
boundaries only, on the same *reports*, with the executor's truths as ``Workload.truths``
(how long each task really runs). Its event log, read by ``tests/market/event_log.py``, gives
each round's assignments and charges. The simulator's engine sees the truth through its own
clock; the command sees it only through the executor's outcomes and run times.

- A scripted executor (each task's true work, nothing else) on synthetic workloads where one
  tenant understates its durations (its tasks run past their reports and are caught) and one
  overstates them (they finish early and free their GPUs): every round equals the simulation's
  with truths, and differs from the simulation without them (the feedback changes decisions).
- The real command on simulated GPUs with real processes: one exits at once (finishes early),
  one crashes (fails, leaves the market), one sleeps past its report (runs late): same check.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gensolver.cli import main
from gensolver.cli.run_market import MarketRound, Observation, run_market_rounds
from gensolver.market.spec import load_gentasks
from gensolver.model.tasks import GpuSpec, task_speed
from gensolver.sim import simulate, synthetic_workload
from gensolver.sim.strategy import Strategy, apply_strategies
from gensolver.sim.workload import Workload
from tests.market.event_log import sim_state

STEP = 60.0


class TrueExecutor:
    """Runs each planned task for its hold at the speed its memory gives: it completes when its
    *true* work is done (outcome ``completed`` after the time that took), else it is stopped at
    the end of its hold (``expired``)."""

    def __init__(self, truths: dict) -> None:
        self.truth = truths
        self.left = {tid: float(t.duration) for tid, t in truths.items()}
        self.plans = 0

    def __call__(self, plan) -> dict[str, Observation]:
        self.plans += 1
        out: dict[str, Observation] = {}
        for dev in plan.devices:
            for e in dev.entries:
                if e.task in out:
                    continue
                hold = (e.end - e.start) / STEP
                speed = task_speed(self.truth[e.task], e.memory / 2 ** 30)
                need = self.left[e.task] / speed
                if need <= hold + 1e-9:
                    self.left[e.task] = 0.0
                    out[e.task] = Observation("completed", need * STEP)
                else:
                    self.left[e.task] -= hold * speed
                    out[e.task] = Observation("expired", hold * STEP)
        return out


def _compare(rounds, events, *, tol: float = 1e-9) -> None:
    for r in rounds:
        placed, charges = sim_state(events, r.time)
        got = {t: (list(g), m) for t, (g, m) in r.assignments.items()}
        assert got.keys() == placed.keys(), r.round
        for t, (g, m) in got.items():
            assert g == placed[t][0] and abs(m - placed[t][1]) < 1e-6, (r.round, t)
        assert r.charges.keys() == charges.keys(), r.round
        assert all(abs(r.charges[k] - charges[k]) < tol * max(1.0, abs(charges[k])) for k in charges), r.round


def _workload(seed: int) -> Workload:
    w = synthetic_workload(40, seed=seed, rate=1.0, tenants=3)
    # no arrival on a round boundary (lease 3): the simulator orders an arrival and a boundary at
    # the same step either way, and has no boundary at step 0
    # at the same step either way, and has no boundary at step 0; nor a finish on a boundary (no
    # true duration a multiple of the lease)
    w = replace(w, tasks=tuple(replace(t, release=t.release + (t.release % 3 == 0), duration=t.duration + (t.duration % 3 == 0))
                               for t in w.tasks))
    names = sorted({t.tenant for t in w.tasks})
    return apply_strategies(w, {names[0]: Strategy(duration=0.5), names[1]: Strategy(duration=2.0)})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rounds_follow_the_observed_progress_as_the_simulator_with_truths(seed):
    w = _workload(seed)
    gpus = [GpuSpec("g0", 80.0), GpuSpec("g1", 40.0)]
    lease = 3
    truths = {t.id: w.truths.get(t.id, t) for t in w.tasks}
    fake = TrueExecutor(truths)
    run = run_market_rounds(w.tasks, gpus, lease=lease, step_seconds=STEP, execute=fake, max_rounds=2000)
    assert run.ok and not run.unfinished and fake.plans > 10
    options = {"between": False}
    with_truths = simulate(w, policy="market", gpus=gpus, lease=lease, checkpoint_steps=0.0, policy_options=options)
    assert with_truths.complete
    _compare(run.rounds, with_truths.events)
    assert {t for r in run.rounds for t in r.finished} == {t.id for t in w.tasks}
    # the feedback mattered: the same processes, with the model's progress (completions only)
    model = run_market_rounds(w.tasks, gpus, lease=lease, step_seconds=STEP, execute=TrueExecutor(truths),
                              max_rounds=2000, progress="model")
    assert [r.assignments for r in model.rounds] != [r.assignments for r in run.rounds]
    with pytest.raises(AssertionError):
        _compare(model.rounds, with_truths.events)


# ---------------------------------------------------------------- the real command
def _doc(name: str, tenant: str, memory: int, minutes: int, value: float, command: list[str]) -> str:
    return (f"apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\n"
            f"metadata: {{name: {name}, labels: {{tenant: {tenant}}}}}\n"
            f"spec:\n  containers: [{{name: c, command: {json.dumps(command)}}}]\n"
            f"  genResources:\n    gpuMemory: {{preferred: {memory}Gi, urgencyFactor: 0.5}}\n"
            f"    computeTime: {{duration: {minutes}m, arrival: 2m, preemptible: true}}\n"
            f"    value: {value}\n")


# shell commands: they start in milliseconds, well within a lease of 1.2 wall seconds
SLEEP = ["sleep", "120"]
EXIT0 = ["true"]
CRASH = ["sh", "-c", "exit 3"]


def test_the_command_feeds_back_early_finishes_crashes_and_overruns(tmp_path, capsys):
    """On one 80 GiB GPU, lease 2: ``early`` reports 6 steps and exits at once; ``crash`` exits 3;
    ``late`` reports 2 steps and never ends (stopped at every lease's end); ``other`` reports 4
    and never ends. The simulator gets truths: ``early`` and ``crash`` take one step (within
    the lease; a crashed task frees its GPU like a finished one), ``late`` and ``other`` run for ever."""
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("---\n".join([_doc("early", "alice", 50, 6, 50, EXIT0), _doc("crash", "carol", 30, 4, 60, CRASH),
                                  _doc("late", "bob", 40, 2, 40, SLEEP), _doc("other", "dave", 40, 4, 45, SLEEP)]))
    rounds = 6
    rc = main(["run", str(jobs), "--market", json.dumps({"gpus": "80", "lease": 2, "max_rounds": rounds}),
               "--backend", "sim", "--time-scale", "0.01", "--poll", "0.01", "--grace", "0.2", "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert rc == 1, err  # two tasks never end, one crashed
    assert doc["failed"] == ["crash"] and doc["unfinished"] == ["late", "other"]
    assert len(doc["rounds"]) == rounds
    outcomes = {t: o for r in doc["rounds"] for t, o in r["outcomes"].items()}
    assert outcomes["early"] == "completed" and outcomes["crash"] == "crashed" and outcomes["late"] == "expired"
    reports = load_gentasks(jobs, step_seconds=STEP)
    long = 10_000
    truths = {"early": 1, "crash": 1, "late": long, "other": long}
    w = Workload("feedback", tuple(reports), (GpuSpec("gpu0", 80.0),),
                 truths={t.id: replace(t, duration=truths[t.id]) for t in reports})
    sim = simulate(w, policy="market", lease=2, checkpoint_steps=0.0, policy_options={"between": False},
                   until=2.0 * rounds)
    got = [MarketRound.from_dict(r) for r in doc["rounds"]]
    _compare(got, sim.events)
    # the observations changed later rounds: the reports believed give other rounds
    believed = simulate(list(reports), policy="market", gpus=[GpuSpec("gpu0", 80.0)], lease=2, checkpoint_steps=0.0,
                        policy_options={"between": False})
    with pytest.raises(AssertionError):
        _compare(got, believed.events)
    # a finished or failed task is never launched again
    for t in ("early", "crash"):
        assert sum(t in r["outcomes"] for r in doc["rounds"]) == 1


def test_the_comparison_above_can_fail():
    """The checker sees a wrong charge and a wrong placement."""
    w = _workload(0)
    gpus = [GpuSpec("g0", 80.0), GpuSpec("g1", 40.0)]
    truths = {t.id: w.truths.get(t.id, t) for t in w.tasks}
    run = run_market_rounds(w.tasks, gpus, lease=3, step_seconds=STEP, execute=TrueExecutor(truths), max_rounds=2000)
    sim = simulate(w, policy="market", gpus=gpus, lease=3, checkpoint_steps=0.0, policy_options={"between": False})
    k = next(i for i, r in enumerate(run.rounds) if r.charges)
    r = run.rounds[k]
    t = next(iter(r.charges))
    bad = replace(r, charges={**r.charges, t: r.charges[t] * 1.01})
    with pytest.raises(AssertionError):
        _compare([bad], sim.events)
    t = next(iter(r.assignments))
    g, m = r.assignments[t]
    with pytest.raises(AssertionError):
        _compare([replace(r, assignments={**r.assignments, t: (g, m + 1.0)})], sim.events)


class Flaky(TrueExecutor):
    """As :class:`TrueExecutor`, but in plan number ``bad`` the task ``who`` never starts
    (``not_started``, no time run) or vanishes half-way (``lost``, half its hold run)."""

    def __init__(self, truths: dict, who: str, bad: int, outcome: str) -> None:
        super().__init__(truths)
        self.who, self.bad, self.outcome = who, bad, outcome

    def __call__(self, plan) -> dict[str, Observation]:
        left = dict(self.left)
        out = super().__call__(plan)
        if self.plans == self.bad and self.who in out:
            hold = next(e.end - e.start for d in plan.devices for e in d.entries if e.task == self.who)
            ran = 0.0 if self.outcome == "not_started" else hold / 2
            speed = task_speed(self.truth[self.who], next(e.memory for d in plan.devices for e in d.entries
                                                         if e.task == self.who) / 2 ** 30)
            self.left[self.who] = left[self.who] - ran / STEP * speed
            out[self.who] = Observation(self.outcome, ran)
        return out


class Book:
    """A journal in memory (what run_market_rounds writes to one)."""

    def __init__(self) -> None:
        self.rounds: list = []
        self.finished = None

    def round(self, record, state) -> None:
        self.rounds.append((record, json.loads(json.dumps(state))))

    def finish(self, **kw) -> None:
        self.finished = kw


@pytest.mark.parametrize("outcome", ["not_started", "lost"])
def test_a_process_that_did_not_run_its_hold_made_only_the_progress_it_ran(outcome):
    """One 80 GiB GPU, lease 4: ``a`` (8 steps) runs alone. In its first round the executor could
    not start it, or lost it half-way: the next round starts from no work, or from 2 steps, and
    it finishes one round later than with a clean first round, with that much work in total."""
    from gensolver.model.tasks import Task

    a = Task("a", 40.0, 40.0, 8, 10.0, tenant="t", release=1)
    gpus = [GpuSpec("g", 80.0)]
    clean, book = Book(), Book()
    run_market_rounds([a], gpus, lease=4, step_seconds=STEP, execute=TrueExecutor({"a": a}), journal=clean)
    run = run_market_rounds([a], gpus, lease=4, step_seconds=STEP, execute=Flaky({"a": a}, "a", 1, outcome),
                            journal=book)
    work = [state["work"].get("a") for _, state in book.rounds]
    expected_first = 0.0 if outcome == "not_started" else 2.0
    assert work[1] == pytest.approx(expected_first)  # round 2 (the first with a) ran 0 or 2 steps
    assert run.ok and run.rounds[-1].finished == ("a",)
    assert len(book.rounds) == len(clean.rounds) + 1
    assert [r["outcomes"].get("a") for r, _ in book.rounds][1] == outcome


def test_the_journaled_state_holds_only_tasks_not_yet_done():
    """200 tasks with lies through a journaled run: every round's state names only tasks still
    to finish (engine ids, work, placements), so it shrinks as the run goes on; none at the end."""
    w = synthetic_workload(200, seed=4, rate=1.0, tenants=3)
    names = sorted({t.tenant for t in w.tasks})
    w = apply_strategies(w, {names[0]: Strategy(duration=0.5), names[1]: Strategy(duration=2.0)})
    truths = {t.id: w.truths.get(t.id, t) for t in w.tasks}
    book = Book()
    run = run_market_rounds(w.tasks, [GpuSpec("g0", 80.0), GpuSpec("g1", 80.0)], lease=3, step_seconds=STEP,
                            execute=TrueExecutor(truths), max_rounds=5000, journal=book)
    assert run.ok and len(book.rounds) > 50
    sizes = []
    for _, state in book.rounds:
        left = set(state["work"])
        eng = state["engine"]
        assert set(eng["seen"]) | set(eng["slow"]) | set(eng["short"]) <= left
        assert set(state["placed"]) <= left
        sizes.append(len(left))
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 0
    assert not book.rounds[-1][1]["engine"]["seen"] and sum(book.rounds[-1][1]["engine"]["arrived"].values()) == 200


def test_a_task_suspended_over_its_grant_made_only_the_progress_it_ran():
    """Expired at the lease's end but suspended half of it (over its memory grant): the next
    round starts from half the lease's work, not the whole; without the suspension, the whole."""
    from gensolver.model.tasks import Task

    a = Task("a", 40.0, 40.0, 8, 10.0, tenant="t", release=1)

    def executor(suspended: bool):
        def run(plan):
            hold = next(e.end - e.start for d in plan.devices for e in d.entries)
            return {"a": Observation("expired", hold / 2 if suspended else hold * 0.98, suspended)}
        return run

    for suspended, first in ((True, 2.0), (False, 4.0)):
        book = Book()
        run_market_rounds([a], [GpuSpec("g", 80.0)], lease=4, step_seconds=STEP, execute=executor(suspended),
                          max_rounds=2, journal=book)
        assert book.rounds[1][1]["work"]["a"] == pytest.approx(first)
