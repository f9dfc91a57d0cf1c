"""A script that applies a plan's Kubernetes objects at their start times, so that no pod holds
its grant before its run starts.

With ``--start-at`` alone every pod waits in an init container until its start; but a pod that
waits has been scheduled, and holds its GPUs (or its share) from then on: applied together, the
pods of a long plan would hold more than the cluster has. :func:`apply_script` writes a bash
script that instead creates each run's objects when the run starts:

- first, at once, the objects that belong to no run (PriorityClasses, the device plugin's
  ConfigMap);
- then, in start order, each run's Job (or a gang's Pods and its PodGroup, or its JobSet), after waiting until
  ``t0 + start`` (epoch seconds, rounded up to a second): ``now=$(date +%s)``, then ``sleep``
  for the difference if it is positive; objects that start in the same second are applied by
  one ``kubectl apply``.

The objects of one time go to ``kubectl apply -f -`` as one line of JSON (a ``v1`` ``List``), passed by ``printf '%s\\n'``
with the text ``shlex``-quoted, so no value of the plan can reach the shell. ``KUBECTL`` in the
environment names another client (default ``kubectl``). The script stops at the first
``kubectl`` that fails (``set -euo pipefail``). Nothing exists on the cluster before its start,
so nothing is held; the init container stays as a guard if the YAML is applied directly.

**Node configs of the NVIDIA device plugin** (flavors ``nvidia`` and ``kueue``; see
:mod:`gensolver.adapters.flavors`). The emitted Node objects are not applied: each becomes a
*relabel* of its node, ``kubectl label node NODE --overwrite nvidia.com/device-plugin.config=C``,
which the plugin follows at once, restarting to serve config ``C`` [DPLABEL]_. A node's first
label is set at the start; a later one (annotated ``gensolver.io/from``, the end of the node's
runs before it) at ``t0 + from``. Each relabel runs in the background, so that other nodes'
runs are applied on time, and does three things in order:

1. (later labels only) it waits until no pod of the plan (label ``gensolver.io/plan``) on the
   node is still pending or running (``kubectl get pods --field-selector
   spec.nodeName=NODE,status.phase!=Succeeded,status.phase!=Failed``), at most the pods'
   termination grace period plus :data:`DRAIN_SLACK` seconds: a whole GPU is never relabelled
   into shared replicas under a pod that still holds it (nor the other way);
2. it sets the label;
3. it waits (``kubectl wait --for=jsonpath=...``, at most :data:`RELABEL_TIMEOUT` seconds)
   until the node advertises the new config: ``status.allocatable["nvidia.com/gpu"]`` equal to
   the node's GPUs (GPU feature discovery's ``nvidia.com/gpu.count`` label when the node has
   it, else the plan's devices on the node, annotation ``gensolver.io/gpus``) times the config's
   replicas (1 without sharing). A pod scheduled before the plugin restarted would get a
   device of the old config.

The runs on that node that come after the relabel are applied only once it has succeeded
(``wait`` on its process), after the other objects of their second; one that fails (pods that do not end, a plugin that does not follow)
stops the script, naming the node, and nothing of the node's next phase is applied.

References
----------
.. [DPLABEL] NVIDIA k8s-device-plugin, "Updating Per-Node Configuration With a Node Label",
   https://github.com/NVIDIA/k8s-device-plugin#updating-per-node-configuration-with-a-node-label
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from .common import AdapterError
from .flavors import CONFIG_LABEL, FROM, GPUS
from .k8s import member_jobs
from .names import comment_text

#: the kinds of a run's objects, applied at the run's start
RUNS = ("Job", "Pod", "JobSet")

__all__ = ["apply_script", "apply_groups", "relabels", "Relabel", "RELABEL_TIMEOUT", "DRAIN_SLACK", "RELABEL_FN"]

#: seconds a relabel waits for its node to advertise the new config
RELABEL_TIMEOUT = 180
#: seconds beyond the pods' termination grace period that a relabel waits for them to end
DRAIN_SLACK = 30


@dataclass(frozen=True)
class Relabel:
    """One device-plugin config label on a node (see the module docstring).

    Attributes
    ----------
    node, config : str
    second : int or None
        Epoch second at which it is set (``None``: at the start).
    replicas : int
        ``nvidia.com/gpu`` the node advertises per GPU under ``config``.
    gpus : int
        The node's GPUs as the plan counts them.
    """

    node: str
    config: str
    second: int | None
    replicas: int
    gpus: int


def _check_start(start_at: float) -> None:
    if isinstance(start_at, bool) or not isinstance(start_at, (int, float)) or not math.isfinite(start_at) \
            or start_at < 0:
        raise AdapterError("--start-at", f"must be a non-negative number of epoch seconds, got {start_at!r}")


def apply_groups(objects: Sequence[Mapping[str, Any]], start_at: float) -> list[tuple[int | None, list[Mapping[str, Any]]]]:
    """``objects`` (one ``k8s_objects`` output) grouped by when they are applied: ``(None,
    objects of no run)`` first, then ``(epoch second, objects)`` by time. Node objects are not
    applied (see :func:`relabels`).

    A run's pods carry ``gensolver.io/start`` (wall seconds after ``t0``); they are applied at
    ``ceil(start_at + start)``, the second their init container waits for; a gang's PodGroup
    goes with the first pod that names it (``pod-group-name``).

    Raises
    ------
    AdapterError
        ``start_at`` is not a finite non-negative number (field ``--start-at``), a PodGroup
        that no pod names.
    """
    _check_start(start_at)
    at: dict[int, list[Mapping[str, Any]]] = {}
    groups: dict[str, int] = {}
    now: list[Mapping[str, Any]] = []
    pod_groups: list[Mapping[str, Any]] = []
    for obj in objects:
        if obj.get("kind") == "Node":
            continue
        if obj.get("kind") not in RUNS:
            (pod_groups if obj.get("kind") == "PodGroup" else now).append(obj)
            continue
        second = math.ceil(start_at + float(obj["metadata"]["annotations"]["gensolver.io/start"]))
        at.setdefault(second, []).append(obj)
        if obj["kind"] == "JobSet":
            continue
        template = obj if obj["kind"] == "Pod" else obj["spec"]["template"]
        group = (template.get("metadata", {}).get("annotations") or {}).get("pod-group-name")
        if group is not None:
            groups[group] = min(groups.get(group, second), second)
    for obj in pod_groups:
        name = obj["metadata"]["name"]
        if name not in groups:
            raise AdapterError("--start-at", f"PodGroup {name}: no pod names it")
        at[groups[name]].insert(0, obj)
    out: list[tuple[int | None, list[Mapping[str, Any]]]] = [(None, now)] if now else []
    return out + [(second, at[second]) for second in sorted(at)]


def _replicas(objects: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Config name -> ``nvidia.com/gpu`` per GPU under it, from the device plugin's ConfigMaps."""
    out: dict[str, int] = {}
    for o in objects:
        if o.get("kind") != "ConfigMap":
            continue
        for name, text in (o.get("data") or {}).items():
            sharing = (yaml.safe_load(text) or {}).get("sharing") or {}
            resources: list[Any] = next((sharing[m].get("resources", []) for m in ("timeSlicing", "mps") if sharing.get(m)), [])
            out[name] = int(resources[0].get("replicas", 1)) if resources else 1
    return out


def relabels(objects: Sequence[Mapping[str, Any]], start_at: float) -> list[Relabel]:
    """The Node objects of ``objects`` as relabels, in order (see the module docstring).

    Raises
    ------
    AdapterError
        ``start_at`` is not a finite non-negative number; a Node whose config is in no ConfigMap
        of ``objects`` (field ``--flavor``).
    """
    _check_start(start_at)
    replicas = _replicas(objects)
    out = []
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        meta = obj["metadata"]
        config = meta["labels"][CONFIG_LABEL]
        if config not in replicas:
            raise AdapterError("--flavor", f"node {meta['name']}: config {config!r} is in no device plugin ConfigMap")
        ann = meta.get("annotations") or {}
        second = math.ceil(start_at + float(ann[FROM])) if FROM in ann else None
        out.append(Relabel(meta["name"], config, second, replicas[config], int(ann.get(GPUS, 1))))
    return sorted(out, key=lambda r: (-1 if r.second is None else r.second, r.node))


def _nodes(obj: Mapping[str, Any]) -> list[str]:
    """The nodes a Job, Pod or JobSet may run on (its nodeSelector or node affinity)."""
    if obj.get("kind") == "JobSet":
        return [n for job in member_jobs([obj]) for n in _nodes(job)]
    spec = (obj if obj.get("kind") == "Pod" else obj["spec"]["template"])["spec"]
    if "nodeSelector" in spec:
        return [spec["nodeSelector"]["kubernetes.io/hostname"]]
    terms = (spec.get("affinity") or {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    return [v for t in terms for e in t["matchExpressions"] for v in e["values"]]


#: the script's ``relabel`` function (constant: every value reaches it as a quoted argument)
RELABEL_FN = (
    "# relabel NODE CONFIG REPLICAS GPUS DRAIN NAMESPACE PLAN: wait (DRAIN s at most) until no pod of the",
    "# plan is pending or running on NODE, set its device plugin config, and wait until NODE advertises",
    "# its GPUs (GPU feature discovery's count, else GPUS) times REPLICAS.",
    "relabel() {",
    "  local waited=0 pods count",
    '  while [ "$5" -gt 0 ]; do',
    '    pods=$("$KUBECTL" get pods -n "$6" -l "gensolver.io/plan=$7" '
    '--field-selector "spec.nodeName=$1,status.phase!=Succeeded,status.phase!=Failed" -o name)',
    '    if [ -z "$pods" ]; then break; fi',
    '    if [ "$waited" -ge "$5" ]; then',
    '      printf \'gensolver: node %s still runs pods of the plan after %s s; not relabelled to %s\\n\' "$1" "$5" "$2" >&2',
    "      return 1",
    "    fi",
    "    sleep 1",
    "    waited=$((waited + 1))",
    "  done",
    f'  "$KUBECTL" label node "$1" --overwrite "{CONFIG_LABEL}=$2"',
    "  count=$(\"$KUBECTL\" get node \"$1\" -o 'jsonpath={.metadata.labels.nvidia\\.com/gpu\\.count}')",
    "  case \"$count\" in (''|*[!0-9]*) count=$4;; esac",
    '  if ! "$KUBECTL" wait "node/$1" --for="jsonpath={.status.allocatable.nvidia\\.com/gpu}=$((count * $3))" '
    f'--timeout={RELABEL_TIMEOUT}s; then',
    '    printf \'gensolver: node %s does not advertise %s nvidia.com/gpu under config %s\\n\' "$1" "$((count * $3))" "$2" >&2',
    "    return 1",
    "  fi",
    "}",
)


def _pods_meta(objects: Sequence[Mapping[str, Any]]) -> tuple[str, str, int]:
    """(namespace, plan digest, longest termination grace period) of the plan's pods."""
    pods = member_jobs(objects)
    if not pods:
        return "default", "", 0
    first = pods[0]["metadata"]
    grace = max(int((o if o["kind"] == "Pod" else o["spec"]["template"])["spec"].get("terminationGracePeriodSeconds", 30))
                for o in pods)
    return first.get("namespace", "default"), first.get("labels", {}).get("gensolver.io/plan", ""), grace


def apply_script(objects: Sequence[Mapping[str, Any]], *, start_at: float, header: str = "") -> str:
    """The bash script (see the module docstring) that applies ``objects`` at their starts and
    relabels nodes between their runs."""
    lines = ["#!/bin/bash", *(f"# {comment_text(line)}" for line in header.splitlines()),
             "# Applies each run's objects at its start (epoch seconds); nothing is held before.",
             "set -euo pipefail", 'KUBECTL="${KUBECTL:-kubectl}"',
             "wait_until() {", "  local now", "  now=$(date +%s)",
             '  if [ "$now" -lt "$1" ]; then sleep $(( $1 - now )); fi', "}"]
    events = relabels(objects, start_at)
    namespace, digest, grace = _pods_meta(objects)
    if events:
        lines += list(RELABEL_FN)
    pending: dict[str, str] = {}

    def start(relabel: Relabel, k: int) -> None:
        if relabel.node in pending:
            lines.append(f'wait "${pending.pop(relabel.node)}"')
        drain = 0 if relabel.second is None else grace + DRAIN_SLACK
        args = [relabel.node, relabel.config, str(relabel.replicas), str(relabel.gpus), str(drain), namespace, digest]
        lines.append(f"relabel {' '.join(shlex.quote(a) for a in args)} &")
        lines.append(f"r{k}=$!")
        pending[relabel.node] = f"r{k}"

    k = 0
    for second, group in apply_groups(objects, start_at):
        while second is not None and k < len(events):
            at = events[k].second
            if at is not None and at > second:
                break
            if at is not None:
                lines.append(f"wait_until {at}")
            start(events[k], k)
            k += 1
        if second is not None:
            lines.append(f"wait_until {int(second)}")
        # the pods of nodes being relabelled go after the others, once their relabel is done
        held = [o for o in group if o.get("kind") in RUNS and any(n in pending for n in _nodes(o))]
        for batch in ([o for o in group if not any(o is h for h in held)], held):
            for node in sorted({n for o in batch if o.get("kind") in RUNS for n in _nodes(o)}):
                if node in pending:
                    lines.append(f'wait "${pending.pop(node)}"')
            if batch:
                text = json.dumps({"apiVersion": "v1", "kind": "List", "items": batch}, sort_keys=True,
                                  separators=(",", ":"))
                lines.append(f"printf '%s\\n' {shlex.quote(text)} | \"$KUBECTL\" apply -f -")
        if second is None:
            while k < len(events) and events[k].second is None:
                start(events[k], k)
                k += 1
    for relabel in events[k:]:  # relabels after the last run (none are emitted): still done, and waited for
        if relabel.second is not None:
            lines.append(f"wait_until {relabel.second}")
        start(relabel, k)
        k += 1
    lines += [f'wait "${var}"' for var in pending.values()]
    return "\n".join(lines) + "\n"
