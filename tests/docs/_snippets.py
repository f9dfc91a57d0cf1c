"""Extract the Python snippets of the documentation (README.md and docs/**/*.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: an opening fence ```python (or ```py), with an optional info string after it
_FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<ticks>`{3,})\s*(?P<lang>[\w+-]*)(?P<info>[^`]*)$")
_NO_EXEC = "<!-- no-exec -->"


@dataclass(frozen=True)
class Snippet:
    """One fenced code block: its text, first line (1-based) and whether it is skipped."""

    code: str
    line: int
    skip: bool


def doc_files() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    files = [ROOT / "README.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def python_snippets(path: Path) -> list[Snippet]:
    """The ```python blocks of ``path`` in order.

    A block is skipped when its info string contains ``skip`` (```python skip) or when the
    last non-blank line before it is ``<!-- no-exec -->``.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Snippet] = []
    i = 0
    prev = ""
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                prev = lines[i].strip()
            i += 1
            continue
        indent, ticks, lang, info = m["indent"], m["ticks"], m["lang"].lower(), m["info"]
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(ticks):
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[start:j]]
        if lang in ("python", "py"):
            skip = "skip" in info.split() or prev == _NO_EXEC
            out.append(Snippet("\n".join(body) + "\n", start + 1, skip))
        prev = ""
        i = j + 1
    return out
