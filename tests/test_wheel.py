"""The installed wheel works outside the checkout: bundled suites and the trace sample are
package data, read through :mod:`importlib.resources`.

The test copies the package sources to a temporary folder, builds a wheel there (``pip wheel
--no-deps --no-build-isolation``: nothing is downloaded), installs it into a fresh virtual
environment outside the checkout whose dependencies come from the test's own environment (a
``.pth`` line naming its site-packages; the editable install there is not seen, since ``.pth``
files of an added path are not processed), and runs ``gensolver bench smoke`` and
``gensolver simulate alibaba`` from a folder outside the checkout.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wheel_env

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return wheel_env()


@pytest.fixture(scope="module")
def installed(wheel_venv: Path) -> Path:
    """The ``bin`` folder of a fresh venv with the wheel installed (``tests/conftest.py``)."""
    return wheel_venv


def test_the_wheel_carries_the_suites_and_runs_bench_smoke_outside_the_checkout(installed: Path,
                                                                                tmp_path: Path) -> None:
    where = subprocess.run([str(installed / "python"), "-c", "import gensolver; print(gensolver.__file__)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path, env=_env()).stdout.strip()
    assert ROOT not in Path(where).resolve().parents, where  # the installed copy, not the checkout
    out = tmp_path / "bench"
    run = subprocess.run([str(installed / "gensolver"), "bench", "smoke", "--methods", "greedy,lp", "--jobs", "1",
                          "--quiet", "--no-plots", "--out", str(out)],
                         capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = json.loads((out / "results.json").read_text())
    cells = rows["cells"] if isinstance(rows, dict) else rows
    assert len(cells) == 18 and all(c["status"] in ("optimal", "feasible") for c in cells)
    assert "18 cells (18 run, 0 resumed, 0 errors)" in " ".join(run.stdout.split())


def test_the_wheel_ships_no_trace_and_says_how_to_get_one(installed: Path, tmp_path: Path) -> None:
    env = {**_env(), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("GENSOLVER_TRACES", None)
    run = subprocess.run([str(installed / "gensolver"), "simulate", "alibaba", "--max-jobs", "10", "--nodes", "1",
                          "--policy", "fcfs-packing", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stdout + run.stderr
    assert "gensolver traces fetch alibaba" in " ".join(run.stderr.split())


def test_the_wheel_replays_a_trace_from_traces_dir(installed: Path, tmp_path: Path, shared_dir: Path) -> None:
    run = subprocess.run([str(installed / "gensolver"), "simulate", "alibaba", "--max-jobs", "10", "--nodes", "1",
                          "--policy", "fcfs-packing", "--json", "--traces-dir", str(shared_dir / "traces")],
                         capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = json.loads(run.stdout)
    assert rows[0]["policy"] == "fcfs-packing" and rows[0]["done"] == "10/10"


def test_the_wheel_answers_version(installed: Path, tmp_path: Path) -> None:
    import gensolver

    run = subprocess.run([str(installed / "gensolver"), "--version"], capture_output=True, text=True,
                         cwd=tmp_path, env=_env(), timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"gensolver {gensolver.__version__}"


def test_the_wheel_runs_the_demo(installed: Path, tmp_path: Path) -> None:
    run = subprocess.run([str(installed / "gensolver"), "demo", "--out", "story"], capture_output=True, text=True,
                         cwd=tmp_path, env=_env(), timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads((tmp_path / "story" / "summary.json").read_text())
    assert summary["checks"] == {"feasible": True, "individually_rational": True, "nonnegative": True,
                                 "losers_pay_nothing": True, "plan_within_capacity": True}
    assert (tmp_path / "story" / "gantt.png").read_bytes()[:4] == b"\x89PNG"


def test_the_wheel_carries_the_schemas_and_the_live_page(installed: Path, tmp_path: Path) -> None:
    code = ("from gensolver.schemas import SCHEMA_FILES, load_schema\n"
            "print(sorted(load_schema(n)['title'] for n in SCHEMA_FILES))\n"
            "from importlib import resources\n"
            "page = resources.files('gensolver.service').joinpath('static')\n"
            "print(len(page.joinpath('index.html').read_text()) > 0, len(page.joinpath('live.js').read_text()) > 0)\n")
    run = subprocess.run([str(installed / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env=_env(), timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == [
        "['gensolver.gpuround/v1', 'gensolver.instance/v1', 'gensolver.plan/v1']", "True True"]
