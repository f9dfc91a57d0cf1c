"""The ``gensolver`` command line.

Each command family lives in its own module that exposes ``register(app)``; modules are
listed in :data:`COMMAND_MODULES`. Bad input exits with status 2 and the error on stderr.
"""

from __future__ import annotations

import importlib
import sys

import typer

from .common import EXIT_BAD_INPUT, console, fail

__all__ = ["app", "main", "COMMAND_MODULES", "EXIT_BAD_INPUT"]

app = typer.Typer(
    name="gensolver",
    help="GPU sharing as a market: solve, price, verify, benchmark and simulate clearing rounds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: modules that add commands to :data:`app` (each defines ``register(app)``)
COMMAND_MODULES: tuple[str, ...] = (
    "gensolver.cli.solve_cmd",
    "gensolver.cli.bench_cmd",
    "gensolver.cli.sim_cmd",
    "gensolver.cli.run_cmd",
    "gensolver.cli.verify_cmd",
)

for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:  # a command family not installed in this build
        if _exc.name != _name:
            raise
        continue
    _mod.register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gensolver`` script; returns the exit status."""
    try:
        rc = app(args=argv, standalone_mode=False)
    except SystemExit as exc:  # pragma: no cover - defensive: click exits itself in some paths
        return int(exc.code or 0)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        console.print("aborted", style="red")
        return 1
    except Exception as exc:  # click usage errors and anything raised by commands
        import click

        if isinstance(exc, click.ClickException):
            exc.show(file=sys.stderr)
            return exc.exit_code
        raise
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
