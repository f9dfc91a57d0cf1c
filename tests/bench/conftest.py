"""Fixtures: a private copy of the smoke suite (tests must not touch instances/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def smoke_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "smoke"
    shutil.copytree(ROOT / "gensolver" / "data" / "suites" / "smoke", dest)
    return dest
