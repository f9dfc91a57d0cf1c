"""GPU-sharing conventions on Kubernetes, one table entry (:class:`Flavor`) per convention.

A flavor says how one run's grant (a whole device, or a fraction ``f`` of one, see
:class:`gensolver.adapters.common.RunGrant`) is written into a Job: container resource limits,
pod annotations and labels, the scheduler, whether the Job starts suspended, and any cluster
object the convention needs beside the Jobs. Whole devices are ``nvidia.com/gpu: N`` in every
flavor.

=========  =======================================================================================
flavor     a fraction ``f`` of one device
=========  =======================================================================================
nvidia     NVIDIA device plugin with shared replicas: one replica (``nvidia.com/gpu: 1``) of
           ``R = --replicas`` per GPU under time-slicing (``failRequestsGreaterThanOne``),
           or of ``R = floor(1 / max f) >= 2`` equal MPS replicas; the plugin's sharing
           config is emitted as a ConfigMap [DP]_. Whole and shared runs on different nodes:
           two named configs and a Node object per node labelled
           ``nvidia.com/device-plugin.config`` with its config. Whole and shared runs on one
           node at different times (``relabel``, with an apply script): one more Node object
           per switch, annotated with its time; the script relabels the node once the runs
           before have ended and waits until the node advertises the new config's GPUs
           before applying the runs after [DPLABEL]_. Refused: a node with whole and shared
           runs at the same time (the plugin shares every GPU of a node's config alike: no
           whole GPU there would be exclusive), or at different times without ``relabel``,
           a shared run with several GPUs of one node, an MPS share over 1/2, more runs at
           once on a device than ``R``.
hami       HAMi: ``nvidia.com/gpu: 1``, ``nvidia.com/gpumem`` (MiB, rounded up; left out for
           a grant without memory) and ``nvidia.com/gpucores`` (percent, rounded up) [HAMI]_;
           a pod whose plan devices have GPU UUIDs is pinned to them by the
           ``nvidia.com/use-gpuuuid`` annotation (a comma-separated list) [HAMIUUID]_.
kai        KAI scheduler: the ``gpu-memory`` pod annotation (MiB, rounded up), or for a run
           without memory or a gang ``gpu-fraction`` strictly below 1 (a share that rounds to
           1 is a whole GPU) (``gpu-fraction-num-devices``
           for a gang), ``schedulerName: kai-scheduler`` and the ``kai.scheduler/queue``
           label [KAI]_.
kueue      Kueue: the ``kueue.x-k8s.io/queue-name`` label on a suspended Job (Kueue admits and
           unsuspends it); devices as in ``nvidia`` [KUEUE]_.
=========  =======================================================================================

References
----------
.. [DP] NVIDIA k8s-device-plugin, "Shared Access to GPUs" (time-slicing and MPS),
   https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus
.. [DPLABEL] NVIDIA k8s-device-plugin, "Updating Per-Node Configuration With a Node Label": the
   label may be set before or after the plugin starts; "anytime it changes value, the plugin
   will immediately be updated to start serving the desired configuration"; an unknown value
   skips reconfiguration, and an unset label falls back to the default config,
   https://github.com/NVIDIA/k8s-device-plugin#updating-per-node-configuration-with-a-node-label
.. [HAMI] HAMi, "Use NVIDIA devices" (``nvidia.com/gpumem``, ``nvidia.com/gpucores``),
   https://github.com/Project-HAMi/HAMi
.. [HAMIUUID] HAMi, ``examples/nvidia/specify_uuid_to_use.yaml`` and ``pkg/device/nvidia/device.go``
   (``GPUUseUUID = "nvidia.com/use-gpuuuid"``, split on ``,`` and compared with each card's id
   as an exact string), https://github.com/Project-HAMi/HAMi
.. [KAI] NVIDIA KAI Scheduler, "GPU sharing" (``gpu-fraction`` annotation),
   https://github.com/NVIDIA/KAI-Scheduler
.. [KUEUE] Kueue, "Run a Kubernetes Job" (``kueue.x-k8s.io/queue-name``),
   https://kueue.sigs.k8s.io/docs/tasks/run/jobs/
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import yaml

from .common import AdapterError, RunGrant

__all__ = ["Flavor", "FLAVORS", "FlavorOptions", "get_flavor", "NVIDIA_SHARING"]

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
MIB = 1 << 20
#: how the NVIDIA device plugin shares a GPU
NVIDIA_SHARING = ("timeSlicing", "mps")


@dataclass(frozen=True)
class FlavorOptions:
    """Settings the flavors read.

    Attributes
    ----------
    queue : str
        Kueue ``LocalQueue`` / KAI queue name.
    replicas : int
        NVIDIA device plugin: replicas per GPU under time-slicing.
    nvidia_sharing : {"timeSlicing", "mps"}
    device_plugin_namespace : str
        Namespace of the NVIDIA device plugin's ConfigMap.
    relabel : bool
        NVIDIA device plugin: a node may switch between whole and shared GPUs over time; the
        objects are applied by an apply script (:mod:`gensolver.adapters.k8s_apply`), which
        relabels the node between the two (``emit k8s --start-at T --apply-script``).
    """

    queue: str = "gensolver"
    replicas: int = 10
    nvidia_sharing: str = "timeSlicing"
    device_plugin_namespace: str = "kube-system"
    relabel: bool = False

    def __post_init__(self) -> None:
        if len(self.queue) > 63 or not _LABEL_VALUE.match(self.queue):
            raise AdapterError("--queue", f"{self.queue!r} is not a label value (letters, digits, '-', '_' and '.', "
                                          f"alphanumeric at both ends, at most 63 characters)")
        if self.nvidia_sharing not in NVIDIA_SHARING:
            raise AdapterError("--nvidia-sharing", f"must be one of {', '.join(NVIDIA_SHARING)}, got {self.nvidia_sharing!r}")
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) or self.replicas < 1:
            raise AdapterError("--replicas", f"must be a positive integer, got {self.replicas!r}")


@dataclass(frozen=True)
class Pod:
    """What a flavor adds to one run's Job."""

    limits: Mapping[str, int | str]
    annotations: Mapping[str, str] = field(default_factory=dict)
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    job_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Flavor:
    """One GPU-sharing convention (see the module docstring).

    Attributes
    ----------
    name : str
    scheduler : str or None
        ``schedulerName`` of the pods (``None``: the default scheduler).
    suspend : bool
        Whether Jobs are created suspended (a queueing controller unsuspends them).
    pod : callable
        ``pod(grant, runs_of_plan, options) -> Pod``.
    objects : callable
        ``objects(grants, options, meta) -> list of dict``: cluster objects beside the Jobs
        (``meta``: ``prefix``, a name prefix, and ``labels``, the plan's common labels).
    enforces : str
        What the convention makes the cluster enforce (for the docs and ``--help``).
    pin : str or None
        The pod annotation that restricts a pod to the GPUs of a comma-separated list of UUIDs
        (``None``: the flavor cannot pin a pod to a GPU; the device plugin or scheduler picks).
    """

    name: str
    scheduler: str | None
    suspend: bool
    pod: Callable[[RunGrant, Sequence[RunGrant], FlavorOptions], Pod]
    objects: Callable[[Sequence[RunGrant], FlavorOptions, Mapping[str, Any]], list[dict[str, Any]]]
    enforces: str
    pin: str | None = None


def _whole(grant: RunGrant) -> bool:
    return grant.whole


def _mps_replicas(grants: Sequence[RunGrant]) -> int:
    fractions = [g.fraction for g in grants if not _whole(g)]
    return max(1, math.floor(1.0 / max(fractions) + 1e-9)) if fractions else 1


#: the node label that picks a node's config among the named ones of the plugin's ConfigMap [DP]_
CONFIG_LABEL = "nvidia.com/device-plugin.config"
#: names of the two configs of a plan that keeps whole GPUs on some nodes (or at some times) and shares on others
SHARED_CONFIG, WHOLE_CONFIG = "gensolver-shared", "gensolver-whole"
#: Node annotations of a config switch: when it takes effect (wall seconds after ``t0``) and the
#: node's GPUs as the plan counts them (the apply script waits until the node advertises them)
FROM, GPUS = "gensolver.io/from", "gensolver.io/gpus"


@dataclass(frozen=True)
class Phase:
    """A stretch of one node's time in which its runs are all whole or all shared: the runs of
    one phase overlap each other in a chain, and no run of the node spans two phases."""

    whole: bool
    start: float
    end: float
    runs: tuple[RunGrant, ...]


def _phases(grants: Sequence[RunGrant]) -> dict[str, list[Phase]]:
    """Node -> its phases in time order (plan seconds); consecutive stretches of one kind are one
    phase. Refuses, by name, a node where a whole run and a shared run overlap in time."""
    by_node: dict[str, list[RunGrant]] = {}
    for g in grants:
        for node in g.nodes:
            by_node.setdefault(node, []).append(g)
    out: dict[str, list[Phase]] = {}
    for node, runs in sorted(by_node.items()):
        runs.sort(key=lambda g: (g.run.start, g.run.end))
        chains: list[list[RunGrant]] = []
        for g in runs:
            if chains and g.run.start < max(o.run.end for o in chains[-1]):
                chains[-1].append(g)
            else:
                chains.append([g])
        phases: list[Phase] = []
        for chain in chains:
            kinds = {_whole(g) for g in chain}
            if len(kinds) > 1:
                whole, part = next((a, b) for a in chain for b in chain if _whole(a) and not _whole(b)
                                   and a.run.start < b.run.end and b.run.start < a.run.end)
                raise AdapterError("--flavor", f"nvidia sharing cannot keep run {whole.key!r} on a whole GPU of node "
                                               f"{node!r} while run {part.key!r} shares one there at the same time: the "
                                               f"device plugin runs one config per node (the {CONFIG_LABEL} label) "
                                               f"and shares every GPU of it alike; use --flavor hami or kai, or put "
                                               f"whole and shared runs on different nodes or at different times")
            start, end = min(g.run.start for g in chain), max(g.run.end for g in chain)
            if phases and phases[-1].whole == _whole(chain[0]):
                last = phases[-1]
                phases[-1] = Phase(last.whole, last.start, end, last.runs + tuple(chain))
            else:
                phases.append(Phase(_whole(chain[0]), start, end, tuple(chain)))
        out[node] = phases
    return out


def _check_nvidia_sharing(grants: Sequence[RunGrant], options: FlavorOptions) -> dict[str, list[Phase]]:
    """Refuse what the NVIDIA device plugin cannot do as the plan means it [DP]_, and return each
    node's phases (:func:`_phases`). Refused: a node where a whole-GPU run and a shared run
    overlap in time (the plugin runs one config per node, the one its
    ``nvidia.com/device-plugin.config`` label names, and shares every GPU of it alike, so a whole
    GPU there would not be exclusive: replicas of one request may come from different GPUs); a
    node whose runs switch between whole and shared over time, unless ``options.relabel`` (an
    apply script relabels the node between them); a shared run with several GPUs on one node
    (a container gets one shared replica at most; a gang with one GPU per node is one replica per
    pod); under MPS, a share over 1/2 (fewer than 2 replicas: the plugin does not share); more
    runs at once on one plan device than the replicas (``--replicas`` under time-slicing, the
    MPS replicas under MPS)."""
    shared = [g for g in grants if not _whole(g)]
    if not shared:
        return {}
    phases = _phases(grants)
    for node, stretch in phases.items():
        if len(stretch) > 1 and not options.relabel:
            a, b = stretch[0], stretch[1]
            raise AdapterError("--flavor", f"node {node!r} holds {'whole' if a.whole else 'shared'} GPUs until "
                                           f"{a.end:g} s and {'whole' if b.whole else 'shared'} ones from {b.start:g} s: "
                                           f"the device plugin runs one config per node (the {CONFIG_LABEL} label); "
                                           f"relabelling the node between them needs --start-at T --apply-script")
    gang = next((g for g in shared if g.devices_per_node > 1), None)
    if gang is not None:
        raise AdapterError("--flavor", f"run {gang.key!r} shares several GPUs of one node; the device plugin gives a "
                                       f"container one shared replica at most; use --flavor kai")
    field = "--replicas"
    replicas = options.replicas
    if options.nvidia_sharing == "mps":
        field, replicas = "--nvidia-sharing", _mps_replicas(grants)
        if replicas < 2:
            big = max(shared, key=lambda g: g.fraction)
            raise AdapterError("--nvidia-sharing", f"run {big.key!r} needs {big.fraction:.3g} of a GPU; MPS replicas "
                                                   f"are equal and at least 2 per GPU (1/2 each at most)")
    for g in shared:
        for dev in g.run.devices:
            at = sum(1 for o in shared if dev in o.run.devices and o.run.start <= g.run.start < o.run.end)
            if at > replicas:
                what = f"--replicas {replicas}" if field == "--replicas" else \
                    f"the {replicas} equal MPS replicas its largest share allows"
                raise AdapterError(field, f"{at} runs share plan device {dev!r} at {g.run.start:g} s, more than {what}")
    return phases


def _nvidia_pod(grant: RunGrant, grants: Sequence[RunGrant], options: FlavorOptions) -> Pod:
    _check_nvidia_sharing(grants, options)
    if _whole(grant):
        return Pod({"nvidia.com/gpu": grant.devices_per_node})
    return Pod({"nvidia.com/gpu": 1})  # one replica: time-slicing caps pods per GPU, MPS splits it equally


def _node(name: str, config: str, gpus: int, at: float | None) -> dict[str, Any]:
    annotations = {GPUS: str(gpus)}
    if at is not None:
        annotations[FROM] = f"{at:g}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {CONFIG_LABEL: config}, "annotations": annotations}}


def _nvidia_objects(grants: Sequence[RunGrant], options: FlavorOptions, meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The plugin's config as a ConfigMap: one config ``gensolver`` when every run shares; when
    some nodes (or some times) keep whole GPUs, two named configs (:data:`SHARED_CONFIG`,
    :data:`WHOLE_CONFIG`) and a Node object per node with the :data:`CONFIG_LABEL` label of its
    first phase, then one more per later phase, annotated :data:`FROM` (wall seconds after
    ``t0``: the end of the phase before, when the apply script relabels the node) (``meta``:
    ``time_scale``, and ``gpus``, node -> the plan devices on it)."""
    phases = _check_nvidia_sharing(grants, options)
    if all(_whole(g) for g in grants):
        return []  # no sharing: the device plugin's default (one pod per GPU) is what the plan asks
    sharing: dict[str, Any]
    if options.nvidia_sharing == "mps":
        sharing = {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": _mps_replicas(grants)}]}}
    else:
        sharing = {"timeSlicing": {"failRequestsGreaterThanOne": True,
                                   "resources": [{"name": "nvidia.com/gpu", "replicas": options.replicas}]}}
    config = {"version": "v1", "flags": {"migStrategy": "none"}, "sharing": sharing}
    split = any(p.whole for stretch in phases.values() for p in stretch)
    data = ({SHARED_CONFIG: yaml.safe_dump(config, sort_keys=False),
             WHOLE_CONFIG: yaml.safe_dump({"version": "v1", "flags": {"migStrategy": "none"}}, sort_keys=False)}
            if split else {"gensolver": yaml.safe_dump(config, sort_keys=False)})
    out: list[dict[str, Any]] = [{
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": f"{meta['prefix']}-device-plugin", "namespace": options.device_plugin_namespace,
                     "labels": dict(meta["labels"])},
        "data": data}]
    if split:
        scale, gpus = meta.get("time_scale", 1.0), meta.get("gpus", {})
        for node, stretch in sorted(phases.items()):
            count = gpus.get(node) or len({d for p in stretch for g in p.runs for d, n in
                                            zip(g.run.devices, g.where or g.nodes * len(g.run.devices)) if n == node})
            out += [_node(node, WHOLE_CONFIG if p.whole else SHARED_CONFIG, count,
                          None if k == 0 else stretch[k - 1].end * scale) for k, p in enumerate(stretch)]
    return out


def _hami_pod(grant: RunGrant, grants: Sequence[RunGrant], options: FlavorOptions) -> Pod:
    """HAMi: memory in MiB rounded up (never below the grant; a grant without memory asks HAMi's
    default, not 1 MiB) and compute in percent rounded up [HAMI]_."""
    limits: dict[str, int | str] = {"nvidia.com/gpu": grant.devices_per_node}
    if grant.memory > 0:
        limits["nvidia.com/gpumem"] = -(-grant.memory // MIB)
    limits["nvidia.com/gpucores"] = max(1, min(100, math.ceil(grant.compute * 100 - 1e-9)))
    return Pod(limits)


def _kai_pod(grant: RunGrant, grants: Sequence[RunGrant], options: FlavorOptions) -> Pod:
    """KAI: a shared run asks its memory (``gpu-memory``, MiB rounded up); one without memory, or a
    gang, ``gpu-fraction`` strictly between 0 and 1 (two decimals, rounded up); a share that
    rounds to 1 takes a whole GPU [KAI]_. KAI packs by the number; it caps neither dimension."""
    labels = {"kai.scheduler/queue": options.queue}
    fraction = math.ceil(grant.fraction * 100 - 1e-9) / 100
    if _whole(grant) or fraction >= 1.0:
        return Pod({"nvidia.com/gpu": grant.devices_per_node}, pod_labels=labels)
    if grant.memory > 0 and grant.devices_per_node == 1:
        # memory, the dimension a co-tenant cannot borrow, in MiB rounded up: shares the plan fits
        # exactly never overfill (a fraction max(compute, memory) per run would: 0.8 + 0.8)
        return Pod({}, annotations={"gpu-memory": str(-(-grant.memory // MIB))}, pod_labels=labels)
    annotations = {"gpu-fraction": f"{fraction:g}"}
    if grant.devices_per_node > 1:
        annotations["gpu-fraction-num-devices"] = str(grant.devices_per_node)
    return Pod({}, annotations=annotations, pod_labels=labels)


def _kueue_pod(grant: RunGrant, grants: Sequence[RunGrant], options: FlavorOptions) -> Pod:
    pod = _nvidia_pod(grant, grants, options)
    return Pod(pod.limits, job_labels={"kueue.x-k8s.io/queue-name": options.queue})


def _none(grants: Sequence[RunGrant], options: FlavorOptions, meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    return []


FLAVORS: Mapping[str, Flavor] = MappingProxyType({f.name: f for f in (
    Flavor("nvidia", None, False, _nvidia_pod, _nvidia_objects,
           "the device plugin hands out whole GPUs or replicas of shared ones; time-slicing isolates neither "
           "memory nor compute, MPS splits both equally among the replicas"),
    Flavor("hami", None, False, _hami_pod, _none,
           "HAMi's in-container library caps device memory (gpumem) and throttles compute (gpucores)",
           pin="nvidia.com/use-gpuuuid"),
    Flavor("kai", "kai-scheduler", False, _kai_pod, _none,
           "KAI packs fractions onto GPUs by the annotation; it does not cap a pod's memory or compute"),
    Flavor("kueue", None, True, _kueue_pod, _nvidia_objects,
           "Kueue admits a Job when its queue's quota has room, then the device plugin as in nvidia"),
)})


def get_flavor(name: str) -> Flavor:
    """The flavor called ``name``; :class:`AdapterError` (field ``--flavor``) for another name."""
    try:
        return FLAVORS[name]
    except KeyError:
        raise AdapterError("--flavor", f"unknown flavor {name!r}; choose one of {', '.join(FLAVORS)}") from None
