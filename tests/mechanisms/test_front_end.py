"""run_mechanism: registry, errors, budgets, a shared conformance suite, parallel pivots."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings

from gensolver.mechanisms import MECHANISMS, Outcome, UnknownMechanismError, run_mechanism
from gensolver.model import Bid, Instance, Slot, validate
from gensolver.testing import instances
from gensolver.verify import is_budget_feasible, is_individually_rational

from .helpers import EXACT, goods_instance

ALL = sorted(MECHANISMS)


def test_unknown_mechanism_lists_valid_ones():
    inst = goods_instance([("x", "X", 1, ["A"])], ["A"])
    with pytest.raises(UnknownMechanismError, match="valid mechanisms: core, greedy-critical, lavi-swamy, pay-as-bid, vcg"):
        run_mechanism(inst, mechanism="vickrey")


def test_bad_arguments():
    inst = goods_instance([("x", "X", 1, ["A"])], ["A"])
    with pytest.raises(ValueError, match="time_limit"):
        run_mechanism(inst, time_limit=-1)
    with pytest.raises(ValueError, match="executor"):
        run_mechanism(inst, executor=object())
    with pytest.raises(ValueError, match="options must be a mapping"):
        run_mechanism(inst, options=[1])


def test_callable_mechanism():
    def free(instance, *, method, time_limit, executor, options):
        out = run_mechanism(instance, mechanism="pay-as-bid", method=method)
        return dataclasses.replace(out, mechanism="free", payments={b: 0.0 for b in out.payments}, revenue=0.0)

    inst = goods_instance([("x", "X", 3, ["A"])], ["A"])
    assert run_mechanism(inst, mechanism=free).mechanism == "free"


def test_outcome_is_frozen_and_serialisable():
    inst = goods_instance([("x", "X", 3, ["A"]), ("y", "Y", 2, ["A"])], ["A"])
    out = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert isinstance(out, Outcome)
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.revenue = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        out.payments["X"] = 0.0  # type: ignore[index]
    doc = out.to_dict()
    assert doc["payments"] == {"X": 2.0, "Y": 0.0} and doc["payment_bounds"]["X"] == [2.0, 2.0]


@pytest.mark.parametrize("mechanism", ALL)
def test_budget_caps_payment(mechanism):
    """X bids 10 with budget 3, Y bids 8: every mechanism here would charge X at least 8 ...
    except greedy-critical (critical value 8 too); all must cap at 3 and flag X."""
    inst = goods_instance([("x", "X", 10, ["A"]), ("y", "Y", 8, ["A"])], ["A"],
                          bidders=[{"id": "X", "budget": 3.0}])
    out = run_mechanism(inst, mechanism=mechanism, **({} if mechanism == "greedy-critical" else EXACT))
    assert out.allocation.winners == ("x",)
    assert out.payments["X"] == 3.0
    assert out.budget_capped == ("X",)
    assert "budget" in out.message
    assert is_budget_feasible(out, inst)
    assert out.payment_bounds["X"][1] <= 3.0


def test_budget_check_can_fail():
    inst = goods_instance([("x", "X", 10, ["A"]), ("y", "Y", 8, ["A"])], ["A"], bidders=[{"id": "X", "budget": 3.0}])
    out = run_mechanism(inst, mechanism="pay-as-bid", **EXACT)
    over = dataclasses.replace(out, payments={**out.payments, "X": 5.0})
    assert not is_budget_feasible(over, inst)
    assert not is_individually_rational(dataclasses.replace(out, payments={**out.payments, "X": 11.0}), inst)


class TestConformance:
    """Shared behaviour of every registered mechanism."""

    @pytest.mark.parametrize("mechanism", ALL)
    @settings(max_examples=10, deadline=None)
    @given(inst=instances(max_slots=3, max_bidders=4, max_bids_per_bidder=2, budgets=True))
    def test_ir_budget_and_accounting(self, mechanism, inst):
        kw = {} if mechanism == "greedy-critical" else EXACT
        out = run_mechanism(inst, mechanism=mechanism, **kw)
        assert set(out.payments) == set(inst.bidder_ids) == set(out.utilities) == set(out.payment_bounds)
        assert is_individually_rational(out, inst), is_individually_rational(out, inst).violations
        assert is_budget_feasible(out, inst)
        assert out.revenue == pytest.approx(sum(out.payments.values()))
        winners = {inst.bids[inst.bid_index[w]].bidder for w in out.allocation.winners}
        for b in inst.bidder_ids:
            if b not in winners:
                assert out.payments[b] == 0.0
            lo, hi = out.payment_bounds[b]
            assert lo <= hi + 1e-12

    @pytest.mark.parametrize("mechanism", ALL)
    def test_empty_and_single_bid(self, mechanism):
        inst = goods_instance([("x", "X", 4, ["A"])], ["A"])
        out = run_mechanism(inst, mechanism=mechanism)
        assert out.allocation.winners == ("x",)
        assert 0.0 <= out.payments["X"] <= 4.0


def _medium_instance() -> Instance:

    rng = np.random.default_rng(7)
    slots = [Slot(f"s{k}", {"units": 1.0}) for k in range(12)]
    bids = []
    for j in range(40):
        goods = rng.choice(12, size=int(rng.integers(1, 4)), replace=False)
        bids.append(Bid(f"b{j}", f"B{j // 2}", float(rng.integers(10, 100)), {f"s{g}": {"units": 1.0} for g in goods}))
    return validate(Instance(tuple(slots), tuple(bids)))


def test_parallel_pivots_match_serial():
    inst = _medium_instance()
    serial = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert serial.exact and len(serial.details["pivots"]) >= 3
    with ThreadPoolExecutor(2) as pool:
        threaded = run_mechanism(inst, mechanism="vcg", executor=pool, **EXACT)
    with ProcessPoolExecutor(2) as pool:
        processes = run_mechanism(inst, mechanism="vcg", executor=pool, **EXACT)
    for out in (threaded, processes):
        assert out.exact
        assert out.allocation.winners == serial.allocation.winners
        assert dict(out.payments) == pytest.approx(dict(serial.payments), abs=1e-9)
    assert processes.details["executor"] == "ProcessPoolExecutor"
    # worker processes run the same LP-dual fast path as threads (not a cold re-solve each)
    fast_path = {"trivial-bound", "dual-bound", "reduced-cost-fixing", "anytime"}
    for out in (serial, threaded, processes):
        assert {p["how"] for p in out.details["pivots"].values()} <= fast_path


class _RecordingExecutor(Executor):
    """Runs each task at once in this thread and keeps its arguments (one worker)."""

    _max_workers = 1

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def submit(self, fn, /, *args, **kwargs):
        self.calls.append(args)
        fut: Future = Future()
        fut.set_result(fn(*args, **kwargs))
        return fut


def test_worker_pivots_receive_the_bounds_settled_before_them():
    """Without shared memory, each pivot is sent the bounds settled so far (and the best
    solution known without its bidder), so later pivots can require settled bidders to win."""
    inst = _medium_instance()
    threaded = run_mechanism(inst, mechanism="vcg", **EXACT)
    ex = _RecordingExecutor()
    out = run_mechanism(inst, mechanism="vcg", executor=ex, **EXACT)
    assert out.exact and dict(out.payments) == pytest.approx(dict(threaded.payments), abs=1e-9)
    assert len(ex.calls) >= 3
    # argument 8 is the settled bounds: one more finished pivot before each submission
    assert [len(args[8]) for args in ex.calls] == list(range(len(ex.calls)))
    # argument 9, the warm start, when there is one, gives the pivot's bidder nothing
    for args in ex.calls:
        P, owner, start = args[0], args[1], args[9]
        assert start is None or owner not in set(P.owner[start > 0.5].tolist())


def test_pivots_on_a_dask_cluster_match_serial():
    """A real LocalCluster (worker processes) through ``Client.get_executor()``."""
    distributed = pytest.importorskip("distributed")
    inst = _medium_instance()
    serial = run_mechanism(inst, mechanism="vcg", **EXACT)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        out = run_mechanism(inst, mechanism="vcg", executor=client.get_executor(), **EXACT)
    assert out.exact and out.allocation.winners == serial.allocation.winners
    assert dict(out.payments) == pytest.approx(dict(serial.payments), abs=1e-9)
    assert out.details["executor"] == "ClientExecutor"


@settings(max_examples=25, deadline=None)
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=2))
def test_worker_path_payments_match_brute_force(inst):
    """The executor path without shared memory (run synchronously here) against brute force."""
    from gensolver.verify import brute_force

    from .helpers import clarke_by_brute_force

    out = run_mechanism(inst, mechanism="vcg", executor=_RecordingExecutor(), **EXACT)
    assert out.exact
    assert out.allocation.welfare == pytest.approx(brute_force(inst)[0], abs=1e-7)
    expected = clarke_by_brute_force(inst, out.allocation.winners)
    assert dict(out.payments) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("seed", [1, 2])
def test_worker_path_matches_cold_cpsat_on_cats(seed):
    """CATS pivots are real MIPs (bounds settled by earlier pivots decide which bidders must
    win): the worker path's payments against independent cold CP-SAT re-solves."""
    from gensolver.instances.cats import arbitrary

    inst = arbitrary(40, 150, seed=seed)  # 5 and 10 winners
    cold = run_mechanism(inst, mechanism="vcg", method="cpsat", options={"warm_start": False})
    out = run_mechanism(inst, mechanism="vcg", executor=_RecordingExecutor(), **EXACT)
    assert cold.exact and out.exact
    assert out.allocation.welfare == pytest.approx(cold.allocation.welfare, rel=1e-9)
    assert dict(out.payments) == pytest.approx(dict(cold.payments), abs=1e-6)
