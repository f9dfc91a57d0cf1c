"""The README's commands, run in order as a reader would, from a fresh temporary folder.

Every ``gensolver`` line of its ``bash`` blocks runs with the installed script and must exit 0;
outputs the README quotes are compared (the demo's welfare, the Python example's comments).
Not run, and why: ``make`` and ``pip`` lines (they install the package or run this suite), the
``scripts/`` line, ``--dask tcp://scheduler:8786`` (no scheduler here) and ``--traces-dir
~/traces`` (a reader's own folder). ``traces fetch`` downloads from a local mirror of
``../shared/traces`` (``--mirror``; same checksums) into ``$GENSOLVER_TRACES``; without
``../shared`` the test skips. Slow (the demo, bench small, a 72 s run): ``make test-slow``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.traces.test_fetch import _Server

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "gensolver"
SKIP = ("--dask tcp://scheduler", "~/traces")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.S | re.M)


def commands() -> list[list[str]]:
    out = []
    for block in blocks("bash"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("gensolver ") and not any(s in line for s in SKIP):
                out.append(shlex.split(line))
    return out


def test_the_readme_has_the_commands_this_test_runs() -> None:
    cmds = [" ".join(c[:2]) for c in commands()]
    for needed in ("gensolver demo", "gensolver round", "gensolver plan", "gensolver run", "gensolver emit",
                   "gensolver traces", "gensolver simulate", "gensolver bench"):
        assert needed in cmds, needed


@pytest.mark.slow
def test_every_readme_command_runs_in_order(tmp_path: Path, shared_dir: Path) -> None:
    if not SCRIPT.exists():
        pytest.skip("the gensolver script is not installed beside this interpreter")
    env = {**os.environ, "GENSOLVER_TRACES": str(tmp_path / "traces"), "COLUMNS": "200",
           "XDG_DATA_HOME": str(tmp_path / "data")}
    with _Server(shared_dir / "traces") as mirror:
        for argv in commands():
            if argv[1:3] == ["traces", "fetch"]:
                argv = [*argv, "--mirror", mirror.url]
            res = subprocess.run([str(SCRIPT), *argv[1:]], capture_output=True, text=True, cwd=tmp_path, env=env,
                                 timeout=900)
            assert res.returncode == 0, (argv, res.stdout[-2000:], res.stderr[-2000:])
            assert "Traceback" not in res.stderr, argv
            if argv[1] == "demo":
                assert "status optimal, welfare 153.3 credits" in " ".join(res.stdout.split())


@pytest.mark.slow
def test_the_python_example_prints_what_its_comments_say(tmp_path: Path) -> None:
    pytest.importorskip("ortools")
    (code,) = [b for b in blocks("python") if "run_mechanism" in b]
    said = [line.split("#", 1)[1].strip() for line in code.splitlines() if line.startswith("print(") and "#" in line]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == said
