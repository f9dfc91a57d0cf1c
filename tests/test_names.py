"""Clear names: the plan runner is not an ``Executor``; no private name crosses a package."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import gensolver
from gensolver.executor import PlanRunner

ROOT = Path(gensolver.__file__).parent

#: private cross-package imports left in modules owned by the solver-core split (issue 16, core)
_KNOWN: set[tuple[str, str, str]] = set()


@pytest.mark.parametrize("module", ["gensolver.executor", "gensolver.executor.runner"])
def test_the_old_executor_name_warns_and_is_the_plan_runner(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match="use gensolver.executor.PlanRunner"):
        old = mod.Executor
    assert old is PlanRunner
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        mod.Nope  # noqa: B018


def test_star_import_and_plain_use_do_not_warn() -> None:
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("error")
        from gensolver.executor import *  # noqa: F403
        import gensolver.executor as ex
        assert "Executor" not in ex.__all__ and "PlanRunner" in ex.__all__
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def _cross_package_private_imports() -> set[tuple[str, str, str]]:
    """``(file, module, name)`` for every ``from gensolver.<a>... import _name`` (or import from a
    private module inside a subpackage, ``gensolver.<a>._m``) in ``gensolver/<b>/`` with ``a != b``.
    Private modules at the top (``gensolver._log``) are the package's shared internals: allowed."""
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        parts = ["gensolver", *rel.with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = parts[: len(parts) - node.level + (1 if is_pkg else 0)]
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            if target[0] != "gensolver":
                continue
            src = parts[1] if len(parts) > 1 else ""
            dst = target[1] if len(target) > 1 else ""
            if src == dst:
                continue
            mod = ".".join(target)
            for alias in node.names:
                private_name = alias.name.startswith("_") and not alias.name.startswith("__")
                private_mod = any(t.startswith("_") and not t.startswith("__") for t in target[2:])
                if private_name or private_mod:
                    found.add((rel.as_posix(), mod, alias.name))
    return found


def test_no_private_name_is_imported_across_packages() -> None:
    assert _cross_package_private_imports() - _KNOWN == set()


@pytest.mark.parametrize("source, found", [
    ("from ..model.validate import _esc\n", {("verify/_planted.py", "gensolver.model.validate", "_esc")}),
    ("from ..instances._common import rng_of\n", {("verify/_planted.py", "gensolver.instances._common", "rng_of")}),
    ("from ..errors import _is_real\n", {("verify/_planted.py", "gensolver.errors", "_is_real")}),
    ("from .._log import configure\nfrom .certificates import _check\n", set()),  # shared / same package
])
def test_the_scan_finds_a_private_cross_package_import(monkeypatch: pytest.MonkeyPatch, source: str,
                                                       found: set[tuple[str, str, str]]) -> None:
    """The check above can fail: a planted module importing a private name is reported."""
    planted = ROOT / "verify" / "_planted.py"
    monkeypatch.setattr(Path, "rglob", lambda self, pat: [planted] if self == ROOT else [])
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert _cross_package_private_imports() == found


def test_mark_validated_is_what_validate_trusts() -> None:
    from gensolver.model import Bid, Instance, InstanceError, Slot, mark_validated, validate

    def bad() -> Instance:  # a bid on a slot that does not exist
        return Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 1.0, {"t": {"units": 1.0}}),))

    with pytest.raises(InstanceError, match="t"):
        validate(bad())
    trusted = mark_validated(bad())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert validate(trusted) is trusted
