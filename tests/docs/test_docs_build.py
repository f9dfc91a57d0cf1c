"""The documentation site builds with ``mkdocs build --strict`` (API pages included)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mkdocs() -> list[str]:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    exe = Path(sys.executable).with_name("mkdocs")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("mkdocs")
    return [found] if found else [sys.executable, "-m", "mkdocs"]


def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([*_mkdocs(), "build", "--strict", "-d", str(site)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert (site / "index.html").is_file()
    # the API reference is generated from the docstrings
    api = (site / "reference" / "api" / "solvers" / "index.html").read_text(encoding="utf-8")
    assert 'id="gensolver.solvers.solve"' in api
    # the plan format page written by the executor's authors is linked, not replaced
    assert (site / "reference" / "plan-format" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    yaml = pytest.importorskip("yaml")
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    cfg = yaml.load(text, Loader=yaml.BaseLoader)  # BaseLoader: ignore !!python tags
    listed: set[str] = set()

    def walk(node):
        if isinstance(node, str):
            listed.add(node)
        elif isinstance(node, list):
            for n in node:
                walk(n)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)

    walk(cfg["nav"])
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages - listed == set(), "pages missing from mkdocs.yml nav"
    assert listed - pages == set(), "nav entries without a page"


def test_cli_reference_lists_every_command_and_option():
    pytest.importorskip("typer")
    from ._cli_reference import commands

    text = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    missing = [f"gensolver {cmd} {opt}".strip() for cmd, opts in commands().items()
               for opt in ["", *opts] if (f"`gensolver {cmd}`" not in text if not opt else f"`{opt}`" not in text)]
    assert not missing, f"docs/reference/cli.md is out of date (run python -m tests.docs._cli_reference): {missing}"
