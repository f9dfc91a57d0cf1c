"""Benchmark suites: manifests of seeded instances, their files and checksums.

A suite is a folder holding ``manifest.json``; the bundled suites are package data, read
through :mod:`importlib.resources` from ``gensolver/data/suites/<name>/``, so they work from
an installed wheel as from a checkout::

    {"schema": "gensolver.suite/v1", "name": "small", "description": "...",
     "instances": [{"name": "regions-0", "family": "regions", "params": {...}, "seed": 0,
                    "file": "regions-0.json.gz",
                    "size": {"slots": 64, "bids": 203, "bidders": 57},
                    "best_known": {"welfare": 3569.7, "method": "cpsat", "seconds": 0.4, "status": "optimal"},
                    "bound": {"value": 3569.7, "method": "cpsat", "seconds": 0.4},
                    "sha256": "..."}]}

``sha256`` is the digest of the instance's JSON text (the file's bytes after gunzip), so it
does not depend on the gzip implementation. Small suites (``smoke``, ``small``) commit their
instance files; larger ones (``medium``, ``large``) commit only the manifest and regenerate the
files from the seeds on demand (:func:`materialize`), checking every checksum.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from .._deprecation import NOT_GIVEN, keyword_alias
from ..errors import InputError, check_time_limit
from ..instances import generate, list_families
from ..model import Instance, atomic_write, from_dict
from ..model.inputs import ReadError, loads_json, read_limited
from ..model.io import inflate_instance_bytes
from ..model.validate import InstanceError, is_real

__all__ = [
    "SuiteEntry",
    "Suite",
    "SuiteError",
    "SUITE_SCHEMA",
    "suites_dir",
    "bundled_suites_dir",
    "cache_dir",
    "list_suites",
    "load_suite",
    "materialize",
    "instance_bytes",
    "digest",
    "load_entry",
    "build_manifest",
    "write_manifest",
]

SUITE_SCHEMA = "gensolver.suite/v1"
SUITES_ENV = "GENSOLVER_SUITES"
CACHE_ENV = "GENSOLVER_CACHE"


class SuiteError(InputError):
    """A missing or malformed suite manifest, or an instance file that fails its checksum."""


@dataclass(frozen=True)
class SuiteEntry:
    """One instance of a suite (see the module docstring for the fields)."""

    name: str
    family: str
    params: Mapping[str, Any]
    seed: int
    file: str
    size: Mapping[str, int] = field(default_factory=dict)
    best_known: Mapping[str, Any] | None = None
    bound: Mapping[str, Any] | None = None
    sha256: str = ""

    @property
    def best_welfare(self) -> float | None:
        """Best known welfare, or ``None``."""
        return None if not self.best_known else float(self.best_known["welfare"])

    @property
    def bound_value(self) -> float | None:
        """Best known upper bound, or ``None``."""
        return None if not self.bound or self.bound.get("value") is None else float(self.bound["value"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"name": self.name, "family": self.family, "params": dict(self.params), "seed": self.seed,
                "file": self.file, "size": dict(self.size),
                "best_known": None if self.best_known is None else dict(self.best_known),
                "bound": None if self.bound is None else dict(self.bound), "sha256": self.sha256}


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its folder, entries and whether its files are committed."""

    name: str
    folder: Path
    entries: tuple[SuiteEntry, ...]
    description: str = ""
    committed: bool = True
    #: the manifest file the suite was read from (``None``: built in memory)
    manifest: Path | None = field(default=None, compare=False)

    def path_of(self, entry: SuiteEntry) -> Path:
        """Where ``entry``'s instance file lives.

        In the suite's folder, unless the file is not there and the folder cannot be written
        (a suite bundled in a read-only installation): then in :func:`cache_dir`
        ``/suites/<name>/``, where :func:`materialize` generates it.
        """
        path = self.folder / entry.file
        if path.exists() or os.access(self.folder, os.W_OK):
            return path
        return cache_dir() / "suites" / self.name / entry.file

    def to_dict(self) -> dict[str, Any]:
        """The manifest document."""
        return {"schema": SUITE_SCHEMA, "name": self.name, "description": self.description,
                "committed": self.committed, "instances": [e.to_dict() for e in self.entries]}


def bundled_suites_dir() -> Path:
    """The folder of the suites shipped as package data (``gensolver/data/suites``).

    Read through :func:`importlib.resources.files`; a package imported from a zip archive has
    no folder to list, which is reported as an error.
    """
    from importlib.resources import files

    root = files("gensolver.data").joinpath("suites")
    if not isinstance(root, Path):  # pragma: no cover - zip imports only
        raise SuiteError(f"the bundled suites are not on the file system ({root}); set ${SUITES_ENV}")
    return root


def cache_dir() -> Path:
    """``$GENSOLVER_CACHE``, else ``$XDG_CACHE_HOME/gensolver``, else ``~/.cache/gensolver``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gensolver"


def suites_dir() -> Path:
    """``$GENSOLVER_SUITES`` if set, else the bundled suites (:func:`bundled_suites_dir`)."""
    env = os.environ.get(SUITES_ENV)
    return Path(env) if env else bundled_suites_dir()


def list_suites() -> tuple[str, ...]:
    """Names of the suites with a manifest in :func:`suites_dir`."""
    root = suites_dir()
    if not root.is_dir():
        return ()
    return tuple(sorted(p.parent.name for p in root.glob("*/manifest.json")))


def _looks_like_path(text: str) -> bool:
    """Whether a suite argument is meant as a path (a separator or a ``.json`` name), not a name."""
    return os.sep in text or "/" in text or (os.altsep is not None and os.altsep in text) or text.endswith(".json")


def _ptr(base: str, key: str | int) -> str:
    """``base`` extended by one JSON-pointer token (``~`` and ``/`` escaped)."""
    return f"{base}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _desc(value: Any) -> str:
    """A short description of a JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _non_finite(value: Any, where: str) -> tuple[str, float] | None:
    """JSON pointer and value of the first NaN or infinite number in ``value``, or ``None``."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite(v, _ptr(where, k))
            if found is not None:
                return found
    elif isinstance(value, list):
        for k, v in enumerate(value):
            found = _non_finite(v, _ptr(where, k))
            if found is not None:
                return found
    return None


def _is_number(value: Any) -> bool:
    return is_real(value) and math.isfinite(value)


_SUITE_FIELDS = ("schema", "name", "description", "committed", "instances")
_ENTRY_FIELDS = ("name", "family", "params", "seed", "file", "size", "best_known", "bound", "sha256")
_BEST_FIELDS = {"welfare": "number", "method": "str", "seconds": "seconds", "status": "str", "time_limit": "limit"}
_BOUND_FIELDS = {"value": "number?", "method": "str", "seconds": "seconds", "time_limit": "limit"}


class _Checker:
    """Field checks that raise :class:`SuiteError` naming the manifest and the JSON pointer."""

    def __init__(self, manifest: Path) -> None:
        self.manifest = manifest

    def fail(self, where: str, what: str) -> SuiteError:
        return SuiteError(f"{self.manifest}: {where or '/'}: {what}")

    def string(self, value: Any, where: str, *, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {_desc(value)}")
        if not empty and not value.strip():
            raise self.fail(where, "must not be empty")
        return value

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_desc(value)}")
        return value

    def number(self, value: Any, where: str, *, minimum: float | None = None, positive: bool = False) -> float:
        if not _is_number(value):
            raise self.fail(where, f"expected a finite number, got {_desc(value)}")
        if positive and value <= 0:
            raise self.fail(where, f"must be positive, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(where, f"must be at least {minimum:g}, got {value!r}")
        return value

    def integer(self, value: Any, where: str, *, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"expected an integer, got {_desc(value)}")
        if value < minimum:
            raise self.fail(where, f"must be at least {minimum}, got {value}")
        return value

    def record(self, value: Any, where: str, spec: Mapping[str, str]) -> dict[str, Any] | None:
        """``best_known`` / ``bound``: null or an object with the fields of ``spec``."""
        if value is None:
            return None
        doc = self.obj(value, where)
        for key in doc:
            if key not in spec:
                raise self.fail(_ptr(where, key), f"unknown field; expected one of {', '.join(spec)}")
        for key, kind in spec.items():
            at = _ptr(where, key)
            v = doc.get(key)
            if kind == "number":
                if key not in doc:
                    raise self.fail(at, "missing (a finite number)")
                self.number(v, at)
            elif v is None:
                continue  # optional
            elif kind == "number?":
                self.number(v, at)
            elif kind == "str":
                self.string(v, at, empty=True)
            elif kind == "seconds":
                self.number(v, at, minimum=0.0)
            elif kind == "limit":
                self.number(v, at, positive=True)
        return doc


def _parse_manifest(doc: Any, manifest: Path) -> Suite:
    """Check every field of a manifest document and build the :class:`Suite`."""
    check = _Checker(manifest)
    if not isinstance(doc, dict):
        raise check.fail("", f"expected a JSON object, got {_desc(doc)}")
    if doc.get("schema") != SUITE_SCHEMA:
        got = "missing" if "schema" not in doc else f"got {_desc(doc['schema'])}"
        raise check.fail("/schema", f"expected {SUITE_SCHEMA!r}, {got}")
    bad = _non_finite(doc, "")
    if bad is not None:
        raise check.fail(bad[0], f"expected a finite number, got {_desc(bad[1])}")
    for key in doc:
        if key not in _SUITE_FIELDS:
            raise check.fail(_ptr("", key), f"unknown field; expected one of {', '.join(_SUITE_FIELDS)}")
    name = check.string(doc["name"], "/name") if "name" in doc else manifest.parent.name
    description = check.string(doc["description"], "/description", empty=True) if "description" in doc else ""
    committed = doc.get("committed", True)
    if not isinstance(committed, bool):
        raise check.fail("/committed", f"expected true or false, got {_desc(committed)}")
    if "instances" not in doc:
        raise check.fail("/instances", "missing (a list of instances)")
    raws = doc["instances"]
    if not isinstance(raws, list):
        raise check.fail("/instances", f"expected a list of instances, got {_desc(raws)}")
    if not raws:
        raise check.fail("/instances", "the suite has no instances")
    families = {f.name for f in list_families()}
    entries = []
    names: set[str] = set()
    files: set[str] = set()
    for k, raw in enumerate(raws):
        where = f"/instances/{k}"
        check.obj(raw, where)
        for key in raw:
            if key not in _ENTRY_FIELDS:
                raise check.fail(_ptr(where, key), f"unknown field; expected one of {', '.join(_ENTRY_FIELDS)}")
        for key in ("name", "family", "seed", "file"):
            if key not in raw:
                raise check.fail(_ptr(where, key), "missing")
        name_k = check.string(raw["name"], f"{where}/name")
        if name_k in names:
            raise check.fail(f"{where}/name", f"duplicate instance name {name_k!r}")
        family = check.string(raw["family"], f"{where}/family")
        if family not in families:
            raise check.fail(f"{where}/family", f"unknown family {family!r}; valid: {', '.join(sorted(families))}")
        params = check.obj(raw.get("params", {}), f"{where}/params")
        seed = check.integer(raw["seed"], f"{where}/seed")
        file = check.string(raw["file"], f"{where}/file")
        if "/" in file or "\\" in file or file.startswith(".") or "\0" in file:
            raise check.fail(f"{where}/file", f"must be a plain file name, got {file!r}")
        if file == "manifest.json" or file in files:
            raise check.fail(f"{where}/file", f"{file!r} is used twice" if file in files else "must not be manifest.json")
        size = check.obj(raw.get("size", {}), f"{where}/size")
        for key, v in size.items():
            check.integer(v, _ptr(f"{where}/size", key))
        best = check.record(raw.get("best_known"), f"{where}/best_known", _BEST_FIELDS)
        bound = check.record(raw.get("bound"), f"{where}/bound", _BOUND_FIELDS)
        sha = raw.get("sha256", "")
        if sha is None:
            sha = ""
        check.string(sha, f"{where}/sha256", empty=True)
        if sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
            raise check.fail(f"{where}/sha256", f"expected 64 lowercase hex digits (or empty), got {_desc(sha)}")
        names.add(name_k)
        files.add(file)
        entries.append(SuiteEntry(name_k, family, MappingProxyType(dict(params)), seed, file,
                                  MappingProxyType(dict(size)), best, bound, sha))
    return Suite(name, manifest.parent, tuple(entries), description, committed, manifest)


def load_suite(suite: str | os.PathLike[str]) -> Suite:
    """Load a suite by name (``smoke``, ``small``, ...), folder or manifest path.

    Every field of the manifest is checked here, before any work: numbers must be finite
    (``best_known.welfare``, ``bound.value``, ...), ``seed`` and ``size`` values non-negative
    integers, ``family`` a known generator, ``file`` a plain file name, ``instances`` a non-empty
    list.

    Raises
    ------
    SuiteError
        Unknown suite (the message lists the valid ones), a missing file, or a malformed
        manifest (the message names the manifest and the field as a JSON pointer, e.g.
        ``.../manifest.json: /instances/0/best_known/welfare: expected a finite number, got 'abc'``).
    """
    p = Path(suite)
    text = os.fspath(suite)
    if p.is_file():
        manifest = p
    elif p.is_dir():
        manifest = p / "manifest.json"
        if not manifest.is_file():
            raise SuiteError(f"no manifest.json in folder {p}")
    elif _looks_like_path(text):
        raise SuiteError(f"no such file: {text}")
    else:
        manifest = suites_dir() / text / "manifest.json"
        if not manifest.is_file():
            raise SuiteError(f"unknown suite {text!r}; valid: {', '.join(list_suites()) or '(none found)'}")
    try:
        raw = read_limited(manifest)
    except ReadError as exc:
        raise SuiteError(f"{manifest}: {exc}") from None
    except OSError as exc:
        raise SuiteError(f"{manifest}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = loads_json(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{manifest}: not UTF-8 text (byte {exc.start})") from None
    except ReadError as exc:
        raise SuiteError(f"{manifest}: invalid JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{manifest}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise SuiteError(f"{manifest}: invalid JSON: nested too deeply") from None
    return _parse_manifest(doc, manifest)


def instance_bytes(instance: Instance) -> bytes:
    """The canonical JSON text of ``instance`` (what :func:`digest` hashes)."""
    return json.dumps(instance.to_dict(), separators=(",", ":"), allow_nan=False).encode()


def digest(data: bytes) -> str:
    """sha256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _write_gz(path: Path, payload: bytes) -> None:
    with atomic_write(path, "wb") as fh:
        fh.write(gzip.compress(payload, compresslevel=9, mtime=0))


def decode_instance(raw: bytes, *, expected_sha256: str = "", name: str = "") -> Instance:
    """Parse instance-file bytes (gzip or plain JSON), checking the checksum when given.

    Raises
    ------
    InstanceError
        Corrupt gzip, invalid JSON, an invalid instance, or a checksum mismatch.
    """
    data = inflate_instance_bytes(raw, name)
    if expected_sha256 and digest(data) != expected_sha256:
        raise InstanceError("", f"{name}: checksum mismatch (sha256 {digest(data)[:12]}..., manifest {expected_sha256[:12]}...)")
    try:
        doc = loads_json(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, ReadError) as exc:
        raise InstanceError("", f"{name}: invalid JSON: {exc}") from None
    return from_dict(doc)


def load_entry(suite: Suite, entry: SuiteEntry) -> Instance:
    """Read and check one instance of ``suite`` (its file must exist; see :func:`materialize`)."""
    path = suite.path_of(entry)
    try:
        raw = read_limited(path)
    except ReadError as exc:
        raise InstanceError("", f"{entry.file}: {exc}") from None
    except OSError as exc:
        raise InstanceError("", f"{entry.file}: cannot read: {exc}") from None
    return decode_instance(raw, expected_sha256=entry.sha256, name=entry.file)


def _check_present(path: Path, entry: SuiteEntry) -> str:
    """Status of an instance file that is present: its checksum against the manifest."""
    if not entry.sha256:
        return "present (not checked: the manifest has no sha256 for it)"
    try:
        decode_instance(path.read_bytes(), expected_sha256=entry.sha256, name=entry.file)
    except OSError as exc:
        return f"error: {entry.file}: cannot read: {exc.strerror or exc}"
    except InstanceError as exc:
        why = exc.reason if not exc.pointer else f"{entry.file}: {exc}"
        return f"error: {why} (--force regenerates it from its seed)"
    return "present"


def materialize(suite: str | Suite, *, force: bool = False,
                progress: Callable[[SuiteEntry, str], None] | None = None) -> dict[str, str]:
    """Generate the missing instance files of ``suite`` from their seeds; check the present ones.

    Parameters
    ----------
    suite : str or Suite
    force : bool, keyword-only
        Regenerate every file (also those present).
    progress : callable, optional
        Called with ``(entry, status)`` per instance.

    Returns
    -------
    dict
        ``{instance name: status}``, status one of ``"present"`` (its checksum matches the
        manifest), ``"present (not checked: ...)"`` (the manifest has no checksum for it),
        ``"generated"`` or ``"error: ..."`` (a present file that is corrupt or fails its
        checksum, a generator failure, a checksum that the regenerated instance does not
        reproduce — then no file is written — or a file that cannot be written).
    """
    s = load_suite(suite) if not isinstance(suite, Suite) else suite
    out: dict[str, str] = {}
    for entry in s.entries:
        path = s.path_of(entry)
        if path.exists() and not force:
            status = _check_present(path, entry)
        else:
            try:
                payload = instance_bytes(generate(entry.family, seed=entry.seed, **dict(entry.params)))
            except Exception as exc:  # noqa: BLE001 - reported per instance
                status = f"error: {type(exc).__name__}: {exc}"
            else:
                if entry.sha256 and digest(payload) != entry.sha256:
                    status = "error: regenerated instance does not match the manifest checksum"
                else:
                    try:
                        _write_gz(path, payload)
                    except OSError as exc:
                        status = f"error: {entry.file}: cannot write: {exc.strerror or exc}"
                    else:
                        status = "generated" if entry.sha256 else "generated (the manifest has no sha256 for it)"
        out[entry.name] = status
        if progress is not None:
            progress(entry, status)
    return out


def build_manifest(name: str, specs: Sequence[Mapping[str, Any]], *, description: str = "",
                   committed: bool = True, folder: str | os.PathLike[str] | None = None,
                   best_methods: Sequence[str] = ("cpsat", "greedy"), bound_method: str | None = "lp",
                   per_solve_limit: float = 30.0, only: Sequence[str] | None = None,
                   time_limit: Any = NOT_GIVEN) -> Suite:
    """Generate a suite's instances, solve them for best known values and write the manifest.

    Parameters
    ----------
    name : str
    specs : sequence of mapping
        ``{"name", "family", "params", "seed"}`` per instance.
    description : str
    committed : bool
        Whether the instance files are meant to be committed (small suites).
    folder : path-like, optional
        Default ``suites_dir() / name``.
    best_methods : sequence of str
        Methods run (each with ``per_solve_limit``) for the best known welfare.
    bound_method : str, optional
        An extra method run for an upper bound (``lp``: the LP relaxation; its rounded
        solution also competes for the best known welfare).
    per_solve_limit : float
        The ``time_limit`` (seconds) of each solve; the manifest's records keep it as the
        ``time_limit`` of the solve that found the value.
    only : sequence of str, optional
        Rebuild only these instances; the others are kept from the existing manifest.
    time_limit : float
        Deprecated alias of ``per_solve_limit``.

    Returns
    -------
    Suite
    """
    from ..solvers import solve

    per_solve_limit = keyword_alias(per_solve_limit, time_limit, old="time_limit", new="per_solve_limit",
                                    where="build_manifest", default=30.0)
    check_time_limit(per_solve_limit, name="per_solve_limit", optional=False)
    dest = Path(folder) if folder is not None else suites_dir() / name
    old = {e.name: e for e in load_suite(dest).entries} if only is not None else {}
    entries = []
    payloads: dict[str, bytes] = {}  # written only once every instance is generated and solved
    for spec in specs:
        if only is not None and spec["name"] not in only and spec["name"] in old:
            entries.append(old[spec["name"]])
            continue
        fam = spec["family"]
        if fam not in {f.name for f in list_families()}:
            raise SuiteError(f"{spec['name']}: unknown family {fam!r}")
        inst = generate(fam, seed=int(spec["seed"]), **dict(spec.get("params", {})))
        payload = instance_bytes(inst)
        file = f"{spec['name']}.json.gz"
        payloads[file] = payload
        best: dict[str, Any] | None = None
        bound: dict[str, Any] | None = None
        for m in [*best_methods, *([bound_method] if bound_method else [])]:
            t0 = time.perf_counter()
            a = solve(inst, method=m, time_limit=per_solve_limit)
            secs = round(time.perf_counter() - t0, 3)
            if a.status.value in ("optimal", "feasible"):
                if best is None or a.welfare > best["welfare"] + 1e-9:
                    best = {"welfare": a.welfare, "method": m, "seconds": secs, "status": a.status.value,
                            "time_limit": per_solve_limit}
            if a.bound is not None and (bound is None or a.bound < bound["value"] - 1e-9):
                bound = {"value": a.bound, "method": m, "seconds": secs, "time_limit": per_solve_limit}
        if best is not None and bound is not None and best["welfare"] >= bound["value"] - 1e-6 * max(1.0, abs(bound["value"])):
            best["status"] = "optimal"  # meets a proven bound (within 1e-6 relative)
        entries.append(SuiteEntry(spec["name"], fam, dict(spec.get("params", {})), int(spec["seed"]), file,
                                  {"slots": inst.n_slots, "bids": inst.n_bids, "bidders": inst.n_bidders},
                                  best, bound, digest(payload)))
    suite = Suite(name, dest, tuple(entries), description, committed)
    json.dumps(suite.to_dict(), allow_nan=False)  # a non-finite value fails here, before any file is written
    for file, payload in payloads.items():
        _write_gz(dest / file, payload)
    write_manifest(suite)
    return suite


def write_manifest(suite: Suite) -> Path:
    """Write ``suite``'s ``manifest.json`` atomically."""
    path = suite.folder / "manifest.json"
    with atomic_write(path, "w") as fh:
        json.dump(suite.to_dict(), fh, indent=1, allow_nan=False)
        fh.write("\n")
    return path


def with_entries(suite: Suite, entries: Sequence[SuiteEntry]) -> Suite:
    """A copy of ``suite`` with other entries."""
    return replace(suite, entries=tuple(entries))
