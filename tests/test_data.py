"""The package's data (``gensolver.data``): the committed suites as read through
``importlib.resources`` (as an installed package reads them), checked against their manifests
with the standard library only: gunzip, SHA-256, and the counts in the JSON."""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import json
import sys
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = files("gensolver.data")
SUITES = sorted(p.name for p in DATA.joinpath("suites").iterdir() if p.is_dir())


def test_the_committed_suites_are_there() -> None:
    assert {"smoke", "small"} <= set(SUITES)


@pytest.mark.parametrize("suite", [s for s in SUITES if s in ("smoke", "small")])
def test_each_committed_instance_matches_its_manifest(suite: str) -> None:
    folder = DATA.joinpath("suites", suite)
    manifest = json.loads(folder.joinpath("manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema"] == "gensolver.suite/v1" and manifest["name"] == suite
    assert manifest["instances"]
    for entry in manifest["instances"]:
        raw = gzip.decompress(folder.joinpath(entry["file"]).read_bytes())
        if entry.get("sha256"):
            assert hashlib.sha256(raw).hexdigest() == entry["sha256"], entry["name"]
        doc = json.loads(raw)
        assert doc["schema"] == "gensolver.instance/v1", entry["name"]
        size = entry["size"]
        assert (len(doc["slots"]), len(doc["bids"])) == (size["slots"], size["bids"]), entry["name"]


def test_every_data_file_is_shipped_in_the_wheel() -> None:
    """``pyproject.toml``'s package-data patterns cover every file of ``gensolver/data`` that
    git keeps (the generated suites' instance files are not committed)."""
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["gensolver.data"]
    base = ROOT / "gensolver" / "data"
    kept = [p.relative_to(base).as_posix() for p in base.rglob("*")
            if p.is_file() and p.name not in (".gitignore", "__init__.py") and "__pycache__" not in p.parts]
    committed = [k for k in kept if k.startswith(("suites/smoke/", "suites/small/")) or k.endswith("manifest.json")
                 or k.startswith("demo/")]
    missing = [k for k in committed if not any(fnmatch.fnmatch(k, pat) for pat in patterns)]
    assert committed and not missing, missing
