"""Overlapping faults, idle spans and stalls (issue 20, items 12-14)."""

from __future__ import annotations

import pytest

from gensolver.cli import main
from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import audit_log, get_policy, simulate
from gensolver.sim.policies import Policy

POLICIES = ["fcfs-whole-gpu", "fcfs-packing", "elastic", "finish-time-fair", "market"]
GPUS = [GpuSpec("gpu0", 16.0, 1.0, "node0"), GpuSpec("gpu1", 16.0, 1.0, "node0")]


def T(tid: str, dur: int = 4, release: int = 0) -> Task:
    return Task(tid, 8.0, 8.0, dur, value=float(dur), release=release, compute=1.0, urgency=0.0)


def _up_down(result, gpu: str) -> list[tuple[float, str]]:
    return [(e.time, e.kind) for e in result.events if e.kind in ("gpu_up", "gpu_down") and gpu in e.gpus]


@pytest.mark.parametrize("second", ["gpu:gpu0@10-30", "node:node0@10-30"])
def test_a_device_is_up_only_when_no_fault_covers_it(second: str) -> None:
    r = simulate([T("x", dur=2, release=40)], policy="fcfs-packing", gpus=GPUS, faults=["gpu:gpu0@5-20", second])
    assert _up_down(r, "gpu0") == [(0.0, "gpu_up"), (5.0, "gpu_down"), (30.0, "gpu_up")]
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_a_task_cannot_run_on_a_device_still_covered_by_a_fault() -> None:
    one = [GpuSpec("gpu0", 16.0, 1.0, "node0")]
    r = simulate([T("x", dur=2, release=21)], policy="fcfs-packing", gpus=one,
                 faults=["gpu:gpu0@5-20", "node:node0@10-30"])
    start = next(e for e in r.events if e.kind == "start" and e.task == "x")
    assert start.time == 30.0 and r.tasks["x"].finish == 32.0


class _Counting(Policy):
    """A policy wrapper that counts the round boundaries the engine calls it at."""

    def __init__(self, name: str) -> None:  # no Policy.__init__: ``rounds`` is the wrapped policy's
        self.inner = get_policy(name)
        self.name = self.inner.name
        self.boundaries = 0

    @property
    def rounds(self):
        return self.inner.rounds

    def __getattr__(self, attr: str):
        return getattr(self.inner, attr)

    def attach(self, cluster) -> None:
        self.inner.attach(cluster)

    def schedule(self, cluster, boundary: bool) -> None:
        self.boundaries += boundary
        self.inner.schedule(cluster, boundary)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_engine_jumps_over_an_idle_outage(policy: str) -> None:
    """Every node down for 100,000 steps: the boundaries inside the outage are skipped, and the
    result is what the outage implies (start at its end)."""
    pol = _Counting(policy)
    r = simulate([T("x", dur=4), T("y", dur=3)], policy=pol, gpus=GPUS, faults=["node:node0@0-100000"])
    assert r.complete and not r.stalled
    assert {k: v.finish for k, v in r.tasks.items()} == {"x": 100004.0, "y": 100003.0}
    assert pol.boundaries < 20, pol.boundaries  # 20,000 before
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_the_engine_jumps_to_a_late_arrival() -> None:
    pol = _Counting("fcfs-packing")
    r = simulate([T("late", dur=2, release=1_000_000)], policy=pol, gpus=GPUS)
    assert r.tasks["late"].finish == 1_000_002.0 and pol.boundaries < 20


def test_a_stalled_simulation_says_so_and_exits_non_zero(tmp_path, capsys) -> None:
    spec = tmp_path / "t.yaml"
    spec.write_text("apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nmetadata: {name: t0}\n"
                    "spec:\n  genResources:\n    gpuMemory: {preferred: 8Gi}\n    computeTime: {duration: 2m}\n")
    rc = main(["simulate", str(spec), "--policy", "fcfs-packing", "--gpus", "80",
               "--fault", "node:node0@1"])
    out, err = capsys.readouterr()
    assert rc == 1, (out, err)  # a stall is an error exit (the run cannot complete) ...
    assert "stalled" in err and "fcfs-packing" in err and "0 of 1 tasks done" in err
    assert "fcfs-packing" not in out  # ... never a table row


def test_a_fault_on_an_unknown_target_names_it_and_the_valid_ones() -> None:
    """One message for the simulator and ``gensolver simulate --fault``
    (:func:`gensolver.sim.faults.unknown_target`): up to eight names, then the count."""
    from gensolver.sim.faults import Fault, unknown_target

    gpus = [f"g{i}" for i in range(10)]
    why = unknown_target(Fault("gpu", "g10", 1.0), gpus, ["n0"])
    assert why == "names unknown GPU 'g10'; GPUs: g0, g1, g2, g3, g4, g5, g6, g7, ... (10 in all)"
    assert unknown_target(Fault("node", "n1", 1.0), gpus, ["n0"]) == "names unknown node 'n1'; nodes: n0"
    assert unknown_target(Fault("gpu", "g9", 1.0), gpus, ["n0"]) is None
    assert unknown_target(Fault("node", "g0", 1.0), gpus, ["n0"]) is not None  # a GPU is not a node
