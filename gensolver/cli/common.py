"""Shared CLI helpers: consoles, the bad-input exit code, JSON output."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.markup import escape

from .._log import SafeConsole, console, err_console, printable

__all__ = ["console", "err_console", "fail", "fail_reading", "EXIT_BAD_INPUT", "print_json", "check_output_file", "check_output_dir",
           "check_time_limit_option", "printable", "SafeConsole", "items_or_alias",
           "value_or_alias"]

EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``message`` on stderr and exit with ``code`` (2: bad input)."""
    # the message is plain text: brackets in it (a path, a value) are not rich markup
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)



def fail_reading(file: Path, exc: BaseException) -> NoReturn:
    """Exit 2 for an input ``file`` that could not be read (the system's reason) or parsed (the
    reader's message, prefixed with the file name unless it already names the file or an
    option)."""
    if isinstance(exc, OSError):
        fail(f"{file}: {exc.strerror or exc}")
    msg = str(exc)
    fail(msg if msg.startswith(("--", str(file))) else f"{file}: {msg}")

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


def method_or_alias(method: str, solver: str | None, *, default: str = "auto") -> str:
    """``--method``, or the deprecated ``--solver`` (a warning on stderr; both given with
    different values exit 2)."""
    if solver is None:
        return method
    err_console.print("warning: --solver is deprecated; use --method (the same value)", highlight=False)
    if method != default and method != solver:
        fail(f"--solver: give --method only (--solver is its deprecated alias), got --method {method} "
             f"and --solver {solver}")
    return solver


def value_or_alias(value: Any, old_value: Any, *, option: str, old: str, default: Any) -> Any:
    """``option``'s value, or that of its deprecated alias ``old`` when given (a warning on
    stderr naming ``option``; both given with different values exit 2)."""
    if old_value is None:
        return value
    err_console.print(f"warning: {old} is deprecated; use {option} (the same value)", highlight=False)
    if value != default and value != old_value:
        fail(f"{old}: give {option} only ({old} is its deprecated alias), got {option} {value} and {old} {old_value}")
    return old_value


def items_or_alias(items: list[str], old_items: list[str], *, option: str, old: str, where: str = "") -> list[str]:
    """The items of the repeatable option ``option`` followed by those of its deprecated alias
    ``old`` (given: one warning on stderr naming ``option``; the exit code is unchanged).

    ``where`` says when ``old`` is the deprecated spelling (`` with --backend slurm``)."""
    if old_items:
        err_console.print(f"warning: {old}{where} is deprecated; use {option} (the same items)", highlight=False)
    return [*items, *old_items]


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
