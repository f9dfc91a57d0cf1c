"""Benchmark suites: manifests of seeded instances, their files and checksums.

A suite is a folder ``instances/<name>/`` holding ``manifest.json``::

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
import os
import time
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from ..instances import generate, list_families
from ..model import Instance, atomic_write, from_dict
from ..model.validate import InstanceError

__all__ = [
    "SuiteEntry",
    "Suite",
    "SuiteError",
    "SUITE_SCHEMA",
    "suites_dir",
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


class SuiteError(ValueError):
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

    def path_of(self, entry: SuiteEntry) -> Path:
        """Where ``entry``'s instance file lives."""
        return self.folder / entry.file

    def to_dict(self) -> dict[str, Any]:
        """The manifest document."""
        return {"schema": SUITE_SCHEMA, "name": self.name, "description": self.description,
                "committed": self.committed, "instances": [e.to_dict() for e in self.entries]}


def suites_dir() -> Path:
    """``$GENSOLVER_SUITES`` if set, else the project's ``instances/`` folder."""
    env = os.environ.get(SUITES_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[2] / "instances"


def list_suites() -> tuple[str, ...]:
    """Names of the suites with a manifest in :func:`suites_dir`."""
    root = suites_dir()
    if not root.is_dir():
        return ()
    return tuple(sorted(p.parent.name for p in root.glob("*/manifest.json")))


def load_suite(suite: str | os.PathLike[str]) -> Suite:
    """Load a suite by name (``smoke``, ``small``, ...), folder or manifest path.

    Raises
    ------
    SuiteError
        Unknown suite (the message lists the valid ones) or a malformed manifest (names the
        entry and field).
    """
    p = Path(suite)
    if p.is_file():
        manifest = p
    elif p.is_dir():
        manifest = p / "manifest.json"
    else:
        manifest = suites_dir() / str(suite) / "manifest.json"
        if not manifest.is_file():
            raise SuiteError(f"unknown suite {str(suite)!r}; valid: {', '.join(list_suites()) or '(none found)'}")
    try:
        doc = json.loads(manifest.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SuiteError(f"{manifest}: unreadable manifest: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SUITE_SCHEMA:
        raise SuiteError(f"{manifest}: expected schema {SUITE_SCHEMA!r}")
    entries = []
    names: set[str] = set()
    for k, raw in enumerate(doc.get("instances", [])):
        where = f"{manifest}: /instances/{k}"
        try:
            entry = SuiteEntry(str(raw["name"]), str(raw["family"]), MappingProxyType(dict(raw.get("params", {}))),
                               int(raw["seed"]), str(raw["file"]), MappingProxyType(dict(raw.get("size", {}))),
                               raw.get("best_known"), raw.get("bound"), str(raw.get("sha256", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise SuiteError(f"{where}: missing or bad field {exc}") from None
        if entry.name in names:
            raise SuiteError(f"{where}: duplicate instance name {entry.name!r}")
        if "/" in entry.file or entry.file.startswith("."):
            raise SuiteError(f"{where}/file: must be a plain file name, got {entry.file!r}")
        names.add(entry.name)
        entries.append(entry)
    return Suite(str(doc.get("name", manifest.parent.name)), manifest.parent, tuple(entries),
                 str(doc.get("description", "")), bool(doc.get("committed", True)))


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
    data = raw
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise InstanceError("", f"{name}: truncated or corrupt gzip file: {exc}") from None
    if expected_sha256 and digest(data) != expected_sha256:
        raise InstanceError("", f"{name}: checksum mismatch (sha256 {digest(data)[:12]}..., manifest {expected_sha256[:12]}...)")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InstanceError("", f"{name}: invalid JSON: {exc}") from None
    return from_dict(doc)


def load_entry(suite: Suite, entry: SuiteEntry) -> Instance:
    """Read and check one instance of ``suite`` (its file must exist; see :func:`materialize`)."""
    path = suite.path_of(entry)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InstanceError("", f"{entry.file}: cannot read: {exc}") from None
    return decode_instance(raw, expected_sha256=entry.sha256, name=entry.file)


def materialize(suite: str | Suite, *, force: bool = False,
                progress: Callable[[SuiteEntry, str], None] | None = None) -> dict[str, str]:
    """Generate the missing instance files of ``suite`` from their seeds.

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
        ``{instance name: status}``, status one of ``"present"``, ``"generated"`` or
        ``"error: ..."`` (a generator failure, or a checksum that the regenerated instance
        does not reproduce — then no file is written).
    """
    s = load_suite(suite) if not isinstance(suite, Suite) else suite
    out: dict[str, str] = {}
    for entry in s.entries:
        path = s.path_of(entry)
        if path.exists() and not force:
            status = "present"
        else:
            try:
                payload = instance_bytes(generate(entry.family, seed=entry.seed, **dict(entry.params)))
            except Exception as exc:  # noqa: BLE001 - reported per instance
                status = f"error: {type(exc).__name__}: {exc}"
            else:
                if entry.sha256 and digest(payload) != entry.sha256:
                    status = "error: regenerated instance does not match the manifest checksum"
                else:
                    _write_gz(path, payload)
                    status = "generated"
        out[entry.name] = status
        if progress is not None:
            progress(entry, status)
    return out


def build_manifest(name: str, specs: Sequence[Mapping[str, Any]], *, description: str = "",
                   committed: bool = True, folder: str | os.PathLike[str] | None = None,
                   best_methods: Sequence[str] = ("cpsat", "greedy"), bound_method: str | None = "lp",
                   time_limit: float = 30.0, only: Sequence[str] | None = None) -> Suite:
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
        Methods run (each with ``time_limit``) for the best known welfare.
    bound_method : str, optional
        An extra method run for an upper bound (``lp``: the LP relaxation; its rounded
        solution also competes for the best known welfare).
    time_limit : float
        Seconds per solve.
    only : sequence of str, optional
        Rebuild only these instances; the others are kept from the existing manifest.

    Returns
    -------
    Suite
    """
    from ..solvers import solve

    dest = Path(folder) if folder is not None else suites_dir() / name
    old = {e.name: e for e in load_suite(dest).entries} if only is not None else {}
    entries = []
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
        _write_gz(dest / file, payload)
        best: dict[str, Any] | None = None
        bound: dict[str, Any] | None = None
        for m in [*best_methods, *([bound_method] if bound_method else [])]:
            t0 = time.perf_counter()
            a = solve(inst, method=m, time_limit=time_limit)
            secs = round(time.perf_counter() - t0, 3)
            if a.status.value in ("optimal", "feasible"):
                if best is None or a.welfare > best["welfare"] + 1e-9:
                    best = {"welfare": a.welfare, "method": m, "seconds": secs, "status": a.status.value,
                            "time_limit": time_limit}
            if a.bound is not None and (bound is None or a.bound < bound["value"] - 1e-9):
                bound = {"value": a.bound, "method": m, "seconds": secs, "time_limit": time_limit}
        if best is not None and bound is not None and best["welfare"] >= bound["value"] - 1e-6 * max(1.0, abs(bound["value"])):
            best["status"] = "optimal"  # meets a proven bound (within 1e-6 relative)
        entries.append(SuiteEntry(spec["name"], fam, dict(spec.get("params", {})), int(spec["seed"]), file,
                                  {"slots": inst.n_slots, "bids": inst.n_bids, "bidders": inst.n_bidders},
                                  best, bound, digest(payload)))
    suite = Suite(name, dest, tuple(entries), description, committed)
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
