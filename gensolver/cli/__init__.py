"""The ``gensolver`` command line.

Each command family lives in its own module that exposes ``register(app)``; modules are
listed in :data:`COMMAND_MODULES`. Bad input exits with status 2 and the error on stderr.
"""

from __future__ import annotations

import errno
import importlib
import sys

import typer
from rich.markup import escape

from ..errors import GensolverError, MissingExtraError, extra_of, missing_extra
from . import signals
from .common import EXIT_BAD_INPUT, console, err_console

__all__ = ["app", "main", "COMMAND_MODULES", "EXIT_BAD_INPUT", "EXIT_MISSING_EXTRA"]

#: exit status when a command needs an optional extra that is not installed (as ``run``'s
#: unavailable backend)
EXIT_MISSING_EXTRA = 3

#: errors of a path the user gave (exit 2, bad input); any other OSError exits 1
_INPUT_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.EACCES,
                           errno.EPERM})

app = typer.Typer(
    name="gensolver",
    help="GPU sharing as a market: solve, price, verify, benchmark and simulate clearing rounds.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

#: modules that add commands to :data:`app` (each defines ``register(app)``)
COMMAND_MODULES: tuple[str, ...] = (
    "gensolver.cli.solve_cmd",
    "gensolver.cli.bench_cmd",
    "gensolver.cli.sim_cmd",
    "gensolver.cli.round_cmd",
    "gensolver.cli.run_cmd",
    "gensolver.cli.verify_cmd",
    "gensolver.cli.traces_cmd",
    "gensolver.cli.demo_cmd",
    "gensolver.cli.emit_cmd",
    "gensolver.cli.serve_cmd",
)

def _version(value: bool) -> None:
    if value:
        from .. import __version__

        console.print(f"gensolver {__version__}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, show_default=False,
                                help="Log the stages of long work on stderr (-v info, -vv debug)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Log errors only."),
) -> None:
    """GPU sharing as a market: solve, price, verify, benchmark and simulate clearing rounds."""
    from .._log import configure

    configure(verbose, quiet)


for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:  # a command family not installed in this build
        if _exc.name != _name:
            raise
        continue
    _mod.register(app)


def _usage_error_types() -> tuple[type[BaseException], ...]:
    """Click's exception base, wherever it lives: ``click`` itself for typer < 0.20 and
    typer's vendored copy (``typer._click``) after, found through ``typer.BadParameter``'s
    ancestry so that no private module is imported by name."""
    found: list[type[BaseException]] = [
        cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "ClickException"
    ]
    try:
        import click

        found.append(click.ClickException)
    except ImportError:  # pragma: no cover - newer typer no longer depends on click
        pass
    return tuple(dict.fromkeys(found))


def _missing_extra(exc: BaseException) -> int:
    err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
    return EXIT_MISSING_EXTRA


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gensolver`` script; returns the exit status (see :func:`_main`).

    SIGTERM and SIGINT stop the command and every process it started, and exit 143 and 130
    (:mod:`gensolver.cli.signals`); journals are closed whole on the way out.
    """
    signals.install()
    rc = 1
    try:
        rc = _main(argv)
    except KeyboardInterrupt as exc:  # raised outside click's reach (before or after the command)
        rc = signals.exit_status(exc) or 130
    finally:
        stopped = _stop()
    return stopped if stopped is not None else rc


def _stop() -> int | None:
    """Reap what a stop signal left, restore the handlers, and return the signal's exit status
    (``None``: none came), also for a signal that lands meanwhile: its exception is caught here,
    or was lost in a finaliser and is only recorded (:mod:`gensolver.cli.signals`)."""
    try:
        if signals.exit_status() is not None:
            signals.reap()
    except KeyboardInterrupt:  # a signal landing while reaping: recorded; reaped below
        pass
    finally:
        try:
            signals.uninstall()
        except KeyboardInterrupt:  # landed inside uninstall: finish it
            signals.uninstall()
    stopped = signals.exit_status()
    if stopped is not None:
        signals.reap()  # what the signal's handler told to stop (nothing left when reaped above)
    return stopped


def _main(argv: list[str] | None) -> int:
    """Run the command line; returns the exit status.

    Usage errors (unknown command or option, missing argument) print click's message on
    stderr and return its exit status, 2, without a traceback; so does any
    :class:`~gensolver.errors.GensolverError` a command lets through (a missing extra: 3), and an
    :class:`OSError` on a path (2 for a name too long, missing, a loop, no permission; else 1).
    A missing optional extra, from any command, returns 3 (:data:`EXIT_MISSING_EXTRA`) and
    prints the ``pip install`` line: a :class:`~gensolver.errors.MissingExtraError`, a method whose
    package is not installed, or an import of a package of
    :data:`~gensolver.errors.EXTRA_OF_PACKAGE` failing anywhere.
    """
    try:
        rc = app(args=argv, prog_name="gensolver", standalone_mode=False)
    except SystemExit as exc:  # pragma: no cover - defensive: click exits itself in some paths
        return int(exc.code or 0)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort as exc:
        stopped = signals.exit_status(exc)
        if stopped is not None:  # SIGINT or SIGTERM (click turns either's KeyboardInterrupt into Abort)
            err_console.print(f"stopped by {'SIGINT' if stopped == 130 else 'SIGTERM'}", style="red",
                              highlight=False)
            return stopped
        console.print("aborted", style="red")
        return 1
    except MissingExtraError as exc:  # e.g. simulate without simpy: what to install, no traceback
        return _missing_extra(exc)
    except ModuleNotFoundError as exc:  # the same rule for an optional package reached deeper down
        extra = extra_of(exc.name or "")
        if extra is None:
            raise
        command = next((a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")), "")
        return _missing_extra(missing_extra((exc.name or "").partition(".")[0], extra,
                                            f"gensolver {command}".strip()))
    except GensolverError as exc:  # bad input a command did not word itself: still exit 2, no traceback
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    except OSError as exc:  # a path the system refuses (a name too long, a loop of links): no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        err_console.print(f"[bold red]error:[/] {escape(where + (exc.strerror or str(exc)))}", highlight=False,
                          soft_wrap=True)
        return EXIT_BAD_INPUT if exc.errno in _INPUT_ERRNOS else 1
    except _usage_error_types() as exc:
        exc.show(file=sys.stderr)  # type: ignore[attr-defined]
        return int(exc.exit_code)  # type: ignore[attr-defined]
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
