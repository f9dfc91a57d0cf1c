"""The trace relaxations of ``benchmarks/bench_market_levers.py`` (what-if rows): every task
preemptible, free preemption. Checked on a hand-computed run, not against the script itself."""

from __future__ import annotations

import pytest

from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim.workload import Workload
from tests.scriptload import load_script

levers = load_script("benchmarks/bench_market_levers.py")


def _workload() -> Workload:
    # one 16 GiB GPU; A (20 steps, t=0) and B (2 steps, t=1) both need all of it, neither
    # preemptible; lease 5
    a = Task("A", 16.0, 16.0, 20, value=1.0, release=0, preemptible=False)
    b = Task("B", 16.0, 16.0, 2, value=1.0, release=1, preemptible=False)
    return Workload("tiny", (a, b), (GpuSpec("g", 16.0, 1.0, "n"),))


def test_the_trace_as_it_is():
    # B waits for A: A 0-20, B 20-22 -> JCT A 20, B 21
    assert levers.run("market", _workload()).jct() == pytest.approx({"A": 20, "B": 21})


@pytest.mark.parametrize("checkpoint, a_end", [(1.0, 23.0), (0.0, 22.0)])
def test_every_task_preemptible(checkpoint, a_end):
    # relaxed: at the boundary at 5 Smith's rule ranks B (2 steps) above A (15 left): A is
    # stopped, B runs 5-7 (JCT 6), A resumes at 7 with 15 steps of work plus the checkpoint cost
    r = levers.run(f"market:preemptible=all+checkpoint={checkpoint:g}", _workload())
    assert r.jct() == pytest.approx({"A": a_end, "B": 6})


def test_a_bad_relaxation_is_refused():
    with pytest.raises(SystemExit, match="preemptible must be 'all'"):
        levers.run("market:preemptible=some", _workload())
