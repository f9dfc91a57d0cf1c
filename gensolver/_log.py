"""Logging set-up and the safe consoles of the ``gensolver`` command line (stdlib :mod:`logging`, rich).

Library modules only create ``logger = logging.getLogger(__name__)`` and log the stages of long
work (solve stages, simulation rounds, plan and run steps); nothing in the library configures
logging. :func:`configure` is called once per CLI invocation: it installs one handler on the
``gensolver`` logger that writes to the current ``sys.stderr`` (rich formatting on a terminal,
``level: logger: message`` lines otherwise).

The consoles that user-facing output goes through (:data:`console`, :data:`err_console`: the
CLI's tables and the bench runner's progress bar) live here too, so any layer may print safely:
a :class:`SafeConsole` escapes the control characters of ids and messages read from input files.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

from rich.console import Console

__all__ = ["configure", "level_for", "printable", "SafeConsole", "console", "err_console"]

_ROOT = "gensolver"

#: C0 and C1 control characters, DEL, and the Unicode bidirectional overrides and isolates
#: (which reorder what a terminal shows); newline and tab are kept
# lone surrogates too: JSON's "\\ud800" reads into a str that no encoding can write
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


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


def level_for(verbose: int, quiet: bool) -> int:
    """The level shown: ``-q`` errors only, default warnings, ``-v`` info, ``-vv`` debug."""
    if quiet:
        return logging.ERROR
    return {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler bound to ``sys.stderr`` at emit time (tests swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr  # not setStream: it flushes the old stream, which may be closed
        super().emit(record)


def configure(verbose: int = 0, quiet: bool = False) -> logging.Logger:
    """Show the ``gensolver`` loggers' records at :func:`level_for` on stderr; returns the logger.

    Idempotent: a handler installed by an earlier call is replaced.
    """
    logger = logging.getLogger(_ROOT)
    for h in list(logger.handlers):
        if getattr(h, "_gensolver_cli", False):
            logger.removeHandler(h)
    handler: logging.Handler
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(stderr=True), show_path=False, show_time=verbose > 0,
                              rich_tracebacks=False, markup=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s: %(name)s: %(message)s"))
    handler._gensolver_cli = True  # type: ignore[attr-defined,union-attr]
    level = level_for(verbose, quiet)
    handler.setLevel(level)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
