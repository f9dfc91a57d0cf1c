"""Whole and shared runs on one node at different times under the NVIDIA device plugin: the
node's config label (``nvidia.com/device-plugin.config``) is switched between them by the apply
script, which the plugin follows at once (its "Updating Per-Node Configuration With a Node
Label"). The goal: every bundled plan, one node per device, under every flavor passes
kubernetes-validate strict and the upstream rules, or is refused by name for a reason the
component gives (MPS: equal replicas). The script runs against a stub ``kubectl`` (a small
model of the API server and the plugin) on a simulated clock, and its log is checked against
the plan, not against the adapter's own objects."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver.adapters.common import AdapterError
from gensolver.adapters.flavors import CONFIG_LABEL, FROM, SHARED_CONFIG, WHOLE_CONFIG, FlavorOptions
from gensolver.adapters.k8s import K8sOptions, k8s_objects
from gensolver.adapters.k8s_apply import apply_script, relabels
from gensolver.adapters.upstream import upstream_problems
from gensolver.executor import read_plan
from tests.adapters.test_k8s import k8s_problems, kai_gang_problems, kueue_gang_problems
from tests.executor.helpers import plan_of

T0 = 1_900_000_000
#: (flavor, nvidia sharing) pairs; hami and kai ignore the sharing mode
FLAVORS = [("nvidia", "timeSlicing"), ("nvidia", "mps"), ("kueue", "timeSlicing"), ("kueue", "mps"),
           ("hami", "timeSlicing"), ("kai", "timeSlicing")]


def _options(plan, sharing: str = "timeSlicing", *, relabel: bool = True, scale: float = 1.0) -> K8sOptions:
    """One node per plan device (``node-K``), started at T0, relabelled by an apply script."""
    return K8sOptions(nodes={d.id: f"node-{k}" for k, d in enumerate(plan.devices)}, start_at=T0, time_scale=scale,
                      flavor=FlavorOptions(nvidia_sharing=sharing, relabel=relabel))


def _whole_runs(plan) -> dict[tuple[str, str], bool]:
    """(task, run index) -> whether the run takes its devices whole, from the plan's grants."""
    caps = {d.id: d.memory for d in plan.devices}
    return {(t.id, str(r.index)): max(max(c, m / caps[d] if caps[d] else 1.0) for d, (m, c) in r.grants.items())
            >= 1 - 1e-9 for t in plan.tasks for r in plan.runs(t.id)}


def _mps_impossible(plan) -> bool:
    """Whether equal MPS replicas cannot carry the plan: the largest share of a shared run is over
    1/2, or a device runs more shared runs at once than 1 / that share (from the plan alone)."""
    whole = _whole_runs(plan)
    caps = {d.id: d.memory for d in plan.devices}
    shared = [(r, max(max(c, m / caps[d] if caps[d] else 1.0) for d, (m, c) in r.grants.items()))
              for t in plan.tasks for r in plan.runs(t.id) if not whole[(t.id, str(r.index))]]
    if not shared:
        return False
    replicas = math.floor(1 / max(f for _, f in shared) + 1e-9)
    most = max(sum(1 for o, _ in shared if d in o.devices and o.start <= r.start < o.end)
               for r, _ in shared for d in r.devices)
    return replicas < 2 or most > replicas


@pytest.mark.parametrize("flavor,sharing", FLAVORS)
def test_every_bundled_plan_one_node_per_device_passes_or_is_refused_by_name(bundled_plans, flavor: str,
                                                                              sharing: str) -> None:
    relabelled = 0
    for name, path in bundled_plans.items():
        plan = read_plan(path)
        try:
            objects = k8s_objects(plan, flavor, _options(plan, sharing))
        except AdapterError as exc:
            # only MPS's equal replicas refuse, and only where the plan shows they cannot carry it
            assert flavor in ("nvidia", "kueue") and sharing == "mps" and _mps_impossible(plan), (name, exc)
            assert exc.field == "--nvidia-sharing" and "MPS replicas" in exc.reason, (name, exc)
            continue
        assert not (sharing == "mps" and flavor in ("nvidia", "kueue") and _mps_impossible(plan)), name
        for obj in objects:
            if obj["kind"] != "PodGroup":  # a CRD: kai_gang_problems checks it
                assert k8s_problems(obj) == [], (name, obj["metadata"]["name"])
        assert kai_gang_problems(objects) == [] and kueue_gang_problems(objects) == [], name
        capacity = {d.id: d.memory for d in plan.devices if d.memory}
        assert upstream_problems(objects, flavor, capacity) == [], name
        relabelled += any(o["kind"] == "Node" and FROM in o["metadata"]["annotations"] for o in objects)
    if flavor in ("nvidia", "kueue") and sharing == "timeSlicing":
        assert relabelled >= 2  # small-gpu-1 and small-gpu-2: a device holds whole and shared runs at different times


def _small(bundled_plans, name: str, flavor: str = "nvidia"):
    plan = read_plan(bundled_plans[name])
    return plan, k8s_objects(plan, flavor, _options(plan))


def test_the_relabel_rules_fail_on_objects_the_plugin_would_misread(bundled_plans) -> None:
    """Each timeline rule of upstream.py fails on a broken version of a good output."""
    plan, objects = _small(bundled_plans, "small-gpu-1")
    capacity = {d.id: d.memory for d in plan.devices if d.memory}
    assert upstream_problems(objects, "nvidia", capacity) == []
    later = [o for o in objects if o["kind"] == "Node" and FROM in o["metadata"]["annotations"]]
    assert later

    def edit(change) -> list[dict]:
        return [change(o) if o is later[0] else o for o in objects]

    def retime(o: dict, value: str) -> dict:
        return dict(o, metadata=dict(o["metadata"], annotations=dict(o["metadata"]["annotations"], **{FROM: value})))

    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Job"}
    node = later[0]["metadata"]["name"]
    on_node = [p for p in pods.values() if p["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"] == node]
    runs = sorted((float(p["metadata"]["annotations"]["gensolver.io/start"]),
                   float(p["metadata"]["annotations"]["gensolver.io/end"])) for p in on_node)
    middle = (runs[0][0] + runs[0][1]) / 2  # inside the node's first run
    cases = [
        (edit(lambda o: retime(o, f"{middle:g}")), "while the pod runs"),
        (edit(lambda o: retime(o, "soon")), "is not a number"),
        (edit(lambda o: dict(o, metadata={k: v for k, v in o["metadata"].items() if k != "annotations"})),
         "first labels"),
        ([o for o in objects if o is not later[0]], "not an exclusive GPU"),  # no relabel: the later runs
        (edit(lambda o: dict(o, metadata=dict(o["metadata"], labels={CONFIG_LABEL: "other"}))), "not in the device"),
    ]
    for broken, why in cases:
        found = upstream_problems(broken, "nvidia", capacity)
        if why == "not an exclusive GPU" and not any(why in p for p in found):
            why = "pods at once"  # a shared phase after a whole one, left on the whole config
        assert any(why in p for p in found), (why, found)


def test_without_an_apply_script_or_with_overlapping_kinds_the_plan_is_refused_by_name(bundled_plans) -> None:
    plan = read_plan(bundled_plans["small-gpu-1"])
    with pytest.raises(AdapterError, match="--apply-script") as info:
        k8s_objects(plan, "nvidia", _options(plan, relabel=False))
    assert info.value.field == "--flavor" and "node-0" in info.value.reason
    with pytest.raises(AdapterError) as info:
        K8sOptions(flavor=FlavorOptions(relabel=True))
    assert info.value.field == "--apply-script"
    # a whole run and a shared run at the same time on one node: no label can serve both
    both = plan_of({"gpu0": 10, "gpu1": 10}, {"w": {"at": [("gpu1", 0, 4)], "memory": 10},
                                              "s": {"at": [("gpu0", 2, 6)], "memory": 5, "compute": 0.5}})
    with pytest.raises(AdapterError, match="at the same time") as info:
        k8s_objects(both, "nvidia", K8sOptions(default_node="n", start_at=T0, flavor=FlavorOptions(relabel=True)))
    assert "'w.0'" in info.value.reason and "'s.0'" in info.value.reason


# ------------------------------------------------------------------ the apply script, against a model
STUB = r'''
import fcntl, json, os, sys
T0 = int(os.environ["T0"])
state_path, log_path = os.environ["STATE"], os.environ["LOG"]
argv = sys.argv[1:]
with open(state_path + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    clock = int(open(os.environ["CLOCK"]).read())
    state = json.load(open(state_path)) if os.path.exists(state_path) else {"pods": [], "labels": {}, "configs": {}}
    entry = {"t": clock, "argv": argv}
    rc = 0
    if argv[:3] == ["apply", "-f", "-"]:
        items = json.load(sys.stdin)["items"]
        entry["items"] = [(o["kind"], o["metadata"]["name"]) for o in items]
        for o in items:
            if o["kind"] == "ConfigMap":
                for name, text in o["data"].items():
                    state["configs"][name] = 10 if "replicas: 10" in text else 2 if "replicas: 2" in text else 1
            # a JobSet's controller makes each replicatedJob's Job, whose pod runs on its node
            for job in ([r["template"] for r in o["spec"]["replicatedJobs"]] if o["kind"] == "JobSet" else [o]):
                if o["kind"] in ("Job", "Pod", "JobSet"):
                    spec = (job if o["kind"] == "Pod" else job["spec"]["template"])["spec"]
                    state["pods"].append({"name": o["metadata"]["name"], "node": spec["nodeSelector"]["kubernetes.io/hostname"],
                                          "end": T0 + float(o["metadata"]["annotations"]["gensolver.io/end"])})
    elif argv[:2] == ["label", "node"]:
        key, _, value = argv[4].partition("=")
        assert argv[3] == "--overwrite" and key == "nvidia.com/device-plugin.config", argv
        state["labels"][argv[2]] = value
    elif argv[:2] == ["get", "pods"]:
        node = argv[argv.index("--field-selector") + 1].split(",")[0].split("=", 1)[1]
        linger = float(os.environ.get("LINGER", "0"))
        print("\n".join(f"pod/{p['name']}" for p in state["pods"] if p["node"] == node and clock < p["end"] + linger))
    elif argv[:2] == ["get", "node"]:  # GPU feature discovery's nvidia.com/gpu.count label, when deployed
        print(os.environ.get("NODE_GPUS", "1") if os.environ.get("GFD") == "1" else "", end="")
    elif argv[0] == "wait":
        node = argv[1].split("/", 1)[1]
        want = int(argv[2].rsplit("=", 1)[1])
        config = state["labels"].get(node) if os.environ.get("FOLLOW", "1") == "1" else None
        have = state["configs"].get(config, 1) * int(os.environ.get("NODE_GPUS", "1"))
        entry["ok"] = have == want
        rc = 0 if have == want else 1
    else:
        rc = 9
    entry["rc"] = rc
    json.dump(state, open(state_path, "w"))
    with open(log_path, "a") as log:
        log.write(json.dumps(entry) + "\n")
sys.exit(rc)
'''


def _run(script: str, folder: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run ``script`` with a stub kubectl (the model above), ``date`` and ``sleep`` on a clock file."""
    bin_ = folder / "bin"
    bin_.mkdir()
    (folder / "clock").write_text(str(T0 - 5))
    (bin_ / "date").write_text('#!/bin/bash\ncat "$CLOCK"\n')
    (bin_ / "sleep").write_text('#!/bin/bash\necho $(( $(cat "$CLOCK") + $1 )) > "$CLOCK"\n')
    (bin_ / "kubectl").write_text(f"#!{sys.executable}\n{STUB}")
    for name in ("date", "sleep", "kubectl"):
        (bin_ / name).chmod(0o755)
    path = folder / "apply.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, timeout=30).returncode == 0
    environ = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", CLOCK=str(folder / "clock"), T0=str(T0),
                   STATE=str(folder / "state.json"), LOG=str(folder / "log"), **env)
    done = subprocess.run(["bash", str(path)], capture_output=True, text=True, env=environ, timeout=300, cwd=folder)
    log = [json.loads(line) for line in (folder / "log").read_text().splitlines()] if (folder / "log").exists() else []
    return done, log


def _script_checks(plan, options: K8sOptions, objects: list[dict], log: list[dict]) -> list[str]:
    """Every way the script's log breaks the plan: each run's pod applied at its start second, on
    a node whose label names the config its run needs (whole: the config without sharing;
    shared: the sharing one), set and confirmed (a successful ``kubectl wait`` on the node)
    before the apply; no label changed under a run still running on its node (its planned
    end). From the plan and the stub's log; ``objects`` only say which run each pod name is."""
    whole = _whole_runs(plan)
    runs = {(t.id, str(r.index)): r for t in plan.tasks for r in plan.runs(t.id)}
    by_name = {}
    for o in objects:
        if o["kind"] in ("Job", "Pod", "JobSet"):
            ann = o["metadata"]["annotations"]
            templates = [r["template"] for r in o["spec"]["replicatedJobs"]] if o["kind"] == "JobSet" else [o]
            by_name[o["metadata"]["name"]] = ((ann["gensolver.io/task"], o["metadata"]["labels"]["gensolver.io/run"]),
                                              [(p["spec"]["template"]["spec"] if o["kind"] != "Pod" else p["spec"])
                                               ["nodeSelector"]["kubernetes.io/hostname"] for p in templates])
    label: dict[str, str] = {}
    confirmed: dict[str, bool] = {}
    running: dict[str, list[tuple[float, str]]] = {}
    seen = set()
    problems = []
    scale = options.time_scale
    for entry in log:
        argv, t = entry["argv"], entry["t"]
        if argv[:2] == ["label", "node"]:
            node = argv[2]
            still = [name for end, name in running.get(node, []) if t < end]
            if still:
                problems.append(f"node {node} relabelled at {t - T0} s while {still[0]} runs")
            label[node], confirmed[node] = argv[4].split("=", 1)[1], False
        elif argv[0] == "wait" and entry.get("ok"):
            confirmed[argv[1].split("/", 1)[1]] = True
        elif argv[:3] == ["apply", "-f", "-"]:
            for _kind, name in entry["items"]:
                if name not in by_name:
                    continue
                key, nodes = by_name[name]
                run = runs[key]
                seen.add(key)
                if t != math.ceil(T0 + run.start * scale):
                    problems.append(f"{name}: applied at {t - T0} s, its run starts at {run.start * scale:g} s")
                want = WHOLE_CONFIG if whole[key] else SHARED_CONFIG
                for node in nodes:  # a JobSet: each member's node
                    if label.get(node) != want:
                        problems.append(f"{name}: applied on {node} labelled {label.get(node)!r}, its run needs {want!r}")
                    elif not confirmed.get(node):
                        problems.append(f"{name}: applied on {node} before the plugin served {want!r}")
                    running.setdefault(node, []).append((T0 + run.end * scale, name))
    if seen != set(runs):
        problems.append(f"runs never applied: {sorted(set(runs) - seen)}")
    return problems


@pytest.mark.parametrize("flavor", ["nvidia", "kueue"])
def test_the_apply_script_relabels_each_node_between_its_whole_and_shared_runs(bundled_plans, tmp_path: Path,
                                                                                flavor: str) -> None:
    for name in ("small-gpu-1", "small-gpu-2"):
        plan = read_plan(bundled_plans[name])
        options = _options(plan, scale=0.5)
        objects = k8s_objects(plan, flavor, options)
        events = relabels(objects, T0)
        assert sum(e.second is not None for e in events) >= 1, name
        folder = tmp_path / f"{flavor}-{name}"
        folder.mkdir()
        done, log = _run(apply_script(objects, start_at=T0, header=name), folder)
        assert done.returncode == 0, done.stderr
        assert _script_checks(plan, options, objects, log) == [], name
        # the checker fails on the same log with a relabel moved before the end of the runs it
        # follows, with the plugin's confirmation dropped, or with a label changed
        later = next(k for k, e in enumerate(log) if e["argv"][:2] == ["label", "node"] and e["t"] > T0)
        early = [dict(e, t=T0) if k == later else e for k, e in enumerate(log)]
        assert any("while" in p for p in _script_checks(plan, options, objects, early)), name
        unconfirmed = [e for e in log if e["argv"][0] != "wait"]
        assert any("before the plugin served" in p for p in _script_checks(plan, options, objects, unconfirmed))
        wrong = [dict(e, argv=e["argv"][:4] + [f"{CONFIG_LABEL}=x"]) if e["argv"][:2] == ["label", "node"] else e
                 for e in log]
        assert any("labelled 'x'" in p for p in _script_checks(plan, options, objects, wrong))


def _gpu6(bundled_plans):
    """small-gpu-1 with one node per device: node-6 has a whole run to 180 s and a shared one from 180 s."""
    plan = read_plan(bundled_plans["small-gpu-1"])
    options = _options(plan)
    return plan, options, k8s_objects(plan, "nvidia", options)


def test_a_pod_that_outlives_its_run_or_a_plugin_that_does_not_follow_stops_the_script(bundled_plans,
                                                                                       tmp_path: Path) -> None:
    plan, options, objects = _gpu6(bundled_plans)
    script = apply_script(objects, start_at=T0)
    for case, env, why in (("linger", {"LINGER": "1000"}, "still runs pods of the plan"),
                           ("deaf", {"FOLLOW": "0"}, "does not advertise")):
        folder = tmp_path / case
        folder.mkdir()
        done, log = _run(script, folder, **env)
        assert done.returncode != 0 and why in done.stderr, (case, done.stderr)
        node = done.stderr.split("node ", 1)[1].split()[0]
        # nothing of the node's next phase was applied: every pod applied there got the config it needs
        assert [p for p in _script_checks(plan, options, objects, log) if node in p and "never" not in p] == [], case
    # a node with more GPUs than the plan's devices on it: without GPU feature discovery's count
    # the script waits for the plan's count and stops, naming the node; with it, it goes on
    for case, env, ok in (("more", {"NODE_GPUS": "2"}, False), ("gfd", {"NODE_GPUS": "2", "GFD": "1"}, True)):
        folder = tmp_path / case
        folder.mkdir()
        done, log = _run(script, folder, **env)
        assert (done.returncode == 0) == ok, (case, done.stderr)
        assert ok or "does not advertise" in done.stderr
