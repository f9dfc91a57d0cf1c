"""The suite catalog (``gensolver.bench.catalog``) and the committed manifests it generated agree:
``gensolver suite build NAME`` regenerates a suite from the catalog, so a catalog entry edited
without rebuilding (or a manifest edited by hand) would give a different suite on the next build."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gensolver.bench.catalog import CATALOG
from gensolver.bench.suites import Suite, bundled_suites_dir, load_suite


def drift(definition: dict[str, Any], suite: Suite) -> list[str]:
    """The differences between a catalog definition and a loaded suite (empty: they agree)."""
    out = []
    if definition["description"] != suite.description:
        out.append(f"description: {definition['description']!r} != {suite.description!r}")
    if definition["committed"] != suite.committed:
        out.append(f"committed: {definition['committed']} != {suite.committed}")
    want = [(d["name"], d["family"], dict(d["params"]), d["seed"]) for d in definition["instances"]]
    have = [(e.name, e.family, dict(e.params), e.seed) for e in suite.entries]
    out += [f"instance {k}: catalog {w} != manifest {h}" for k, (w, h) in enumerate(zip(want, have)) if w != h]
    if len(want) != len(have):
        out.append(f"{len(want)} instances in the catalog, {len(have)} in the manifest")
    return out


def test_every_bundled_suite_has_a_catalog_entry() -> None:
    bundled = sorted(p.name for p in bundled_suites_dir().iterdir() if (p / "manifest.json").is_file())
    assert bundled == sorted(CATALOG)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_the_manifest_is_what_the_catalog_defines(name: str) -> None:
    assert drift(CATALOG[name], load_suite(name)) == []


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_instance_names_are_unique_and_files_follow_them(name: str) -> None:
    suite = load_suite(name)
    names = [e.name for e in suite.entries]
    assert len(set(names)) == len(names)
    assert all(e.file.startswith(e.name + ".") for e in suite.entries)


def test_drift_finds_an_edited_catalog_entry() -> None:
    edited = copy.deepcopy(CATALOG["smoke"])
    edited["instances"][2]["seed"] += 1
    edited["instances"][0]["params"]["n_bids"] = 21
    edited["description"] = "changed"
    found = drift(edited, load_suite("smoke"))
    assert len(found) == 3 and found[0].startswith("description") and "instance 0" in found[1] and "instance 2" in found[2]
    edited["instances"].pop()
    assert drift(edited, load_suite("smoke"))[-1].endswith("in the manifest")
