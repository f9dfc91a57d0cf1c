"""The conventions a user expects of a command line: ``--version``, ``-v``/``-q`` through
:mod:`logging`, shell completion, enumerated values listed in ``--help`` and completed, flags
shown as flags. Completion runs the real ``gensolver`` script in a subprocess (click's
completion protocol through ``_GENSOLVER_COMPLETE``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.core import TyperOption

import gensolver
from gensolver.cli import app, main
from gensolver.cli.choices import BACKENDS, METHODS, POLICIES

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "gensolver" / "data" / "suites" / "smoke"
SCRIPT = Path(sys.executable).with_name("gensolver")


def _all_commands() -> dict[str, object]:
    out: dict[str, object] = {}
    for name, c in typer.main.get_command(app).commands.items():
        subs = getattr(c, "commands", None)
        for sub, sc in (subs.items() if subs else [(None, c)]):
            out[name if sub is None else f"{name} {sub}"] = sc
    return out


def _help(capsys: pytest.CaptureFixture[str], *cmd: str) -> str:
    capsys.readouterr()
    assert main([*cmd, "--help"]) == 0
    return capsys.readouterr().out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"gensolver {gensolver.__version__}"


def test_flags_are_shown_as_flags_in_every_help(capsys: pytest.CaptureFixture[str]) -> None:
    commands = _all_commands()
    assert len(commands) >= 12
    checked = 0
    for path, cmd in commands.items():
        text = _help(capsys, *path.split())
        assert "<bool>" not in text, path
        for p in cmd.params:  # type: ignore[attr-defined]
            if isinstance(p, TyperOption) and p.is_flag and p.name != "help":
                line = next(ln for ln in text.splitlines() if p.opts[-1] in ln)
                after = line.split(p.opts[-1], 1)[1]
                assert not after.startswith(" <") and not after.startswith(" ["), (path, line)
                checked += 1
    assert checked >= 10  # --json, --fresh, --force, ... were all looked at


@pytest.mark.parametrize(("cmd", "option", "values"), [
    (["run"], "--backend", BACKENDS),
    (["run"], "--over-grant", ("warn", "suspend", "terminate")),
    (["run"], "--preempt", ("plan", "checkpoint")),
    (["run"], "--lost", ("restart", "skip")),
    (["simulate"], "--policy", POLICIES),
    (["solve"], "--method", METHODS),
    (["solve"], "--mechanism", ("vcg", "greedy-critical", "pay-as-bid", "core", "lavi-swamy")),
    (["traces", "fetch"], "name", ("alibaba", "philly")),
])
def test_enumerated_values_are_listed_in_help(capsys: pytest.CaptureFixture[str], cmd: list[str], option: str,
                                              values: tuple[str, ...]) -> None:
    text = " ".join(_help(capsys, *cmd).split())
    assert f"{option} [{'|'.join(values)}]" in text or f"{option} <{'|'.join(values)}>" in text


def test_the_listed_values_are_the_registries() -> None:
    from gensolver.executor.runner import OVER_GRANT_POLICIES
    from gensolver.sim import list_policies
    from gensolver.solvers import list_methods

    assert sorted(POLICIES) == sorted(list_policies())
    assert list(METHODS) == [m.name for m in list_methods()]
    assert OVER_GRANT_POLICIES == ("warn", "suspend", "terminate")


def test_a_wrong_enumerated_value_keeps_its_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "p.json"), "--backend", "sim", "--preempt", "x"]) == 2
    assert "--preempt must be plan or checkpoint" in capsys.readouterr().err


def _complete(words: str) -> list[str]:
    env = dict(os.environ, _GENSOLVER_COMPLETE="complete_bash", COMP_WORDS=words,
               COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    out = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(not SCRIPT.exists(), reason="the gensolver script is not installed beside this Python")
def test_shell_completion_completes_commands_and_choices(tmp_path: Path) -> None:
    assert _complete("gensolver tra") == ["traces"]
    assert _complete("gensolver run p.json --over-grant s") == ["suspend"]
    assert _complete("gensolver simulate x --policy f") == ["fcfs-whole-gpu", "fcfs-packing", "finish-time-fair"]
    assert _complete("gensolver traces fetch ") == ["alibaba", "philly"]


def test_completion_can_be_installed(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)
    assert "--install-completion" in text and "--show-completion" in text


def test_verbose_logs_the_solve_stages_and_quiet_silences_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    inst = str(SMOKE / "smoke-L3.json.gz")
    try:
        assert main(["-vv", "solve", inst, "-m", "auto", "-t", "5", "--json"]) == 0
        err = capsys.readouterr().err
        assert "INFO: gensolver.solvers.api: solve: 20 bids" in err
        assert "DEBUG: gensolver.solvers.anytime: auto: stage=greedy" in err
        assert main(["solve", inst, "-m", "greedy", "--json"]) == 0
        assert capsys.readouterr().err == ""  # default: warnings only
        assert main(["-q", "solve", inst, "-m", "greedy", "--json"]) == 0
        logging.getLogger("gensolver.test").warning("hidden")
        assert capsys.readouterr().err == ""
    finally:
        from gensolver._log import configure

        configure(0, False)


def test_verbose_logs_simulation_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        assert main(["-v", "simulate", "synthetic:n=6,seed=1,rate=1", "-p", "market", "--json"]) == 0
        err = capsys.readouterr().err
        assert "gensolver.sim.api: simulate" in err and "gensolver.market.engine: round at step" in err
    finally:
        from gensolver._log import configure

        configure(0, False)


def test_progress_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from gensolver.cli import progress

    buf = io.StringIO()
    monkeypatch.setattr(progress, "err_console", Console(file=buf, force_terminal=True, width=80))
    with progress.task_progress(2, label="running demo") as on_event:
        assert on_event is not None
        on_event({"event": "launching", "task": "t1"})
        on_event({"event": "task_finished", "task": "t1"})
    with progress.working("solving 9 bids"):
        pass
    assert "running demo" in buf.getvalue() and "launching t1" in buf.getvalue()
    quiet = io.StringIO()
    monkeypatch.setattr(progress, "err_console", Console(file=quiet, force_terminal=False))
    with progress.task_progress(2) as on_event, progress.working("x"):
        assert on_event is None
    assert quiet.getvalue() == ""
