"""The import-layer contract of ``pyproject.toml`` (``[tool.importlinter]``), run with
import-linter's ``lint-imports`` on the package and on a small package that breaks it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install 'gensolver[test]')")
    return exe


def _run(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    # the config is cwd's pyproject.toml (found without --config, which newer releases deprecate)
    return subprocess.run([_lint_imports(), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_no_module_imports_a_layer_above_its_own() -> None:
    proc = _run(ROOT, ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def _stub_package(tmp_path: Path) -> Path:
    """The contracts over an empty copy of gensolver: every package and module, no imports."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    src = ROOT / "gensolver"
    for path in src.rglob("*.py"):
        rel = path.relative_to(src)
        if any(part.startswith((".", "__pycache__")) for part in rel.parts):
            continue
        out = tmp_path / "gensolver" / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("")
    return tmp_path / "gensolver"


def test_the_contract_catches_an_upward_import(tmp_path: Path) -> None:
    # the contracts over the empty copy, with one import of the CLI from the solvers (and one
    # allowed downward import, which must pass)
    pkg = _stub_package(tmp_path)
    (pkg / "cli" / "__init__.py").write_text("from gensolver import solvers\n")
    assert _run(tmp_path, tmp_path).returncode == 0
    (pkg / "solvers" / "engine.py").write_text("def f():\n    from gensolver.cli import main\n")
    proc = _run(tmp_path, tmp_path)
    assert proc.returncode != 0
    assert "gensolver.solvers.engine -> gensolver.cli" in proc.stdout


def test_mechanisms_reach_the_solvers_only_through_the_engine(tmp_path: Path) -> None:
    pkg = _stub_package(tmp_path)
    (pkg / "mechanisms" / "vcg.py").write_text("from gensolver.solvers import solve\n"
                                                "from gensolver.solvers.engine import anytime_solve\n")
    (pkg / "solvers" / "engine.py").write_text("from gensolver.solvers.anytime.driver import anytime_solve\n")
    assert _run(tmp_path, tmp_path).returncode == 0  # through the engine: allowed
    (pkg / "mechanisms" / "pivots.py").write_text("def f():\n    from gensolver.solvers.heuristics import los_order\n")
    proc = _run(tmp_path, tmp_path)
    assert proc.returncode != 0
    assert "gensolver.mechanisms.pivots -> gensolver.solvers.heuristics" in proc.stdout
    (pkg / "mechanisms" / "pivots.py").write_text("")
    (pkg / "cli" / "solve_cmd.py").write_text("from gensolver.solvers.registry import get_method\n")
    proc = _run(tmp_path, tmp_path)
    assert proc.returncode != 0
    assert "gensolver.cli.solve_cmd -> gensolver.solvers.registry" in proc.stdout


def test_the_engine_contract_forbids_every_inner_solver_module() -> None:
    """A new module or subpackage of ``gensolver/solvers`` is the engine's inside until it is
    made public (re-exported by ``gensolver.solvers.engine``), and a new layer above the solvers
    is bound by the rule: the contract must name both."""
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (engine,) = [c for c in config if c["id"] == "solver-engine"]
    inner = sorted(f"gensolver.solvers.{child.stem}" for child in (ROOT / "gensolver" / "solvers").iterdir()
                   if (child.suffix == ".py" or (child / "__init__.py").exists())
                   and child.stem not in ("__init__", "engine"))
    assert sorted(engine["forbidden_modules"]) == inner
    (layers,) = [c for c in config if c["id"] == "layers"]
    names = [name.strip() for line in layers["layers"] for name in line.split("|")]
    above = sorted(f"gensolver.{name}" for name in names[:names.index("solvers")])
    assert sorted(engine["source_modules"]) == above
    assert engine["allow_indirect_imports"] is True  # the engine itself imports its inside


def _picture_layers(text: str) -> list[list[str]]:
    """The layers drawn in the contributor guide's picture, top first (each a list of packages)."""
    block = text.split("## The layers", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    rows = []
    for line in block.splitlines():
        if not line.strip() or set(line.strip()) <= {"─"}:
            continue
        head = line.strip().split("   ")[0]  # the packages, before the wide gap and the description
        rows.append([name.strip() for name in head.split("│")])
    return rows


def test_the_contributor_guide_draws_the_layers_of_the_contract() -> None:
    """``docs/contributing.md``'s picture is the ``layers`` contract, line for line (so a new
    layer or package is drawn where the check puts it)."""
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in config if c["id"] == "layers"]
    contract = [[name.strip() for name in line.split("|")] for line in layers["layers"]]
    drawn = _picture_layers((ROOT / "docs" / "contributing.md").read_text(encoding="utf-8"))
    assert drawn == contract
    assert _picture_layers("## The layers\n```text\n a │ b    x\n ───\n c    y\n```\n") == [["a", "b"], ["c"]]
