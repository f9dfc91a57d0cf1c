"""One strict reading of every request body: duplicate keys, out-of-range numbers, unknown fields.

JSON allows an object to repeat a key (most readers keep the last one, so ``{"tenant": "a",
"tenant": "b"}`` silently means ``b``) and numbers beyond what a double holds exactly; Python's
reader also accepts ``NaN`` and ``Infinity``. :func:`loads_strict` refuses all of them, naming
the offending place as a JSON pointer (the ``field`` of the problem document):

* a repeated key in any object;
* ``NaN``, ``Infinity``, ``-Infinity``;
* a number whose magnitude exceeds ``2**53`` (:data:`MAX_NUMBER`), beyond which doubles no
  longer hold every integer, so two different values a client sent may compare equal (a VCG
  winner valued ``1e17`` paid ``0`` instead of ``11``).

:func:`check_gentask_fields` refuses, by its path, any field a GenTask does not define (the
reader ignores most unknown fields; a misplaced ``gpus: 4`` would be dropped silently).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from .errors import BadRequest

__all__ = ["loads_strict", "check_numbers", "check_gentask_fields", "MAX_NUMBER", "JSON_TYPES"]

#: largest magnitude of a number in a request: beyond it doubles skip integers
MAX_NUMBER = 2.0 ** 53
#: media types read as JSON
JSON_TYPES = ("application/json",)


class _Object(dict):
    """A JSON object that remembers the keys it saw twice."""

    dups: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.dups = []
    for k, v in pairs:
        if k in obj:
            obj.dups.append(k)
        obj[k] = v
    return obj


def _constant(name: str) -> Any:
    raise InputError(f"{name} is not a number JSON allows")


def _pointer(parts: list[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def check_numbers(doc: Any, *, where: list[Any] | None = None, style: str = "pointer") -> None:
    """Refuse duplicate keys (objects read by :func:`loads_strict`) and numbers beyond
    :data:`MAX_NUMBER` or not finite anywhere in ``doc``; ``style`` names places as JSON
    pointers (``/spec/x``) or dotted paths (``spec.x``)."""
    stack: list[tuple[Any, list[Any]]] = [(doc, list(where or []))]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for k in getattr(node, "dups", ()):
                name = _name(path + [k], style)
                raise BadRequest(f"{name}: the key {k!r} appears more than once in its object", field=name)
            stack.extend((v, path + [k]) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, path + [i]) for i, v in enumerate(node))
        elif isinstance(node, float) and not (abs(node) <= MAX_NUMBER):
            name = _name(path, style)
            raise BadRequest(f"{name}: {node!r} is out of range (|x| <= 2**53, finite)", field=name)
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_NUMBER:
            name = _name(path, style)
            raise BadRequest(f"{name}: {node} is out of range (|x| <= 2**53)", field=name)


def _name(parts: list[Any], style: str) -> str:
    if style == "pointer":
        return _pointer(parts)
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + str(p)
    return out


def loads_strict(raw: bytes | str, *, style: str = "pointer") -> Any:
    """Parse JSON, refusing what the module docstring lists (:class:`BadRequest` naming the place).

    Raises
    ------
    BadRequest
        Not JSON (``field`` ``""``), or a duplicate key, a non-finite number, or one out of range.
    """
    try:
        doc = json.loads(raw, object_pairs_hook=_pairs, parse_constant=_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise BadRequest(f"the body is not JSON ({exc})", field="") from None
    check_numbers(doc, style=style)
    return doc


_ANY = None  # a field whose value is not checked further
_CONTAINER: dict[str, Any] = {k: _ANY for k in (
    "name", "image", "imagePullPolicy", "command", "args", "workingDir", "env", "envFrom", "ports", "volumeMounts",
    "volumeDevices", "securityContext", "stdin", "stdinOnce", "tty", "lifecycle", "livenessProbe", "readinessProbe",
    "startupProbe", "terminationMessagePath", "terminationMessagePolicy", "resizePolicy", "restartPolicy")}
_CONTAINER["resources"] = {"requests": _ANY, "limits": _ANY, "claims": _ANY}
#: the fields a GenTask may have (a list holds the shape of its items)
GENTASK_FIELDS: dict[str, Any] = {
    "apiVersion": _ANY, "kind": _ANY,
    "metadata": {"name": _ANY, "namespace": _ANY, "labels": _ANY, "annotations": _ANY},
    "spec": {
        "genResources": {
            "gpuMemory": {"preferred": _ANY, "minRequired": _ANY, "urgencyFactor": _ANY, "elasticity": _ANY},
            "computeTime": {"preemptible": _ANY, "duration": _ANY, "arrival": _ANY, "deadline": _ANY},
            "gpuCompute": _ANY, "value": _ANY},
        "containers": [_CONTAINER]},
}


def check_gentask_fields(doc: Any, *, prefix: str = "") -> None:
    """Refuse a GenTask field not in :data:`GENTASK_FIELDS`, naming its path
    (``spec.genResources.gpus``); shapes other than objects are left to the reader."""
    stack: list[tuple[Any, Any, str]] = [(doc, GENTASK_FIELDS, prefix)]
    while stack:
        node, shape, path = stack.pop()
        if isinstance(shape, list) and isinstance(node, list):
            stack.extend((v, shape[0], f"{path}[{i}]") for i, v in enumerate(node))
        elif isinstance(shape, Mapping) and isinstance(node, Mapping):
            for k, v in node.items():
                where = f"{path}.{k}" if path else str(k)
                if k not in shape:
                    known = ", ".join(sorted(shape))
                    raise BadRequest(f"{where}: unknown field (a GenTask has here: {known})", field=where)
                if shape[k] is not None:
                    stack.append((v, shape[k], where))
