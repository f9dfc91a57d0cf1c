"""Instances of the bundled suites, named on the command line as ``<suite>/<instance>``.

``gensolver solve smoke/smoke-L3`` (or ``bundled:smoke/smoke-L3``) reads the instance
``smoke-L3`` of the suite ``smoke`` shipped as package data (``gensolver/data/suites``, read
through :mod:`importlib.resources`), so the commands work from an installed wheel with no file
at hand. The instance part may leave out the suite's prefix (``smoke/L3``). An instance whose
file is not committed (suites ``medium``, ``large``) is regenerated from its seed and checked
against the manifest's checksum.

Examples
--------
>>> from gensolver.bench.bundled import bundled_instance, is_bundled_name
>>> is_bundled_name("bundled:smoke/smoke-L3"), is_bundled_name("smoke/smoke-L3")
(True, True)
>>> is_bundled_name("instance.json")
False
>>> inst = bundled_instance("smoke/L3")
>>> inst.n_slots, inst.n_bids
(12, 20)
"""

from __future__ import annotations

from ..instances import generate
from ..model import Instance
from .suites import SuiteError, bundled_suites_dir, decode_instance, digest, instance_bytes, load_entry, load_suite

__all__ = ["PREFIX", "is_bundled_name", "bundled_names", "bundled_instance"]

#: the prefix that always means a bundled instance, never a file
PREFIX = "bundled:"


def _bundled_suite_names() -> tuple[str, ...]:
    root = bundled_suites_dir()
    return tuple(sorted(p.parent.name for p in root.glob("*/manifest.json")))


def is_bundled_name(text: str) -> bool:
    """Whether ``text`` names a bundled instance: ``bundled:...``, or ``<suite>/<name>`` whose
    first part is a bundled suite (a caller checks first that no such file exists)."""
    if text.startswith(PREFIX):
        return True
    head, sep, tail = text.partition("/")
    return bool(sep) and bool(tail) and "/" not in tail and head in _bundled_suite_names()


def bundled_names(suite: str | None = None) -> tuple[str, ...]:
    """Every ``<suite>/<instance>`` name of the bundled suites (of ``suite`` only, if given)."""
    names: list[str] = []
    for s in _bundled_suite_names():
        if suite is None or s == suite:
            names.extend(f"{s}/{e.name}" for e in load_suite(bundled_suites_dir() / s).entries)
    return tuple(names)


def bundled_instance(name: str) -> Instance:
    """The bundled instance ``name`` (``[bundled:]<suite>/<instance>``).

    Raises
    ------
    SuiteError
        An unknown suite or instance; the message lists the valid names.
    InstanceError
        A corrupt bundled file, or a regenerated instance that does not match its checksum.
    """
    text = name[len(PREFIX):] if name.startswith(PREFIX) else name
    suite_name, sep, inst = text.partition("/")
    suites = _bundled_suite_names()
    if suite_name not in suites or not sep or not inst:
        raise SuiteError(f"{name!r}: not a bundled instance; write <suite>/<instance> with a suite among "
                         f"{', '.join(suites)} (e.g. {', '.join(bundled_names('smoke')[:3])})")
    suite = load_suite(bundled_suites_dir() / suite_name)
    wanted = {inst, f"{suite_name}-{inst}"}
    entry = next((e for e in suite.entries if e.name in wanted), None)
    if entry is None:
        valid = ", ".join(f"{suite_name}/{e.name}" for e in suite.entries)
        raise SuiteError(f"{name!r}: suite {suite_name!r} has no instance {inst!r}; valid: {valid}")
    if suite.path_of(entry).exists():
        return load_entry(suite, entry)
    payload = instance_bytes(generate(entry.family, seed=entry.seed, **dict(entry.params)))
    if entry.sha256 and digest(payload) != entry.sha256:
        raise SuiteError(f"{name!r}: the regenerated instance does not match the manifest checksum")
    return decode_instance(payload, name=entry.file)
