"""Bundled instances named ``<suite>/<instance>`` (:mod:`gensolver.bench.bundled`)."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from gensolver.bench import bundled
from gensolver.bench.bundled import bundled_instance, bundled_names, is_bundled_name
from gensolver.bench.suites import SuiteError
from gensolver.model import from_dict

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "gensolver" / "data" / "suites" / "smoke"


def _committed(name: str) -> tuple[dict, str]:
    """The committed file of smoke instance ``name`` read with gzip and json alone, and its sha256."""
    manifest = json.loads((SMOKE / "manifest.json").read_text())
    entry = next(e for e in manifest["instances"] if e["name"] == name)
    raw = gzip.decompress((SMOKE / entry["file"]).read_bytes())
    return json.loads(raw), hashlib.sha256(raw).hexdigest()


@pytest.mark.parametrize("spelling", ["smoke/smoke-L3", "bundled:smoke/smoke-L3", "smoke/L3", "bundled:smoke/L3"])
def test_a_name_gives_the_committed_file(spelling: str) -> None:
    doc, _ = _committed("smoke-L3")
    assert bundled_instance(spelling).to_dict() == from_dict(doc).to_dict()


def test_every_smoke_name_resolves_to_its_file() -> None:
    names = bundled_names("smoke")
    manifest = json.loads((SMOKE / "manifest.json").read_text())
    assert names == tuple(f"smoke/{e['name']}" for e in manifest["instances"])
    for name in names:
        doc, _ = _committed(name.partition("/")[2])
        assert bundled_instance(name).to_dict() == from_dict(doc).to_dict()


@pytest.mark.parametrize("text, expected", [
    ("bundled:anything", True), ("smoke/smoke-L3", True), ("small/x", True),
    ("nosuite/x", False), ("smoke/", False), ("smoke/a/b", False), ("in.json", False), ("smoke", False)])
def test_is_bundled_name(text: str, expected: bool) -> None:
    assert is_bundled_name(text) is expected


@pytest.mark.parametrize("name, message", [
    ("smoke/nope", r"suite 'smoke' has no instance 'nope'; valid: smoke/smoke-arbitrary, "),
    ("bundled:nosuite/x", r"not a bundled instance; write <suite>/<instance> with a suite among .*smoke"),
    ("bundled:smoke", r"not a bundled instance"),
])
def test_an_unknown_name_lists_the_valid_ones(name: str, message: str) -> None:
    with pytest.raises(SuiteError, match=message):
        bundled_instance(name)


def test_an_instance_without_its_file_is_regenerated_and_checked(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite whose files are not committed (medium, large): the instance is generated from its
    seed; the result equals the committed file, and a wrong checksum is refused."""
    (tmp_path / "smoke").mkdir()
    shutil.copy(SMOKE / "manifest.json", tmp_path / "smoke" / "manifest.json")
    monkeypatch.setattr(bundled, "bundled_suites_dir", lambda: tmp_path)
    doc, _ = _committed("smoke-matching")
    assert bundled_instance("smoke/smoke-matching").to_dict() == from_dict(doc).to_dict()
    assert not (tmp_path / "smoke" / "smoke-matching.json.gz").exists()  # nothing written
    manifest = json.loads((tmp_path / "smoke" / "manifest.json").read_text())
    for e in manifest["instances"]:
        if e["name"] == "smoke-matching":
            e["sha256"] = "0" * 64
    (tmp_path / "smoke" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(SuiteError, match="does not match the manifest checksum"):
        bundled_instance("smoke/smoke-matching")
