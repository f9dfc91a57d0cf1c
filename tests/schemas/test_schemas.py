"""The shipped JSON Schemas against the formats' readers (the authorities).

- every bundled instance, generated GPU round and built plan is valid under its schema;
- documents the readers refuse for a structural reason are refused by the schema too;
- every single-place mutation of a document that the reader accepts, the schema accepts;
- what only the readers can check (references, uniqueness, order) is pinned as such.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (installed with schemathesis, test extra) is missing")

from gensolver import solve  # noqa: E402
from gensolver.executor import PlanError, plan_from_dict, to_plan  # noqa: E402
from gensolver.instances.gpu import gpu_round  # noqa: E402
from gensolver.model import GpuRound, InstanceError, from_dict, read_instance  # noqa: E402
from gensolver.schemas import SCHEMA_FILES, load_schema  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted((ROOT / "gensolver" / "data" / "suites").glob("*/*.json.gz"))


def validator(name: str):
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


INSTANCE, GPUROUND, PLAN = (validator(n) for n in SCHEMA_FILES)


def reads(reader, doc) -> bool:
    try:
        reader(doc)
    except (InstanceError, PlanError):
        return False
    return True


def small_round() -> GpuRound:
    return gpu_round(n_gpus=2, n_tasks=5, steps=4, seed=3)


def a_plan() -> dict:
    rnd = small_round()
    inst = rnd.expand()
    alloc = solve(inst, method="greedy")
    return to_plan(inst, alloc, {t.id: t for t in rnd.tasks}).to_dict()


def test_the_bundled_suites_are_found():
    assert len(BUNDLED) >= 10


def test_unknown_schema_names_are_refused():
    with pytest.raises(ValueError, match="known: gensolver.instance/v1"):
        load_schema("gensolver.nothing/v1")


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_instance_is_valid(path):
    doc = read_instance(path).to_dict()
    assert INSTANCE.is_valid(doc), next(INSTANCE.iter_errors(doc)).message


def test_generated_rounds_and_plans_are_valid():
    for seed in range(4):
        rnd = gpu_round(n_gpus=3, n_tasks=6, steps=5, seed=seed)
        doc = rnd.to_dict()
        assert GPUROUND.is_valid(doc), next(GPUROUND.iter_errors(doc)).message
        assert GpuRound.from_dict(json.loads(json.dumps(doc))).to_dict() == doc
        inst = rnd.expand().to_dict()
        assert INSTANCE.is_valid(inst)
    plan = a_plan()
    assert plan["devices"] and PLAN.is_valid(plan), next(PLAN.iter_errors(plan)).message
    assert plan_from_dict(plan).to_dict() == plan


def _set(doc: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()
BASE_INSTANCE = {
    "schema": "gensolver.instance/v1", "name": "n",
    "slots": [{"id": "s0", "capacity": {"memory": 80, "compute": 1.0}, "gpu": "g", "start": 0, "end": 60}],
    "bids": [{"id": "b0", "bidder": "x", "value": 3, "demand": {"s0": {"memory": 30}}}],
    "bidders": [{"id": "x", "budget": 10}],
}


@pytest.mark.parametrize("path, value", [
    (("schema",), "gensolver.instance/v2"), (("schema",), _DELETE), (("slots",), []), (("slots",), _DELETE),
    (("slots", 0, "id"), ""), (("slots", 0, "id"), 3), (("slots", 0, "capacity"), {}),
    (("slots", 0, "capacity", "memory"), -1), (("slots", 0, "capacity", "memory"), "80"),
    (("slots", 0, "capacity", "memory"), True), (("slots", 0, "gpu"), 0), (("slots", 0, "start"), -5),
    (("bids",), []), (("bids", 0, "value"), -1), (("bids", 0, "value"), None), (("bids", 0, "bidder"), ""),
    (("bids", 0, "demand"), {}), (("bids", 0, "demand", "s0"), {}), (("bids", 0, "demand", "s0", "memory"), -2),
    (("bidders", 0, "budget"), -1), (("bidders", 0, "id"), ""), (("bidders",), {"x": 1}), (("name",), 7),
])
def test_instance_schema_refuses_what_the_reader_refuses(path, value):
    doc = _set(BASE_INSTANCE, path, value)
    assert not reads(from_dict, doc)
    assert not INSTANCE.is_valid(doc)


@pytest.mark.parametrize("path, value", [
    (("bids", 0, "demand"), {"nowhere": {"memory": 1}}),        # a slot that does not exist
    (("bids", 0, "demand", "s0"), {"units": 1}),                 # a resource the slot lacks
    (("slots", 0, "end"), 0, ),                                  # end before start (start 0 is fine, so use 30)
])
def test_references_are_the_readers_job(path, value):
    doc = _set(BASE_INSTANCE, path, value)
    if path[-1] == "end":
        doc["slots"][0]["start"] = 30
    assert INSTANCE.is_valid(doc)
    assert not reads(from_dict, doc)


BASE_ROUND = small_round().to_dict()


@pytest.mark.parametrize("path, value", [
    (("steps",), 0), (("steps",), 1.5), (("steps",), "6"), (("gpus",), []), (("gpus", 0, "memory"), 0),
    (("gpus", 0, "colour"), "red"), (("tasks", 0, "duration"), 0), (("tasks", 0, "urgency"), 1.5),
    (("tasks", 0, "compute"), 0), (("tasks", 0, "preemptible"), "yes"), (("tasks", 0, "value"), _DELETE),
    (("tasks", 0, "gpus"), True), (("tasks", 0, "command"), [1]), (("budgets",), []), (("extra",), 1),
    (("step_seconds",), 0), (("memory_levels",), 0),
])
def test_gpuround_schema_refuses_what_the_reader_refuses(path, value):
    doc = _set(BASE_ROUND, path, value)
    assert not reads(GpuRound.from_dict, doc)
    assert not GPUROUND.is_valid(doc)


BASE_PLAN = a_plan()


@pytest.mark.parametrize("path, value", [
    (("schema",), "gensolver.plan/v0"), (("time_unit",), "ms"), (("devices",), _DELETE), (("devices",), {}),
    (("devices", 0, "id"), ""), (("devices", 0, "memory"), -1), (("devices", 0, "entries", 0, "start"), -1),
    (("devices", 0, "entries", 0, "memory"), "1Gi"), (("devices", 0, "entries", 0, "command"), "python x.py"),
    (("tasks", 0, "preemptible"), "no"), (("tasks", 0, "id"), ""), (("preemptions",), [{"task": "x"}]),
    (("metadata",), []), (("horizon",), -1),
])
def test_plan_schema_refuses_what_the_reader_refuses(path, value):
    doc = _set(BASE_PLAN, path, value)
    assert not reads(plan_from_dict, doc)
    assert not PLAN.is_valid(doc)


# values a buggy producer might write anywhere
ODD = [None, -1, 0, 1, 2.5, "", "x", True, [], {}, ["a"], {"k": 1}, _DELETE]


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


# where a reader coerces instead of checking, the schema states what producers must write:
# a falsy instance metadata is read as {}, a plan's name and bids are read with str(), falsy slots as none
COERCED = {"metadata", "name", "bid", "slots"}


@pytest.mark.parametrize("name, base, reader", [
    ("instance", BASE_INSTANCE, from_dict), ("gpuround", BASE_ROUND, GpuRound.from_dict),
    ("plan", BASE_PLAN, plan_from_dict)], ids=["instance", "gpuround", "plan"])
def test_what_the_reader_accepts_the_schema_accepts(name, base, reader):
    """Every place of a valid document, set to every odd value (or deleted): whenever the reader
    still accepts the document, the schema does too (the schema is never stricter)."""
    v = {"instance": INSTANCE, "gpuround": GPUROUND, "plan": PLAN}[name]
    accepted = refused = 0
    for path in _paths(base):
        if COERCED & {k for k in path if isinstance(k, str)}:
            continue
        for value in ODD:
            doc = _set(base, path, value)
            if reads(reader, doc):
                accepted += 1
                assert v.is_valid(doc), (path, value, next(v.iter_errors(doc)).message)
            else:
                refused += 1
    assert accepted >= 10 and refused >= 100  # both sides were exercised


def test_the_comparison_can_fail():
    """A schema stricter than its reader is caught: require a field the reader does not."""
    strict = load_schema("gensolver.instance/v1")
    strict["required"] = strict["required"] + ["name"]
    doc = _set(BASE_INSTANCE, ("name",), _DELETE)
    assert reads(from_dict, doc) and not jsonschema.Draft202012Validator(strict).is_valid(doc)
