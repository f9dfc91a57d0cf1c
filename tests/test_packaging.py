"""Packaging: py.typed ships, and a missing optional extra names itself on import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gensolver

ROOT = Path(gensolver.__file__).parent.parent

#: the top-level modules of each optional extra, as gensolver imports them
EXTRAS = {
    "solvers": ("ortools", "pulp", "highspy"),
    "sim": ("simpy", "matplotlib"),
    "dist": ("dask", "distributed"),
    "gpu": ("pynvml",),
}

_IMPORT_ALL = textwrap.dedent("""
    import importlib, json, pkgutil, sys
    for name in sys.argv[1].split(","):
        sys.modules[name] = None  # what an uninstalled package looks like to import
    import gensolver
    failed = {}
    for m in pkgutil.walk_packages(gensolver.__path__, "gensolver."):
        if m.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(m.name)
        except BaseException as exc:
            failed[m.name] = [type(exc).__name__, [c.__name__ for c in type(exc).__mro__], str(exc)]
    print(json.dumps(failed))
""")


def _import_everything_without(modules: tuple[str, ...]) -> dict[str, list]:
    out = subprocess.run([sys.executable, "-c", _IMPORT_ALL, ",".join(modules)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_a_missing_extra_fails_on_import_naming_the_extra(extra: str) -> None:
    """Without the extra's packages every module either imports (optional backends are loaded
    when used) or raises MissingExtraError, an ImportError that says what to install."""
    failed = _import_everything_without(EXTRAS[extra])
    for name, (kind, mro, message) in failed.items():
        assert kind == "MissingExtraError" and "ImportError" in mro, (name, kind, message)
        assert f'pip install "gensolver[{extra}]"' in message, (name, message)
    if extra == "sim":
        assert set(failed) == {"gensolver.sim"}  # (its submodules are not reached: the walk stops there)
        assert "simpy" in failed["gensolver.sim"][2]
    else:
        assert failed == {}


def test_the_command_line_starts_without_scipy_optimize_and_networkx() -> None:
    """``import gensolver.cli`` (every ``gensolver`` command, every test that runs one as a
    process) leaves SciPy's optimiser and networkx to the functions that use them: together they
    were a third of its start-up time."""
    code = ("import sys, gensolver.cli; "
            "print(sorted(m for m in ('scipy.optimize', 'networkx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_the_sim_message_is_the_one_the_user_sees() -> None:
    code = 'import sys; sys.modules["simpy"] = None\nimport gensolver.sim'
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "gensolver.errors.MissingExtraError: gensolver.sim (the cluster simulator) needs the optional package "
        "'simpy', which is not installed: pip install \"gensolver[sim]\"")


def test_plots_without_matplotlib_name_the_extra() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["matplotlib"] = None
        from gensolver.executor import plot_plan
        try:
            plot_plan(None)
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == ("plot_plan (Gantt charts) needs the optional package 'matplotlib', which is not "
                                  'installed: pip install "gensolver[sim]"'), out.stderr


def test_the_cli_names_the_missing_extra_without_a_traceback(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["simpy"] = None
        from gensolver.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    out = subprocess.run([sys.executable, "-c", code, "simulate", "synthetic:n=4", "-p", "elastic"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path, env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("error: gensolver.sim (the cluster simulator) needs the optional package 'simpy'")
    assert 'pip install "gensolver[sim]"' in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_py_typed_ships_with_the_package(tmp_path: Path) -> None:
    """PEP 561: the marker is in the package and setuptools copies it into a build."""
    assert (ROOT / "gensolver" / "py.typed").is_file()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "gensolver", tmp_path / "gensolver", ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                          "--build-lib", str(tmp_path / "build")], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "build" / "gensolver" / "py.typed").is_file()
    assert (tmp_path / "build" / "gensolver" / "errors.py").is_file()
