"""Write the command sections of ``docs/reference/cli.md`` from the live ``--help`` texts.

Every command and sub-command gets a heading and its ``--help`` output verbatim (80 columns),
so the reference cannot drift from the program: ``tests/docs/test_cli_reference.py`` regenerates
the text and fails on any difference. After changing a command, run::

    python scripts/cli_reference.py          # rewrites docs/reference/cli.md below the marker
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"
MARKER = "<!-- generated from --help by scripts/cli_reference.py: do not edit below -->"
WIDTH = "80"


def command_paths() -> list[list[str]]:
    """``[]`` (the program), then every command and sub-command, in ``--help`` order."""
    import typer

    from gensolver.cli import app

    paths: list[list[str]] = [[]]
    for name, cmd in typer.main.get_command(app).commands.items():
        paths.append([name])
        for sub in getattr(cmd, "commands", {}) or {}:
            paths.append([name, sub])
    return paths


def help_text(path: list[str]) -> str:
    """``gensolver PATH --help`` as printed at 80 columns."""
    from gensolver.cli import main

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            rc = main([*path, "--help"])
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    if rc != 0:
        raise RuntimeError(f"gensolver {' '.join(path)} --help exited {rc}")
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n")


def generate() -> str:
    """The generated part of the page (below :data:`MARKER`)."""
    out = []
    for path in command_paths():
        title = " ".join(["gensolver", *path])
        out += [f"### `{title}`", "", "```text", help_text(path), "```", ""]
    return "\n".join(out)


def page(current: str) -> str:
    """``current`` with everything below the marker replaced by :func:`generate`."""
    if MARKER not in current:
        raise ValueError(f"{DOC}: the marker line {MARKER!r} is missing")
    head = current.split(MARKER, 1)[0]
    return head + MARKER + "\n\n" + generate()


if __name__ == "__main__":  # pragma: no cover
    text = page(DOC.read_text(encoding="utf-8"))
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC} ({len(command_paths())} commands)", file=sys.stderr)
