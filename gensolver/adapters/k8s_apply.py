"""A script that applies a plan's Kubernetes objects at their start times, so that no pod holds
its grant before its run starts.

With ``--start-at`` alone every pod waits in an init container until its start; but a pod that
waits has been scheduled, and holds its GPUs (or its share) from then on: applied together, the
pods of a long plan would hold more than the cluster has. :func:`apply_script` writes a bash
script that instead creates each run's objects when the run starts:

- first, at once, the objects that belong to no run (PriorityClasses, the device plugin's
  ConfigMap);
- then, in start order, each run's Job (or a gang's Pods and its PodGroup), after waiting until
  ``t0 + start`` (epoch seconds, rounded up to a second): ``now=$(date +%s)``, then ``sleep``
  for the difference if it is positive; objects that start in the same second are applied by
  one ``kubectl apply``.

The objects of one time go to ``kubectl apply -f -`` as one line of JSON (a ``v1`` ``List``), passed by ``printf '%s\\n'``
with the text ``shlex``-quoted, so no value of the plan can reach the shell. ``KUBECTL`` in the
environment names another client (default ``kubectl``). The script stops at the first
``kubectl`` that fails (``set -euo pipefail``). Nothing exists on the cluster before its start,
so nothing is held; the init container stays as a guard if the YAML is applied directly.
"""

from __future__ import annotations

import json
import math
import shlex
from typing import Any, Mapping, Sequence

from .common import AdapterError
from .names import comment_text

__all__ = ["apply_script", "apply_groups"]


def apply_groups(objects: Sequence[Mapping[str, Any]], start_at: float) -> list[tuple[int | None, list[Mapping[str, Any]]]]:
    """``objects`` (one ``k8s_objects`` output) grouped by when they are applied: ``(None,
    objects of no run)`` first, then ``(epoch second, objects)`` by time.

    A run's pods carry ``gensolver.io/start`` (wall seconds after ``t0``); they are applied at
    ``ceil(start_at + start)``, the second their init container waits for; a gang's PodGroup
    goes with the first pod that names it (``pod-group-name``).

    Raises
    ------
    AdapterError
        ``start_at`` is not a finite non-negative number (field ``--start-at``), a PodGroup
        that no pod names.
    """
    if isinstance(start_at, bool) or not isinstance(start_at, (int, float)) or not math.isfinite(start_at) \
            or start_at < 0:
        raise AdapterError("--start-at", f"must be a non-negative number of epoch seconds, got {start_at!r}")
    at: dict[int, list[Mapping[str, Any]]] = {}
    groups: dict[str, int] = {}
    now: list[Mapping[str, Any]] = []
    pod_groups: list[Mapping[str, Any]] = []
    for obj in objects:
        if obj.get("kind") not in ("Job", "Pod"):
            (pod_groups if obj.get("kind") == "PodGroup" else now).append(obj)
            continue
        second = math.ceil(start_at + float(obj["metadata"]["annotations"]["gensolver.io/start"]))
        at.setdefault(second, []).append(obj)
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


def apply_script(objects: Sequence[Mapping[str, Any]], *, start_at: float, header: str = "") -> str:
    """The bash script (see the module docstring) that applies ``objects`` at their starts."""
    lines = ["#!/bin/bash", *(f"# {comment_text(line)}" for line in header.splitlines()),
             "# Applies each run's objects at its start (epoch seconds); nothing is held before.",
             "set -euo pipefail", 'KUBECTL="${KUBECTL:-kubectl}"',
             "wait_until() {", "  local now", "  now=$(date +%s)",
             '  if [ "$now" -lt "$1" ]; then sleep $(( $1 - now )); fi', "}"]
    for second, group in apply_groups(objects, start_at):
        if second is not None:
            lines.append(f"wait_until {int(second)}")
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(group)}, sort_keys=True,
                          separators=(",", ":"))
        lines.append(f"printf '%s\\n' {shlex.quote(text)} | \"$KUBECTL\" apply -f -")
    return "\n".join(lines) + "\n"
