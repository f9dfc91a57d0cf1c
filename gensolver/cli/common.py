"""Shared CLI helpers: consoles, the bad-input exit code, JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

__all__ = ["console", "err_console", "fail", "EXIT_BAD_INPUT", "print_json"]

EXIT_BAD_INPUT = 2

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``message`` on stderr and exit with ``code`` (2: bad input)."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def print_json(obj: Any) -> None:
    """One JSON object on stdout (no colour, no wrapping)."""
    sys.stdout.write(json.dumps(obj, allow_nan=False, default=str) + "\n")
    sys.stdout.flush()
