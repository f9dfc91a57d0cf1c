"""The notebooks in notebooks/ are stored without outputs.

They are executed top to bottom (nbclient) when the documentation is built, which renders them
with their outputs and pictures: ``tests/docs/test_docs_build.py`` checks both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_expected_notebooks_exist():
    names = {p.name for p in NOTEBOOKS}
    assert {"01_first_auction.ipynb", "02_mechanisms_and_regret.ipynb", "03_trace_simulation.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_stored_without_outputs(path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: clear the outputs of cells {dirty} before committing"
