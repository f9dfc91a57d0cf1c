"""Market rounds of the service on a deterministic budget: the same submissions give the same
rounds on an idle machine and under busy loops (the service's counterpart of ``/v1/solve``'s
``work=``, :mod:`tests.service.test_solve_limits`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import gentask, make_api
from .test_market import overfilled

#: what may depend on the machine's load: wall-clock stamps and durations
TIMING = ("at", "seconds")


def _busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _rounds(tmp_path: Path, market: dict[str, Any], seed: int, *, hogs: int) -> tuple[list[dict], dict, list]:
    """Submit one workload (``seed``) to a fresh service and clear four rounds; with ``hogs`` busy
    loops running meanwhile."""
    import random

    rng = random.Random(seed)
    for api in make_api(tmp_path, gpus="n0:4x80,n1:2x40", market=market):
        for k in range(36):
            tenant = ("alice", "bob")[k % 2]
            doc = gentask(f"t{k}", preferred=f"{rng.choice([10, 20, 30, 40, 60])}Gi", minimum="8Gi",
                          duration=f"{rng.randint(3, 40)}m", value=round(rng.uniform(1, 100), 3),
                          preemptible=rng.random() < 0.7, gpus=rng.choice([1, 1, 1, 2]))
            r = api.client.post("/v1/tasks", json=doc, headers=api.h(tenant))
            assert r.status_code == 201, r.text
        gpus = api.client.get("/healthz").json()["gpus"]
        tasks = {t["key"]: t["task"] for t in api.client.get("/v1/tasks?limit=100", headers=api.h("ops")).json()["tasks"]}
        procs = _busy(hogs)
        try:
            docs = []
            for _ in range(4):
                r = api.client.post("/v1/rounds", headers=api.h("ops"))
                assert r.status_code == 201, r.text
                docs.append(r.json())
        finally:
            for p in procs:
                p.kill()
                p.wait()
        return docs, tasks, gpus
    raise AssertionError("unreachable")


def _without_timing(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in TIMING}


#: the deprecated auction's VCG and core rounds with a budget small enough to stop pivots and
#: separation solves (in work units: the same stop on an idle and on a loaded machine)
AUCTION_VCG = {"engine": "auction", "mechanism": "vcg", "time_limit": 0.02}
AUCTION_CORE = {"engine": "auction", "mechanism": "core", "time_limit": 0.02}


@pytest.mark.parametrize("market", [{}, {"credit": {"clearing": "solver", "method": "auto", "budget": 0.05}},
                                    {"engine": "auction"}], ids=["credit", "credit-auto-work", "deprecated-auction"])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_same_submissions_clear_the_same_rounds_idle_and_loaded(tmp_path, market, seed):
    _same_idle_and_loaded(tmp_path, market, seed)


# the core on workload 1 spends 20-90 s in its LP/QP iterations (not budgeted by time_limit,
# the same idle and loaded): workload 2 only, to keep the suite short
@pytest.mark.parametrize(("market", "seed"), [(AUCTION_VCG, 1), (AUCTION_VCG, 2), (AUCTION_CORE, 2)],
                         ids=["vcg-1", "vcg-2", "core-2"])
def test_auction_pivots_clear_the_same_rounds_idle_and_loaded(tmp_path, market, seed):
    """A regression guard: these small rounds came out equal on wall-clock pivots too (budgets
    0.02, 0.1 and 0.4 tried), so :func:`test_auction_pivots_run_on_the_work_budget` is the check
    that fails when the pivots read the wall clock."""
    docs = _same_idle_and_loaded(tmp_path, market, seed)
    assert not all(p["exact"] for d in docs for p in d["payments"])  # the budget did stop some solves


def _same_idle_and_loaded(tmp_path, market, seed) -> list[dict]:
    """Clear four rounds of workload ``seed`` idle and under two busy loops; they must be equal."""
    idle, tasks, gpus = _rounds(tmp_path / "idle", market, seed, hogs=0)
    loaded, _, _ = _rounds(tmp_path / "loaded", market, seed, hogs=2)
    assert sum(len(d["assignments"]) for d in idle) > 0
    for a, b in zip(idle, loaded):
        assert _without_timing(a) == _without_timing(b), a["round"]
        # an independent certificate: what the rounds commit fits the GPUs
        assert overfilled(a["assignments"], gpus, tasks) == [], a["round"]
    return idle


def test_the_comparison_sees_a_different_round(tmp_path):
    one, _, _ = _rounds(tmp_path / "one", {}, 1, hogs=0)
    other, _, _ = _rounds(tmp_path / "other", {}, 3, hogs=0)  # another workload: other rounds
    assert any(_without_timing(a) != _without_timing(b) for a, b in zip(one, other))


@pytest.mark.parametrize("market", [AUCTION_VCG, AUCTION_CORE], ids=["vcg", "core"])
def test_auction_pivots_run_on_the_work_budget(tmp_path, market):
    """What the mechanism itself reports: every solve of the round (VCG's pivots, the core's
    separation solves) read ``time_limit`` as work units, not wall-clock seconds."""
    from gensolver.market.market import work_budget_options
    from gensolver.service.market_glue import task_from_dict

    for api in make_api(tmp_path, gpus="n0:4x80,n1:2x40", market=market):
        for k in range(12):
            doc = gentask(f"t{k}", preferred=f"{10 * (1 + k % 5)}Gi", minimum="8Gi", duration="20m",
                          value=float(1 + 7 * k % 23), gpus=1 + k % 2)
            assert api.client.post("/v1/tasks", json=doc, headers=api.h(("alice", "bob")[k % 2])).status_code == 201
        views = api.client.get("/v1/tasks?limit=100", headers=api.h("ops")).json()["tasks"]
        glue = api.client.app.state.service.glue  # the service's own market, as a round uses it
        cfg = glue.config
        result = glue.clear(0.0, waiting=[(task_from_dict(v["task"]), float(v["remaining"]), 0.0) for v in views],
                            running=[])
    assert result.outcome is not None and result.clearing.assignments
    assert result.outcome.details["budget"] == "work units", result.outcome.details
    if market["mechanism"] == "core":  # and the VCG payments it starts from
        assert "wall clock" not in result.outcome.message
    # the choice itself: only the name ``auto`` with a deterministic config gets the work budget
    assert work_budget_options(market["mechanism"], "auto", cfg) == {"threads": cfg.threads, "deterministic": True}
    assert work_budget_options(market["mechanism"], "cpsat", cfg) is None
    assert work_budget_options("pay-as-bid", "auto", cfg) is None

