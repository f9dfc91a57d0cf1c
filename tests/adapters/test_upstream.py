"""The sharing components' own rules (device plugin, HAMi, KAI) on what ``emit k8s`` writes: every
bundled plan under every flavor is either accepted by kubernetes-validate and the upstream
checks, or refused by name for a reason the component's rules give; each check fails on the
objects the adapter wrote before these rules (reproduced here by hand)."""

from __future__ import annotations

import pytest
import yaml

from gensolver.adapters.common import AdapterError
from gensolver.adapters.flavors import FlavorOptions
from gensolver.adapters.k8s import K8sOptions, k8s_objects
from gensolver.adapters.upstream import upstream_problems
from gensolver.executor import plan_from_dict, read_plan
from tests.adapters.test_k8s import k8s_problems
from tests.executor.helpers import plan_of

FLAVORS = [("nvidia", "timeSlicing"), ("nvidia", "mps"), ("kueue", "timeSlicing"), ("hami", "timeSlicing"),
           ("kai", "timeSlicing")]
#: why the NVIDIA device plugin cannot take a plan as meant (see gensolver.adapters.flavors)
NVIDIA_REFUSALS = ("one config per node", "shares several GPUs", "MPS replicas are equal")


@pytest.mark.parametrize("flavor,sharing", FLAVORS)
def test_every_bundled_plan_passes_the_upstream_rules_or_is_refused_by_name(bundled_plans, flavor: str,
                                                                            sharing: str) -> None:
    accepted = 0
    for name, path in bundled_plans.items():
        plan = read_plan(path)
        options = K8sOptions(default_node="node-a", flavor=FlavorOptions(nvidia_sharing=sharing))
        try:
            objects = k8s_objects(plan, flavor, options)
        except AdapterError as exc:
            assert flavor in ("nvidia", "kueue") and any(r in exc.reason for r in NVIDIA_REFUSALS), (name, exc)
            assert exc.field in ("--flavor", "--nvidia-sharing")
            continue
        accepted += 1
        for obj in objects:
            assert k8s_problems(obj) == [], (name, obj["metadata"]["name"])
        capacity = {d.id: d.memory for d in plan.devices if d.memory}
        assert upstream_problems(objects, flavor, capacity) == [], name
    assert accepted >= (len(bundled_plans) if flavor in ("hami", "kai") else 3)


def _job(name: str, limits: dict, *, devices: str = "gpu0", start: float = 0, end: float = 10, memory: int = 0,
         annotations: dict | None = None) -> dict:
    template = {"metadata": {"annotations": annotations or {}},
                "spec": {"containers": [{"name": "task", "image": "x", "resources": {"limits": limits},
                                         "env": [{"name": "GENSOLVER_MEMORY_LIMIT", "value": str(memory)}]}]}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "annotations": {"gensolver.io/start": str(start), "gensolver.io/end": str(end),
                                                       "gensolver.io/devices": devices}},
            "spec": {"template": template}}


def _config(mode: str, replicas: int, strict: bool | None = None) -> dict:
    body: dict = {"resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}
    if strict is not None:
        body["failRequestsGreaterThanOne"] = strict
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dp"},
            "data": {"gensolver": yaml.safe_dump({"version": "v1", "sharing": {mode: body}})}}


def test_each_check_fails_on_the_old_output() -> None:
    """The findings of the audit, as the old adapter wrote them; and the new output passes."""
    # MPS with a share over 1/2: replicas 1; a whole-GPU run asked for 3 MPS replicas
    assert any("below 2" in p for p in upstream_problems([_config("mps", 1), _job("a", {"nvidia.com/gpu": 1})],
                                                         "nvidia"))
    assert any("MPS fails" in p for p in upstream_problems([_config("mps", 3), _job("a", {"nvidia.com/gpu": 3})],
                                                           "nvidia"))
    # time-slicing: a whole GPU as 10 replicas, not refused by the plugin; 12 replicas asked of 10
    old = [_config("timeSlicing", 10, strict=False), _job("w", {"nvidia.com/gpu": 10}),
           _job("s", {"nvidia.com/gpu": 2}, start=5)]
    assert any("different GPUs" in p for p in upstream_problems(old, "nvidia"))
    assert any("pods at once" in p for p in upstream_problems(
        [_config("timeSlicing", 1, strict=True), _job("a", {"nvidia.com/gpu": 1}), _job("b", {"nvidia.com/gpu": 1})],
        "kueue"))
    # KAI: a share in (0.99, 1) written as "1"; two 0.6 shares at once
    assert any("strictly" in p for p in upstream_problems([_job("k", {}, annotations={"gpu-fraction": "1"})], "kai"))
    assert any("summing" in p for p in upstream_problems(
        [_job("k", {}, annotations={"gpu-fraction": "0.6"}), _job("l", {}, annotations={"gpu-fraction": "0.6"})], "kai"))
    # HAMi: 1 MiB for a compute-only grant; 1.5 MiB rounded down to 1; 3 x 34 % cores at once
    assert any("without memory" in p for p in upstream_problems(
        [_job("h", {"nvidia.com/gpumem": 1, "nvidia.com/gpucores": 50})], "hami"))
    assert any("below the grant" in p for p in upstream_problems(
        [_job("h", {"nvidia.com/gpumem": 1, "nvidia.com/gpucores": 50}, memory=3 << 19)], "hami"))
    assert any("% of the cores" in p for p in upstream_problems(
        [_job(n, {"nvidia.com/gpucores": 34}) for n in "abc"], "hami"))
    assert any("MiB of plan device" in p for p in upstream_problems(
        [_job(n, {"nvidia.com/gpumem": 600}) for n in "ab"], "hami", {"gpu0": 1000 * (1 << 20)}))


def test_the_new_rules_on_the_audits_cases() -> None:
    # a share in (0.99, 1) is a whole GPU under KAI
    plan = plan_of({"gpu0": 100}, {"t": {"at": [("gpu0", 0, 2)], "memory": 99.5, "compute": 0.2}})
    (job,) = [o for o in k8s_objects(plan, "kai", K8sOptions(default_node="n")) if o["kind"] == "Job"]
    spec = job["spec"]["template"]
    assert spec["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert "gpu-fraction" not in spec["metadata"].get("annotations", {})
    # HAMi: a compute-only grant asks no 1-MiB cap; memory is rounded up
    plan = plan_from_dict({
        "schema": "gensolver.plan/v1", "name": "p", "horizon": 2.0,
        "devices": [{"id": "gpu0", "memory": 1 << 30, "compute": 1.0, "entries": [
            {"task": "c", "start": 0.0, "end": 2.0, "memory": 0, "compute": 0.3},
            {"task": "m", "start": 0.0, "end": 2.0, "memory": 3 << 19, "compute": 0.3}]}],
        "tasks": [{"id": "c"}, {"id": "m"}]})
    jobs = {j["metadata"]["annotations"]["gensolver.io/task"]: j for j in k8s_objects(plan, "hami",
                                                                                        K8sOptions(default_node="n"))}
    limits = {k: j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] for k, j in jobs.items()}
    assert "nvidia.com/gpumem" not in limits["c"] and limits["m"]["nvidia.com/gpumem"] == 2
    assert upstream_problems(list(jobs.values()), "hami") == []
    # MPS: a share over 1/2 is refused by name; two shares of 1/2 get 2 replicas, one each
    big = plan_of({"gpu0": 10}, {"a": {"at": [("gpu0", 0, 2)], "memory": 6, "compute": 0.6}})
    with pytest.raises(AdapterError, match="MPS replicas") as info:
        k8s_objects(big, "nvidia", K8sOptions(default_node="n", flavor=FlavorOptions(nvidia_sharing="mps")))
    assert info.value.field == "--nvidia-sharing"
    half = plan_of({"gpu0": 10}, {"a": {"at": [("gpu0", 0, 2)], "memory": 5, "compute": 0.5},
                                  "b": {"at": [("gpu0", 0, 2)], "memory": 5, "compute": 0.5}})
    objects = k8s_objects(half, "nvidia", K8sOptions(default_node="n", flavor=FlavorOptions(nvidia_sharing="mps")))
    assert upstream_problems(objects, "nvidia") == []
    assert [o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] for o in objects if o["kind"] == "Job"] == \
        [{"nvidia.com/gpu": 1}] * 2
    # time-slicing: a whole run beside shared ones is refused (not exclusive); too few replicas too
    mixed = plan_of({"gpu0": 10, "gpu1": 10}, {"w": {"at": [("gpu1", 0, 2)], "memory": 10},
                                               "s": {"at": [("gpu0", 0, 2)], "memory": 5, "compute": 0.5}})
    with pytest.raises(AdapterError, match="whole GPU"):
        k8s_objects(mixed, "nvidia", K8sOptions(default_node="n"))
    with pytest.raises(AdapterError, match="--replicas"):
        k8s_objects(half, "kueue", K8sOptions(default_node="n", flavor=FlavorOptions(replicas=1)))


def test_the_pin_rules_fail_on_pins_hami_would_misread() -> None:
    """HAMi compares each comma-separated part with a card's id exactly (see upstream.py)."""
    good = "GPU-0f95da43-eab5-e7f3-252e-39f9353f7bb2"
    other = "GPU-1f95da43-eab5-e7f3-252e-39f9353f7bb2"

    def pinned(name: str, pin: str, *, gpus: int = 1, devices: str = "gpu0", start: float = 0) -> dict:
        return _job(name, {"nvidia.com/gpu": gpus, "nvidia.com/gpucores": 10}, devices=devices, start=start,
                    end=start + 10, annotations={"nvidia.com/use-gpuuuid": pin})

    assert upstream_problems([pinned("a", good), pinned("b", other, devices="gpu1")], "hami") == []
    assert upstream_problems([pinned("a", f"{good},{other}", gpus=2, devices="gpu0,gpu1")], "hami") == []
    cases = [([pinned("a", good.upper())], "matches no card"), ([pinned("a", f"{good}, {other}", gpus=2,
                                                                          devices="gpu0,gpu1")], "matches no card"),
             ([pinned("a", f"{good},{good}", gpus=2, devices="gpu0,gpu1")], "repeats"),
             ([pinned("a", good, gpus=2, devices="gpu0,gpu1")], "lists 1 GPU(s) for nvidia.com/gpu 2"),
             ([pinned("a", f"{good},{other}", devices="gpu0")], "lists 2 GPU(s) for nvidia.com/gpu 1"),
             ([pinned("a", good), pinned("b", other, start=20)], "pinned to"),
             ([pinned("a", good), pinned("b", good, devices="gpu1")], "pinned for plan devices")]
    for objects, why in cases:
        assert any(why in p for p in upstream_problems(objects, "hami")), why
    for flavor in ("kai", "nvidia", "kueue"):
        assert any("read by HAMi only" in p for p in upstream_problems([pinned("a", good)], flavor))


def _whole_by_device(plan) -> dict[str, set[bool]]:
    """Plan device -> whether the runs on it take it whole (from the plan's grants)."""
    caps = {d.id: d.memory for d in plan.devices}
    out: dict[str, set[bool]] = {}
    for t in plan.tasks:
        for r in plan.runs(t.id):
            whole = max(max(c, m / caps[d] if caps[d] else 1.0) for d, (m, c) in r.grants.items()) >= 1 - 1e-9
            for d in r.devices:
                out.setdefault(d, set()).add(whole or len(r.devices) > 1)
    return out


@pytest.mark.parametrize("flavor,sharing", [("nvidia", "timeSlicing"), ("nvidia", "mps"), ("kueue", "timeSlicing")])
def test_whole_and_shared_runs_on_different_nodes_get_a_config_each(bundled_plans, flavor: str, sharing: str) -> None:
    """Every device on a node of its own: a plan is accepted under the device plugin exactly when
    no device has both whole and shared runs (each node then runs one named config, picked by
    its Node's nvidia.com/device-plugin.config label), and what is emitted passes the rules."""
    split = 0
    for name, path in bundled_plans.items():
        plan = read_plan(path)
        kinds = _whole_by_device(plan)
        options = K8sOptions(nodes={d.id: f"node-{k}" for k, d in enumerate(plan.devices)},
                             flavor=FlavorOptions(nvidia_sharing=sharing))
        try:
            objects = k8s_objects(plan, flavor, options)
        except AdapterError as exc:
            mixed = any(len(k) > 1 for k in kinds.values())
            assert mixed or "MPS replicas are equal" in exc.reason, (name, exc)
            if mixed and "one config per node" in exc.reason:
                assert "nvidia.com/device-plugin.config" in exc.reason
            continue
        assert all(len(k) == 1 for k in kinds.values()), name
        for obj in objects:
            assert k8s_problems(obj) == [], (name, obj["metadata"]["name"])
        capacity = {d.id: d.memory for d in plan.devices if d.memory}
        assert upstream_problems(objects, flavor, capacity) == [], name
        nodes = {o["metadata"]["name"]: o["metadata"]["labels"]["nvidia.com/device-plugin.config"]
                 for o in objects if o["kind"] == "Node"}
        if len({k for s in kinds.values() for k in s}) > 1:  # whole and shared runs: one config per node
            split += 1
            assert nodes == {f"node-{k}": "gensolver-whole" if kinds[d.id] == {True} else "gensolver-shared"
                             for k, d in enumerate(plan.devices) if d.id in kinds}, name
            # the checker fails when a node's label names the other config, or one the ConfigMap lacks
            for bad, why in (("gensolver-shared", "not an exclusive GPU"), ("nope", "not in the device plugin")):
                wrong = [dict(o, metadata=dict(o["metadata"], labels={"nvidia.com/device-plugin.config": bad}))
                         if o["kind"] == "Node" and o["metadata"]["labels"]["nvidia.com/device-plugin.config"] ==
                         "gensolver-whole" else o for o in objects]
                assert any(why in p for p in upstream_problems(wrong, flavor, capacity)), (name, bad)
    assert split >= 1 if sharing == "timeSlicing" else True
