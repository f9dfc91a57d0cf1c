"""Logging set-up for the ``gensolver`` command line (stdlib :mod:`logging`).

Library modules only create ``logger = logging.getLogger(__name__)`` and log the stages of long
work (solve stages, simulation rounds, plan and run steps); nothing in the library configures
logging. :func:`configure` is called once per CLI invocation: it installs one handler on the
``gensolver`` logger that writes to the current ``sys.stderr`` (rich formatting on a terminal,
``level: logger: message`` lines otherwise).
"""

from __future__ import annotations

import logging
import sys

__all__ = ["configure", "level_for"]

_ROOT = "gensolver"


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
        self.setStream(sys.stderr)
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
