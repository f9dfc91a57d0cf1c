"""The GenTask CustomResourceDefinition: an OpenAPI schema that matches the YAML reader.

:func:`gentask_crd` is the ``apiextensions.k8s.io/v1`` CustomResourceDefinition of
``gentasks.scheduling.gen.io`` (kind ``GenTask``, version ``v1alpha1``, namespaced). Its
structural schema follows :func:`gensolver.market.spec.parse_gentask` field by field: the
same required fields, types, ranges and quantity/duration spellings, so that a document the
reader accepts is accepted by a cluster and most documents it refuses are refused at
``kubectl apply`` time already.

An OpenAPI schema cannot say everything the reader checks (the whole comparison, field by field,
is computed in :mod:`gensolver.adapters.crd_table`). :data:`READER_ONLY` lists what only
the reader refuses (cross-field rules, near-miss typos, magnitudes of unit-less strings) and
:data:`CRD_ONLY` what only the cluster refuses (spellings Kubernetes does not allow for a
quantity or a command, object names that are not DNS names). The tests check every example of
both lists, so a change on either side shows.

:func:`document_schema` is the JSON Schema a whole GenTask document meets on a cluster: the
CRD schema plus what the API server itself checks (``apiVersion``, ``kind``, a DNS-1123
``metadata.name``, string labels); :func:`validate_document` applies it the way the API server
does (a ``null`` in a non-nullable field is dropped first) with the ``jsonschema`` package.

References
----------
.. [CRD] Kubernetes, "Extend the Kubernetes API with CustomResourceDefinitions" (structural
   schemas, ``x-kubernetes-int-or-string``, ``x-kubernetes-preserve-unknown-fields``, pruning),
   https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/
.. [QTY] Kubernetes ``resource.Quantity`` serialization format,
   https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
"""

from __future__ import annotations

import copy
from typing import Any

from ..market.spec import API_VERSION, KIND

__all__ = ["gentask_crd", "gentask_schema", "document_schema", "validate_document", "READER_ONLY", "CRD_ONLY",
           "GROUP", "VERSION", "PLURAL"]

GROUP, VERSION = API_VERSION.split("/")
PLURAL = "gentasks"

# the reader's quantity grammar (gensolver.model.quantity): a number, then an exponent of at most
# three digits or one Kubernetes suffix, no space between; at most 64 characters
_NUMBER = r"\+?([0-9]+\.?[0-9]*|\.[0-9]+)"
_SUFFIX = r"([eE][-+]?[0-9]{1,3}|Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?"
#: a mantissa with a non-zero digit (the reader refuses a zero memory)
_NONZERO = r"\+?([0-9]*[1-9][0-9]*\.?[0-9]*|[0-9]*\.[0-9]*[1-9][0-9]*)"
_QUANTITY_LENGTH = 64
_DURATION = r"^\s*(([0-9]+\.?[0-9]*|\.[0-9]+)\s*(ms|s|m|h|d)?\s*)+$"
#: a share of one device in (0, 1]: 0.25, .5, 1, 1.0, 250m, 0.5m, 1000m (an exponent is not spelt out)
_SHARE = (r"^\s*\+?(0*\.[0-9]*[1-9][0-9]*|0*1(\.0*)?"
          r"|(0*[1-9][0-9]{0,2}(\.[0-9]*)?|0*\.[0-9]*[1-9][0-9]*|0*1000(\.0*)?)m)\s*$")


def _int_or_string(pattern: str, *, minimum: int | None = None, maximum: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                           "pattern": pattern}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    return out


def _object(properties: dict[str, Any], *, required: tuple[str, ...] = (), open_: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if open_:  # the reader ignores fields it does not know (unless they look like a typo)
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def gentask_schema() -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a GenTask (see the module docstring)."""
    quantity = dict(_int_or_string(rf"^\s*{_NUMBER}{_SUFFIX}\s*$", minimum=0), maxLength=_QUANTITY_LENGTH)
    memory = dict(_int_or_string(rf"^\s*{_NONZERO}{_SUFFIX}\s*$", minimum=2 ** 20), maxLength=_QUANTITY_LENGTH)
    duration = _int_or_string(_DURATION, minimum=0)
    requests = _object({"nvidia.com/gpu": {"type": "integer", "minimum": 1}, "cpu": quantity, "memory": quantity})
    argv = {"type": "array", "items": {"type": "string"}}
    container = _object({"name": {"type": "string"}, "image": {"type": "string"}, "command": argv, "args": argv,
                         "resources": _object({"requests": requests, "limits": requests})})
    gpu_memory = _object({"preferred": memory, "minRequired": memory,
                          "urgencyFactor": {"type": "number", "minimum": 0, "maximum": 1},
                          "elasticity": {"type": "number", "minimum": 0}}, required=("preferred",))
    compute_time = _object({"preemptible": {"type": "boolean"}, "duration": dict(duration, minimum=1),
                            "arrival": duration, "deadline": duration})
    gen = _object({"gpuMemory": gpu_memory, "computeTime": compute_time,
                   "gpuCompute": _int_or_string(_SHARE, minimum=1, maximum=1),
                   "value": {"type": "number", "minimum": 0}}, required=("gpuMemory",))
    spec = _object({"containers": {"type": "array", "items": container}, "genResources": gen},
                   required=("genResources",))
    return {"type": "object", "required": ["spec"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "metadata": {"type": "object"}, "spec": spec}}


def gentask_crd() -> dict[str, Any]:
    """The ``CustomResourceDefinition`` object, as plain data (``yaml.safe_dump`` it)."""
    columns = [{"name": "Preferred", "type": "string", "jsonPath": ".spec.genResources.gpuMemory.preferred"},
               {"name": "Min", "type": "string", "jsonPath": ".spec.genResources.gpuMemory.minRequired"},
               {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{PLURAL}.{GROUP}", "labels": {"app.kubernetes.io/managed-by": "gensolver"}},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"kind": KIND, "plural": PLURAL, "singular": KIND.lower(), "listKind": f"{KIND}List",
                               "shortNames": ["gt"]},
                     "versions": [{"name": VERSION, "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": gentask_schema()},
                                   "additionalPrinterColumns": columns}]}}


#: DNS-1123 subdomain: what the API server requires of ``metadata.name``
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def document_schema() -> dict[str, Any]:
    """JSON Schema of a whole GenTask document on a cluster: the CRD schema plus the API server's
    own checks of ``apiVersion``, ``kind`` and ``metadata``."""
    schema = copy.deepcopy(gentask_schema())
    schema["required"] = ["apiVersion", "kind", "metadata", "spec"]
    schema["properties"]["apiVersion"] = {"type": "string", "enum": [API_VERSION]}
    schema["properties"]["kind"] = {"type": "string", "enum": [KIND]}
    schema["properties"]["metadata"] = {
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
                       "namespace": {"type": "string"},
                       "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}
    return schema


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def validate_document(doc: Any) -> list[str]:
    """Every reason a cluster with the CRD would refuse ``doc`` (empty: it is accepted).

    ``null`` values are dropped first, as the API server prunes them from fields that are not
    nullable; the schema is then applied with ``jsonschema`` (``pip install jsonschema``, a
    dependency of the test extra).
    """
    import jsonschema

    validator = jsonschema.Draft7Validator(document_schema())
    return sorted(f"{'.'.join(str(p) for p in e.absolute_path) or '/'}: {e.message}"
                  for e in validator.iter_errors(_drop_nulls(doc)))


#: refused by the reader, accepted by the CRD: (why, the change to the example document)
READER_ONLY: tuple[tuple[str, dict[str, Any]], ...] = (
    ("minRequired above preferred (a rule across two fields)",
     {"spec.genResources.gpuMemory.minRequired": "40Gi"}),
    ("a deadline before arrival + duration (a rule across fields)",
     {"spec.genResources.computeTime.duration": "2h", "spec.genResources.computeTime.deadline": "1h"}),
    ("a near-miss of a known field (the reader guesses a typo; the cluster keeps unknown fields)",
     {"spec.genResources.gpuMemory.minRequred": "18Gi"}),
    ("a unit-less memory string below 1 MiB (a magnitude a pattern cannot compare)",
     {"spec.genResources.gpuMemory.preferred": "1000"}),
    ("a zero duration written as a string (a pattern cannot tell '0m' from '10m' cheaply)",
     {"spec.genResources.computeTime.duration": "0m"}),
)
#: accepted by the reader, refused by the CRD (Kubernetes conventions): (why, the change)
CRD_ONLY: tuple[tuple[str, dict[str, Any]], ...] = (
    ("a fractional share as a bare number (Kubernetes quantities are integers or strings: write '0.5')",
     {"spec.genResources.gpuCompute": 0.5}),
    ("a command as one shell string (a container's command is a list)",
     {"spec.containers[0].command": "python train.py"}),
    ("a name that is not a DNS-1123 subdomain", {"metadata.name": "LLM_Finetune"}),
    ("a share written with an exponent", {"spec.genResources.gpuCompute": "5e-1"}),
)
