"""What each GPU-sharing component accepts, as checks on emitted objects (beside kubernetes-validate).

kubernetes-validate checks an object against the API server's schema; the device plugin, HAMi
and KAI read further rules from the same objects, and refuse or misread what breaks them.
:func:`upstream_problems` states those rules on the emitted objects alone (no plan needed, but
the plan's device sizes, for the overfill rules):

- **NVIDIA device plugin** [DP]_ [DPSRC]_: a sharing resource's ``replicas`` is at least 1;
  MPS shares only with ``replicas >= 2`` (with 1 the plugin does not share) and fails a request
  of more than one replica per container; under time-slicing a request of more than one replica
  is not a whole GPU (the replicas may come from different GPUs) unless the plugin refuses it
  (``failRequestsGreaterThanOne``); no plan device runs more pods at once than its replicas.
  These hold per config: the plugin runs one config per node, the one a node's
  ``nvidia.com/device-plugin.config`` label names among those of its ConfigMap; a node that
  does not share gets at most one pod at once per plan device, and a pod spans nodes of one
  config only. A node relabelled over time (Node objects annotated ``gensolver.io/from``: the
  plugin serves the new config from then on [DPLABEL]_) runs each pod under the config in force
  at the pod's start, and no pod runs across a relabel; each node has exactly one first label.
- **HAMi** [HAMI]_: ``nvidia.com/gpumem`` (MiB) is a positive integer at least the grant's
  memory (``GENSOLVER_MEMORY_LIMIT`` bytes, rounded up to MiB) and not a 1-MiB cap on a grant
  without memory; ``nvidia.com/gpucores`` is 1..100; the pods running at once on one plan
  device ask for at most its memory and 100 % of its cores. A pin, ``nvidia.com/use-gpuuuid``
  [HAMIUUID]_, is split on ``,`` and each part compared with a card's id as an exact string: so
  each part is a UUID as NVML writes it (``GPU-`` and lower-case hex 8-4-4-4-12), none repeats,
  there are as many as the pod's ``nvidia.com/gpu`` (fewer: it can never be scheduled; more: HAMi
  picks among them, not the plan), and across all pods a plan device (``gensolver.io/devices``,
  in the same order) always has the same UUID and a UUID one plan device.
- **Every other flavor**: no ``nvidia.com/use-gpuuuid`` (only HAMi's scheduler reads it; the
  pod would look pinned and not be).
- **KAI scheduler** [KAI]_: ``gpu-fraction`` is a number strictly between 0 and 1 (a whole GPU is
  ``nvidia.com/gpu``), ``gpu-memory`` a whole number of MiB at least the grant; the fractions
  (memories) running at once on one plan device sum to at most 1 (its memory).

References
----------
.. [DP] NVIDIA k8s-device-plugin, "Shared Access to GPUs" (time-slicing, MPS,
   ``failRequestsGreaterThanOne``) and "Multiple Config File Example", "Updating Per-Node
   Configuration With a Node Label" (the ``nvidia.com/device-plugin.config`` node label),
   https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus
.. [DPLABEL] NVIDIA k8s-device-plugin, "Updating Per-Node Configuration With a Node Label": the
   plugin follows the label whenever it changes ("immediately updated to start serving the
   desired configuration"),
   https://github.com/NVIDIA/k8s-device-plugin#updating-per-node-configuration-with-a-node-label
.. [DPSRC] k8s-device-plugin ``api/config/v1/replicas.go`` (``replicas`` must be positive) and
   ``sharing.go`` (``SharingStrategy``: a resource is shared only when replicated, i.e.
   ``replicas > 1``), https://github.com/NVIDIA/k8s-device-plugin/tree/main/api/config/v1
.. [HAMI] HAMi, "Use NVIDIA devices" (``nvidia.com/gpumem`` in MiB, ``nvidia.com/gpucores`` in
   percent), https://github.com/Project-HAMi/HAMi/blob/master/docs/config.md
.. [HAMIUUID] HAMi ``pkg/device/nvidia/device.go`` (``GPUUseUUID = "nvidia.com/use-gpuuuid"``,
   ``CheckUUID``: ``strings.Split(userUUID, ",")`` then ``slices.Contains(userUUIDs, d.ID)``) and
   ``examples/nvidia/specify_uuid_to_use.yaml``, https://github.com/Project-HAMi/HAMi
.. [KAI] NVIDIA KAI Scheduler, "GPU Sharing" (``gpu-fraction``: a portion of one GPU),
   https://github.com/NVIDIA/KAI-Scheduler/tree/main/docs/gpu-sharing
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

import yaml

from ..errors import InputError

__all__ = ["upstream_problems"]

MIB = 1 << 20
PIN = "nvidia.com/use-gpuuuid"
#: a card id as HAMi registers it from NVML
_UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _jobs(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The run pods: Jobs, the plain Pods of a Kueue pod group, and the Jobs of a gang's JobSet."""
    from .k8s import member_jobs

    return member_jobs(objects)


#: the node label that picks a node's config among the named ones of the plugin's ConfigMap [DP]_
CONFIG_LABEL = "nvidia.com/device-plugin.config"
#: Node annotation: the label holds from this time (wall seconds after ``t0``); see ``flavors``
FROM = "gensolver.io/from"


def _configs(objects: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str | None, Mapping[str, Any]]]:
    """Config name -> (sharing mode or None, its settings), from the ConfigMaps gensolver writes."""
    out: dict[str, tuple[str | None, Mapping[str, Any]]] = {}
    for o in objects:
        if o.get("kind") != "ConfigMap":
            continue
        for key, text in (o.get("data") or {}).items():
            sharing = (yaml.safe_load(text) or {}).get("sharing") or {}
            mode = next((m for m in ("mps", "timeSlicing") if sharing.get(m)), None)
            out[key] = (mode, sharing.get(mode, {}) if mode else {})
    return out


def _nodes_of(job: Mapping[str, Any]) -> list[str]:
    spec = (job if job.get("kind") == "Pod" else job["spec"]["template"])["spec"]
    if "nodeSelector" in spec:
        return [spec["nodeSelector"]["kubernetes.io/hostname"]]
    if "affinity" not in spec:
        return []  # not placed: any node
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return [v for t in terms for e in t["matchExpressions"] for v in e["values"]]


def _pod(job: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, str]]:
    """(limits of the first container, its env, pod annotations) of a Job or Pod."""
    template = job if job.get("kind") == "Pod" else job["spec"]["template"]
    container = template["spec"]["containers"][0]
    env = {e["name"]: e.get("value", "") for e in container.get("env", [])}
    return container.get("resources", {}).get("limits", {}), env, template.get("metadata", {}).get("annotations", {})


def _spans(job: Mapping[str, Any]) -> tuple[float, float, list[str]]:
    ann = job["metadata"]["annotations"]
    return float(ann["gensolver.io/start"]), float(ann["gensolver.io/end"]), ann["gensolver.io/devices"].split(",")


def _peaks(jobs: Sequence[Mapping[str, Any]], amount) -> dict[str, float]:
    """Plan device -> the most of ``amount(job)`` that pods running at once ask of it."""
    spans: dict[str, list[tuple[float, float, float]]] = {}
    for job in jobs:
        start, end, devices = _spans(job)
        for dev in devices:
            spans.setdefault(dev, []).append((start, end, amount(job)))
    return {dev: max(sum(a for s, e, a in items if s <= t < e) for t, _, _ in items) for dev, items in spans.items()}


def _timelines(objects: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[tuple[float, str]]], list[str]]:
    """Node -> its device plugin configs in time order, ``(from, config)`` (``from``: wall
    seconds after ``t0``, ``-inf`` for the first label), from the emitted Node objects; and the
    problems of the Node objects themselves."""
    out: dict[str, list[tuple[float, str]]] = {}
    problems = []
    for o in objects:
        if o.get("kind") != "Node":
            continue
        meta = o["metadata"]
        ann = meta.get("annotations") or {}
        try:
            at = float(ann[FROM]) if FROM in ann else -math.inf
        except ValueError:
            problems.append(f"node {meta['name']}: {FROM} {ann[FROM]!r} is not a number of seconds")
            continue
        out.setdefault(meta["name"], []).append((at, meta.get("labels", {}).get(CONFIG_LABEL)))
    for node, line in out.items():
        line.sort(key=lambda x: x[0])
        if sum(1 for at, _ in line if at == -math.inf) != 1:
            problems.append(f"node {node}: {sum(1 for at, _ in line if at == -math.inf)} first labels (one is set "
                            f"before the plan starts, each later one has {FROM})")
    return out, problems


def _nvidia(objects: Sequence[Mapping[str, Any]], capacity: Mapping[str, int]) -> list[str]:
    """The device plugin's rules, per config: a node labelled ``nvidia.com/device-plugin.config``
    (an emitted Node object) runs that named config, any other node the config ``gensolver``
    (without one: no sharing) [DP]_. A node relabelled at ``gensolver.io/from`` runs the new
    config from then on [DPLABEL]_: no pod of the node may run across that moment (the plugin
    would restart under it and serve its GPU under the other config)."""
    configs = _configs(objects)
    lines, problems = _timelines(objects)
    problems += [f"node {n}: config {c!r} is not in the device plugin's ConfigMap"
                 for n, line in lines.items() for _, c in line if c not in configs]
    default = "gensolver" if "gensolver" in configs else None
    groups: dict[str | None, list[Mapping[str, Any]]] = {}
    for job in _jobs(objects):
        start, end, _ = _spans(job)
        names = set()
        for node in _nodes_of(job) or [""]:
            line = lines.get(node, [])
            names.add(next((c for at, c in reversed(line) if at <= start), default) if line else default)
            problems += [f"{job['metadata']['name']}: node {node} is relabelled to {c!r} at {at:g} s while the pod "
                         f"runs [{start:g}, {end:g})" for at, c in line if start < at < end]
        if len(names) > 1:
            problems.append(f"{job['metadata']['name']}: spans nodes of different device plugin configs {sorted(map(str, names))}")
        groups.setdefault(names.pop(), []).append(job)
    for name, jobs in groups.items():
        mode, config = configs.get(name, (None, {})) if name is not None else (None, {})
        problems += _nvidia_config(mode, config, jobs)
        if mode is not None:
            problems += [f"{j['metadata']['name']}: a whole-GPU run on a node whose config shares its GPUs gets a "
                         f"replica, not an exclusive GPU" for j in jobs if _whole_pod(j, capacity)]
    return problems


def _whole_pod(job: Mapping[str, Any], capacity: Mapping[str, int]) -> bool:
    """Whether the pod's run takes its GPUs whole: a compute share of 1, or all of a device's
    memory (``capacity``: plan device -> bytes), or several devices."""
    _, env, _ = _pod(job)
    devices = _spans(job)[2]
    memory = int(env.get("GENSOLVER_MEMORY_LIMIT", "0") or 0)
    share = float(env.get("GENSOLVER_COMPUTE_SHARE", "0") or 0)
    return len(devices) > 1 or share >= 1 - 1e-9 or any(capacity.get(d) and memory >= capacity[d] for d in devices)


def _nvidia_config(mode: str | None, config: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rules of one config on the pods that run under it (``mode`` None: no sharing, so at
    most one pod at once on a plan device, each with whole GPUs)."""
    problems: list[str] = []
    if mode is None:
        for dev, peak in _peaks(jobs, lambda j: 1.0).items():
            if peak > 1:
                problems.append(f"device plugin: {peak:g} pods at once on plan device {dev!r}, which does not share")
        return problems
    replicas = [r.get("replicas", 0) for r in config.get("resources", [])]
    if any(not isinstance(r, int) or r < 1 for r in replicas):
        problems.append(f"device plugin: replicas {replicas} must be positive integers")
    if mode == "mps" and any(isinstance(r, int) and r < 2 for r in replicas):
        problems.append(f"device plugin: MPS replicas {replicas} below 2 do not share a GPU")
    strict = mode == "mps" or config.get("failRequestsGreaterThanOne") is True
    for job in jobs:
        want = _pod(job)[0].get("nvidia.com/gpu", 0)
        if want > 1 and mode == "mps":
            problems.append(f"{job['metadata']['name']}: MPS fails a request of {want} replicas (one per container)")
        elif want > 1 and not strict:
            problems.append(f"{job['metadata']['name']}: {want} time-sliced replicas may come from different GPUs "
                            f"(not a whole GPU); set failRequestsGreaterThanOne or refuse")
    if replicas and isinstance(replicas[0], int):
        for dev, peak in _peaks(jobs, lambda j: 1.0).items():
            if peak > replicas[0]:
                problems.append(f"device plugin: {peak:g} pods at once on plan device {dev!r}, "
                                f"{replicas[0]} replicas per GPU")
    return problems


def _hami(objects: Sequence[Mapping[str, Any]], capacity: Mapping[str, int]) -> list[str]:
    problems: list[str] = []
    jobs = [j for j in _jobs(objects) if "nvidia.com/gpucores" in _pod(j)[0] or "nvidia.com/gpumem" in _pod(j)[0]]
    for job in jobs:
        limits, env, _ = _pod(job)
        name = job["metadata"]["name"]
        memory = int(env.get("GENSOLVER_MEMORY_LIMIT", "0") or 0)
        mem = limits.get("nvidia.com/gpumem")
        if mem is not None:
            if not isinstance(mem, int) or mem < 1:
                problems.append(f"{name}: HAMi gpumem {mem!r} is not a positive integer (MiB)")
            elif mem < -(-memory // MIB):
                problems.append(f"{name}: HAMi gpumem {mem} MiB is below the grant's {memory} bytes")
            elif memory == 0 and mem <= 1:
                problems.append(f"{name}: HAMi gpumem {mem} MiB caps a grant without memory at {mem} MiB")
        cores = limits.get("nvidia.com/gpucores")
        if cores is not None and (not isinstance(cores, int) or not 1 <= cores <= 100):
            problems.append(f"{name}: HAMi gpucores {cores!r} is not 1..100")
    for dev, peak in _peaks(jobs, lambda j: float(_pod(j)[0].get("nvidia.com/gpucores", 100))).items():
        if peak > 100:
            problems.append(f"HAMi: {peak:g} % of the cores of plan device {dev!r} asked at once")
    for dev, peak in _peaks(jobs, lambda j: float(_pod(j)[0].get("nvidia.com/gpumem", 0))).items():
        if dev in capacity and peak > capacity[dev] // MIB:
            problems.append(f"HAMi: {peak:g} MiB of plan device {dev!r} ({capacity[dev] // MIB} MiB) asked at once")
    return problems


def _kai(objects: Sequence[Mapping[str, Any]], capacity: Mapping[str, int]) -> list[str]:
    problems: list[str] = []
    shared = []
    by_memory = []
    for job in _jobs(objects):
        _, env, ann = _pod(job)
        if "gpu-memory" in ann:
            mem = ann["gpu-memory"]
            memory = int(env.get("GENSOLVER_MEMORY_LIMIT", "0") or 0)
            if not mem.isdigit() or int(mem) < 1 or int(mem) < -(-memory // MIB):
                problems.append(f"{job['metadata']['name']}: KAI gpu-memory {mem!r} is not a whole number of MiB "
                                f"at least the grant's {memory} bytes")
            else:
                by_memory.append(job)
        if "gpu-fraction" not in ann:
            continue
        try:
            fraction = float(ann["gpu-fraction"])
        except ValueError:
            fraction = math.nan
        if not 0 < fraction < 1:
            problems.append(f"{job['metadata']['name']}: KAI gpu-fraction {ann['gpu-fraction']!r} is not strictly "
                            f"between 0 and 1")
        shared.append(job)
    for dev, peak in _peaks(shared, lambda j: float(_pod(j)[2]["gpu-fraction"])).items():
        if peak > 1 + 1e-9:
            problems.append(f"KAI: fractions summing to {peak:g} on plan device {dev!r} at once")
    for dev, peak in _peaks(by_memory, lambda j: float(_pod(j)[2]["gpu-memory"])).items():
        if dev in capacity and peak > capacity[dev] // MIB:
            problems.append(f"KAI: {peak:g} MiB of plan device {dev!r} ({capacity[dev] // MIB} MiB) asked at once")
    return problems


def _pins(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """HAMi's pin rules (see the module docstring)."""
    problems: list[str] = []
    uuid_of: dict[str, str] = {}
    device_of: dict[str, str] = {}
    for job in _jobs(objects):
        limits, _, ann = _pod(job)
        if PIN not in ann:
            continue
        name = job["metadata"]["name"]
        parts = str(ann[PIN]).split(",")
        bad = [p for p in parts if not _UUID.match(p)]
        if bad:
            problems.append(f"{name}: HAMi pin {bad[0]!r} matches no card id (GPU-<lower-case hex 8-4-4-4-12>)")
        if len(set(parts)) != len(parts):
            problems.append(f"{name}: HAMi pin repeats a UUID: {ann[PIN]!r}")
        want = limits.get("nvidia.com/gpu", 0)
        if len(set(parts)) != want:
            problems.append(f"{name}: HAMi pin lists {len(set(parts))} GPU(s) for nvidia.com/gpu {want}")
        devices = _spans(job)[2]
        if len(devices) != len(parts):
            problems.append(f"{name}: HAMi pin lists {len(parts)} GPU(s) for plan devices {devices}")
        for dev, uuid in zip(devices, parts):
            if uuid_of.setdefault(dev, uuid) != uuid:
                problems.append(f"{name}: plan device {dev!r} pinned to {uuid} here and {uuid_of[dev]} elsewhere")
            if device_of.setdefault(uuid, dev) != dev:
                problems.append(f"{name}: GPU {uuid} pinned for plan devices {device_of[uuid]!r} and {dev!r}")
    return problems


def upstream_problems(objects: Sequence[Mapping[str, Any]], flavor: str,
                      capacity: Mapping[str, int] | None = None) -> list[str]:
    """Every way ``objects`` (one ``emit k8s`` output) break the rules of ``flavor``'s component
    (see the module docstring); ``capacity``: plan device -> bytes, for HAMi's memory overfill.

    An empty list: the component takes the objects as meant.

    >>> upstream_problems([], "kai")
    []
    """
    if flavor == "hami":
        return _hami(objects, capacity or {}) + _pins(objects)
    pinned = [f"{j['metadata']['name']}: {PIN} is read by HAMi only; under {flavor} the pod is not pinned"
              for j in _jobs(objects) if PIN in _pod(j)[2]]
    if flavor in ("nvidia", "kueue"):
        return _nvidia(objects, capacity or {}) + pinned
    if flavor == "kai":
        return _kai(objects, capacity or {}) + pinned
    raise InputError(f"unknown flavor {flavor!r}; valid: hami, kai, kueue, nvidia")
