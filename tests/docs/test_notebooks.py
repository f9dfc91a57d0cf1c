"""The notebooks in notebooks/ run top to bottom (nbclient) and are stored without outputs.

``03_trace_simulation.ipynb`` is executed by ``tests/sim/test_traces_cli_notebook.py``
(it needs the shared traces), so it is only checked for stored outputs here, not run twice.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: notebooks executed by another test module
RUN_ELSEWHERE = {"03_trace_simulation.ipynb": "tests/sim/test_traces_cli_notebook.py::test_notebook_runs"}


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


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name not in RUN_ELSEWHERE],
                         ids=[p.name for p in NOTEBOOKS if p.name not in RUN_ELSEWHERE])
def test_notebook_runs(path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    assert time.perf_counter() - t0 < 60, f"{path.name} should run in well under a minute"
