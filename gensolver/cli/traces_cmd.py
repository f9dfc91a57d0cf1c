"""``gensolver traces``: list the public traces and download them with checked SHA-256."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from .._log import SafeConsole
from ..traces.fetch import TRACE_SOURCES
from .common import check_output_dir, console, fail

__all__ = ["register"]

#: the trace names, as a choice for ``--help`` and completion
TraceName = enum.Enum("TraceName", {name: name for name in TRACE_SOURCES}, type=str)  # type: ignore[misc]

traces_app = typer.Typer(help="The public GPU cluster traces: list them, download them (checksums verified).",
                         no_args_is_help=True)


@traces_app.command("list")
def traces_list() -> None:
    """List the public traces, their files, sizes and sources."""
    table = Table("trace", "folder", "file", "bytes", "sha256", "source")
    for src in TRACE_SOURCES.values():
        for f in src.files:
            table.add_row(src.name, src.folder, f.name, str(f.size),
                          "unverified" if f.sha256 is None else f.sha256[:16] + "...", f.url)
    # piped or redirected: wide enough for whole rows, so no name or address is cut
    out = console if console.is_terminal else SafeConsole(width=max(console.width, 260))
    out.print(table)


@traces_app.command("fetch")
def traces_fetch(
    name: TraceName = typer.Argument(..., help="The trace to download."),
    directory: Optional[Path] = typer.Option(None, "--dir", "-d", help="Where to put it (DIR/<folder>/; default: "
                                                             "$GENSOLVER_TRACES when set, else the per-user folder; "
                                                             "both are where `gensolver simulate` reads)."),
    mirror: Optional[str] = typer.Option(None, "--mirror", help="Fetch MIRROR/<folder>/<file> instead of the "
                                                                "upstream URLs (same checksums)."),
    force: bool = typer.Option(False, "--force", help="Download files that are already present and correct."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds of network silence before giving up."),
) -> None:
    """Download a public trace into DIR and verify each file's size and SHA-256.

    A file that fails its checks is not kept; rerunning skips the files already present.
    """
    import math

    from ..traces.fetch import FetchError, fetch_trace

    if not math.isfinite(timeout) or timeout <= 0:
        fail(f"--timeout: must be a positive finite number of seconds, got {timeout:g}")
    if mirror is not None and not mirror.startswith(("http://", "https://", "file:")):
        fail(f"--mirror: expected an http(s):// or file: URL, got {mirror!r}")
    if directory is None:  # where `gensolver simulate` will look, never ../shared beside a checkout
        import os

        from ..instances.gpu import TRACE_ENV, user_trace_dir

        directory = Path(os.environ[TRACE_ENV]) if os.environ.get(TRACE_ENV) else user_trace_dir()
    check_output_dir(directory, "--dir")
    key = name.value if isinstance(name, enum.Enum) else str(name)
    try:
        fetch_trace(key, directory, mirror=mirror, force=force, timeout=timeout,
                    progress=lambda f, st: console.print(f"{escape(f.name)}: {st}", highlight=False))
    except FetchError as exc:
        fail(str(exc), code=1)
    except OSError as exc:
        fail(f"--dir: cannot write {exc.filename or directory}: {exc.strerror or exc}")
    src = TRACE_SOURCES[key]
    from ..instances.gpu import default_trace_dir

    where = "" if Path(directory).resolve() == default_trace_dir().resolve() else f" --traces-dir {directory}"
    console.print(f"{src.name} trace in {escape(str(directory / src.folder))} (cite {src.citation}; "
                  f"licence: {src.license}); replay it with "
                  f"`gensolver simulate {src.name}{escape(where)}`", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the ``traces`` group to ``app``."""
    app.add_typer(traces_app, name="traces")
