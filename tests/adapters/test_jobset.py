"""Multi-node gangs under the flavors without a gang scheduler (``nvidia``, ``hami``) as one
JobSet: valid against JobSet's own schema and webhook names (``tests/adapters/jobset.py``), its
members the plan's gang, applied at the gang's start; and the checker refuses broken JobSets."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gensolver.adapters.k8s import K8sOptions, k8s_objects
from gensolver.adapters.k8s_apply import apply_groups, apply_script
from gensolver.adapters.upstream import upstream_problems
from tests.adapters.jobset import SCHEMA, jobset_problems
from tests.adapters.test_k8s import k8s_problems
from tests.executor.helpers import plan_of

T0 = 1_900_000_000.0


def _spec(nodes: dict[str, int], name: str) -> dict[str, Any]:
    """Devices (node -> GPU count) and tasks: a gang over all of them, a later single-node run."""
    devices = {f"{n}/g{k}": 1 for n, count in nodes.items() for k in range(count)}
    first = next(iter(devices))
    return {"devices": devices, "name": name,
            "tasks": {name: {"at": [(d, 0, 2) for d in devices], "memory": 0.5, "command": ["true"]},
                      "after": {"at": [(first, 2, 3)], "memory": 0.5}}}


CASES = [_spec({"n1": 2, "n2": 2}, "gang"), _spec({"a": 1, "b": 3, "c": 1}, "uneven"),
         _spec({f"w{k}": 1 for k in range(11)}, "wide-" + "x" * 70)]  # 11 members, a name over 63


def _gang_of(spec: dict[str, Any]) -> dict[str, set[str]]:
    """node -> plan devices of the gang, from the spec the plan was made of (not from the emitter)."""
    out: dict[str, set[str]] = {}
    for device, _, _ in spec["tasks"][spec["name"]]["at"]:
        out.setdefault(device.rpartition("/")[0], set()).add(device)
    return out


@pytest.mark.parametrize("flavor", ["nvidia", "hami"])
@pytest.mark.parametrize("spec", CASES, ids=["2x2", "uneven", "wide"])
def test_a_gang_is_one_valid_jobset_whose_members_are_the_plans_gang(flavor: str, spec: dict[str, Any]) -> None:
    plan = plan_of(spec["devices"], spec["tasks"])
    objects = k8s_objects(plan, flavor, K8sOptions())
    (jobset,) = [o for o in objects if o["kind"] == "JobSet"]
    assert jobset_problems(jobset) == []
    assert [k8s_problems(o) for o in objects] == [[]] * len(objects)
    assert upstream_problems(objects, flavor) == []
    # members: one per node of the gang, each with exactly that node's devices and GPUs
    members = {}
    for rjob in jobset["spec"]["replicatedJobs"]:
        assert rjob["replicas"] == 1
        pod = rjob["template"]["spec"]["template"]["spec"]
        node = pod["nodeSelector"]["kubernetes.io/hostname"]
        devices = set(rjob["template"]["metadata"]["annotations"]["gensolver.io/devices"].split(","))
        assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == len(devices)
        members[node] = devices
    assert members == _gang_of(spec)
    # the single-node run is a plain Job, not part of any JobSet
    jobs = [o for o in objects if o["kind"] == "Job"]
    assert [j["metadata"]["annotations"]["gensolver.io/task"] for j in jobs] == ["after"]


def test_kai_and_kueue_keep_their_own_gang_objects() -> None:
    plan = plan_of(CASES[0]["devices"], CASES[0]["tasks"])
    for flavor in ("kai", "kueue"):
        assert all(o["kind"] != "JobSet" for o in k8s_objects(plan, flavor, K8sOptions()))


def test_the_apply_script_creates_the_jobset_at_the_gangs_start() -> None:
    spec = CASES[1]
    plan = plan_of(spec["devices"], spec["tasks"])
    objects = k8s_objects(plan, "hami", K8sOptions(start_at=T0))
    groups = apply_groups(objects, T0)
    at = {second: [o["kind"] for o in items] for second, items in groups if second is not None}
    assert at == {int(T0): ["JobSet"], int(T0) + 2: ["Job"]}
    assert "JobSet" in apply_script(objects, start_at=T0)


def _broken(jobset: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    def edit(fn: Any) -> dict[str, Any]:
        bad = copy.deepcopy(jobset)
        fn(bad)
        return bad

    rjobs = "replicatedJobs"
    return [
        ("schema", edit(lambda o: o["spec"].update(unknownField=1))),
        ("schema", edit(lambda o: o["spec"][rjobs][0].update(replicas="1"))),
        ("schema", edit(lambda o: o["spec"]["successPolicy"].update(operator="Some"))),
        ("failurePolicy", edit(lambda o: o["spec"]["failurePolicy"].update(maxRestarts=3))),
        ("failurePolicy", edit(lambda o: o["spec"].pop("failurePolicy"))),
        ("successPolicy", edit(lambda o: o["spec"]["successPolicy"].update(operator="Any"))),
        ("startupPolicy", edit(lambda o: o["spec"].update(startupPolicy={"startupPolicyOrder": "InOrder"}))),
        ("not unique", edit(lambda o: o["spec"][rjobs][1].update(name=o["spec"][rjobs][0]["name"]))),
        ("DNS-1035", edit(lambda o: o["metadata"].update(name="g" * 60))),
        ("DNS-1035", edit(lambda o: o["metadata"].update(name="1gang"))),
        ("not pinned", edit(lambda o: o["spec"][rjobs][0]["template"]["spec"]["template"]["spec"].pop("nodeSelector"))),
        ("share nodes", edit(lambda o: o["spec"][rjobs][1]["template"]["spec"]["template"]["spec"].update(
            nodeSelector=o["spec"][rjobs][0]["template"]["spec"]["template"]["spec"]["nodeSelector"]))),
        ("schema", edit(lambda o: o["spec"][rjobs][0]["template"]["spec"]["template"]["spec"]["containers"][0].pop("name"))),
        ("apiVersion", edit(lambda o: o.update(apiVersion="jobset.x-k8s.io/v1alpha1"))),
    ]


def test_the_jobset_checker_refuses_a_broken_jobset() -> None:
    plan = plan_of(CASES[0]["devices"], CASES[0]["tasks"])
    (jobset,) = [o for o in k8s_objects(plan, "nvidia", K8sOptions()) if o["kind"] == "JobSet"]
    assert jobset_problems(jobset) == []
    for why, bad in _broken(jobset):
        problems = jobset_problems(bad)
        assert any(why in p for p in problems), (why, problems)


def test_the_vendored_schema_says_where_it_comes_from() -> None:
    assert "kubernetes-sigs/jobset v0.12.0" in SCHEMA["$comment"]
    spec = SCHEMA["properties"]["spec"]["properties"]
    assert {"replicatedJobs", "failurePolicy", "successPolicy", "startupPolicy"} <= set(spec)
