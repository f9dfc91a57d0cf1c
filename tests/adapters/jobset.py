"""A checker for the JobSets of multi-node gangs (``jobset.x-k8s.io/v1alpha2``).

What the API server and JobSet's webhook would refuse, and what a gang needs:

- the schema: ``data/jobset-v1alpha2.schema.json``, the ``openAPIV3Schema`` of kubernetes-sigs/jobset
  v0.12.0 (``config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml``, reduced by
  ``scripts/jobset_schema.py``), checked strictly (an unknown field is an error, as under
  ``kubectl apply --validate=strict``); each replicatedJob's template, reduced to an object in that
  subset, is checked as a ``batch/v1`` Job with kubernetes-validate (``k8s_problems``);
- the webhook's names (``pkg/webhooks/jobset_webhook.go``): the JobSet name, each child Job name
  ``<jobset>-<replicatedJob>-<last index>`` and pod name ``<job>-<pod index>-abcde`` are DNS-1035
  labels of at most 63 characters; replicatedJob names unique (``x-kubernetes-list-map-keys``);
- the gang: ``failurePolicy.maxRestarts: 0`` and no rules (a member that fails fails the JobSet),
  ``successPolicy.operator: All`` over all replicatedJobs, no ``startupPolicy`` (deprecated) and no
  ``dependsOn`` (members start together), each member's pods pinned to one node, no node twice.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).with_name("data") / "jobset-v1alpha2.schema.json"
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _strict(node: Any) -> Any:
    """The schema with ``additionalProperties: false`` on every object that lists its properties."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if "properties" in out and "additionalProperties" not in out \
                and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft7Validator(_strict({k: v for k, v in SCHEMA.items() if k != "$comment"}))


def _dns1035(name: str, what: str) -> list[str]:
    if not DNS1035.match(name) or len(name) > 63:
        return [f"{what} {name!r} is not a DNS-1035 label of at most 63 characters"]
    return []


def jobset_problems(obj: dict[str, Any]) -> list[str]:
    """Why the API server, JobSet's webhook or a gang would refuse ``obj`` (see the module docstring)."""
    from tests.adapters.test_k8s import k8s_problems

    problems = [f"schema: {'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(obj)]
    if obj.get("apiVersion") != "jobset.x-k8s.io/v1alpha2" or obj.get("kind") != "JobSet":
        problems.append(f"apiVersion/kind {obj.get('apiVersion')}/{obj.get('kind')}")
    name = obj.get("metadata", {}).get("name", "")
    problems += _dns1035(name, "JobSet name")
    spec = obj.get("spec", {})
    rjobs = spec.get("replicatedJobs") or []
    names = [r.get("name", "") for r in rjobs]
    if len(set(names)) != len(names) or not rjobs:
        problems.append(f"replicatedJob names {names} empty or not unique")
    policy = spec.get("failurePolicy")
    if not policy or policy.get("maxRestarts", 0) != 0 or policy.get("rules"):
        problems.append(f"failurePolicy {policy!r}: a failing member must fail the gang (maxRestarts 0, no rules)")
    success = spec.get("successPolicy") or {}
    if success.get("operator") != "All" or success.get("targetReplicatedJobs"):
        problems.append(f"successPolicy {success!r}: the gang succeeds when all members do")
    if "startupPolicy" in spec:
        problems.append("startupPolicy is deprecated upstream (use dependsOn); a gang starts together")
    nodes: list[str] = []
    for rjob in rjobs:
        replicas = rjob.get("replicas", 1) if isinstance(rjob.get("replicas", 1), int) else 1  # else a schema error
        if any("dependsOn" in r for r in rjobs):
            problems.append(f"{rjob.get('name')}: dependsOn delays a gang member")
        template = copy.deepcopy(rjob.get("template") or {})
        job_name = f"{name}-{rjob.get('name')}-{max(0, replicas - 1)}"
        problems += _dns1035(job_name, "child Job name")
        completions = (template.get("spec") or {}).get("completions", 1)
        completions = completions if isinstance(completions, int) else 1
        problems += _dns1035(f"{job_name}-{max(0, completions - 1)}-abcde", "pod name")
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": dict(template.get("metadata") or {}, name=job_name),
               "spec": template.get("spec")}
        problems += [f"{rjob.get('name')}: {p}" for p in k8s_problems(job)]
        pod = ((template.get("spec") or {}).get("template") or {}).get("spec") or {}
        node = (pod.get("nodeSelector") or {}).get("kubernetes.io/hostname")
        if node is None:
            problems.append(f"{rjob.get('name')}: its pods are not pinned to one node")
        nodes += [node] * replicas
    if len(set(nodes)) != len(nodes):
        problems.append(f"members share nodes: {nodes}")
    return problems
