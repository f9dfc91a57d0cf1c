"""Progress display (:mod:`gensolver.cli.progress`): nothing at all off a terminal (pipes and
files get clean output); on a terminal, the bar counts the executor's ``task_finished`` records
and names what is launching, and is erased when done."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import gensolver.cli.progress as progress


def _console(monkeypatch, *, terminal: bool) -> io.StringIO:
    buf = io.StringIO()
    monkeypatch.setattr(progress, "err_console", Console(file=buf, force_terminal=terminal, width=100))
    return buf


def test_off_a_terminal_nothing_is_drawn(monkeypatch) -> None:
    buf = _console(monkeypatch, terminal=False)
    with progress.working("solving"):
        pass
    with progress.task_progress(3) as on_event:
        assert on_event is None
    assert buf.getvalue() == ""


@pytest.mark.parametrize("enabled", [True, False])
def test_on_a_terminal_the_bar_counts_finished_tasks(monkeypatch, enabled: bool) -> None:
    buf = _console(monkeypatch, terminal=True)
    with progress.task_progress(3, label="run", enabled=enabled) as on_event:
        if not enabled:
            assert on_event is None
        else:
            on_event({"event": "launching", "task": "a"})
            on_event({"event": "task_finished", "task": "a"})
            on_event({"event": "other"})  # ignored
            on_event({"event": "task_finished", "task": "b"})
    text = buf.getvalue()
    if enabled:
        assert "2/3" in text and "run: launching a" in text and "3/3" not in text
        assert text.endswith("\x1b[2K")  # transient: the last line is cleared
    else:
        assert text == ""
