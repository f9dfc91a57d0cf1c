"""The size rules: no function or method in ``gensolver/`` longer than 100 lines, no module over 650.

A long function is split by the steps it already names in its comments; there is no list of
exceptions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gensolver"
LIMIT = 100


def _functions(tree: ast.AST, prefix: str = ""):  # type: ignore[no-untyped-def]
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, node.end_lineno - node.lineno + 1  # type: ignore[operator]
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_functions(root: Path = PACKAGE, limit: int = LIMIT) -> dict[tuple[str, str], int]:
    """Every function over ``limit`` lines under ``root``: (relative path, qualified name) -> lines."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for name, lines in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if lines > limit:
                found[(rel, name)] = lines
    return found


def check_sizes(root: Path = PACKAGE) -> None:
    """AssertionError naming every function over :data:`LIMIT` lines under ``root``."""
    found = long_functions(root)
    assert not found, f"functions over {LIMIT} lines (split them by their steps): {found}"


def test_no_function_over_the_limit() -> None:
    check_sizes()
    assert long_functions(limit=0), "the check read no function at all"  # it looked at the package


def test_the_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "m.py").write_text(f"class C:\n    def f(self):\n{body.replace('    ', '        ')}\n"
                                   f"def g():\n    pass\n")
    assert long_functions(tmp_path) == {("m.py", "C.f"): LIMIT + 1}
    assert long_functions(tmp_path, limit=LIMIT + 1) == {}
    with pytest.raises(AssertionError, match=r"'m\.py', 'C\.f'\): 101"):
        check_sizes(tmp_path)


def test_a_function_of_exactly_the_limit_passes(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT - 1))
    (tmp_path / "m.py").write_text(f"async def f():\n{body}\n")
    assert long_functions(tmp_path, limit=0) == {("m.py", "f"): LIMIT}
    check_sizes(tmp_path)


#: the module rule: "none much over 600 lines" (a module past this is split by the concern it holds)
MODULE_LIMIT = 650


def long_modules(root: Path = PACKAGE, limit: int = MODULE_LIMIT) -> dict[str, int]:
    """Every module under ``root`` over ``limit`` lines: relative path -> lines."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_module_much_over_600_lines(tmp_path: Path) -> None:
    assert not long_modules(), f"modules over {MODULE_LIMIT} lines (split them by concern): {long_modules()}"
    (tmp_path / "big.py").write_text("x = 1\n" * (MODULE_LIMIT + 1))
    (tmp_path / "ok.py").write_text("x = 1\n" * MODULE_LIMIT)
    assert long_modules(tmp_path) == {"big.py": MODULE_LIMIT + 1}  # the check can fail
