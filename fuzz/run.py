"""Run the fuzz harnesses with atheris (libFuzzer, coverage-guided).

Usage::

    python -m fuzz.run --runs 500                 # every harness, 500 inputs each (make test)
    python -m fuzz.run --minutes 30               # the long run: 30 minutes shared by the harnesses
    python -m fuzz.run --harness gpuround --minutes 10
    python -m fuzz.run --replay                   # the corpus only, without atheris

Each harness runs in its own process (libFuzzer exits the process when it ends); new inputs
that reach new code are kept in ``fuzz/corpus/<harness>/`` unless ``--no-save``; a crashing
input is written to ``fuzz/crashes/`` and the command exits 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CRASHES = HERE / "crashes"


def _child(name: str, runs: int | None, seconds: int | None, corpus: Path) -> None:
    """In the child process: instrument gensolver, then hand over to libFuzzer."""
    import atheris

    with atheris.instrument_imports(include=["gensolver"]):
        import gensolver.cli  # noqa: F401  (every module the harnesses reach, instrumented)
        import gensolver.executor  # noqa: F401
        import gensolver.market.spec  # noqa: F401
        import gensolver.sim.faults  # noqa: F401
        import gensolver.sim.workload  # noqa: F401
        import gensolver.traces  # noqa: F401
    from fuzz.harnesses import check

    def one(data: bytes) -> None:
        check(name, data)

    CRASHES.mkdir(exist_ok=True)
    # -detect_leaks=0: libFuzzer's leak check re-runs an input when it saw more mallocs than
    # frees, which under load happens at random and counts towards -runs (llvm-project issue
    # 66331, PR 96914); a Python target's allocator keeps memory anyway, so the check finds nothing
    argv = [sys.argv[0], str(corpus), f"-artifact_prefix={CRASHES}/{name}-", "-rss_limit_mb=2048",
            "-timeout=60", "-max_len=65536", "-detect_leaks=0"]
    if runs is not None:
        argv.append(f"-runs={runs}")
    if seconds is not None:
        argv.append(f"-max_total_time={seconds}")
    atheris.Setup(argv, one)
    atheris.Fuzz()


def replay(names: list[str]) -> int:
    """Every corpus file through its harness, without atheris; the count of files run."""
    from fuzz.harnesses import check

    count = 0
    for name in names:
        for f in sorted((CORPUS / name).glob("*")):
            check(name, f.read_bytes())
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:  # before anything imports gensolver: atheris must instrument it first
        name, unit, value = argv[1], argv[2], argv[3]
        _child(name, int(value) if unit == "--runs" else None,
               max(1, int(float(value) * 60)) if unit == "--minutes" else None,
               Path(os.environ["GENSOLVER_FUZZ_CORPUS"]))
        return 0
    from fuzz.harnesses import HARNESSES

    ap = argparse.ArgumentParser(prog="python -m fuzz.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--harness", action="append", choices=sorted(HARNESSES), help="Only these (repeatable).")
    budget = ap.add_mutually_exclusive_group()
    budget.add_argument("--runs", type=int, help="Inputs per harness (bounded by count, not time).")
    budget.add_argument("--minutes", type=float, help="Total minutes, shared evenly by the harnesses.")
    ap.add_argument("--no-save", action="store_true", help="Do not add new inputs to the corpus.")
    ap.add_argument("--replay", action="store_true", help="Run the corpus through the harnesses, no fuzzing.")
    args = ap.parse_args(argv)
    names = args.harness or sorted(HARNESSES)
    if args.replay:
        print(f"replayed {replay(names)} corpus files")
        return 0
    if args.runs is None and args.minutes is None:
        args.runs = 500
    failed = []
    for name in names:
        seed = CORPUS / name
        seed.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-")) if args.no_save else seed
        if args.no_save:
            for f in seed.iterdir():
                shutil.copy(f, work / f.name)
        cmd = [sys.executable, "-m", "fuzz.run", "--child", name]
        cmd += ["--runs", str(args.runs)] if args.runs is not None else ["--minutes", str(args.minutes / len(names))]
        env = {**os.environ, "GENSOLVER_FUZZ_CORPUS": str(work),
               "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run(cmd, env=env, cwd=HERE.parent)
        if args.no_save:
            shutil.rmtree(work, ignore_errors=True)
        print(f"fuzz {name}: exit {proc.returncode}", flush=True)
        if proc.returncode != 0:
            failed.append(name)
    if failed:
        print(f"crashes in: {', '.join(failed)} (inputs in {CRASHES})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
