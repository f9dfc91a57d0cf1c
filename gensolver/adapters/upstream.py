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
- **HAMi** [HAMI]_: ``nvidia.com/gpumem`` (MiB) is a positive integer at least the grant's
  memory (``GENSOLVER_MEMORY_LIMIT`` bytes, rounded up to MiB) and not a 1-MiB cap on a grant
  without memory; ``nvidia.com/gpucores`` is 1..100; the pods running at once on one plan
  device ask for at most its memory and 100 % of its cores.
- **KAI scheduler** [KAI]_: ``gpu-fraction`` is a number strictly between 0 and 1 (a whole GPU is
  ``nvidia.com/gpu``), ``gpu-memory`` a whole number of MiB at least the grant; the fractions
  (memories) running at once on one plan device sum to at most 1 (its memory).

References
----------
.. [DP] NVIDIA k8s-device-plugin, "Shared Access to GPUs" (time-slicing, MPS,
   ``failRequestsGreaterThanOne``), https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus
.. [DPSRC] k8s-device-plugin ``api/config/v1/replicas.go`` (``replicas`` must be positive) and
   ``sharing.go`` (``SharingStrategy``: a resource is shared only when replicated, i.e.
   ``replicas > 1``), https://github.com/NVIDIA/k8s-device-plugin/tree/main/api/config/v1
.. [HAMI] HAMi, "Use NVIDIA devices" (``nvidia.com/gpumem`` in MiB, ``nvidia.com/gpucores`` in
   percent), https://github.com/Project-HAMi/HAMi/blob/master/docs/config.md
.. [KAI] NVIDIA KAI Scheduler, "GPU Sharing" (``gpu-fraction``: a portion of one GPU),
   https://github.com/NVIDIA/KAI-Scheduler/tree/main/docs/gpu-sharing
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import yaml

__all__ = ["upstream_problems"]

MIB = 1 << 20


def _jobs(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The run pods: Jobs, and the plain Pods of a Kueue pod group."""
    return [o for o in objects if o.get("kind") in ("Job", "Pod")]


def _sharing(objects: Sequence[Mapping[str, Any]]) -> tuple[str | None, Mapping[str, Any]]:
    for o in objects:
        if o.get("kind") == "ConfigMap" and "gensolver" in o.get("data", {}):
            sharing = yaml.safe_load(o["data"]["gensolver"]).get("sharing", {})
            for mode in ("mps", "timeSlicing"):
                if sharing.get(mode):
                    return mode, sharing[mode]
    return None, {}


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


def _nvidia(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    mode, config = _sharing(objects)
    problems: list[str] = []
    jobs = _jobs(objects)
    if mode is None:
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


def upstream_problems(objects: Sequence[Mapping[str, Any]], flavor: str,
                      capacity: Mapping[str, int] | None = None) -> list[str]:
    """Every way ``objects`` (one ``emit k8s`` output) break the rules of ``flavor``'s component
    (see the module docstring); ``capacity``: plan device -> bytes, for HAMi's memory overfill.

    An empty list: the component takes the objects as meant.

    >>> upstream_problems([], "kai")
    []
    """
    if flavor in ("nvidia", "kueue"):
        return _nvidia(objects)
    if flavor == "hami":
        return _hami(objects, capacity or {})
    if flavor == "kai":
        return _kai(objects, capacity or {})
    raise ValueError(f"unknown flavor {flavor!r}")
