"""The :func:`gensolver.solve` front end: inputs, argument checks, methods by name or callable."""

from __future__ import annotations

import numpy as np
import pytest

import gensolver
from gensolver import Allocation, InstanceError, Status, solve
from gensolver.model import Bid, Bidder, Instance, Slot
from gensolver.solvers import UnknownMethodError, get_method, list_methods
from gensolver.solvers.result import Timing
from gensolver.verify import brute_force, check_allocation

SLOTS = [
    {"id": "g0t0", "gpu": "gpu0", "start": 0, "end": 60, "capacity": {"memory": 80, "compute": 1.0}},
    {"id": "g0t1", "gpu": "gpu0", "start": 60, "end": 120, "capacity": {"memory": 80, "compute": 1.0}},
]
BIDS = [
    {"id": "a1", "bidder": "A", "value": 5, "demand": {"g0t0": {"memory": 20}}},
    {"id": "a2", "bidder": "A", "value": 6, "demand": {"g0t0": {"memory": 50}, "g0t1": {"memory": 50}}},
    {"id": "b", "bidder": "B", "value": 4, "demand": {"g0t0": {"memory": 40, "compute": 0.5}}},
    {"id": "c", "bidder": "C", "value": 3.5, "demand": {"g0t1": {"memory": 30, "compute": 0.6}}},
]


def as_objects():
    slots = [Slot(s["id"], s["capacity"], s["gpu"], s["start"], s["end"]) for s in SLOTS]
    bids = [Bid(b["id"], b["bidder"], b["value"], b["demand"]) for b in BIDS]
    return bids, slots


# ------------------------------------------------------------------ inputs
def test_plain_dicts_and_model_objects_give_the_same_answer() -> None:
    from_dicts = solve(BIDS, SLOTS, method="cpsat")
    bids, slots = as_objects()
    from_objects = solve(bids, slots, method="cpsat")
    from_instance = solve(Instance(tuple(slots), tuple(bids)), method="cpsat")
    inst = Instance(tuple(slots), tuple(bids))
    opt, _ = brute_force(inst)
    for res in (from_dicts, from_objects, from_instance):
        assert res.status is Status.OPTIMAL
        assert res.welfare == pytest.approx(opt)
        assert check_allocation(inst, res.winners, welfare=res.welfare).feasible


def test_mixed_dicts_and_objects_and_bidders() -> None:
    bids, _ = as_objects()
    res = solve([bids[0], BIDS[2]], SLOTS, method="greedy", bidders=[Bidder("A", 10.0), {"id": "B"}])
    assert set(res.winners) == {"a1", "b"}


def test_instance_with_slots_is_refused() -> None:
    bids, slots = as_objects()
    with pytest.raises(InstanceError, match="pass either an Instance or"):
        solve(Instance(tuple(slots), tuple(bids)), slots)


def test_slots_required_for_bid_lists() -> None:
    with pytest.raises(InstanceError, match=r"^/slots: slots are required"):
        solve(BIDS)


def test_hand_built_invalid_instance_is_validated() -> None:
    slots = (Slot("s", {"memory": 10.0}),)
    bad = Instance(slots, (Bid("x", "X", float("nan"), {"s": {"memory": 1.0}}),))
    with pytest.raises(InstanceError, match=r"^/bids/0/value: NaN is not allowed"):
        solve(bad)
    unknown = Instance(slots, (Bid("x", "X", 1.0, {"t": {"memory": 1.0}}),))
    with pytest.raises(InstanceError, match=r"^/bids/0/demand/t: unknown slot 't'"):
        solve(unknown)


def test_invalid_dict_input_names_the_place() -> None:
    bids = [dict(BIDS[0]), dict(BIDS[1], demand={"g0t1": {"gpu_hours": 1}})]
    with pytest.raises(InstanceError, match=r"^/bids/1/demand/g0t1/gpu_hours: unknown resource 'gpu_hours'"):
        solve(bids, SLOTS)


# ------------------------------------------------------------------ arguments
@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), True, "10", [1]])
def test_bad_time_limit(value) -> None:
    with pytest.raises(ValueError, match=r"time_limit must be a positive finite number of seconds or None, got"):
        solve(BIDS, SLOTS, method="greedy", time_limit=value)


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "4"])
def test_bad_threads(value) -> None:
    with pytest.raises(ValueError, match=r"threads must be a positive integer or None, got"):
        solve(BIDS, SLOTS, method="greedy", threads=value)


@pytest.mark.parametrize("value", [1.5, "0", None, False])
def test_bad_seed(value) -> None:
    with pytest.raises(ValueError, match=r"seed must be an integer, got"):
        solve(BIDS, SLOTS, method="greedy", seed=value)


@pytest.mark.parametrize("method", ["greedy", "auto", "cpsat"])
@pytest.mark.parametrize("value", [-1, 2**31, 99999999999999999999])
def test_seed_out_of_range(method, value) -> None:
    """Checked for every method before any solve (CP-SAT raised a TypeError on 1e20, and
    numpy an unnamed error on -1)."""
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*31\)"):
        solve(BIDS, SLOTS, method=method, seed=value)


@pytest.mark.parametrize("value", [["hint"], "verbose", 3])
def test_options_must_be_a_mapping(value) -> None:
    with pytest.raises(ValueError, match=r"options must be a mapping, got"):
        solve(BIDS, SLOTS, method="greedy", options=value)


@pytest.mark.parametrize("method", [m.name for m in list_methods()])
def test_unknown_option_lists_valid_ones(method) -> None:
    ok, why = get_method(method).available()
    if not ok:
        pytest.skip(why)
    with pytest.raises(ValueError, match=rf"method '{method}' does not take option\(s\) \['bogus'\]"):
        solve(BIDS, SLOTS, method=method, options={"bogus": 1})


def test_unknown_method_lists_valid_ones() -> None:
    with pytest.raises(UnknownMethodError, match=r"unknown method 'gurobi'; valid methods: ") as info:
        solve(BIDS, SLOTS, method="gurobi")
    for m in list_methods():
        assert m.name in str(info.value)
    assert isinstance(info.value, ValueError)


def test_method_must_be_name_or_callable() -> None:
    with pytest.raises(ValueError, match=r"method must be a name or a callable, got int"):
        solve(BIDS, SLOTS, method=3)


def test_hint_with_unknown_bid_is_refused() -> None:
    with pytest.raises(ValueError, match=r"options\['hint'\] names unknown bid 'zz'"):
        solve(BIDS, SLOTS, method="cpsat", options={"hint": ["zz"]})


# ------------------------------------------------------------------ callables
def test_callable_returning_winner_ids() -> None:
    seen = {}

    def mine(instance, *, time_limit, threads, seed, options):
        seen.update(time_limit=time_limit, threads=threads, seed=seed, options=options, n=instance.n_bids)
        return ["a1", "b"]

    res = solve(BIDS, SLOTS, method=mine, time_limit=3.0, threads=2, seed=7, options={"k": 1})
    assert seen == {"time_limit": 3.0, "threads": 2, "seed": 7, "options": {"k": 1}, "n": 4}
    assert res.status is Status.FEASIBLE
    assert res.method == "mine"
    assert res.winners == ("a1", "b")
    assert res.welfare == pytest.approx(9.0)


def test_callable_returning_an_allocation() -> None:
    def mine(instance, **_):
        return Allocation(Status.FEASIBLE, ("a2",), 6.0, "mine", Timing(0.0, 0.0, 0.0))

    res = solve(BIDS, SLOTS, method=mine)
    assert res.status is Status.FEASIBLE and res.winners == ("a2",) and res.welfare == 6.0


@pytest.mark.parametrize(
    "answer, reason",
    [
        (["a1", "a2"], r"bidder 'A' wins 2 bids \(XOR\)"),
        (["a2", "c", "b"], r"slot 'g0t0' resource 'memory': demand 90 > capacity 80"),
        (["nope"], r"unknown bid id 'nope'"),
    ],
)
def test_infeasible_callable_answer_becomes_error(answer, reason) -> None:
    res = solve(BIDS, SLOTS, method=lambda instance, **_: answer)
    assert res.status is Status.ERROR
    assert res.winners == () and res.welfare == 0.0
    assert re_search(reason, res.message)


@pytest.mark.parametrize(
    "winners, welfare, reason",
    [
        (("a1", "a2"), 11.0, r"bidder 'A' wins 2 bids"),
        (("ghost",), 1.0, r"unknown bid id 'ghost'"),
        (("a1",), 50.0, r"claimed welfare 50.0 for winners worth 5.0"),
    ],
)
def test_faulty_callable_allocation_becomes_error(winners, welfare, reason) -> None:
    def mine(instance, **_):
        return Allocation(Status.OPTIMAL, winners, welfare, "mine", Timing(0.0, 0.0, 0.0), bound=welfare, gap=0.0)

    res = solve(BIDS, SLOTS, method=mine)
    assert res.status is Status.ERROR
    assert res.winners == ()
    assert re_search(reason, res.message)


def re_search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


# ------------------------------------------------------------------ result object
def test_allocation_to_dict_is_json_ready() -> None:
    import json

    res = solve(BIDS, SLOTS, method="auto")
    doc = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert doc["status"] == res.status.value
    assert doc["winners"] == list(res.winners)
    assert set(doc) >= {"status", "welfare", "bound", "gap", "winners", "method", "seconds"}


def test_allocation_is_frozen() -> None:
    res = solve(BIDS, SLOTS, method="greedy")
    with pytest.raises(AttributeError):
        res.welfare = 1e9  # type: ignore[misc]
    with pytest.raises(TypeError):
        res.details["x"] = 1  # type: ignore[index]


def test_relative_gap_definition() -> None:
    from gensolver.solvers import relative_gap

    assert relative_gap(5.0, None) is None
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(8.0, 10.0) == pytest.approx(0.2)
    assert relative_gap(10.0, 9.0) == 0.0  # clipped


def test_top_level_exports() -> None:
    for name in gensolver.__all__:
        assert hasattr(gensolver, name)
    assert solve(BIDS, SLOTS, method="greedy").winners == solve(BIDS, SLOTS, method="greedy").winners


def test_ortools_highs_refused_after_pulp_import_instead_of_crashing() -> None:
    """PuLP loads highspy's HiGHS with RTLD_GLOBAL, which crashes OR-Tools' HiGHS; the
    registry must report the method unavailable rather than let the process segfault."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("pulp") is None or importlib.util.find_spec("highspy") is None:
        pytest.skip("needs pulp and highspy")
    code = (
        "import pulp, gensolver\n"
        "from gensolver.solvers import BackendUnavailableError\n"
        "slots = [{'id': 's', 'capacity': {'m': 80}}]\n"
        "bids = [{'id': f'b{j}', 'bidder': f'i{j % 3}', 'value': 1 + j % 5, 'demand': {'s': {'m': 10 + 7 * j % 50}}}"
        " for j in range(12)]\n"
        "try:\n"
        "    gensolver.solve(bids, slots, method='highs')\n"
        "except BackendUnavailableError as exc:\n"
        "    print('refused:', exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused: method 'highs' is unavailable: PuLP has loaded highspy" in proc.stdout


@pytest.mark.parametrize("method", [m.name for m in list_methods() if m.exact])
def test_changing_threads_between_solves(method) -> None:
    """HiGHS sizes a process-wide thread pool on first use; later solves with another
    ``threads`` must still be solved (regression: pulp-highs answered "no solution")."""
    ok, why = get_method(method).available()
    if not ok:
        pytest.skip(why)
    inst = Instance(tuple(Slot(s["id"], s["capacity"]) for s in SLOTS), tuple(as_objects()[0]))
    opt, _ = brute_force(inst)
    for threads in (None, 1, 2, None):
        res = solve(inst, method=method, threads=threads)
        assert res.status is Status.OPTIMAL, (threads, res.message, dict(res.details))
        assert res.welfare == pytest.approx(opt)


def test_an_optimality_claim_contradicted_by_its_own_bound_is_not_believed():
    """``finish`` (every method's result builder) reports ``feasible`` when a backend says
    optimal but its bound is above the welfare by more than round-off; within the backends'
    gap, and for an empty answer with a bound at rounding level, the claim stands."""
    from gensolver.model import Bid, Instance, Slot
    from gensolver.solvers.result import finish

    inst = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 10.0, {"s": {"units": 1.0}}),
                                                    Bid("b", "B", 4.0, {"s": {"units": 1.0}})))
    x = np.array([0.0, 1.0])  # b alone: feasible, worth 4
    res = finish(inst, x, method="test", proven_optimal=True, bound=10.0, build=0.0, solve=0.0)
    assert res.status is Status.FEASIBLE and res.gap == pytest.approx(0.6)
    assert res.details["optimality_claim_rejected"] == pytest.approx(0.6)
    assert "reported optimal" in res.message
    res = finish(inst, x, method="test", proven_optimal=True, bound=4.0 * (1 + 1e-10), build=0.0, solve=0.0)
    assert res.status is Status.OPTIMAL
    res = finish(inst, np.zeros(2), method="test", proven_optimal=True, bound=2e-11, build=0.0, solve=0.0)
    assert res.status is Status.OPTIMAL


def test_numpy_scalars_for_time_limit_threads_and_seed() -> None:
    """A budget or thread count computed with NumPy (np.float64, np.int64) is a number."""
    res = solve(BIDS, SLOTS, method="cpsat", time_limit=np.float64(5.0), threads=np.int64(1), seed=np.int64(3))
    assert res.status is Status.OPTIMAL
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        solve(BIDS, SLOTS, method="greedy", threads=np.float64(2.0))
    with pytest.raises(ValueError, match="time_limit must be a positive"):
        solve(BIDS, SLOTS, method="greedy", time_limit=np.bool_(True))
