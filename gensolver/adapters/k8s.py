"""A ``gensolver.plan/v1`` plan as Kubernetes objects, built as plain data.

Every run of a task (see :class:`gensolver.executor.plan.Run`) becomes one ``batch/v1`` Job:

- placement: ``nodeSelector: {kubernetes.io/hostname: NODE}``; the node of a plan device as in
  :func:`gensolver.adapters.common.node_of`;
- a gang over several nodes: one pod per node, each asking for that node's devices of the run
  (``GENSOLVER_GANG``, ``GENSOLVER_GANG_RANK``, ``GENSOLVER_GANG_SIZE`` in its environment, the
  ``gensolver.io/gang`` label), grouped as the flavor can express it: ``kai``, a
  ``scheduling.run.ai/v2alpha2`` PodGroup with ``minMember`` = the node count and the queue,
  that the pods join by the ``pod-group-name`` annotation [KAIPG]_; ``kueue``, plain Pods (not
  Jobs) of a Kueue pod group, labelled ``kueue.x-k8s.io/pod-group-name`` and annotated
  ``kueue.x-k8s.io/pod-group-total-count`` [KQPG]_; ``nvidia`` and ``hami`` have no gang
  scheduler of their own: one ``jobset.x-k8s.io/v1alpha2`` JobSet [JOBSET]_ (the JobSet
  controller must be installed) with one replicatedJob per node (``n0``, ``n1``, ...,
  ``replicas: 1``, each that node's Job template with its node pinning and GPUs),
  ``failurePolicy.maxRestarts: 0`` (one member failing fails the gang, and the JobSet
  controller deletes the others' pods) and ``successPolicy.operator: All``; no
  ``startupPolicy`` (deprecated upstream, and ``AnyOrder``, its default, is what a gang
  wants). A JobSet does not make the pods' *scheduling* all-or-nothing (it has no gang
  scheduler): the members start together because the plan gave them the same start time;
  :func:`member_jobs` lists the Jobs the controller creates;
- pinning (``hami`` only, the one flavor that can [HAMIUUID]_): a pod whose plan devices have
  GPU UUIDs (``K8sOptions.gpu_uuids``, ``--gpu-uuid DEVICE=UUID``, or a device id whose last
  ``/`` part is a UUID, such as ``node-a/GPU-0f95...``) gets ``nvidia.com/use-gpuuuid`` with
  those UUIDs in the order of its devices, so HAMi gives it exactly the planned GPUs; a pod
  with some devices pinned and some not, a UUID given to two devices, and UUIDs under a flavor
  that cannot pin are refused by name;
- the grant, in the chosen flavor's convention (:mod:`gensolver.adapters.flavors`), and the
  executor's environment (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``,
  ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``, ``GENSOLVER_MEMORY_LIMIT``, ``GENSOLVER_TASK``,
  ``GENSOLVER_RUN``, ``GENSOLVER_RESUME``);
- the start order: annotations ``gensolver.io/start`` and ``gensolver.io/end`` (wall seconds
  after ``t0``) and ``gensolver.io/after`` (the task's previous run). With ``start_at`` (``t0``
  as epoch seconds) each pod first runs an init container that waits until ``t0 + start``, and
  the container gets ``GENSOLVER_RUN_END`` (epoch seconds); without it nothing delays a Job
  and ``activeDeadlineSeconds`` (run length plus grace) bounds it from its start.

Priority: a task whose plan entry carries an ``urgency`` (0..1) gets the ``priorityClassName``
of its band in :data:`PRIORITY_BANDS` (urgency at least 0.75: ``gensolver-urgent``, value
1000; at least 0.25: ``gensolver-normal``, 500; below: ``gensolver-low``, 100), and the
``scheduling.k8s.io/v1`` PriorityClass objects of the bands used are emitted first (cluster
scoped, ``globalDefault: false``); a task without urgency gets none (the cluster's default).

``backoffLimit: 0`` and ``restartPolicy: Never``: a run that fails is not retried behind the
plan's back. Objects are plain dicts, sorted by start; :func:`dump_yaml` writes them with
``yaml.safe_dump_all``.

References
----------
.. [KAIPG] NVIDIA KAI Scheduler, "Batch and gang scheduling" (PodGroup ``spec.minMember``,
   ``spec.queue``; the ``pod-group-name`` pod annotation),
   https://github.com/NVIDIA/KAI-Scheduler/tree/main/docs/batch
.. [HAMIUUID] HAMi, "Specify device UUID to use" (``examples/nvidia/specify_uuid_to_use.yaml``;
   ``pkg/device/nvidia/device.go``: ``GPUUseUUID``, a comma-separated list compared exactly),
   https://github.com/Project-HAMi/HAMi
.. [KQPG] Kueue, "Run a plain Pod group" (``kueue.x-k8s.io/pod-group-name`` label,
   ``kueue.x-k8s.io/pod-group-total-count`` annotation),
   https://kueue.sigs.k8s.io/docs/tasks/run/plain_pods/
.. [JOBSET] Kubernetes SIGs, JobSet (v0.12: ``spec.replicatedJobs``, ``failurePolicy``,
   ``successPolicy``; child Job ``<jobset>-<replicatedJob>-<index>``, names checked as DNS-1035
   labels by ``pkg/webhooks/jobset_webhook.go``), https://github.com/kubernetes-sigs/jobset
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import yaml

from ..executor.plan import ExecutionPlan
from .common import AdapterError, RunGrant, node_of, run_grants
from .flavors import Flavor, FlavorOptions, get_flavor
from .names import GPU_UUID, gpu_uuid, k8s_node, k8s_quantity

__all__ = ["K8sOptions", "k8s_objects", "priority_class", "PRIORITY_BANDS", "dump_yaml", "dns_name", "label_value",
           "member_jobs", "JOBSET_API", "DEFAULT_IMAGE", "WAIT_IMAGE"]

#: container image when the caller gives none (the plan does not name images)
DEFAULT_IMAGE = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
#: image of the init container that waits for a run's start time
WAIT_IMAGE = "busybox:1.36"
#: the apiVersion of a gang's JobSet under the flavors without a gang scheduler
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
#: flavors whose multi-node gangs become one JobSet
JOBSET_FLAVORS = frozenset({"nvidia", "hami"})
#: (lowest urgency, PriorityClass name, value), highest band first
PRIORITY_BANDS = ((0.75, "gensolver-urgent", 1000), (0.25, "gensolver-normal", 500), (0.0, "gensolver-low", 100))
_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class K8sOptions:
    """How a plan becomes Kubernetes objects.

    Attributes
    ----------
    nodes : mapping of str to str
        Plan device to node name (``kubernetes.io/hostname``).
    default_node : str or None
    namespace : str
    image : str
        Container image of every run (the plan names none).
    start_at : float or None
        ``t0`` in epoch seconds; ``None``: no waiting (see the module docstring).
    time_scale : float
        Wall seconds per plan second.
    grace : float
        ``terminationGracePeriodSeconds`` and the slack of ``activeDeadlineSeconds``.
    flavor : FlavorOptions
    cpu, memory : str or None
        CPU and host-memory request of every container (Kubernetes quantities: ``2``, ``500m``,
        ``16Gi``); memory is also its limit. ``None``: no request (a BestEffort pod when
        neither is given and the flavor sets no GPU limit).
    gpu_uuids : mapping of str to str
        Plan device to the UUID of its GPU (as ``nvidia-smi -L`` prints it), for pinning (see
        the module docstring).
    """

    nodes: Mapping[str, str] = field(default_factory=dict)
    default_node: str | None = None
    namespace: str = "default"
    image: str = DEFAULT_IMAGE
    start_at: float | None = None
    time_scale: float = 1.0
    grace: float = 10.0
    flavor: FlavorOptions = field(default_factory=FlavorOptions)
    cpu: str | None = None
    memory: str | None = None
    gpu_uuids: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpu_uuids", MappingProxyType(dict(self.gpu_uuids)))
        for uuid in self.gpu_uuids.values():
            gpu_uuid(uuid, "--gpu-uuid")
        k8s_quantity(self.cpu, "--cpu")
        k8s_quantity(self.memory, "--memory")
        object.__setattr__(self, "nodes", MappingProxyType(dict(self.nodes)))
        if not _DNS.match(self.namespace) or len(self.namespace) > 63:
            raise AdapterError("--namespace", f"{self.namespace!r} is not a DNS-1123 label (lower-case letters, "
                                              f"digits and '-', at most 63 characters)")
        for node in self.nodes.values():
            k8s_node(node, "--node-map")
        if self.default_node is not None:
            k8s_node(self.default_node, "--node")
        if not self.image.strip():
            raise AdapterError("--image", "must not be empty")
        for name, value, positive in (("--time-scale", self.time_scale, True), ("--grace", self.grace, False),
                                      ("--start-at", self.start_at, False)):
            if value is None and name == "--start-at":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0 or (positive and value == 0):
                raise AdapterError(name, f"must be a {'positive' if positive else 'non-negative'} number, got {value!r}")
        if self.flavor.relabel and self.start_at is None:
            raise AdapterError("--apply-script", "relabelling nodes at their runs' times needs --start-at (t0)")


def dns_name(*parts: str, limit: int = 63) -> str:
    """A DNS-1123 label made of ``parts``: lower case, ``[a-z0-9-]``, at most ``limit``
    characters; a short hash of the original parts keeps distinct inputs distinct."""
    raw = "-".join(parts)
    digest = hashlib.sha256(raw.encode()).hexdigest()[:6]
    body = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    body = re.sub(r"-{2,}", "-", body)[: limit - len(digest) - 1].strip("-")
    return f"{body}-{digest}" if body else f"gs-{digest}"


def label_value(text: str) -> str:
    """``text`` as a label value: ``[A-Za-z0-9._-]``, at most 63, alphanumeric at both ends."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


def _affinity(nodes: tuple[str, ...]) -> dict[str, Any]:
    if len(nodes) == 1:
        return {"nodeSelector": {"kubernetes.io/hostname": nodes[0]}}
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}}


def _env(grant: RunGrant, devices: tuple[str, ...], end_epoch: float | None) -> list[dict[str, str]]:
    run = grant.run
    env = {"GENSOLVER_TASK": run.task, "GENSOLVER_RUN": str(run.index), "GENSOLVER_RESUME": "1" if run.index else "0",
           "GENSOLVER_MEMORY_LIMIT": str(grant.memory), "GENSOLVER_COMPUTE_SHARE": repr(grant.compute),
           "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(max(1, min(100, math.ceil(grant.compute * 100 - 1e-9)))),
           "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": ",".join(f"{k}={run.grants[d][0] >> 20}M" for k, d in enumerate(devices))}
    if end_epoch is not None:
        env["GENSOLVER_RUN_END"] = repr(end_epoch)
    return [{"name": k, "value": v} for k, v in env.items()]


def priority_class(urgency: float | None) -> tuple[str, int] | None:
    """The PriorityClass (name, value) of a task's ``urgency`` (see :data:`PRIORITY_BANDS`).

    >>> priority_class(0.9), priority_class(0.25), priority_class(0.0), priority_class(None)
    (('gensolver-urgent', 1000), ('gensolver-normal', 500), ('gensolver-low', 100), None)
    """
    if urgency is None:
        return None
    return next((name, value) for low, name, value in PRIORITY_BANDS if urgency >= low)


def _priority_objects(plan: ExecutionPlan, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    used = {c for c in (priority_class(t.urgency) for t in plan.tasks) if c is not None}
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": labels["app.kubernetes.io/managed-by"]}},
             "value": value, "globalDefault": False,
             "description": f"gensolver tasks of urgency band {name.removeprefix('gensolver-')}"}
            for low, name, value in PRIORITY_BANDS if (name, value) in used]


def _members(grant: RunGrant) -> list[tuple[RunGrant, tuple[str, ...]]]:
    """The run's pods: one per node, each with that node's plan devices (a single-node run: one)."""
    run = grant.run
    if len(grant.nodes) == 1:
        return [(grant, tuple(run.devices))]
    out = []
    for node in grant.nodes:
        devices = tuple(d for d, n in zip(run.devices, grant.where) if n == node)
        out.append((replace(grant, nodes=(node,), devices_per_node=len(devices)), devices))
    return out


def _uuids(plan: ExecutionPlan, fl: Flavor, options: K8sOptions) -> dict[str, str]:
    """Plan device -> GPU UUID for pinning (empty when the flavor cannot pin; see the module docstring)."""
    known = {d.id for d in plan.devices}
    for device in options.gpu_uuids:
        if device not in known:
            raise AdapterError("--gpu-uuid", f"the plan has no device {device!r} (its devices: "
                                             f"{', '.join(sorted(known)) or 'none'})")
    if fl.pin is None:
        if options.gpu_uuids:
            raise AdapterError("--gpu-uuid", f"flavor {fl.name} cannot pin a pod to a GPU (its device plugin or "
                                             f"scheduler picks the GPU); pinning needs --flavor hami")
        return {}
    out = dict(options.gpu_uuids)
    for device in sorted(known - set(out)):
        tail = device.rpartition("/")[2]
        if GPU_UUID.match(tail):
            out[device] = tail
    owner: dict[str, str] = {}
    for device, uuid in sorted(out.items()):
        if uuid in owner:
            raise AdapterError("--gpu-uuid", f"plan devices {owner[uuid]!r} and {device!r} both have GPU {uuid}")
        owner[uuid] = device
    return out


def _pin(fl: Flavor, devices: tuple[str, ...], uuids: Mapping[str, str], key: str) -> dict[str, str]:
    """The flavor's pin annotation for a pod on ``devices`` (empty: none of them has a UUID)."""
    if fl.pin is None or not any(d in uuids for d in devices):
        return {}
    missing = [d for d in devices if d not in uuids]
    if missing:
        raise AdapterError("--gpu-uuid", f"run {key!r} holds plan devices {', '.join(devices)} but {missing[0]!r} "
                                         f"has no GPU UUID; {fl.name} would confine the pod to the others")
    return {fl.pin: ",".join(uuids[d] for d in devices)}


def _gang_objects(fl: Flavor, gang: str, size: int, options: K8sOptions, labels: Mapping[str, str],
                  priority: str | None) -> list[dict[str, Any]]:
    """The flavor's gang object for a run over ``size`` nodes (see the module docstring)."""
    if fl.name != "kai":
        return []
    # KAI scheduler PodGroup [KAIPG]_: ``spec.minMember`` (all-or-nothing over that many pods) and
    # ``spec.queue``; pods join it by the ``pod-group-name`` annotation
    return [{"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
             "metadata": {"name": gang, "namespace": options.namespace, "labels": dict(labels)},
             "spec": {"minMember": size, "queue": options.flavor.queue,
                      **({"priorityClassName": priority} if priority else {})}}]


def k8s_objects(plan: ExecutionPlan, flavor: str, options: K8sOptions) -> list[dict[str, Any]]:
    """The plan's Jobs (sorted by start) after the flavor's cluster objects; a gang over several
    nodes is one pod per node, with the flavor's gang object (see the module docstring).

    Raises
    ------
    AdapterError
        An unknown flavor, a device without a node.
    """
    fl = get_flavor(flavor)
    grants = run_grants(plan, options.nodes, options.default_node, node_rule=k8s_node)
    uuids = _uuids(plan, fl, options)
    prefix = dns_name(plan.name or "plan", limit=30)
    common = {"app.kubernetes.io/managed-by": "gensolver", "gensolver.io/plan": plan.digest}
    gpus: dict[str, int] = {}
    for d in plan.devices:
        try:
            node = node_of(d.id, options.nodes, options.default_node)
        except AdapterError:
            continue  # a device no run uses and no option places
        gpus[node] = gpus.get(node, 0) + 1
    meta = {"prefix": prefix, "labels": common, "time_scale": options.time_scale, "gpus": gpus}
    out = _priority_objects(plan, common) + fl.objects(grants, options.flavor, meta)
    names = {g.key: dns_name(prefix, g.run.task, str(g.run.index)) for g in grants}
    for g in grants:
        members = _members(g)
        band = priority_class(plan.task(g.run.task).urgency)
        priority = None if band is None else band[0]
        labels = dict(common, **{"gensolver.io/task": label_value(g.run.task) or "task", "gensolver.io/run": str(g.run.index)})
        if len(members) > 1:
            labels["gensolver.io/gang"] = names[g.key]
            out.extend(_gang_objects(fl, names[g.key], len(members), options, labels, priority))
        jobs = []
        for rank, (member, devices) in enumerate(members):
            name = names[g.key] if len(members) == 1 else dns_name(prefix, g.run.task, str(g.run.index), f"n{rank}")
            gang = (names[g.key], rank, len(members)) if len(members) > 1 else None
            pin = _pin(fl, devices, uuids, g.key)
            jobs.append(_job(fl, member, devices, grants, name, gang, labels, names, options, priority, pin))
        if len(jobs) > 1 and fl.name in JOBSET_FLAVORS:
            jobs = [_jobset(jobs, dns_name("gs", prefix, g.run.task, str(g.run.index), limit=_jobset_limit(len(jobs))),
                            labels, ",".join(g.run.devices))]
        out.extend(jobs)
    return out


def _jobset_limit(size: int) -> int:
    """The longest JobSet name whose pods' names stay DNS-1035 labels: the webhook checks
    ``<jobset>-<replicatedJob>-<job index>-<pod index>-abcde`` against 63 characters [JOBSET]_."""
    return 63 - len(f"-n{size - 1}-0-0-abcde")


def _jobset(jobs: list[dict[str, Any]], name: str, labels: Mapping[str, str], devices: str) -> dict[str, Any]:
    """One JobSet [JOBSET]_ of a gang's per-node Jobs (see the module docstring)."""
    first = jobs[0]["metadata"]
    annotations = dict(first["annotations"], **{"gensolver.io/devices": devices})
    replicated = [{"name": f"n{rank}", "replicas": 1,
                   "template": {"metadata": {"labels": dict(job["metadata"]["labels"]),
                                             "annotations": dict(job["metadata"]["annotations"])},
                                "spec": job["spec"]}} for rank, job in enumerate(jobs)]
    return {"apiVersion": JOBSET_API, "kind": "JobSet",
            "metadata": {"name": name, "namespace": first["namespace"], "labels": dict(labels), "annotations": annotations},
            "spec": {"failurePolicy": {"maxRestarts": 0}, "successPolicy": {"operator": "All"},
                     "replicatedJobs": replicated}}


def member_jobs(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The run pods' objects of a :func:`k8s_objects` output: its Jobs and Pods, and in place of
    each JobSet the ``batch/v1`` Jobs its controller creates (``<jobset>-<replicatedJob>-<index>``,
    the template's metadata and spec) [JOBSET]_."""
    out: list[Mapping[str, Any]] = []
    for obj in objects:
        if obj.get("kind") in ("Job", "Pod"):
            out.append(obj)
        elif obj.get("kind") == "JobSet":
            meta = obj["metadata"]
            for rjob in obj["spec"]["replicatedJobs"]:
                for index in range(int(rjob.get("replicas", 1))):
                    template = rjob["template"]
                    out.append({"apiVersion": "batch/v1", "kind": "Job",
                                "metadata": dict(template.get("metadata", {}), name=f"{meta['name']}-{rjob['name']}-{index}",
                                                 namespace=meta.get("namespace", "default")),
                                "spec": template["spec"]})
    return out


def _job(fl: Flavor, g: RunGrant, devices: tuple[str, ...], grants: tuple[RunGrant, ...], name: str,
         gang: tuple[str, int, int] | None, labels: Mapping[str, str], names: Mapping[str, str],
         options: K8sOptions, priority: str | None, pin: Mapping[str, str]) -> dict[str, Any]:
    """One pod of a run: a Job, or for a kueue gang a plain Pod of a Kueue pod group."""
    run = g.run
    pod = fl.pod(g, grants, options.flavor)
    begin = run.start * options.time_scale
    end = run.end * options.time_scale
    annotations = {"gensolver.io/task": run.task, "gensolver.io/devices": ",".join(devices),
                   "gensolver.io/start": f"{begin:g}", "gensolver.io/end": f"{end:g}"}
    if run.index:
        annotations["gensolver.io/after"] = names[f"{run.task}.{run.index - 1}"]
    env = _env(g, devices, None if options.start_at is None else options.start_at + end)
    if gang is not None:
        env += [{"name": "GENSOLVER_GANG", "value": gang[0]}, {"name": "GENSOLVER_GANG_RANK", "value": str(gang[1])},
                {"name": "GENSOLVER_GANG_SIZE", "value": str(gang[2])}]
    container: dict[str, Any] = {"name": "task", "image": options.image, "env": env}
    if run.command:
        container["command"] = list(run.command)
    resources: dict[str, Any] = {}
    requests = {k: v for k, v in (("cpu", options.cpu), ("memory", options.memory)) if v is not None}
    if requests:
        resources["requests"] = requests
    limits = dict(pod.limits, **({"memory": options.memory} if options.memory is not None else {}))
    if limits:
        resources["limits"] = limits
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {"restartPolicy": "Never", "terminationGracePeriodSeconds": math.ceil(options.grace),
                            **_affinity(g.nodes), "containers": [container]}
    if priority is not None:
        spec["priorityClassName"] = priority
    if fl.scheduler:
        spec["schedulerName"] = fl.scheduler
    if options.start_at is not None:
        at = math.ceil(options.start_at + begin)
        spec["initContainers"] = [{"name": "wait-for-start", "image": WAIT_IMAGE,
                                   "command": ["sh", "-c", f"while [ \"$(date +%s)\" -lt {at} ]; do sleep 1; done"]}]
    pod_annotations = dict(pod.annotations, **pin)
    if gang is not None and fl.name == "kai":
        pod_annotations["pod-group-name"] = gang[0]
    meta: dict[str, Any] = {"name": name, "namespace": options.namespace,
                            "labels": dict(labels, **pod.job_labels), "annotations": annotations}
    if gang is not None and fl.name == "kueue":
        # Kueue plain-pod group [KQPG]_: every pod carries the queue and group labels and the
        # group's total count; Kueue admits the group as one workload (no Job, no suspend)
        meta["labels"]["kueue.x-k8s.io/pod-group-name"] = gang[0]
        meta["annotations"] = dict(annotations, **pod_annotations, **{"kueue.x-k8s.io/pod-group-total-count": str(gang[2])})
        meta["labels"].update(pod.pod_labels)
        if options.start_at is None:
            spec["activeDeadlineSeconds"] = max(1, math.ceil(end - begin + options.grace))
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    job_spec: dict[str, Any] = {"backoffLimit": 0,
                                "template": {"metadata": {"labels": dict(labels, **pod.pod_labels)}, "spec": spec}}
    if pod_annotations:
        job_spec["template"]["metadata"]["annotations"] = pod_annotations
    if options.start_at is None:
        job_spec["activeDeadlineSeconds"] = max(1, math.ceil(end - begin + options.grace))
    if fl.suspend:
        job_spec["suspend"] = True
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}


def dump_yaml(objects: list[dict[str, Any]], *, header: str = "") -> str:
    """The objects as one multi-document YAML text (``yaml.safe_dump_all``), ``header`` as comments."""
    lines = "".join(f"# {line}\n" for line in header.splitlines())
    return lines + yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False)
