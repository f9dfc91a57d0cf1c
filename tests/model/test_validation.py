"""Every validation error of ``gensolver.instance/v1`` input, pinned by message and JSON pointer."""

from __future__ import annotations

import copy
import math

import pytest

from gensolver.model import SCHEMA, Bid, Instance, InstanceError, Slot, from_dict, validate


def doc() -> dict:
    """A small valid document; each test breaks one place of a fresh copy."""
    return copy.deepcopy({
        "schema": SCHEMA,
        "name": "tiny",
        "slots": [
            {"id": "g0t0", "gpu": "GPU-0", "start": 0, "end": 60, "capacity": {"memory": 80, "compute": 1.0}},
            {"id": "g0t1", "gpu": "GPU-0", "start": 60, "end": 120, "capacity": {"memory": 80, "compute": 1.0}},
        ],
        "bids": [
            {"id": "b0", "bidder": "u1", "value": 42.5, "demand": {"g0t0": {"memory": 30, "compute": 0.5}}},
            {"id": "b1", "bidder": "u1", "value": 50, "demand": {"g0t0": {"memory": 30}, "g0t1": {"memory": 30}}},
            {"id": "b2", "bidder": "u2", "value": 10, "demand": {"g0t1": {"memory": 60}}},
        ],
        "bidders": [{"id": "u1", "budget": 100.0}],
    })


def test_valid_document_round_trips() -> None:
    inst = from_dict(doc())
    assert inst.n_slots == 2 and inst.n_bids == 3 and inst.n_bidders == 2
    again = from_dict(inst.to_dict())
    assert again.to_dict() == inst.to_dict()
    assert inst.bids_of_bidder == {"u1": ("b0", "b1"), "u2": ("b2",)}
    assert inst.budgets == {"u1": 100.0, "u2": None}


def test_error_carries_pointer_and_reason() -> None:
    d = doc()
    d["bids"][2]["value"] = -1
    with pytest.raises(InstanceError) as info:
        from_dict(d)
    assert info.value.pointer == "/bids/2/value"
    assert info.value.reason == "must be non-negative, got -1.0"
    assert str(info.value) == "/bids/2/value: must be non-negative, got -1.0"
    assert isinstance(info.value, ValueError)


def _set(d: dict, path: str, value) -> None:
    """Set ``value`` at a slash-separated path of ``d`` (list indices as numbers)."""
    *parents, last = path.strip("/").split("/")
    node = d
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def _del(d: dict, path: str) -> None:
    *parents, last = path.strip("/").split("/")
    node = d
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    del node[last]


NUMBER_PLACES = [
    "/bids/0/value",
    "/bids/1/demand/g0t1/memory",
    "/slots/1/capacity/compute",
    "/slots/0/start",
    "/bidders/0/budget",
]


@pytest.mark.parametrize("where", NUMBER_PLACES)
@pytest.mark.parametrize(
    "bad, message",
    [
        (math.nan, "NaN is not allowed"),
        (math.inf, "infinite values are not allowed"),
        (-math.inf, "infinite values are not allowed"),
        (-0.5, r"must be non-negative, got -0.5"),
        (True, r"expected a number, got bool True"),
        (False, r"expected a number, got bool False"),
        ("3", r"expected a number, got str '3'"),
        ([1], r"expected a number, got list \[1\]"),
        ({"x": 1}, r"expected a number, got dict"),
    ],
)
def test_bad_numbers(where: str, bad, message: str) -> None:
    d = doc()
    _set(d, where, bad)
    with pytest.raises(InstanceError, match=rf"^{where}: {message}"):
        from_dict(d)


def test_missing_value_is_not_a_number() -> None:
    d = doc()
    _del(d, "/bids/1/value")
    with pytest.raises(InstanceError, match=r"^/bids/1/value: expected a number, got NoneType None"):
        from_dict(d)


@pytest.mark.parametrize(
    "where, bad, message",
    [
        ("/bids/0/id", 7, r"expected a string id, got int 7"),
        ("/bids/0/id", "", r"ids must be non-empty strings"),
        ("/bids/2/bidder", None, r"expected a string id, got NoneType None"),
        ("/slots/1/id", ["g"], r"expected a string id, got list"),
        ("/bidders/0/id", "", r"ids must be non-empty strings"),
        ("/slots/0/gpu", 3, r"expected a string, got int"),
        ("/name", 5, r"expected a string, got int"),
        ("/slots/0/capacity", [80], r"expected an object, got list"),
        ("/bids/1/demand", "g0t0", r"expected an object, got str"),
        ("/bids/1/demand/g0t1", 30, r"expected an object, got int"),
        ("/bids/0", "b0", r"expected an object, got str"),
        ("/slots/1", None, r"expected an object, got NoneType"),
        ("/bidders/0", 1, r"expected an object, got int"),
        ("/metadata", [1], r"expected an object, got list"),
        ("/slots", {"id": "g0t0"}, r"expected a list, got dict"),
        ("/bids", "b0", r"expected a list, got str"),
        ("/bidders", {"u1": 1}, r"expected a list, got dict"),
    ],
)
def test_wrong_types(where: str, bad, message: str) -> None:
    d = doc()
    _set(d, where, bad)
    with pytest.raises(InstanceError, match=rf"^{where}: {message}"):
        from_dict(d)


def test_document_must_be_an_object() -> None:
    with pytest.raises(InstanceError, match=r"^/: expected an object, got list"):
        from_dict([doc()])


@pytest.mark.parametrize(
    "where, bad, message",
    [
        ("/slots", [], "must not be empty"),
        ("/bids", [], "must not be empty"),
        ("/slots/0/capacity", {}, "must name at least one resource"),
        ("/bids/1/demand", {}, "must name at least one slot"),
        ("/bids/1/demand/g0t1", {}, "must name at least one resource"),
    ],
)
def test_empty_lists_and_objects(where: str, bad, message: str) -> None:
    d = doc()
    _set(d, where, bad)
    with pytest.raises(InstanceError, match=rf"^{where}: {message}$"):
        from_dict(d)


def test_empty_bidders_list_is_allowed() -> None:
    d = doc()
    d["bidders"] = []
    assert from_dict(d).n_bidders == 2


@pytest.mark.parametrize("key", ["slots", "bids"])
def test_missing_required_lists(key: str) -> None:
    d = doc()
    del d[key]
    with pytest.raises(InstanceError, match=rf"^/{key}: expected a list, got NoneType"):
        from_dict(d)


def test_duplicate_ids() -> None:
    d = doc()
    d["slots"][1]["id"] = "g0t0"
    with pytest.raises(InstanceError, match=r"^/slots/1/id: duplicate slot id 'g0t0'$"):
        from_dict(d)
    d = doc()
    d["bids"][2]["id"] = "b0"
    with pytest.raises(InstanceError, match=r"^/bids/2/id: duplicate bid id 'b0'$"):
        from_dict(d)
    d = doc()
    d["bidders"].append({"id": "u1"})
    with pytest.raises(InstanceError, match=r"^/bidders/1/id: duplicate bidder id 'u1'$"):
        from_dict(d)


def test_unknown_slot_and_resource() -> None:
    d = doc()
    d["bids"][2]["demand"] = {"g9t9": {"memory": 1}}
    with pytest.raises(InstanceError, match=r"^/bids/2/demand/g9t9: unknown slot 'g9t9'$"):
        from_dict(d)
    d = doc()
    d["bids"][1]["demand"]["g0t1"]["vram"] = 4
    with pytest.raises(InstanceError,
                       match=r"^/bids/1/demand/g0t1/vram: unknown resource 'vram' of slot 'g0t1' \(it has \['compute', 'memory'\]\)$"):
        from_dict(d)


def test_pointer_escapes_slash_and_tilde() -> None:
    d = doc()
    d["slots"][0]["id"] = "n/a~1"
    d["slots"][0]["capacity"] = {"mem/GiB": 80}
    d["bids"] = [{"id": "x", "bidder": "X", "value": 1, "demand": {"n/a~1": {"mem/GiB": -1}}}]
    with pytest.raises(InstanceError, match=r"^/bids/0/demand/n~1a~01/mem~1GiB: must be non-negative"):
        from_dict(d)


@pytest.mark.parametrize("schema", [None, "gensolver.instance/v2", 1])
def test_schema_required_and_checked(schema) -> None:
    d = doc()
    if schema is None:
        del d["schema"]
    else:
        d["schema"] = schema
    with pytest.raises(InstanceError, match=rf"^/schema: expected 'gensolver.instance/v1', got {schema!r}$"):
        from_dict(d)


def test_schema_optional_when_not_required() -> None:
    d = doc()
    del d["schema"]
    assert from_dict(d, require_schema=False).n_bids == 3
    d["schema"] = "other"
    with pytest.raises(InstanceError, match=r"^/schema: expected"):
        from_dict(d, require_schema=False)


def test_end_before_start() -> None:
    d = doc()
    d["slots"][1]["end"] = 30
    with pytest.raises(InstanceError, match=r"^/slots/1/end: end 30.0 is before start 60.0$"):
        from_dict(d)


def test_validate_checks_hand_built_objects_with_the_same_pointers() -> None:
    slots = (Slot("s", {"memory": 10.0}),)
    with pytest.raises(InstanceError, match=r"^/bids/1/value: infinite values are not allowed$"):
        validate(Instance(slots, (Bid("a", "A", 1.0, {"s": {"memory": 1.0}}),
                                  Bid("b", "B", math.inf, {"s": {"memory": 1.0}}))))
    with pytest.raises(InstanceError, match=r"^/bids/1/id: duplicate bid id 'a'$"):
        validate(Instance(slots, (Bid("a", "A", 1.0, {"s": {"memory": 1.0}}),
                                  Bid("a", "B", 1.0, {"s": {"memory": 1.0}}))))
    good = Instance(slots, (Bid("a", "A", 1.0, {"s": {"memory": 1.0}}),))
    assert validate(good) is good


def test_model_objects_are_immutable() -> None:
    inst = from_dict(doc())
    with pytest.raises(TypeError):
        inst.bids[0].demand["g0t0"]["memory"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        inst.slots[0].capacity["memory"] = 1.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        inst.bids[0].value = 3.0  # type: ignore[misc]


def test_capacity_matrix_matches_the_demands() -> None:
    inst = from_dict(doc())
    mat = inst.capacity_matrix.toarray()
    for r, (slot, res) in enumerate(inst.row_labels):
        assert inst.capacity[r] == inst.slots[inst.slot_index[slot]].capacity[res]
        for j, bid in enumerate(inst.bids):
            assert mat[r, j] == bid.demand.get(slot, {}).get(res, 0.0)
    xor = inst.xor_matrix.toarray()
    for i, name in enumerate(inst.bidder_ids):
        assert [bid.bidder == name for bid in inst.bids] == list(xor[i] == 1)


@pytest.mark.parametrize("path, key, pointer, hint", [
    ((), "bidder", "/bidder", "bidders"),
    (("slots", 0), "capacty", "/slots/0/capacty", "capacity"),
    (("bids", 0), "vaule", "/bids/0/vaule", "value"),
])
def test_a_misspelt_field_is_refused_not_ignored(path, key, pointer, hint) -> None:
    d = doc()
    target = d
    for p in path:
        target = target[p]
    target[key] = 1
    with pytest.raises(InstanceError, match=f"did you mean '{hint}'") as info:
        from_dict(d)
    assert info.value.pointer == pointer


def test_a_misspelt_budget_is_refused() -> None:
    d = doc()
    d["bidders"] = [{"id": d["bids"][0]["bidder"], "budjet": 5.0}]
    with pytest.raises(InstanceError, match="did you mean 'budget'") as info:
        from_dict(d)
    assert info.value.pointer == "/bidders/0/budjet"


def test_fields_unlike_any_known_one_are_left_alone() -> None:
    """A producer's own annotations do not make an instance unreadable."""
    d = doc()
    d["producer"] = {"tool": "x"}
    d["bids"][0]["note"] = "from trace"
    d["slots"][0]["rack"] = "r1"
    assert from_dict(d).to_dict() == from_dict(doc()).to_dict()


def test_solve_takes_an_instance_document_and_names_a_wrong_first_argument() -> None:
    from gensolver import solve

    assert solve(doc(), method="greedy").welfare == solve(from_dict(doc()), method="greedy").welfare
    for bad in (None, 42, "round.json"):
        with pytest.raises(InstanceError, match="expected an Instance, an instance document or a sequence of bids"):
            solve(bad)
    with pytest.raises(InstanceError, match="not both") as info:
        solve(from_dict(doc()), bidders=[{"id": "x"}])
    assert info.value.pointer == "/bidders"


def test_numpy_numbers_are_numbers() -> None:
    """Instances built from NumPy arrays carry np.int64 / np.float32 scalars; np.int64 was
    refused as 'expected a number, got int64' while np.float64 passed."""
    import numpy as np

    d = doc()
    d["slots"][0]["capacity"] = {k: np.int64(v) if float(v).is_integer() else np.float32(v)
                                 for k, v in d["slots"][0]["capacity"].items()}
    d["bids"][0]["value"] = np.int64(7)
    first = next(iter(d["bids"][0]["demand"]))
    d["bids"][0]["demand"][first] = {r: np.int64(1) for r in d["bids"][0]["demand"][first]}
    inst = from_dict(d)
    assert inst.bids[0].value == 7.0 and type(inst.bids[0].value) is float
    assert all(type(q) is float for q in inst.bids[0].demand[first].values())
    d["bids"][0]["value"] = np.bool_(True)
    with pytest.raises(InstanceError, match="expected a number"):
        from_dict(d)


def test_an_integer_too_long_to_print_is_refused_by_name() -> None:
    """``coerce_instance`` (what ``gensolver.solve`` takes) with a value of 5,000 digits: Python
    refuses ``str`` of such an int, so the message counts its digits from its bit length."""
    from gensolver.model.validate import coerce_instance

    bids = [{"id": "b", "bidder": "a", "value": 10**5000, "demand": {"s": {"gpu": 1}}}]
    with pytest.raises(InstanceError, match=r"/bids/0/value: number too large \(about 5000 digits"):
        coerce_instance(bids, [{"id": "s", "capacity": {"gpu": 1}}])
