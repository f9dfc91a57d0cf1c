"""Shared CLI helpers: consoles, the bad-input exit code, JSON output."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["console", "err_console", "fail", "EXIT_BAD_INPUT", "print_json", "check_output_file", "check_output_dir",
           "check_time_limit_option", "printable", "SafeConsole"]

EXIT_BAD_INPUT = 2

#: C0 and C1 control characters, DEL, and the Unicode bidirectional overrides and isolates
#: (which reorder what a terminal shows); newline and tab are kept
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control character written as an escape (ESC -> ``\\x1b``).

    Ids and messages come from input files; printed raw, an ESC could move the cursor, recolour
    or retitle the user's terminal, or hide text. Newlines and tabs are kept.
    """
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], text)


class SafeConsole(Console):
    """A rich console that escapes control characters (:func:`printable`) in every string it
    renders: printed text and table cells; its own styling is unaffected."""

    def render_str(self, text: str, **kwargs: Any) -> Any:  # type: ignore[override]
        return super().render_str(printable(text), **kwargs)


console = SafeConsole()
err_console = SafeConsole(stderr=True)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``message`` on stderr and exit with ``code`` (2: bad input)."""
    # the message is plain text: brackets in it (a path, a value) are not rich markup
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def check_time_limit_option(value: float | None, option: str = "--time-limit") -> None:
    """Exit 2 unless ``value`` (when given) is a positive finite number of seconds
    (:func:`gensolver.errors.check_time_limit`, the rule every front end applies)."""
    from ..errors import InputError, check_time_limit

    if value is None:
        return
    try:
        check_time_limit(value, name=option, optional=False)
    except InputError as exc:
        fail(str(exc))


def print_json(obj: Any) -> None:
    """One JSON object on stdout (no colour, no wrapping); strict JSON: a non-finite float is ``null``."""
    from ..model.io import json_safe

    sys.stdout.write(json.dumps(json_safe(obj), allow_nan=False, default=str) + "\n")
    sys.stdout.flush()


def _writable_dir(folder: Path, option: str) -> None:
    """The nearest existing ancestor of ``folder`` must be a writable directory."""
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        fail(f"{option}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        fail(f"{option}: cannot write in {probe}")


def check_output_file(path: str | os.PathLike[str] | None, option: str) -> None:
    """Check, *before* any work, that ``path`` can be written as a file (exit 2 if not).

    It must not be a directory, and its nearest existing ancestor must be a writable directory
    (missing folders are created when the file is written). ``None``: nothing to check.
    """
    if path is None:
        return
    p = Path(path)
    try:
        if p.is_dir():
            fail(f"{option}: {p} is a directory, not a file")
        _writable_dir(p.parent if str(p.parent) else Path("."), option)
    except OSError as exc:  # a name too long for the file system, a loop of links, ...
        fail(f"{option}: {p}: {exc.strerror or exc}")


def check_output_dir(path: str | os.PathLike[str] | None, option: str) -> None:
    """Check, *before* any work, that ``path`` is (or can be created as) a writable directory."""
    if path is None:
        return
    p = Path(path)
    try:
        if p.exists() and not p.is_dir():
            fail(f"{option}: {p} exists and is not a directory")
        _writable_dir(p, option)
    except OSError as exc:
        fail(f"{option}: {p}: {exc.strerror or exc}")
