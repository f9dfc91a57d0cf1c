"""Kubernetes objects for every bundled plan and every flavor, validated against the Kubernetes
schemas with kubernetes-validate (no cluster: it ships the API's OpenAPI schemas)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from gensolver.adapters.common import AdapterError
from gensolver.adapters.flavors import FLAVORS, FlavorOptions
from gensolver.adapters.k8s import K8sOptions, dns_name, k8s_objects
from gensolver.adapters.upstream import upstream_problems
from gensolver.executor import read_plan

ROOT = Path(__file__).resolve().parents[2]
RUN = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"
VERSION = kubernetes_validate.latest_version()
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def k8s_problems(obj: dict) -> list[str]:
    """Why the API server would refuse ``obj``: its schema (kubernetes-validate, strict: no unknown
    fields) and the name and label rules the schema leaves to the server; a JobSet (a CRD) by
    :func:`tests.adapters.jobset.jobset_problems`."""
    if obj["kind"] == "JobSet":
        from tests.adapters.jobset import jobset_problems

        return jobset_problems(obj)
    problems = []
    try:
        kubernetes_validate.validate(obj, VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        problems.append(f"schema: {exc.message}")
    name = obj["metadata"].get("name", "")
    if obj["kind"] == "Job":  # its name becomes a pod label: a DNS-1123 label
        if not LABEL.match(name) or len(name) > 63:
            problems.append(f"name {name!r} is not a DNS-1123 label")
    elif not all(LABEL.match(part) for part in name.split(".")) or len(name) > 253:
        problems.append(f"name {name!r} is not a DNS-1123 subdomain")
    labels = dict(obj["metadata"].get("labels", {}))
    labels.update(obj.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {}))
    for key, value in labels.items():
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            problems.append(f"label {key}={value!r} is not a label value")
    return problems


def _node(device: str) -> str:
    return device.rpartition("/")[0] or "node-a"


@pytest.mark.parametrize("flavor", sorted(FLAVORS) + ["nvidia-mps"])
def test_every_bundled_plan_gives_valid_objects_where_the_plan_put_them(bundled_plans, flavor: str) -> None:
    sharing = "mps" if flavor.endswith("-mps") else "timeSlicing"
    flavor = flavor.removesuffix("-mps")
    for name, path in bundled_plans.items():
        plan = read_plan(path)
        try:
            objects = k8s_objects(plan, flavor, K8sOptions(default_node="node-a", time_scale=0.5,
                                                           start_at=1.8e9 if flavor == "hami" else None,
                                                           flavor=FlavorOptions(nvidia_sharing=sharing)))
        except AdapterError as exc:  # the device plugin cannot take it as meant (tests/adapters/test_upstream.py)
            assert flavor in ("nvidia", "kueue") and exc.field in ("--flavor", "--nvidia-sharing"), exc
            continue
        for obj in objects:
            assert k8s_problems(obj) == [], (name, obj["metadata"]["name"])
        jobs = [o for o in objects if o["kind"] == "Job"]
        runs = {(r.task, r.index): r for t in plan.tasks for r in plan.runs(t.id)}
        assert len(jobs) == len(runs) and len({j["metadata"]["name"] for j in jobs}) == len(jobs)
        for job in jobs:
            meta, spec = job["metadata"], job["spec"]["template"]["spec"]
            run = runs[(meta["annotations"]["gensolver.io/task"], int(meta["labels"]["gensolver.io/run"]))]
            # the node the plan put the run on (here every run is on one node)
            assert spec["nodeSelector"] == {"kubernetes.io/hostname": _node(run.devices[0])}
            assert float(meta["annotations"]["gensolver.io/start"]) == pytest.approx(run.start * 0.5)
            assert float(meta["annotations"]["gensolver.io/end"]) == pytest.approx(run.end * 0.5)
            env = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
            assert int(env["GENSOLVER_MEMORY_LIMIT"]) == run.memory
            limits = spec["containers"][0].get("resources", {}).get("limits", {})
            if flavor == "hami":
                assert limits["nvidia.com/gpumem"] == -(-run.memory // (1 << 20))  # MiB, rounded up
                assert limits["nvidia.com/gpucores"] == math.ceil(run.compute * 100 - 1e-9)
                assert spec["initContainers"][0]["name"] == "wait-for-start"
            if flavor == "kai" and "nvidia.com/gpu" not in limits:
                ann = job["spec"]["template"]["metadata"]["annotations"]
                if "gpu-memory" in ann:
                    assert int(ann["gpu-memory"]) == -(-run.memory // (1 << 20))
                else:
                    fraction = float(ann["gpu-fraction"])
                    cap = plan.device(run.devices[0]).memory
                    assert fraction >= max(run.compute, run.memory / cap) - 1e-9 and fraction < 1
            if flavor == "kueue":
                assert meta["labels"]["kueue.x-k8s.io/queue-name"] == "gensolver" and job["spec"]["suspend"] is True


def test_the_checker_refuses_what_a_cluster_refuses() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ok-name"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}
    assert k8s_problems(job) == []
    assert any("schema" in p for p in k8s_problems({**job, "spec": {"template": {"spec": {"containers": [
        {"name": "c", "imagex": "x"}]}}}}))
    assert any("schema" in p for p in k8s_problems({**job, "spec": {**job["spec"], "backoffLimit": "zero"}}))
    assert any("DNS-1123" in p for p in k8s_problems({**job, "metadata": {"name": "Bad_Name"}}))
    assert any("label" in p for p in k8s_problems({**job, "metadata": {"name": "a", "labels": {"x": "-bad-"}}}))


def test_the_cli_lists_the_adapters_values() -> None:
    from gensolver.adapters.flavors import NVIDIA_SHARING
    from gensolver.adapters.slurm import SHARING
    from gensolver.cli import emit_cmd

    assert emit_cmd.FLAVORS == tuple(FLAVORS) and emit_cmd.SHARING == SHARING
    assert emit_cmd.NVIDIA_SHARING == NVIDIA_SHARING


def test_names_are_dns_labels_and_stay_distinct() -> None:
    long = "T" * 100
    a, b = dns_name("plan", long + "a", "0"), dns_name("plan", long + "b", "0")
    assert a != b and all(LABEL.match(n) and len(n) <= 63 for n in (a, b))
    assert LABEL.match(dns_name("___")) and dns_name("x", "y") != dns_name("x-y", "")


def _gang_plan():
    from tests.executor.helpers import plan_of

    return plan_of({"n1/g0": 1, "n1/g1": 1, "n2/g0": 1, "n2/g1": 1},
                   {"gang": {"at": [("n1/g0", 0, 2), ("n1/g1", 0, 2), ("n2/g0", 0, 2), ("n2/g1", 0, 2)],
                             "memory": 1.0, "command": ["true"]}})


def kai_gang_problems(objects: list[dict]) -> list[str]:
    """A KAI PodGroup's documented required fields (``spec.minMember`` >= 1, ``spec.queue``) and
    that as many pods as ``minMember`` name it by ``pod-group-name`` (KAI docs, batch/gang
    scheduling, https://github.com/NVIDIA/KAI-Scheduler/tree/main/docs/batch)."""
    problems = []
    groups = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PodGroup"}
    members: dict[str, int] = {}
    for job in (o for o in objects if o["kind"] == "Job"):
        ann = job["spec"]["template"]["metadata"].get("annotations", {})
        if "pod-group-name" in ann:
            members[ann["pod-group-name"]] = members.get(ann["pod-group-name"], 0) + 1
    for name, group in groups.items():
        if group["apiVersion"] != "scheduling.run.ai/v2alpha2":
            problems.append(f"{name}: apiVersion {group['apiVersion']}")
        spec = group.get("spec", {})
        if not isinstance(spec.get("minMember"), int) or spec["minMember"] < 1 or not spec.get("queue"):
            problems.append(f"{name}: spec needs minMember >= 1 and queue")
        elif members.get(name, 0) != spec["minMember"]:
            problems.append(f"{name}: {members.get(name, 0)} pods join it, minMember {spec['minMember']}")
    problems += [f"pods name missing PodGroup {n}" for n in members if n not in groups]
    return problems


def kueue_gang_problems(objects: list[dict]) -> list[str]:
    """Kueue plain-pod groups: each Pod has the ``kueue.x-k8s.io/queue-name`` and
    ``kueue.x-k8s.io/pod-group-name`` labels and a ``kueue.x-k8s.io/pod-group-total-count``
    annotation equal to the group's pod count (Kueue docs, "Run a plain Pod group",
    https://kueue.sigs.k8s.io/docs/tasks/run/plain_pods/)."""
    problems, groups = [], {}
    for pod in (o for o in objects if o["kind"] == "Pod"):
        labels, ann = pod["metadata"]["labels"], pod["metadata"]["annotations"]
        group = labels.get("kueue.x-k8s.io/pod-group-name")
        if not group or not labels.get("kueue.x-k8s.io/queue-name"):
            problems.append(f"{pod['metadata']['name']}: no queue or pod-group label")
            continue
        groups.setdefault(group, []).append(ann.get("kueue.x-k8s.io/pod-group-total-count"))
    for group, counts in groups.items():
        if set(counts) != {str(len(counts))}:
            problems.append(f"{group}: total counts {counts} for {len(counts)} pods")
    return problems


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
def test_a_gang_across_nodes_is_one_pod_per_node_with_that_nodes_gpus(flavor: str) -> None:
    plan = _gang_plan()
    objects = k8s_objects(plan, flavor, K8sOptions())
    pods = run_objects(objects)
    core = [o for o in objects if o["kind"] != "PodGroup"]  # a CRD: kai_gang_problems checks it
    assert [k8s_problems(o) for o in core] == [[]] * len(core)
    assert len(pods) == 2  # one pod per node, never one pod for the gang
    seen = {}
    for pod in pods:
        spec = pod["spec"] if pod["kind"] == "Pod" else pod["spec"]["template"]["spec"]
        node = spec["nodeSelector"]["kubernetes.io/hostname"]
        devices = pod["metadata"]["annotations"]["gensolver.io/devices"].split(",")
        assert {d.rpartition("/")[0] for d in devices} == {node}
        assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == len(devices) == 2
        env = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
        assert env["GENSOLVER_GANG_SIZE"] == "2" and spec["containers"][0]["command"] == ["true"]
        seen[env["GENSOLVER_GANG_RANK"]] = node
    assert seen == {"0": "n1", "1": "n2"}
    kinds = {o["kind"] for o in objects}
    if flavor == "kai":
        assert "PodGroup" in kinds and kai_gang_problems(objects) == []
    if flavor == "kueue":
        assert kinds - {"PriorityClass"} == {"Pod"} and kueue_gang_problems(objects) == []
    if flavor in ("nvidia", "hami"):  # no gang scheduler: one JobSet (checked by k8s_problems above)
        assert [o["kind"] for o in objects if o["kind"] in ("Job", "Pod", "JobSet")] == ["JobSet"]
    assert upstream_problems(objects, flavor) == []


def test_the_gang_checkers_refuse_a_broken_gang() -> None:
    kai = k8s_objects(_gang_plan(), "kai", K8sOptions())
    group = next(o for o in kai if o["kind"] == "PodGroup")
    group["spec"]["minMember"] = 3
    assert any("minMember 3" in p for p in kai_gang_problems(kai))
    del group["spec"]["queue"]
    assert any("queue" in p for p in kai_gang_problems(kai))
    assert any("missing PodGroup" in p for p in kai_gang_problems([o for o in kai if o["kind"] != "PodGroup"]))
    kueue = [o for o in k8s_objects(_gang_plan(), "kueue", K8sOptions()) if o["kind"] == "Pod"]
    kueue[0]["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "1"
    assert kueue_gang_problems(kueue) != []
    del kueue[1]["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"]
    assert any("no queue" in p for p in kueue_gang_problems(kueue))


def _emit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN, "emit", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def test_cli_emit_k8s_writes_valid_yaml_and_refuses_bad_input(bundled_plans, tmp_path: Path, capsys) -> None:
    from gensolver.cli import main

    plan = bundled_plans["smoke-gpu-0"]
    out = tmp_path / "jobs.yaml"
    done = _emit("k8s", str(plan), "--flavor", "kai", "--node", "gpu-node-1", "--out", str(out), "--start-at",
                 "2026-12-01T12:00:00Z", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    docs = list(yaml.safe_load_all(out.read_text()))
    assert docs and all(k8s_problems(d) == [] for d in docs)
    assert {d["spec"]["template"]["spec"]["schedulerName"] for d in docs} == {"kai-scheduler"}
    t0 = int(datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc).timestamp())
    waits = sorted(d["spec"]["template"]["spec"]["initContainers"][0]["command"][2] for d in docs)
    starts = sorted(int(d["metadata"]["annotations"]["gensolver.io/start"]) for d in docs)  # smoke-gpu-0: 0, 60, 60
    assert waits == sorted(f'while [ "$(date +%s)" -lt {t0 + s} ]; do sleep 1; done' for s in starts)
    for args, field in ((["--flavor", "volcano", "--node", "n"], "--flavor"), (["--flavor", "nvidia"], "--node-map"),
                        (["--flavor", "nvidia", "--node", "n", "--namespace", "Bad_NS"], "--namespace"),
                        (["--flavor", "nvidia", "--node", "n", "--start-at", "tomorrow"], "--start-at"),
                        (["--flavor", "nvidia", "--node", "n", "--node-map", "gpu9=x"], "--node-map"),
                        (["--flavor", "nvidia", "--node", "n", "--nvidia-sharing", "mig"], "--nvidia-sharing")):
        bad = tmp_path / "bad.yaml"
        assert main(["emit", "k8s", str(plan), *args, "--out", str(bad)]) == 2, args
        assert field in capsys.readouterr().err, args
        assert not bad.exists()
    assert main(["emit", "k8s", str(tmp_path / "missing.json"), "--flavor", "nvidia"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_emit_crd_prints_a_valid_crd(tmp_path: Path) -> None:
    done = _emit("crd", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (crd,) = list(yaml.safe_load_all(done.stdout))
    assert k8s_problems(crd) == []
    assert crd["spec"]["names"]["kind"] == "GenTask"


def test_cpu_and_memory_requests_make_pods_burstable_and_bad_quantities_are_refused(tmp_path: Path, capsys) -> None:
    from gensolver.cli import main
    from gensolver.executor import write_plan
    from tests.executor.helpers import plan_of

    plan = plan_of({"gpu0": 10}, {"a": {"at": [("gpu0", 0, 2)], "memory": 5, "compute": 0.5}})
    for flavor in sorted(FLAVORS):
        for job in (o for o in k8s_objects(plan, flavor, K8sOptions(default_node="n", cpu="500m", memory="4Gi"))
                    if o["kind"] == "Job"):
            assert k8s_problems(job) == []
            resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
            assert resources["requests"] == {"cpu": "500m", "memory": "4Gi"} and resources["limits"]["memory"] == "4Gi"
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    for args, field in ((["--cpu", "2 cores"], "--cpu"), (["--memory", "4GB"], "--memory")):
        assert main(["emit", "k8s", str(path), "--flavor", "hami", "--node", "n", *args]) == 2, args
        assert field in capsys.readouterr().err


def _with(plan, **per_task):
    """``plan`` with task fields set (``per_task``: task id -> dict of fields), read back."""
    from gensolver.executor import plan_from_dict

    doc = plan.to_dict()
    for task in doc["tasks"]:
        for key, value in per_task.get(task["id"], {}).items():
            if value is None:
                task.pop(key, None)
            else:
                task[key] = value
    return plan_from_dict(doc)


def test_urgency_becomes_a_priority_class_and_the_classes_are_emitted() -> None:
    from tests.executor.helpers import plan_of

    base = plan_of({"gpu0": 40, "gpu1": 40, "gpu2": 40},
                   {"hot": {"at": [("gpu0", 0, 2)], "memory": 40}, "mid": {"at": [("gpu1", 0, 2)], "memory": 40},
                    "any": {"at": [("gpu2", 0, 2)], "memory": 40}})
    base = _with(base, **{t: {"urgency": None} for t in ("hot", "mid", "any")})
    assert all(t.urgency is None for t in base.tasks)
    plan = _with(base, hot={"urgency": 0.8}, mid={"urgency": 0.3})
    for flavor in sorted(FLAVORS):
        objects = k8s_objects(plan, flavor, K8sOptions(default_node="n"))
        classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PriorityClass"}
        assert all(k8s_problems(o) == [] for o in objects if o["kind"] != "PodGroup")
        assert set(classes) == {"gensolver-urgent", "gensolver-normal"}  # only the bands in use
        assert classes["gensolver-urgent"]["value"] > classes["gensolver-normal"]["value"]
        got = {o["metadata"]["annotations"]["gensolver.io/task"]: o["spec"]["template"]["spec"].get("priorityClassName")
               for o in objects if o["kind"] == "Job"}
        assert got == {"hot": "gensolver-urgent", "mid": "gensolver-normal", "any": None}
    assert not any(o["kind"] == "PriorityClass" for o in k8s_objects(base, "hami", K8sOptions(default_node="n")))


def test_the_plan_reader_refuses_a_bad_urgency_or_tenant() -> None:
    from gensolver.executor import PlanError
    from tests.executor.helpers import plan_of

    base = _with(plan_of({"gpu0": 40}, {"a": {"at": [("gpu0", 0, 2)], "memory": 40}}), a={"urgency": None, "tenant": None})
    for fields, where in (({"urgency": 1.5}, "/urgency"), ({"urgency": "high"}, "/urgency"), ({"tenant": 3}, "/tenant")):
        with pytest.raises(PlanError, match=where):
            _with(base, a=fields)
    kept = _with(base, a={"urgency": 0.5, "tenant": "team-a"})
    assert (kept.task("a").urgency, kept.task("a").tenant) == (0.5, "team-a") and kept.digest != base.digest


def _uuid(device: str) -> str:
    """A GPU UUID for a plan device, made up (as nvidia-smi -L prints one)."""
    import hashlib

    h = hashlib.sha256(device.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def run_objects(objects: list[dict]) -> list[dict]:
    """The Jobs and Pods of ``objects``, with each JobSet's replicatedJob templates (as Jobs) in its place."""
    out = []
    for o in objects:
        if o["kind"] in ("Job", "Pod"):
            out.append(o)
        elif o["kind"] == "JobSet":
            out += [{"kind": "Job", "metadata": r["template"]["metadata"], "spec": r["template"]["spec"]}
                    for r in o["spec"]["replicatedJobs"] for _ in range(r.get("replicas", 1))]
    return out


def _pods(objects: list[dict]) -> list[tuple[dict, dict, dict]]:
    """(pod metadata, pod template metadata, container) of every Job and Pod (a JobSet's members too)."""
    out = []
    for o in run_objects(objects):
        if o["kind"] == "Pod":
            out.append((o["metadata"], o["metadata"], o["spec"]["containers"][0]))
        elif o["kind"] == "Job":
            out.append((o["metadata"], o["spec"]["template"]["metadata"], o["spec"]["template"]["spec"]["containers"][0]))
    return out


def test_hami_pins_every_pod_to_the_planned_gpus(bundled_plans) -> None:
    """Each bundled plan under hami, every plan device given a GPU UUID: every pod carries HAMi's
    pin with the UUIDs of its run's devices (from the plan, not the annotations), as many as its
    nvidia.com/gpu; the objects pass kubernetes-validate and the upstream rules."""
    pinned = 0
    for name, path in bundled_plans.items():
        plan = read_plan(path)
        uuids = {d.id: _uuid(d.id) for d in plan.devices}
        objects = k8s_objects(plan, "hami", K8sOptions(default_node="node-a", gpu_uuids=uuids))
        assert [k8s_problems(o) for o in objects] == [[]] * len(objects), name
        capacity = {d.id: d.memory for d in plan.devices if d.memory}
        assert upstream_problems(objects, "hami", capacity) == [], name
        runs = {(t.id, str(r.index)): r for t in plan.tasks for r in plan.runs(t.id)}
        for meta, template, container in _pods(objects):
            run = runs.pop((meta["annotations"]["gensolver.io/task"], meta["labels"]["gensolver.io/run"]))
            pin = template["annotations"]["nvidia.com/use-gpuuuid"].split(",")
            assert pin == [uuids[d] for d in run.devices], name
            assert container["resources"]["limits"]["nvidia.com/gpu"] == len(pin)
            pinned += 1
        assert runs == {}, name  # every run has its pod
    assert pinned >= len(bundled_plans)


def test_a_gang_on_gpus_named_by_uuid_pins_each_nodes_pod_to_its_gpus() -> None:
    from tests.executor.helpers import plan_of

    names = {f"n{k}/{_uuid(f'x{k}{g}')}": f"n{k}" for k in (1, 2) for g in (0, 1)}
    plan = plan_of({d: 1 for d in names}, {"gang": {"at": [(d, 0, 2) for d in names], "memory": 1.0}})
    objects = k8s_objects(plan, "hami", K8sOptions())
    pods = _pods(objects)
    assert len(pods) == 2
    for meta, template, _container in pods:
        devices = meta["annotations"]["gensolver.io/devices"].split(",")
        node = devices[0].rpartition("/")[0]
        assert sorted(devices) == sorted(d for d, n in names.items() if n == node)
        assert template["annotations"]["nvidia.com/use-gpuuuid"].split(",") == [d.rpartition("/")[2] for d in devices]
    assert upstream_problems(objects, "hami") == []
    # without UUIDs in the names nothing is pinned
    assert all("nvidia.com/use-gpuuuid" not in (t.get("annotations") or {}) for _, t, _ in
               _pods(k8s_objects(_gang_plan(), "hami", K8sOptions())))


def test_pinning_refuses_what_hami_would_misread(tmp_path: Path, capsys, bundled_plans) -> None:
    from gensolver.cli import main

    gang = _gang_plan()
    full = {d.id: _uuid(d.id) for d in gang.devices}
    cases = [("kai", full, "needs --flavor hami"), ("nvidia", full, "needs --flavor hami"),
             ("hami", {"n1/g0": full["n1/g0"]}, "has no GPU UUID"),  # the pod on n1 holds g0 and g1
             ("hami", dict(full, **{"n2/g1": full["n1/g0"]}), "both have GPU"),
             ("hami", {"gpu9": _uuid("gpu9")}, "the plan has no device")]
    for flavor, uuids, why in cases:
        with pytest.raises(AdapterError) as err:
            k8s_objects(gang, flavor, K8sOptions(gpu_uuids=uuids))
        assert err.value.field == "--gpu-uuid" and why in err.value.reason, (flavor, uuids)
    for bad in ("GPU-0F95DA43-EAB5-E7F3-252E-39F9353F7BB2", "GPU-1,GPU-2", "gpu0", _uuid("a") + "\nx: y", ""):
        with pytest.raises(AdapterError) as err:
            K8sOptions(gpu_uuids={"n1/g0": bad})
        assert err.value.field == "--gpu-uuid"
    plan = bundled_plans["smoke-gpu-0"]
    devices = [d.id for d in read_plan(plan).devices]
    device = devices[0]
    out = tmp_path / "jobs.yaml"
    assert main(["emit", "k8s", str(plan), "--flavor", "hami", "--node", "n", *[a for d in devices for a in (
        "--gpu-uuid", f"{d}={_uuid(d)}")], "--out", str(out)]) == 0
    docs = list(yaml.safe_load_all(out.read_text()))
    pins = [(m["annotations"]["gensolver.io/devices"], t["annotations"]["nvidia.com/use-gpuuuid"]) for m, t, _ in _pods(docs)]
    assert pins and all(pin == ",".join(_uuid(d) for d in on.split(",")) for on, pin in pins)
    for args in (["--gpu-uuid", f"{device}=GPU-x"], ["--gpu-uuid", "nodevice"], ["--gpu-uuid", f"gpu9={_uuid('a')}"],
                 ["--gpu-uuid", f"{device}={_uuid('a')}", "--gpu-uuid", f"{device}={_uuid('b')}"]):
        bad = tmp_path / "bad.yaml"
        assert main(["emit", "k8s", str(plan), "--flavor", "hami", "--node", "n", *args, "--out", str(bad)]) == 2, args
        assert "--gpu-uuid" in capsys.readouterr().err, args
        assert not bad.exists()
