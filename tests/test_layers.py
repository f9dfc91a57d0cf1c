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
    return subprocess.run([_lint_imports(), "--no-cache", "--config", str(cwd / "pyproject.toml")], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def test_no_module_imports_a_layer_above_its_own() -> None:
    proc = _run(ROOT, ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_the_contract_catches_an_upward_import(tmp_path: Path) -> None:
    # the same contract over a package with every top-level name of gensolver, empty but for one
    # import of the CLI from the solvers (and one allowed downward import, which must pass)
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    pkg = tmp_path / "gensolver"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for child in (ROOT / "gensolver").iterdir():
        if child.name.startswith((".", "__")) or not (child.suffix == ".py" or (child / "__init__.py").exists()):
            continue
        if child.suffix == ".py":
            (pkg / child.name).write_text("")
        else:
            (pkg / child.name).mkdir()
            (pkg / child.name / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("from gensolver import solvers\n")
    assert _run(tmp_path, tmp_path).returncode == 0
    (pkg / "solvers" / "engine.py").write_text("def f():\n    from gensolver.cli import main\n")
    proc = _run(tmp_path, tmp_path)
    assert proc.returncode != 0
    assert "gensolver.solvers.engine -> gensolver.cli" in proc.stdout
