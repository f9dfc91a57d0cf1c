"""The market's tail guard ``keep``: a running task keeps its place against Smith's rule.

Hand-computed scores on a tiny pool, the factor's rules on its own, and an event log in which
a long running task is preempted for a shorter one without the guard and kept with it.
"""

from __future__ import annotations

import numpy as np
import pytest

from gensolver.errors import InputError
from gensolver.market.credit import smith_factor
from gensolver.model.tasks import GpuSpec, Task
from gensolver.sim import simulate
from gensolver.sim.engine import Cluster
from gensolver.sim.policies.market import MarketPolicy
from gensolver.sim.workload import Workload


def _scores(**policy_options) -> np.ndarray:
    """One 10 GiB GPU at step 0: ``c`` (32 steps) running, ``a`` (2) and ``b`` (8) waiting, one
    tenant each, no credits yet (every rho is 1 and the credit factor 1): the scores of a, b, c."""
    tasks = [Task(k, 4, 4, d, 1.0, compute=0.3, tenant=k) for k, d in (("a", 2), ("b", 8), ("c", 32))]
    c = Cluster([GpuSpec("g", 10.0)], tasks)
    pol = MarketPolicy(**policy_options)
    pol.attach(c)
    for st in c.tasks.values():
        st.state = "waiting"
    c.start("c", ["g"], 4)
    assert c.tasks["c"].state == "running" and c.tasks["c"].speed == pytest.approx(1.0)
    score, _ = pol._scores(c, [c.tasks[k] for k in "abc"])
    return score / score[1]


@pytest.mark.parametrize(("options", "want"), [
    ({}, [4.0, 1.0, 0.25]),  # Smith's rule: median remaining 8 over 2, 8, 32
    ({"keep": 0.0}, [4.0, 1.0, 0.25]),  # off: the same scores
    ({"keep": 0.5}, [4.0, 1.0, 1.5]),  # the running c: max(0.25, 1) x 1.5
    ({"keep": 2.0}, [4.0, 1.0, 3.0]),  # ... x 3: now ahead of a
    ({"keep": 0.5, "smith": 0.0}, [1.0, 1.0, 1.5]),  # without Smith's rule: the bonus alone
])
def test_keep_scores_by_hand(options, want):
    assert _scores(**options).tolist() == pytest.approx(want)


def test_smith_factor_rules():
    left = np.array([2.0, 8.0, 32.0, 64.0])
    over = np.array([False, False, False, True])  # a caught task: no median, no gain, no keep
    running = np.array([False, True, True, True])
    # median of the honest 2, 8, 32 is 8
    assert smith_factor(left, over, running, 1.0).tolist() == pytest.approx([4.0, 1.0, 0.25, 0.125])
    assert smith_factor(left, over, running, 1.0, 1.0).tolist() == pytest.approx([4.0, 2.0, 2.0, 0.125])
    # a running task Smith's rule ranks up keeps its factor (max with 1), times 1 + keep
    assert smith_factor(left, over, np.array([True, False, False, False]), 1.0, 0.5).tolist() == \
        pytest.approx([6.0, 1.0, 0.25, 0.125])


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "1"])
def test_keep_must_be_a_finite_non_negative_number(bad):
    with pytest.raises(InputError, match="keep"):
        MarketPolicy(keep=bad)


def _log(**policy_options):
    """One 10 GiB GPU, room for one 8 GiB task. ``long`` (30 steps) starts at 0; ``short`` (20
    steps, another tenant) arrives at step 1: Smith's rule ranks it above the long one."""
    long = Task("long", 8, 8, 30, 1.0, compute=0.5, tenant="L", preemptible=True)
    short = Task("short", 8, 8, 20, 1.0, compute=0.5, tenant="S", preemptible=True, release=1)
    w = Workload("keep", (long, short), (GpuSpec("g", 10.0),))
    return simulate(w, policy="market", lease=1, checkpoint_steps=0.0, policy_options=policy_options).events


def test_without_keep_the_long_task_is_preempted_with_keep_it_keeps_its_gpu():
    # checked from the event log: preemptions of ``long`` and the order of the finishes
    for options, preempted in (({}, True), ({"keep": 1.0}, False)):
        events = _log(**options)
        stops = [e for e in events if e.kind == "stop" and e.note == "preempt" and e.task == "long"]
        finish = {e.task: e.time for e in events if e.kind == "finish"}
        assert bool(stops) is preempted
        if preempted:
            assert finish["short"] < finish["long"]
        else:
            assert finish["long"] == pytest.approx(30) and finish["short"] >= 30
