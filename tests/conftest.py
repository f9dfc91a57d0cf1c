"""Shared fixtures: the ``../shared`` folder beside the project root, small instances."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ``shared/`` folder (instance format, traces, examples)."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside the project root")
    return SHARED
