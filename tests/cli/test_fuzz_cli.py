"""A bounded run of ``scripts/fuzz_cli.py`` (issue 20): about 50 hostile inputs, every shape,
through the CLI in-process; each must exit 0 or 2 with no traceback. The full run (>= 1000
inputs, child processes under a memory cap) is ``python scripts/fuzz_cli.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_cli", ROOT / "scripts" / "fuzz_cli.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_cli", mod)  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def test_fifty_hostile_inputs_exit_0_or_2_without_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fz = _fuzz_module()
    # in-process there is no memory cap: keep the bombs and limits small
    monkeypatch.setenv("GENSOLVER_MAX_FILE_BYTES", str(8 << 20))
    monkeypatch.setenv("GENSOLVER_MAX_INFLATED_BYTES", str(4 << 20))
    cases = fz.generate_corpus(tmp_path / "corpus", count=0, seed=1, bomb_bytes=6 << 20, bundled=False)
    shapes = {c.shape for c in cases}
    picked = fz.sample(cases, 50, seed=1)
    assert len(picked) == 50 and len({c.shape for c in picked}) == min(50, len(shapes))
    out = tmp_path / "out"
    out.mkdir()
    commands = {"instance": ("solve", "plan"), "gentask": ("simulate",)}
    outcomes = fz.fuzz(picked, fz.run_inprocess, out_dir=out, commands=commands)
    bad = [(o.command, o.case.name, o.rc, o.tail[-300:]) for o in outcomes if not o.ok]
    assert bad == []
    assert {o.rc for o in outcomes} == {0, 2}  # valid inputs are solved, invalid ones refused
    table = fz.summary(outcomes)
    assert "tracebacks" in table and table.splitlines()[-1].split()[0] == "all"


def test_the_fuzz_classifier_can_fail() -> None:
    """A traceback or another exit code is a failure: the checker is not vacuous."""
    fz = _fuzz_module()
    case = fz.Case("x", Path("x"), "instance", "x")
    assert not fz.Outcome(case, "solve", 1, 0.1).ok
    assert not fz.Outcome(case, "solve", 2, 0.1, traceback=True).ok
    assert not fz.Outcome(case, "solve", 0, 0.1, timed_out=True).ok
    assert fz.Outcome(case, "solve", 2, 0.1).ok
    rc, text, *_ = fz.run_inprocess(["solve", "/definitely/missing.json"])
    assert rc == 2 and fz.TRACEBACK not in text
