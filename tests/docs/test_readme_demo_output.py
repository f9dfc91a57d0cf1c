"""The demo output the README quotes is what ``gensolver demo`` prints now: every table row of
the README's quoted output (the round's winners and the simulation's policies) appears, as is,
in a fresh run's output at the README's width. It had gone stale once without a test noticing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quoted_rows() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```text\n(.*?)^```", text, flags=re.S | re.M)
    demo = [b for b in blocks if "A simulation: the same jobs" in b]
    assert len(demo) == 1, "the README quotes the demo's output once"
    return [line.rstrip() for line in demo[0].splitlines() if line.startswith("│ ")]


def stale_rows(rows: list[str], output: str) -> list[str]:
    """The quoted rows that ``output`` does not print, line for line (trailing blanks aside)."""
    printed = {line.rstrip() for line in output.splitlines()}
    return [r for r in rows if r not in printed]


def test_the_readme_quotes_the_demo_as_it_runs(tmp_path: Path) -> None:
    rows = quoted_rows()
    assert len(rows) >= 10  # five winners and five policies: the check has something to check
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": path}  # this checkout, from any folder
    code = "from gensolver.cli import main; raise SystemExit(main(['demo', '--out', 'demo-out']))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    stale = stale_rows(rows, res.stdout)
    assert not stale, "README rows no longer printed by `gensolver demo`:\n" + "\n".join(stale)


def test_the_row_check_can_fail() -> None:
    rows = quoted_rows()
    market = next(r for r in rows if r.startswith("│ market "))
    printed = "\n".join(r.replace(market, market.replace("│ 8/8 ", "│ 7/8 ")) for r in rows)
    assert stale_rows(rows, printed) == [market]
    assert stale_rows(rows, "\n".join(rows)) == []
