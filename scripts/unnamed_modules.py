"""List the modules of ``gensolver`` that no test names.

A module is named when its dotted name (``gensolver.sim.faults``) or its path
(``gensolver/sim/faults.py``) appears in some file under ``tests/`` (a package's ``__init__.py``
by the package's dotted name or folder path), or when a test module in the tests' mirror of its
package is named after it (``tests/sim/test_faults*.py``; ``cli/emit_cmd.py`` by
``tests/cli/test_emit*.py``). Run from the repository root::

    python scripts/unnamed_modules.py

Prints one module a line (nothing when every module is named) and exits 1 when any is unnamed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules(root: Path = ROOT) -> dict[str, str]:
    """Dotted name -> path (relative to ``root``) of every module of the package."""
    out = {}
    for path in sorted((root / "gensolver").rglob("*.py")):
        rel = path.relative_to(root)
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
            rel = rel.parent
        out[".".join(parts)] = rel.as_posix()
    return out


def unnamed(root: Path = ROOT) -> list[str]:
    """The dotted names of the modules no file under ``tests/`` names."""
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted((root / "tests").rglob("*"))
                     if p.is_file() and p.suffix in (".py", ".txt", ".md", ".json", ".yaml", ".toml", ".cfg"))
    found = []
    for dotted, path in modules(root).items():
        # a whole name: not a prefix of a longer one (gensolver.sim is not named by gensolver.simx)
        if not (_whole(text, dotted, r"[\w.]") or _whole(text, path, r"[\w/]")) and not _mirrored(root, dotted):
            found.append(dotted)
    return found


def _whole(text: str, name: str, before: str) -> bool:
    """Whether ``name`` stands in ``text`` with no word character after it and no ``before``
    character in front (each occurrence found by ``str.find``: a regex over the whole text
    for every module is slow)."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        if not (start and re.match(before, text[start - 1])) and not (end < len(text) and re.match(r"\w", text[end])):
            return True
        start = text.find(name, start + 1)
    return False


def _mirrored(root: Path, dotted: str) -> bool:
    """Whether a test module under ``tests/<top package>/`` is named after module ``dotted``."""
    parts = dotted.split(".")[1:]
    if len(parts) < 2:
        return False
    stem = parts[-1].removesuffix("_cmd")
    return any((root / "tests" / parts[0]).rglob(f"test_{stem}*.py"))


def main() -> int:
    names = unnamed()
    for name in names:
        print(name)
    return 1 if names else 0


if __name__ == "__main__":
    sys.exit(main())
