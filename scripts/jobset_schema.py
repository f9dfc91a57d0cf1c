"""Extract the JobSet schema subset that ``tests/adapters/test_jobset.py`` validates against.

Usage::

    python scripts/jobset_schema.py jobset.x-k8s.io_jobsets.yaml v0.12.0 > tests/adapters/data/jobset-v1alpha2.schema.json

The input is ``config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml`` of
https://github.com/kubernetes-sigs/jobset (about 820 KB, almost all of it the embedded
``batch/v1`` JobTemplateSpec). The output is the ``v1alpha2`` ``openAPIV3Schema`` with the
descriptions dropped and each replicatedJob's ``template`` reduced to ``type: object``: the
tests check that template separately, as a ``batch/v1`` Job, with kubernetes-validate.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: jobset_schema.py CRD_YAML UPSTREAM_VERSION", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        crd = yaml.safe_load(fh)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"]["template"] = {
        "type": "object", "x-gensolver-note": "a batch/v1 JobTemplateSpec, checked with kubernetes-validate"}
    out = {"$comment": (f"Subset of kubernetes-sigs/jobset {argv[1]} "
                        "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml (Apache-2.0): the v1alpha2 "
                        "openAPIV3Schema without descriptions, replicatedJobs[].template reduced to an object; "
                        "made by scripts/jobset_schema.py"), **_strip(schema)}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
