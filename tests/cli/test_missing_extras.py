"""One rule for a missing optional extra, from every command: exit status 3 and the
``pip install "gensolver[EXTRA]"`` line on stderr, never a traceback.

How an extra is left out, cheaply and honestly: every command runs from a wheel of this
checkout installed in a fresh venv outside it (``wheel_venv`` in ``tests/conftest.py``), in a
process where ``tests/hide_extras.py`` (loaded by a ``.pth`` line, before anything else) hides the
extra's top-level packages from every import finder: ``find_spec`` returns ``None`` and
``import`` raises ``ModuleNotFoundError``, as in an environment without them. One venv stands in
for one per extra (each would need its own install of the others).

The default run checks, for each extra, the commands that need it (exit 3, the line) and that
``gensolver methods`` prints the line unmangled; the full matrix (every command with each extra
left out: exit 0 or 3, never a traceback) is marked slow (``make test-slow``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gensolver.errors import EXTRA_OF_PACKAGE
from gensolver.model import GpuRound, Task, uniform_gpus
from tests.conftest import ROOT, wheel_env

#: packages of each extra that gensolver imports (the ones to hide)
HIDE = {extra: sorted(p for p, e in EXTRA_OF_PACKAGE.items() if e == extra)
        for extra in ("solvers", "sim", "dist", "gpu", "service")}
PIP = 'pip install "gensolver[{}]"'


def test_every_extra_of_the_table_is_an_extra_of_pyproject() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    block = text[text.index("[project.optional-dependencies]"):]
    block = block[: block.index("\n[", 1)]
    extras = {line.split("=")[0].strip() for line in block.splitlines()[1:] if "=" in line}
    assert set(EXTRA_OF_PACKAGE.values()) <= extras, extras


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instance, a round whose tasks run ``true`` (each window 2 minutes wide) and its plan."""
    from gensolver.executor import to_plan, write_plan
    from gensolver.instances import cats
    from gensolver.model.io import write_instance
    from gensolver.solvers import solve

    d = tmp_path_factory.mktemp("extras")
    write_instance(cats.matching(12, 14, seed=1), d / "inst.json")
    rnd = GpuRound(uniform_gpus([1, 1]), (Task("a", 0.25, 0.25, 2, 10.0, command=("true",)),
                                          Task("b", 0.5, 0.5, 1, 8.0, command=("true",))), steps=2, step_seconds=60)
    (d / "round.json").write_text(json.dumps(rnd.to_dict()))
    inst = rnd.expand()
    write_plan(to_plan(inst, solve(inst, method="greedy"), {t.id: t for t in rnd.tasks}), d / "plan.json")
    return d


def gensolver(bin_dir: Path, hidden: str, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**wheel_env(), "GENSOLVER_TEST_HIDE": ",".join(HIDE[hidden]) if hidden else "", "COLUMNS": "250"}
    return subprocess.run([str(bin_dir / "gensolver"), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


#: (arguments, the extra it needs): with that extra left out, exit 3 and its pip line
NEEDS = [
    (("solve", "{d}/inst.json", "--method", "cpsat"), "solvers"),
    (("solve", "{d}/inst.json", "--mechanism", "vcg"), "solvers"),
    (("verify", "{d}/inst.json", "--mechanism", "vcg"), "solvers"),
    (("simulate", "synthetic:n=6,seed=1", "-p", "fcfs-packing"), "sim"),
    (("plan", "{d}/round.json", "-o", "{t}/p.json", "--gantt", "{t}/g.png"), "sim"),
    (("bench", "smoke", "--methods", "greedy", "--dask", "127.0.0.1:1", "--out", "{t}/b"), "dist"),
    (("run", "{d}/plan.json", "--backend", "nvml"), "gpu"),
    (("serve", "--port", "18765", "--db", "{t}/m.db"), "service"),
]


def _args(args: tuple[str, ...], d: Path, t: Path) -> list[str]:
    return [a.format(d=d, t=t) for a in args]


@pytest.mark.parametrize("args, extra", NEEDS, ids=[f"{a[0]}-{'-'.join(a[2:4])}-{e}".replace("/", "")
                                                     for a, e in NEEDS])
def test_a_command_without_the_extra_it_needs_exits_3_with_the_pip_line(wheel_venv: Path, files: Path,
                                                                        tmp_path: Path, args, extra: str) -> None:
    res = gensolver(wheel_venv, extra, *_args(args, files, tmp_path), cwd=tmp_path)
    assert res.returncode == 3, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr
    assert PIP.format(extra) in " ".join(res.stderr.split()), res.stderr
    assert not (tmp_path / "p.json").exists() and not (tmp_path / "m.db").exists()  # nothing half-done


def test_methods_prints_the_pip_line_whole(wheel_venv: Path, tmp_path: Path) -> None:
    """Rich markup ate ``[solvers]`` (the hint read ``pip install 'gensolver'``)."""
    res = gensolver(wheel_venv, "solvers", "methods", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if "cpsat" in line]
    assert rows and "gensolver[solvers]" in "".join(res.stdout.split()), res.stdout
    assert "pip install 'gensolver'" not in res.stdout and 'pip install "gensolver"' not in res.stdout
    # and the check can fail: with the extra present, no hint at all
    assert "gensolver[solvers]" not in gensolver(wheel_venv, "", "methods", cwd=tmp_path).stdout


#: commands that need no extra: exit 0 with any one left out
CORE = [
    ("methods",),
    ("solve", "{d}/inst.json"),
    ("solve", "{d}/inst.json", "--method", "greedy", "--mechanism", "pay-as-bid"),
    ("plan", "{d}/round.json", "-o", "{t}/p.json"),
    ("run", "{d}/plan.json", "--backend", "sim", "--poll", "0.02"),
    ("emit", "slurm", "{d}/plan.json", "--out", "{t}/slurm", "--node", "n0"),
    ("bench", "smoke", "--methods", "greedy,lp", "--jobs", "1", "--no-plots", "--quiet", "--out", "{t}/b"),
    ("traces", "list"),
]
#: commands that may need one: exit 0, or 3 with the line of the extra left out
ANY = NEEDS + [(("demo", "--out", "{t}/demo"), ""), (("simulate", "synthetic:n=6,seed=1", "-p", "market"), "")]


@pytest.mark.slow
@pytest.mark.parametrize("extra", sorted(HIDE))
def test_every_command_with_each_extra_left_out_exits_0_or_3(wheel_venv: Path, files: Path, tmp_path: Path,
                                                             extra: str) -> None:
    for k, args in enumerate([*CORE, *(a for a, _ in ANY)]):
        if args[0] == "serve" and extra != "service":
            continue  # with its extra, serve serves until stopped
        if "--dask" in args and extra != "dist":
            continue  # with its extra, --dask waits for a scheduler
        t = tmp_path / str(k)
        t.mkdir()
        res = gensolver(wheel_venv, extra, *_args(args, files, t), cwd=t)
        want = (0,) if args in CORE else (0, 3)
        if args[:3] == ("run", "{d}/plan.json", "--backend") and args[3] == "nvml":
            want = (3,)  # no NVIDIA driver here either
        assert res.returncode in want, (args, extra, res.returncode, res.stderr[-2000:])
        assert "Traceback" not in res.stderr, (args, extra, res.stderr[-2000:])
        if res.returncode == 3 and not (args[3:4] == ("nvml",) and extra != "gpu"):
            assert PIP.format(extra) in " ".join(res.stderr.split()), (args, extra, res.stderr)
