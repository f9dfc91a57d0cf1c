"""The GenTask CRD against the YAML reader, field by field: a table computed from both sides.

Neither side is read from a hand-written list:

- the **reader's fields** are the keys :func:`gensolver.market.spec.parse_gentask` looks up,
  recorded while it reads :data:`FULL` (a GenTask with every field set) through mappings and
  lists that log each lookup (:func:`reader_fields`);
- the **CRD's fields** are the leaves of :func:`gensolver.adapters.crd.document_schema` (the CRD
  schema plus what the API server checks of ``apiVersion``, ``kind`` and ``metadata``);
- **types, enums and bounds** are compared by value: every value of :data:`PROBES` (numbers,
  floats, booleans, quantities in several spellings, durations, strings, lists, mappings) is put
  in each field of :data:`FULL` in turn and given to the reader and to the schema
  (:func:`gensolver.adapters.crd.validate_document`, applied by ``jsonschema``).

:func:`agreement` returns one :class:`FieldRow` per field; :func:`render` writes them as the
Markdown table of ``docs/reference/gentask-crd.md``. Every value one side accepts and the other
refuses must be explained in :data:`REASONS` (per field and direction), every field of one side
missing from the other in :data:`ONE_SIDED`; :func:`unexplained` lists what is not, and the
tests require it to be empty and the page to equal a fresh :func:`render`, so a change to the
reader or to the CRD fails until the table and its reasons are brought up to date.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..market.spec import API_VERSION, KIND, SpecError, parse_gentask
from .crd import document_schema, validate_document

__all__ = ["FULL", "PROBES", "REASONS", "ONE_SIDED", "FieldRow", "reader_fields", "crd_fields", "agreement",
           "unexplained", "render", "field_name"]

Path = tuple[str, ...]
#: a list index in a path (every element of the list)
ITEM = "[]"

#: a GenTask with every field the reader or the CRD knows set to an ordinary value
FULL: dict[str, Any] = {
    "apiVersion": API_VERSION, "kind": KIND,
    "metadata": {"name": "probe", "namespace": "ml", "labels": {"app": "probe"}},
    "spec": {
        "containers": [{"name": "trainer", "image": "pytorch:latest", "command": ["python"], "args": ["train.py"],
                        "resources": {"requests": {"nvidia.com/gpu": 1, "cpu": "2", "memory": "8Gi"},
                                      "limits": {"nvidia.com/gpu": 1, "cpu": "2", "memory": "8Gi"}}}],
        "genResources": {
            "gpuMemory": {"preferred": "30Gi", "minRequired": "1Gi", "urgencyFactor": 0.5, "elasticity": 1.0},
            "computeTime": {"preemptible": True, "duration": "1m", "arrival": "0s", "deadline": "400d"},
            "gpuCompute": "0.5", "value": 10}}}

#: the values put in every field in turn (YAML would give the same Python values)
PROBES: tuple[Any, ...] = (
    None, True, 0, 1, 2, -1, 0.5, 2.0, 90.5, 32212254720, "", "0", "1", "2", "0.5", " 0.5 ", "+0.5", ".5",
    "500m", "0.1m", "1000m", "5e-1", "1e3m", "1.5e9", "1000", "30Gi", "30 Gi", "30Gx", "16GB", "0Gi", "8Mi",
    "90s", "1h30m", "1.5h", "400d", "abc", "Team A", "team-a", [], ["a"], {}, {"a": "b"})

#: why a value is accepted by one side only: (field, "reader" | "crd") -> the reason; "reader"
#: means accepted by the reader and refused by the CRD
REASONS: dict[tuple[str, str], str] = {
    ("metadata.name", "reader"):
        "the API server wants a DNS-1123 subdomain; the reader takes any non-empty string as a task id",
    ("spec.containers[].command", "reader"):
        "one string, which the reader splits like a shell (a convenience); a container's command is a list",
    ("spec.containers[].args", "reader"):
        "one string, which the reader splits like a shell (a convenience); a container's args are a list",
    **{(f"spec.containers[].resources.{part}.nvidia.com/gpu", "crd"):
       "a float with no fraction (2.0), an integer to JSON Schema and the API server, which the reader refuses "
       "as not an int"
       for part in ("requests", "limits")},
    **{(f"spec.containers[].resources.{part}.{key}", "reader"):
       "a float number: Kubernetes quantities are integers or strings (write '0.5')"
       for part in ("requests", "limits") for key in ("cpu", "memory")},
    ("spec.genResources.gpuMemory.preferred", "crd"):
        "an amount that is not a whole number of bytes, one below 1 MiB without a unit (a forgotten unit), or "
        "one below minRequired: magnitudes and a rule across fields that a pattern cannot state",
    ("spec.genResources.gpuMemory.minRequired", "crd"):
        "an amount that is not a whole number of bytes, or one below 1 MiB without a unit (a forgotten unit): "
        "magnitudes that a pattern cannot state",
    ("spec.genResources.gpuMemory.elasticity", "crd"):
        "an elasticity so large that the speed at minRequired, (minRequired/preferred)**elasticity, is below "
        "exp(-700): a rule across fields",
    ("spec.genResources.computeTime.duration", "reader"):
        "a float number of seconds: the CRD field is int-or-string (write '90.5s')",
    ("spec.genResources.computeTime.duration", "crd"):
        "a duration over the task limit (GENSOLVER_MAX_TASK_SECONDS, default 366 days), a zero duration "
        "written as a string, or one that ends past the deadline: a magnitude and a rule across fields",
    ("spec.genResources.computeTime.arrival", "reader"):
        "a float number of seconds: the CRD field is int-or-string (write '90.5s')",
    ("spec.genResources.computeTime.arrival", "crd"):
        "an arrival so late that arrival + duration passes the deadline: a rule across fields",
    ("spec.genResources.computeTime.deadline", "reader"):
        "a float number of seconds: the CRD field is int-or-string (write '90.5s')",
    ("spec.genResources.computeTime.deadline", "crd"):
        "a deadline before arrival + duration: a rule across fields",
    ("spec.genResources.gpuCompute", "reader"):
        "a bare float (Kubernetes quantities are integers or strings: write '0.5'), or a share written with an "
        "exponent (5e-1), which the CRD's pattern of a share in (0, 1] does not spell out",
}

#: fields on one side only: field -> why
ONE_SIDED: dict[str, str] = {
    "spec.containers[].name": "a container's name, for the cluster; the reader ignores it (any value passes it)",
    "spec.containers[].image": "the image the cluster runs; the reader ignores it (any value passes it)",
}


def field_name(path: Path) -> str:
    """``('spec', 'containers', '[]', 'args')`` -> ``'spec.containers[].args'``."""
    out = ""
    for part in path:
        out += part if part == ITEM else (f".{part}" if out else part)
    return out


class _Log:
    """The paths looked up while the reader runs."""

    def __init__(self) -> None:
        self.paths: set[Path] = set()


class _Dict(Mapping[str, Any]):
    """A read-only mapping that logs every key looked up (present or not)."""

    def __init__(self, data: Mapping[str, Any], path: Path, log: _Log) -> None:
        self._data, self._path, self._log = data, path, log

    def _wrap(self, key: str, value: Any) -> Any:
        return _wrap(value, self._path + (key,), self._log)

    def __getitem__(self, key: str) -> Any:
        self._log.paths.add(self._path + (key,))
        return self._wrap(key, self._data[key])

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._log.paths.add(self._path + (key,))
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class _List(list):  # type: ignore[type-arg]
    """A list (the reader checks ``isinstance(x, list)``) that logs element access as ``[]``."""

    def __init__(self, data: Sequence[Any], path: Path, log: _Log) -> None:
        super().__init__(_wrap(v, path + (ITEM,), log) for v in data)
        self._path, self._log = path, log

    def __getitem__(self, index: Any) -> Any:
        self._log.paths.add(self._path + (ITEM,))
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[Any]:
        self._log.paths.add(self._path + (ITEM,))
        return super().__iter__()


def _wrap(value: Any, path: Path, log: _Log) -> Any:
    if isinstance(value, Mapping):
        return _Dict(value, path, log)
    if isinstance(value, list):
        return _List(value, path, log)
    return value


def _leaves(paths: set[Path]) -> list[Path]:
    return sorted(p for p in paths if not any(q[:len(p)] == p and len(q) > len(p) for q in paths))


def _delete(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    cur: Any = out
    for part in path[:-1]:
        cur = cur[0] if part == ITEM else cur[part]
    if path[-1] == ITEM:
        cur.clear()
    else:
        del cur[path[-1]]
    return out


def _looked_up(doc: dict[str, Any]) -> set[Path]:
    log = _Log()
    try:
        parse_gentask(_wrap(doc, (), log))
    except SpecError:
        pass
    return log.paths


def reader_fields() -> list[Path]:
    """Every path the reader looks up while reading :data:`FULL`, and :data:`FULL` less each of
    its fields in turn (so that fallbacks, such as the namespace when there is no tenant label,
    are seen): the reader's fields, discovered, parents included."""
    seen = _looked_up(FULL)
    for leaf in _leaves(seen):
        if _get(FULL, leaf) is not _MISSING:
            seen |= _looked_up(_delete(FULL, leaf))
    return sorted(seen)


_MISSING = object()


def _get(doc: Any, path: Path) -> Any:
    for part in path:
        if part == ITEM:
            if not isinstance(doc, list) or not doc:
                return _MISSING
            doc = doc[0]
        elif isinstance(doc, Mapping) and part in doc:
            doc = doc[part]
        else:
            return _MISSING
    return doc


def crd_fields() -> list[Path]:
    """Every path of the document schema, parents included (a map of strings, such as the
    labels, has the key ``*``)."""
    out: list[Path] = []

    def walk(node: Mapping[str, Any], path: Path) -> None:
        out.append(path)
        for key, child in (node.get("properties") or {}).items():
            walk(child, path + (key,))
        if isinstance(node.get("items"), Mapping):
            walk(node["items"], path + (ITEM,))
        if isinstance(node.get("additionalProperties"), Mapping):
            walk(node["additionalProperties"], path + ("*",))

    walk(document_schema(), ())
    return sorted(p for p in out if p)


def _crd_node(path: Path) -> Mapping[str, Any] | None:
    node: Mapping[str, Any] = document_schema()
    for part in path:
        if part == ITEM and isinstance(node.get("items"), Mapping):
            node = node["items"]
        elif part in (node.get("properties") or {}):
            node = node["properties"][part]
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            return None
    return node


def _with(path: Path, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(FULL)
    cur: Any = doc
    for part in path[:-1]:
        cur = cur[0] if part == ITEM else cur[part]
    cur[0 if path[-1] == ITEM else path[-1]] = value
    return doc


def _reader_accepts(doc: dict[str, Any]) -> bool:
    try:
        parse_gentask(doc)
    except SpecError:
        return False
    return True


def _describe(node: Mapping[str, Any] | None) -> str:
    """The CRD's type, enum, bounds and pattern of one field, in words."""
    if node is None:
        return "not in the CRD"
    kind = "int-or-string" if node.get("x-kubernetes-int-or-string") else str(node.get("type", "any"))
    bits = [kind]
    if "enum" in node:
        bits.append("one of " + ", ".join(f"`{v}`" for v in node["enum"]))
    if "minimum" in node:
        bits.append(f"≥ {node['minimum']}")
    if "maximum" in node:
        bits.append(f"≤ {node['maximum']}")
    if "maxLength" in node:
        bits.append(f"at most {node['maxLength']} characters")
    if "pattern" in node:
        bits.append("a pattern")
    if isinstance(node.get("items"), Mapping):
        bits.append(f"of {node['items'].get('type', 'any')}")
    return ", ".join(bits)


@dataclass(frozen=True)
class FieldRow:
    """One field: where it is read, what the CRD says of it, and the probes the sides disagree on.

    Attributes
    ----------
    field : str
        The path (``[]``: every list element; ``*``: every key of a map).
    read : bool
        Whether the reader looks the field up.
    crd : str
        The CRD's type, enum and bounds in words (``"not in the CRD"``).
    both : int
        How many probes both sides accept.
    reader_only, crd_only : tuple of str
        The ``repr`` of each probe only the reader, or only the CRD, accepts.
    """

    field: str
    read: bool
    crd: str
    both: int
    reader_only: tuple[str, ...]
    crd_only: tuple[str, ...]


def agreement() -> list[FieldRow]:
    """One :class:`FieldRow` per field of either side, in path order."""
    read = reader_fields()
    schema = crd_fields()
    paths = sorted(set(read) | {p for p in schema if p[-1] != "*"})
    rows = []
    for path in paths:
        node = _crd_node(path)
        both, r_only, c_only = 0, [], []
        for probe in PROBES:
            doc = _with(path, probe)
            by_reader = _reader_accepts(doc) if path in read else True
            by_crd = validate_document(doc) == []
            if by_reader and by_crd:
                both += 1
            elif by_reader:
                r_only.append(repr(probe))
            elif by_crd:
                c_only.append(repr(probe))
        rows.append(FieldRow(field_name(path), path in read, _describe(node), both, tuple(r_only), tuple(c_only)))
    return rows


def unexplained(rows: Sequence[FieldRow]) -> list[str]:
    """What :data:`REASONS` and :data:`ONE_SIDED` do not explain, and what they explain that is
    no longer so (stale entries)."""
    out = []
    needed = set()
    for row in rows:
        if not row.read or row.crd == "not in the CRD":
            if row.field not in ONE_SIDED:
                out.append(f"{row.field}: on one side only, not in ONE_SIDED")
            continue
        for side, cells in (("reader", row.reader_only), ("crd", row.crd_only)):
            if cells:
                needed.add((row.field, side))
                if (row.field, side) not in REASONS:
                    out.append(f"{row.field}: accepted by the {side} only: {', '.join(cells)}; not in REASONS")
    one_sided = {r.field for r in rows if not r.read or r.crd == "not in the CRD"}
    out += [f"ONE_SIDED[{f!r}] is stale" for f in sorted(set(ONE_SIDED) - one_sided)]
    out += [f"REASONS[{k!r}] is stale" for k in sorted(set(REASONS) - needed)]
    return out


def _cell(values: Sequence[str]) -> str:
    return ", ".join(f"`{v}`" for v in values) if values else "—"


def render(rows: Sequence[FieldRow]) -> str:
    """The Markdown table (and the reasons) of ``docs/reference/gentask-crd.md``."""
    lines = [f"{len(PROBES)} probe values per field: "
             + ", ".join(f"`{p!r}`" for p in PROBES) + ".", "",
             "| field | read by the reader | in the CRD | both accept | reader only | CRD only |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r.field}` | {'yes' if r.read else 'no'} | {r.crd} | {r.both} | "
                     f"{_cell(r.reader_only)} | {_cell(r.crd_only)} |")
    lines += ["", "Why each difference is there:", ""]
    lines += [f"- `{f}`, on one side only: {why}" for f, why in sorted(ONE_SIDED.items())]
    side_name = {"reader": "accepted by the reader only", "crd": "accepted by the CRD only"}
    lines += [f"- `{f}`, {side_name[side]}: {why}" for (f, side), why in sorted(REASONS.items())]
    return "\n".join(lines) + "\n"
