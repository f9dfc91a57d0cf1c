"""Metrics that cannot flatter: memory used beside memory held, unfinished and rejected tasks
counted, a stall an error exit. Expected values are worked out by hand from the definitions."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from gensolver.cli import main
from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import simulate
from gensolver.sim.metrics import TaskRecord, compute_metrics

CARD = [GpuSpec("g0", 80.0, 1.0, "n0")]


def test_memory_used_is_what_the_speed_law_can_use():
    # one task wanting 16 GiB for 4 steps: a whole-GPU policy holds 80 GiB but can use 16
    t = Task("a", 16.0, 8.0, 4, 1.0, compute=0.5)
    whole = simulate([t], policy="fcfs-whole-gpu", gpus=CARD).metrics
    assert whole.memory_held == pytest.approx(1.0)
    assert whole.memory_used == pytest.approx(16.0 / 80.0)
    packed = simulate([t], policy="fcfs-packing", gpus=CARD).metrics
    assert packed.memory_held == pytest.approx(16.0 / 80.0) == packed.memory_used
    # memory does not speed up an inelastic task: only its minimum is useful
    flat = dataclasses.replace(t, elasticity=0.0)
    m = simulate([flat], policy="fcfs-packing", gpus=CARD).metrics
    assert (m.memory_held, m.memory_used) == (pytest.approx(0.2), pytest.approx(0.1))


def _ideal_share(tasks, gpus) -> float:
    """What every task at its preferred memory needs, ``preferred x duration x gpus`` GiB-steps
    summed from the tasks alone, over the capacity's GiB-steps of a makespan of 1."""
    return sum(t.preferred_memory * t.duration * t.gpus for t in tasks) / sum(g.memory for g in gpus)


SHARED = [GpuSpec("g0", 80.0, 1.0, "n0"), GpuSpec("g1", 40.0, 1.0, "n0")]


def _shared_tasks():
    """Eight tasks that all fit at their preferred memory, with compute to share, arriving
    together: the sharing policies co-locate them; each uses the card's preferred GiB."""
    return [Task(f"t{k}", 8.0 + 2 * k, 4.0, 6 + k, 1.0, elasticity=0.5 + 0.05 * k, compute=0.5, release=k % 3)
            for k in range(8)]


@pytest.mark.parametrize("policy", ["time-slicing", "mps", "mig", "fcfs-packing", "fcfs-whole-gpu"])
def test_memory_used_counts_only_work_so_resident_slowness_does_not_flatter(policy):
    # certificate from the tasks alone: run at preferred memory, they use exactly
    # preferred x duration GiB-steps, however long a policy keeps them resident
    tasks = _shared_tasks()
    r = simulate(tasks, policy=policy, gpus=SHARED)
    m = r.metrics
    assert m.completed == len(tasks)
    assert m.memory_used * m.makespan == pytest.approx(_ideal_share(tasks, SHARED), rel=1e-9)


def test_the_work_certificate_can_fail():
    # memory held (or used, unweighted) by a time-sliced run exceeds what the work needs:
    # the certificate above tells them apart
    from gensolver.sim.metrics import utilisation_series

    tasks = _shared_tasks()
    r = simulate(tasks, policy="time-slicing", gpus=SHARED)
    need = _ideal_share(tasks, SHARED)
    useful = {k: rec.useful_memory for k, rec in r.tasks.items()}
    t, held, _ = utilisation_series(r.events, useful)  # min(held, useful), not weighted by the time share
    span = r.metrics.makespan
    edges = np.clip(np.append(t, t[0] + span), t[0], t[0] + span)
    assert float(np.sum(np.diff(edges) * held)) > 1.2 * need
    assert r.metrics.memory_held * span > 1.2 * need


def test_unfinished_tasks_count_in_every_average():
    # two whole-card tasks of 10 steps on one GPU, cut at step 15: a finishes at 10, b started at
    # 10 and is unfinished: its JCT is at least 15 - 0, so the average is at least (10 + 15) / 2
    two = [Task(x, 80.0, 80.0, 10, 1.0, compute=1.0) for x in "ab"]
    m = simulate(two, policy="fcfs-packing", gpus=CARD, until=15).metrics
    assert (m.tasks, m.completed, m.unfinished) == (2, 1, 1)
    assert m.avg_jct == pytest.approx(12.5)  # dropping b would claim 10
    assert m.avg_wait == pytest.approx(5.0) and m.rho_max == pytest.approx(1.5)
    # a task cut short before it could have done its work counts at least its work
    m = simulate(two, policy="fcfs-packing", gpus=CARD, until=12).metrics
    assert m.avg_jct == pytest.approx((10 + 12) / 2)
    m = simulate(two, policy="fcfs-packing", gpus=CARD, until=5).metrics
    assert m.completed == 0 and m.avg_jct == pytest.approx(10.0)  # each at least its 10 steps of work


def test_compute_metrics_censors_at_the_end_it_is_given():
    rec = {"a": TaskRecord("a", "t", 2.0, 3.0, 2.0, 5.0, 0, 0, 0.0),
           "b": TaskRecord("b", "t", 1.0, 3.0, None, None, 0, 0, 0.0)}
    m = compute_metrics([], rec, [], end=20.0)
    assert m.avg_jct == pytest.approx((3.0 + 19.0) / 2) and m.unfinished == 1
    assert m.avg_wait == pytest.approx((0.0 + 19.0) / 2)


def test_a_stall_is_an_error_exit_not_a_table_row(capsys, tmp_path):
    # the only GPU goes down for good at step 2 while a task still waits for it
    args = ["simulate", "synthetic:n=6,seed=1,rate=1,gpus=80", "-p", "fcfs-packing", "--fault", "gpu:gpu0@2",
            "--no-bound"]
    assert main(args) == 1
    cap = capsys.readouterr()
    assert "stalled at step" in cap.err and "fcfs-packing" in cap.err and "tasks done" in cap.err
    assert "fcfs-packing" not in cap.out  # no row
    out = tmp_path / "res"
    assert main([*args, "--json", "--out", str(out)]) == 1
    assert capsys.readouterr().out == "" and not out.exists()


def test_cut_runs_are_marked_and_counted(capsys):
    args = ["simulate", "synthetic:n=12,seed=3,rate=2", "-p", "fcfs-whole-gpu", "--until", "6", "--no-bound"]
    assert main([*args, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    done, total = (int(x) for x in row["done"].split("/"))
    assert total == 12 and row["unfinished"] > 0 and done + row["unfinished"] + row["rejected"] <= total
    assert row["mem_used"] <= row["mem_held"]
    assert main(args) == 0
    assert ">=" in capsys.readouterr().out


def test_plots_show_unfinished_jobs_and_memory_held_apart():
    from gensolver.sim.plots import plot_jct_cdf, plot_utilisation

    two = [Task(x, 80.0, 80.0, 10, 1.0, compute=1.0) for x in "ab"]
    cut = simulate(two, policy="fcfs-packing", gpus=CARD, until=15)
    (line,) = plot_jct_cdf([cut]).axes[0].lines
    assert max(line.get_ydata()) == pytest.approx(0.5) and "1/2" in line.get_label()  # not 1.0 of 1 job
    whole = simulate([Task("a", 16.0, 8.0, 4, 1.0, compute=0.5)], policy="fcfs-whole-gpu", gpus=CARD)
    used, held = plot_utilisation([whole]).axes[0].lines
    assert max(used.get_ydata()) == pytest.approx(0.2) and max(held.get_ydata()) == pytest.approx(1.0)
