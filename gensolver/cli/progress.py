"""Progress display for long commands: only on a terminal, on stderr, gone when done."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Mapping

from .common import err_console

__all__ = ["working", "task_progress"]


@contextlib.contextmanager
def working(message: str, *, enabled: bool = True) -> Iterator[None]:
    """A transient spinner with the elapsed time while the block runs (``solve``, ``plan``)."""
    if not (enabled and err_console.is_terminal):
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console,
                  transient=True) as bar:
        bar.add_task(message, total=None)
        yield


@contextlib.contextmanager
def task_progress(total: int, *, label: str = "running",
                  enabled: bool = True) -> Iterator[Callable[[Mapping[str, Any]], None] | None]:
    """A transient bar of finished tasks, fed by executor journal records (``gensolver run``).

    Yields the ``on_event`` callback to give the executor, or ``None`` off a terminal.
    """
    if not (enabled and err_console.is_terminal):
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        tid = bar.add_task(label, total=total)

        def on_event(rec: Mapping[str, Any]) -> None:
            if rec.get("event") == "task_finished":
                bar.advance(tid)
            elif rec.get("event") in ("launching", "preempting"):
                bar.update(tid, description=f"{label}: {rec.get('event')} {rec.get('task')}")

        yield on_event
