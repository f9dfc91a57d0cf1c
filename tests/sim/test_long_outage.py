"""An outage of one node while another is up: a task that fits only on the node that is down waits
for the outage's end in a few boundaries, whatever the outage's length (issue: ``--fault
node:node0@0-1e15`` hung; ``@0-1000000`` cost a boundary per lease period)."""

from __future__ import annotations

import pytest

from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import audit_log, simulate
from tests.sim.test_fault_spans import POLICIES, _Counting

#: node0: one 80 GiB GPU (under the outage); node1: one 16 GiB GPU (up throughout)
GPUS = [GpuSpec("big", 80.0, 1.0, "node0"), GpuSpec("small", 16.0, 1.0, "node1")]


def T(tid: str, memory: float, dur: int, release: int = 0) -> Task:
    return Task(tid, memory, memory, dur, value=float(dur), release=release, compute=1.0, urgency=0.0)


#: every queue policy and the market (the welfare auction's refill hang at 10**15 is covered by
#: tests/market/test_refill_work.py)
CASES = [(p, end) for p in POLICIES for end in (1_000_000, 10**15)]


@pytest.mark.parametrize(("policy", "end"), CASES)
def test_a_task_waiting_for_a_downed_node_skips_the_outage(policy: str, end: int) -> None:
    pol = _Counting(policy)
    # "large" fits only on node0 (down until ``end``); "fits" runs on node1 meanwhile
    r = simulate([T("large", 40.0, 4), T("fits", 8.0, 3)], policy=pol, gpus=GPUS, faults=[f"node:node0@0-{end}"])
    assert r.complete and not r.stalled
    assert r.tasks["fits"].finish == 3.0
    assert r.tasks["large"].finish == end + 4.0
    assert pol.boundaries < 20, pol.boundaries  # one per lease period before: 200,000 (and 2e14: a hang)
    audit_log(r.events, require_complete=True).raise_if_failed()


def test_a_task_that_fits_on_an_up_node_is_still_offered_every_boundary() -> None:
    """The jump applies only when no waiting task fits: with a free GPU a task fits on, the boundaries
    go on one lease apart (the task starts at once, nothing to skip)."""
    pol = _Counting("fcfs-packing")
    r = simulate([T("a", 8.0, 40)], policy=pol, gpus=GPUS, faults=["node:node0@0-1000"])
    assert r.tasks["a"].finish == 40.0 and pol.boundaries >= 40 // 5 - 1
