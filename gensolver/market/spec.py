"""GenTask specifications: the YAML users write, read into :class:`gensolver.model.tasks.Task`.

A GenTask (``apiVersion: scheduling.gen.io/v1alpha1``, ``kind: GenTask``) is a Kubernetes-style
object describing one job's *elastic* GPU-memory request (see ``shared/examples/gentask.yaml``).
Fields read, with their mapping onto :class:`~gensolver.model.tasks.Task`:

==========================================================  ====================================
YAML field                                                  Task field
==========================================================  ====================================
``metadata.name`` (required)                                ``id``
``metadata.labels.tenant`` / ``metadata.namespace``         ``tenant`` (else the name)
``spec.genResources.gpuMemory.preferred`` (required)        ``preferred_memory`` (GiB)
``spec.genResources.gpuMemory.minRequired``                 ``min_memory`` (GiB; default preferred)
``spec.genResources.gpuMemory.urgencyFactor``               ``urgency`` (default 0.5)
``spec.genResources.gpuMemory.elasticity``                  ``elasticity`` (default 1.0)
``spec.genResources.computeTime.preemptible``               ``preemptible`` (default true)
``spec.genResources.computeTime.duration``                  ``duration`` (``"2h"`` or seconds; default ``default_duration``), in steps, rounded up
``spec.genResources.computeTime.arrival``                   ``release`` (offset from the start, default 0), in steps, rounded down
``spec.genResources.computeTime.deadline``                  ``deadline`` (offset), in steps, rounded down
``spec.genResources.gpuCompute``                            ``compute`` (share of a device: ``0.5`` or ``500m``; default 0.25)
``spec.genResources.value``                                 ``value`` (credits; default ``duration * preferred / 10``)
``spec.containers[*].resources.{requests,limits}['nvidia.com/gpu']``  ``gpus`` (largest; default 1)
``spec.containers[0].command`` + ``args``                   ``command`` (lists of strings; a string is split like a shell)
==========================================================  ====================================

Quantities follow Kubernetes conventions, read by the one parser
:mod:`gensolver.model.quantity` (also behind ``gensolver run --sim-devices``): binary suffixes
``Ki Mi Gi Ti Pi Ei``, decimal suffixes ``k M G T P E``, ``m`` (milli), or a plain number of bytes
(``1.5e9`` allowed); suffixes are case sensitive (``16g``, ``16GB`` are refused). Memory is a
whole number of bytes, converted to GiB (2**30 bytes), so ``30Gi`` is 30 GiB and ``1G`` is
0.931 GiB.

A ``null`` value is the field left out, everywhere (the Kubernetes API server prunes nulls from
fields that are not ``nullable``, so a GenTask applied to a cluster reads the same).

Unknown fields under ``spec.genResources`` (and its ``gpuMemory`` and ``computeTime``) that are
close to a known one are refused as likely typos (others are ignored); a GPU memory number
without a unit below 1 MiB is refused as a forgotten unit.

Every error is a :class:`SpecError` naming the document and the field path, and the YAML line
where one is known, e.g. ``tasks.yaml: document 2 (line 14): spec.genResources.gpuMemory.minRequired:
bad quantity '30Gx'``.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from ..model.inputs import ReadError, compose_yaml_all, loads_yaml_all, max_task_seconds, read_limited
from ..model.quantity import QuantityError, memory_has_unit, parse_memory_bytes
from ..model.quantity import parse_quantity as _quantity
from ..model.tasks import MAX_SLOWDOWN_LOG, Task
from ..model.validate import InstanceError

__all__ = ["SpecError", "parse_quantity", "parse_duration", "parse_gentask", "load_gentasks", "loads_gentasks",
           "API_VERSION", "KIND", "DEFAULT_COMPUTE"]

API_VERSION = "scheduling.gen.io/v1alpha1"
KIND = "GenTask"
#: share of one device a GenTask takes when ``spec.genResources.gpuCompute`` is absent
DEFAULT_COMPUTE = 0.25

_DURATION = re.compile(r"^\s*(\d+\.?\d*|\.\d+)\s*(ms|s|m|h|d)?\s*$", re.ASCII)
_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
#: the fields of ``spec.genResources`` and its parts (anything else is refused as a likely typo)
_GEN_RESOURCES = ("gpuMemory", "computeTime", "gpuCompute", "value")
_GPU_MEMORY = ("preferred", "minRequired", "urgencyFactor", "elasticity")
_COMPUTE_TIME = ("preemptible", "duration", "arrival", "deadline")


class SpecError(InputError):
    """A GenTask that cannot be read; the message names the field path (and line if known)."""

    def __init__(self, field: str, message: str, *, source: str = "", document: int | None = None,
                 line: int | None = None) -> None:
        self.field = field
        self.source = source
        self.document = document
        self.line = line
        where = []
        if source:
            where.append(source)
        if document is not None:
            where.append(f"document {document}" + (f" (line {line})" if line is not None else ""))
        elif line is not None:
            where.append(f"line {line}")
        prefix = ": ".join(where)
        body = f"{field}: {message}" if field else message
        super().__init__(f"{prefix}: {body}" if prefix else body)


def parse_quantity(value: Any, *, field: str = "quantity") -> float:
    """A Kubernetes quantity as a plain number: ``"30Gi"`` -> 32212254720, ``"500m"`` -> 0.5.

    The one parser of :mod:`gensolver.model.quantity` (also behind ``--sim-devices``).

    Parameters
    ----------
    value : str or int or float
    field : str
        Field path used in the error message.

    Raises
    ------
    SpecError
        ``"<field>: bad quantity '30Gx'"`` for anything else, including negative values.
    """
    try:
        return _quantity(value, field="")
    except QuantityError as exc:
        raise SpecError(field, exc.reason) from None


def parse_memory_gib(value: Any, *, field: str) -> float:
    """A memory quantity in GiB (``"500Mi"`` -> 0.48828125; ``"16G"`` -> 14.901...).

    The bytes are read by :func:`gensolver.model.quantity.parse_memory_bytes` (a whole number of
    bytes, Kubernetes suffixes). A number without a unit is bytes (Kubernetes convention); one
    below 1 MiB is refused as a forgotten unit (``preferred: 30`` is 30 bytes, not 30 GiB).
    """
    try:
        number = parse_memory_bytes(value, field="")
    except QuantityError as exc:
        raise SpecError(field, exc.reason) from None
    gib = number / 2 ** 30
    if gib <= 0:
        raise SpecError(field, f"must be positive, got {value!r}")
    if not memory_has_unit(value) and number < 2 ** 20:
        raise SpecError(field, f"{value!r} is {number:g} bytes (a number without a unit is bytes); "
                               f"write the unit, e.g. '{value}Gi'")
    return gib


def parse_duration(value: Any, *, field: str = "duration") -> float:
    """A duration in seconds: a number (seconds) or ``"90s"``, ``"30m"``, ``"2h"``, ``"1d"``, ``"1h30m"``."""
    if isinstance(value, bool):
        raise SpecError(field, f"bad duration {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise SpecError(field, f"bad duration {value!r}")
        return float(value)
    if not isinstance(value, str) or not value.strip():
        raise SpecError(field, f"bad duration {value!r}")
    parts = re.findall(r"(\d+\.?\d*|\.\d+)\s*(ms|s|m|h|d)?", value, flags=re.ASCII)
    if not parts or re.sub(r"(\d+\.?\d*|\.\d+)\s*(ms|s|m|h|d)?|\s", "", value, flags=re.ASCII):
        raise SpecError(field, f"bad duration {value!r} (use seconds or e.g. '90s', '30m', '2h', '1h30m')")
    return sum(float(n) * _DURATION_UNITS[u or None] for n, u in parts)


@dataclass(frozen=True)
class _Ctx:
    source: str
    document: int | None
    lines: Mapping[str, int]

    def error(self, field: str, message: str) -> SpecError:
        line = None
        probe = field
        while probe:
            if probe in self.lines:
                line = self.lines[probe]
                break
            probe = probe.rpartition(".")[0] if "." in probe else ""
        return SpecError(field, message, source=self.source, document=self.document, line=line)


def _get(doc: Mapping[str, Any], path: str, ctx: _Ctx, *, required: bool = False, default: Any = None) -> Any:
    cur: Any = doc
    walked: list[str] = []
    for key in path.split("."):
        if not isinstance(cur, Mapping):
            raise ctx.error(".".join(walked), f"must be a mapping, got {type(cur).__name__}")
        walked.append(key)
        if key not in cur or cur[key] is None:
            if required:
                raise ctx.error(path, "missing required field")
            return default
        cur = cur[key]
    return cur


def _number(value: Any, field: str, ctx: _Ctx, *, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ctx.error(field, f"must be a number, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"[{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        raise ctx.error(field, f"must be in {rng}, got {value!r}")
    return float(value)


def _known_keys(doc: Mapping[str, Any], path: str, allowed: Sequence[str], ctx: _Ctx) -> None:
    """Refuse a key of the mapping at ``path`` (if present) that is not in ``allowed`` but close
    to a key that is (a typo such as ``minRequred``, which would otherwise silently fall back to
    the default). Keys unlike any known one are left alone: fields this version does not model
    (another scheduler's annotations, a newer schema) do not make the task unreadable."""
    value = _get(doc, path, ctx)
    if not isinstance(value, Mapping):
        return
    for key in value:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.75)
            if close:
                raise ctx.error(f"{path}.{key}", f"unknown field (did you mean {close[0]!r}? "
                                                 f"known fields: {', '.join(allowed)})")


def _string(value: Any, field: str, ctx: _Ctx) -> str | None:
    """``value`` if a string, ``None`` if absent; anything else is refused (no ``str()`` coercion)."""
    if value is None or isinstance(value, str):
        return value
    hint = " (quote it)" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
    raise ctx.error(field, f"must be a string, got {type(value).__name__} {value!r}{hint}")


def _argv(value: Any, field: str, ctx: _Ctx) -> list[str]:
    """``command``/``args``: a list of strings, or one string split as a POSIX shell would."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise ctx.error(field, f"cannot split {value!r} into arguments: {exc}") from None
    if not isinstance(value, list):
        raise ctx.error(field, f"must be a list of strings or a string, got {type(value).__name__} {value!r}")
    for i, arg in enumerate(value):
        if not isinstance(arg, str):
            hint = " (quote it)" if isinstance(arg, (int, float)) and not isinstance(arg, bool) else ""
            raise ctx.error(f"{field}[{i}]", f"must be a string, got {type(arg).__name__} {arg!r}{hint}")
    return list(value)


def _wrap(fn, ctx: _Ctx, field: str, value: Any) -> float:
    try:
        return fn(value, field=field)
    except SpecError as exc:
        raise ctx.error(field, str(exc).split(": ", 1)[1] if ": " in str(exc) else str(exc)) from None


def parse_gentask(doc: Any, *, step_seconds: float = 60.0, default_duration: str | float = "1h",
                  source: str = "", document: int | None = None,
                  lines: Mapping[str, int] | None = None) -> Task:
    """One GenTask document (a parsed YAML mapping) as a :class:`Task` (memory in GiB, times in steps).

    Parameters
    ----------
    doc : mapping
        The parsed document.
    step_seconds : float, keyword-only
        Length of one time step; durations become ``ceil(seconds / step_seconds)`` steps.
    default_duration : str or float, keyword-only
        Work when ``spec.genResources.computeTime.duration`` is absent (documented default 1h).
    source, document, lines : keyword-only
        Where the document came from (file name, 1-based document number, field -> line), for
        error messages.

    Raises
    ------
    SpecError
        Naming the field path, e.g. ``spec.genResources.gpuMemory.minRequired: bad quantity '30Gx'``.
    """
    ctx = _Ctx(source, document, dict(lines or {}))
    if isinstance(step_seconds, bool) or not isinstance(step_seconds, (int, float)) \
            or not math.isfinite(step_seconds) or step_seconds <= 0:
        raise SpecError("", f"step_seconds must be a finite positive number, got {step_seconds!r}")
    name, tenant = _header(doc, ctx)
    _get(doc, "spec.genResources", ctx, required=True)
    _known_keys(doc, "spec.genResources", _GEN_RESOURCES, ctx)
    _known_keys(doc, "spec.genResources.gpuMemory", _GPU_MEMORY, ctx)
    _known_keys(doc, "spec.genResources.computeTime", _COMPUTE_TIME, ctx)
    pref, mini, urgency, elasticity = _memory(doc, ctx)
    preemptible, duration, release, deadline = _compute_time(doc, ctx, step_seconds, default_duration)
    raw_compute = _get(doc, "spec.genResources.gpuCompute", ctx, default=DEFAULT_COMPUTE)
    compute = _wrap(parse_quantity, ctx, "spec.genResources.gpuCompute", raw_compute)
    if not 0 < compute <= 1:
        raise ctx.error("spec.genResources.gpuCompute", f"must be in (0, 1], got {raw_compute!r}")
    raw_value = _get(doc, "spec.genResources.value", ctx)
    value = duration * pref / 10.0 if raw_value is None else _number(raw_value, "spec.genResources.value", ctx, lo=0)
    gpus, command = _containers(doc, ctx)
    try:
        return Task(id=name, preferred_memory=pref, min_memory=mini, duration=duration, value=float(value),
                    urgency=urgency, elasticity=elasticity, compute=compute, preemptible=preemptible,
                    release=release, deadline=deadline, gpus=gpus, tenant=tenant, command=command)
    except InstanceError as exc:  # every rule is checked above in YAML terms; this names the field if one is not
        raise ctx.error(_yaml_field(exc.pointer), exc.reason) from None


#: :class:`~gensolver.model.tasks.Task` field -> the GenTask field it is read from
_TASK_FIELDS = {
    "id": "metadata.name", "tenant": "metadata.labels.tenant",
    "preferred_memory": "spec.genResources.gpuMemory.preferred",
    "min_memory": "spec.genResources.gpuMemory.minRequired",
    "urgency": "spec.genResources.gpuMemory.urgencyFactor",
    "elasticity": "spec.genResources.gpuMemory.elasticity",
    "preemptible": "spec.genResources.computeTime.preemptible",
    "duration": "spec.genResources.computeTime.duration",
    "release": "spec.genResources.computeTime.arrival",
    "deadline": "spec.genResources.computeTime.deadline",
    "compute": "spec.genResources.gpuCompute", "value": "spec.genResources.value",
    "gpus": "spec.containers", "command": "spec.containers[0].command",
}


def _yaml_field(pointer: str) -> str:
    """The GenTask field behind a :class:`~gensolver.model.tasks.Task` error's JSON pointer
    (``/tasks/<id>/elasticity`` -> ``spec.genResources.gpuMemory.elasticity``; ``spec`` if unknown)."""
    return _TASK_FIELDS.get(pointer.rpartition("/")[2], "spec")


def _header(doc: Any, ctx: _Ctx) -> tuple[str, str]:
    """The document's ``apiVersion`` and ``kind`` checked; its name and tenant (label
    ``tenant``, else the namespace, else the name)."""
    if not isinstance(doc, Mapping):
        raise ctx.error("", f"a GenTask document must be a mapping, got {type(doc).__name__}")
    api = doc.get("apiVersion")
    if api is None:
        raise ctx.error("apiVersion", "missing required field")
    if api != API_VERSION:
        raise ctx.error("apiVersion", f"expected {API_VERSION!r}, got {api!r}")
    if doc.get("kind") != KIND:
        raise ctx.error("kind", f"expected {KIND!r}, got {doc.get('kind')!r}")
    name = _get(doc, "metadata.name", ctx, required=True)
    if not isinstance(name, str) or not name.strip():
        raise ctx.error("metadata.name", f"must be a non-empty string, got {name!r}")
    labels = _get(doc, "metadata.labels", ctx, default={})
    if not isinstance(labels, Mapping):
        raise ctx.error("metadata.labels", f"must be a mapping, got {type(labels).__name__}")
    tenant = (_string(labels.get("tenant"), "metadata.labels.tenant", ctx)
              or _string(_get(doc, "metadata.namespace", ctx), "metadata.namespace", ctx) or name)
    return name, tenant


def _memory(doc: Any, ctx: _Ctx) -> tuple[float, float, float, float]:
    """``spec.genResources.gpuMemory``: preferred and minimum GiB, urgency factor, elasticity."""
    base = "spec.genResources.gpuMemory"
    pref = _wrap(parse_memory_gib, ctx, f"{base}.preferred", _get(doc, f"{base}.preferred", ctx, required=True))
    raw_min = _get(doc, f"{base}.minRequired", ctx)
    mini = pref if raw_min is None else _wrap(parse_memory_gib, ctx, f"{base}.minRequired", raw_min)
    if mini > pref + 1e-12:
        raise ctx.error(f"{base}.minRequired", f"minRequired ({raw_min}) exceeds preferred "
                                               f"({_get(doc, f'{base}.preferred', ctx)})")
    urgency = _number(_get(doc, f"{base}.urgencyFactor", ctx, default=0.5), f"{base}.urgencyFactor", ctx, lo=0, hi=1)
    elasticity = _number(_get(doc, f"{base}.elasticity", ctx, default=1.0), f"{base}.elasticity", ctx, lo=0)
    if elasticity * math.log(pref / mini) > MAX_SLOWDOWN_LOG:
        raise ctx.error(f"{base}.elasticity",
                        f"{elasticity:g} is too large for minRequired {raw_min!r} of preferred "
                        f"{_get(doc, f'{base}.preferred', ctx)!r}: the speed at minRequired, "
                        f"(minRequired/preferred)**elasticity, is below exp(-{MAX_SLOWDOWN_LOG:g})")
    return pref, mini, urgency, elasticity


def _compute_time(doc: Any, ctx: _Ctx, step_seconds: float,
                  default_duration: str | float) -> tuple[bool, int, int, int | None]:
    """``spec.genResources.computeTime``: preemptible, and duration, release and deadline in steps."""
    ct = "spec.genResources.computeTime"
    preemptible = _get(doc, f"{ct}.preemptible", ctx, default=True)
    if not isinstance(preemptible, bool):
        raise ctx.error(f"{ct}.preemptible", f"must be true or false, got {preemptible!r}")
    seconds = _wrap(parse_duration, ctx, f"{ct}.duration", _get(doc, f"{ct}.duration", ctx, default=default_duration))
    if seconds <= 0:
        raise ctx.error(f"{ct}.duration", "must be positive")
    if seconds > max_task_seconds():
        raise ctx.error(f"{ct}.duration", f"{seconds:g} s is over the limit of {max_task_seconds()} s "
                                          "(raise it with GENSOLVER_MAX_TASK_SECONDS)")
    duration = max(1, math.ceil(seconds / step_seconds - 1e-9))
    arrival = _wrap(parse_duration, ctx, f"{ct}.arrival", _get(doc, f"{ct}.arrival", ctx, default=0))
    release = int(math.floor(arrival / step_seconds + 1e-9))
    raw_deadline = _get(doc, f"{ct}.deadline", ctx)
    deadline = None
    if raw_deadline is not None:
        deadline = int(math.floor(_wrap(parse_duration, ctx, f"{ct}.deadline", raw_deadline) / step_seconds + 1e-9))
        if deadline < release + duration:
            raise ctx.error(f"{ct}.deadline", f"deadline {raw_deadline!r} is before arrival + duration")
    return preemptible, duration, release, deadline


def _containers(doc: Any, ctx: _Ctx) -> tuple[int, tuple[str, ...]]:
    """``spec.containers``: the GPU count (the largest ``nvidia.com/gpu`` request or limit, at
    least 1; cpu and memory quantities are checked) and the first container's command + args."""
    gpus = 1
    command: tuple[str, ...] = ()
    containers = _get(doc, "spec.containers", ctx, default=[])
    if not isinstance(containers, Sequence) or isinstance(containers, str):
        raise ctx.error("spec.containers", "must be a list")
    for k, c in enumerate(containers):
        where = f"spec.containers[{k}]"
        if not isinstance(c, Mapping):
            raise ctx.error(where, "must be a mapping")
        res = {} if c.get("resources") is None else c["resources"]
        if not isinstance(res, Mapping):
            raise ctx.error(f"{where}.resources", "must be a mapping")
        for part in ("requests", "limits"):
            req = {} if res.get(part) is None else res[part]
            if not isinstance(req, Mapping):
                raise ctx.error(f"{where}.resources.{part}", "must be a mapping")
            # a null is absent (the API server prunes nulls from fields that are not nullable)
            if req.get("nvidia.com/gpu") is not None:
                f = f"{where}.resources.{part}.nvidia.com/gpu"
                n = req["nvidia.com/gpu"]
                if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                    raise ctx.error(f, f"must be a positive integer, got {n!r}")
                gpus = max(gpus, n)
            for key in ("cpu", "memory"):
                if req.get(key) is not None:
                    _wrap(parse_quantity, ctx, f"{where}.resources.{part}.{key}", req[key])
        if k == 0:
            command = tuple(_argv(c.get("command"), f"{where}.command", ctx) + _argv(c.get("args"), f"{where}.args", ctx))
    return gpus, command


def _line_index(node: yaml.Node) -> dict[str, int]:
    """Field path -> 1-based line of its value, from a composed YAML node tree."""
    out: dict[str, int] = {}

    def walk(n: yaml.Node, prefix: str) -> None:
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                key = str(k.value)
                path = f"{prefix}.{key}" if prefix else key
                out[path] = v.start_mark.line + 1
                walk(v, path)
        elif isinstance(n, yaml.SequenceNode):
            for i, v in enumerate(n.value):
                path = f"{prefix}[{i}]"
                out[path] = v.start_mark.line + 1
                walk(v, path)

    walk(node, "")
    return out


def loads_gentasks(text: str, *, source: str = "<string>", step_seconds: float = 60.0,
                   default_duration: str | float = "1h") -> tuple[Task, ...]:
    """Every GenTask of a (multi-document) YAML string, in order; empty documents are skipped.

    Raises
    ------
    SpecError
        Bad YAML (with its line), a YAML alias (``*name``) or duplicate key, a document that is
        not a GenTask, bad fields, duplicate names.
    """
    try:
        nodes = compose_yaml_all(text)
        docs = loads_yaml_all(text)
    except ReadError as exc:
        raise SpecError("", f"invalid YAML: {exc}", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError("", f"invalid YAML: {problem}", source=source, line=line) from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    number = 0
    for node, doc in zip(nodes, docs):
        if doc is None:
            continue
        number += 1
        lines = _line_index(node) if node is not None else {}
        task = parse_gentask(doc, step_seconds=step_seconds, default_duration=default_duration,
                             source=source, document=number, lines=lines)
        if task.id in seen:
            raise SpecError("metadata.name", f"duplicate task name {task.id!r} (also document {seen[task.id]})",
                            source=source, document=number, line=lines.get("metadata.name"))
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise SpecError("", "no GenTask documents found", source=source)
    return tuple(tasks)


def load_gentasks(path: str | Path, *, step_seconds: float = 60.0, default_duration: str | float = "1h") -> tuple[Task, ...]:
    """Every GenTask of a YAML file (see :func:`loads_gentasks`)."""
    p = Path(path)
    try:
        text = read_limited(p).decode("utf-8")
    except ReadError as exc:
        raise SpecError("", str(exc), source=p.name) from None
    except OSError as exc:
        raise SpecError("", f"cannot read: {exc.strerror}", source=p.name) from None
    except UnicodeDecodeError as exc:
        raise SpecError("", f"not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                            "a GenTask file is YAML text", source=p.name) from None
    return loads_gentasks(text, source=p.name, step_seconds=step_seconds, default_duration=default_duration)
