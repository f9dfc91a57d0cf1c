"""SIGTERM at a random moment: ``bench``, ``run``, ``simulate`` and ``serve``, many times each.

Each trial starts the real command line (``python -c "from gensolver.cli import main; ..."``) in a
session of its own and in a fresh folder, waits a random delay (seeded: ``--seed``) drawn over the
command's lifetime (``--window``), sends SIGTERM, and checks:

- **status**: 143 (the command's handler ran); or killed by SIGTERM outside it, before its handler was
  installed (interpreter start-up, imports: nothing started yet) or after the command returned and
  restored the default (interpreter shutdown, its output already whole) -- Python reports -15, a shell
  143; or 0 when the command had already finished;
- **left**: no process of the command is alive once it has exited and its session has drained
  (bounded wait): its session, every descendant seen just before the signal, and every task process
  ``run`` ever launched (they record their pids; they run in sessions of their own);
- **torn**: every JSON-lines journal (``bench``'s ``cells.jsonl``, ``run``'s ``--journal``) ends with
  a newline and every line parses; ``simulate --out``'s folder is absent (removed on the way out) or
  holds a whole ``results.json``; ``serve``'s SQLite database passes ``PRAGMA integrity_check``.

Run: ``python benchmarks/stress_sigterm.py`` (20 trials per command, about 10 minutes on two busy
cores); ``--runs 3 --commands bench,run`` for a short one. Prints a Markdown table and exits 1 when a
trial fails a check. ``tests/cli/test_signal_stress.py`` runs a bounded version.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("bench", "run", "simulate", "serve")
#: seconds over which the signal's moment is drawn, per command: about its lifetime on a loaded machine
WINDOW = {"bench": 10.0, "run": 8.0, "simulate": 10.0, "serve": 8.0}
WAIT = 120.0  # bound on the command's exit and its session's draining, not an expected duration

#: a task of the ``run`` plan: records its pid, then sleeps far past the plan's end
_TASK = "import os, sys, time; open(sys.argv[1], 'a').write(f'{os.getpid()}\\n'); time.sleep(600)"


@dataclass
class Outcome:
    """One trial's result."""

    command: str
    delay: float
    status: int | None = None
    #: "handler" (exit 143), "before handler" / "after handler" (killed by SIGTERM during start-up, or
    #: during shutdown after its work was written), "finished" (exit 0 before the signal), "hung"
    kind: str = ""
    left: list[int] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    stderr: str = ""  # the last line the command wrote on stderr

    @property
    def ok(self) -> bool:
        return self.kind in ("handler", "before handler", "after handler", "finished") and not (self.left or self.torn)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _argv(command: str, work: Path) -> list[str]:
    """The ``gensolver`` arguments of ``command`` in folder ``work`` (files it needs written there)."""
    if command == "bench":
        return ["bench", "smoke", "-m", "greedy,lp", "-t", "5", "-o", str(work / "out"), "-q", "--no-plots"]
    if command == "simulate":
        return ["simulate", "synthetic:n=150,seed=1", "-p", "market", "--out", str(work / "out")]
    if command == "serve":
        return ["serve", "--host", "127.0.0.1", "--port", str(_free_port()), "--db", str(work / "db.sqlite")]
    if command == "run":
        cmd = [sys.executable, "-c", _TASK, str(work / "task-pids")]
        entries = [{"task": f"t{k}", "start": 2.0 * k, "end": 2.0 * k + 50.0, "memory": 1 << 30, "compute": 0.25,
                    "command": cmd} for k in range(3)]
        doc = {"schema": "gensolver.plan/v1", "name": "stress", "time_unit": "s", "horizon": 60.0,
               "devices": [{"id": "g0", "memory": 1 << 34, "compute": 1.0, "entries": entries}],
               "tasks": [{"id": e["task"], "bid": e["task"], "value": 1.0, "preemptible": True, "command": cmd}
                         for e in entries],
               "preemptions": [], "metadata": {}}
        (work / "plan.json").write_text(json.dumps(doc))
        return ["run", str(work / "plan.json"), "-b", "sim", "--time-scale", "0.1", "--poll", "0.02",
                "--journal", str(work / "run.jsonl")]
    raise ValueError(f"unknown command {command!r}; valid: {', '.join(COMMANDS)}")


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) > 1 and fields[0] != b"Z":
                kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def _descendants(pid: int) -> set[int]:
    kids, found, todo = _children(), set(), [pid]
    while todo:
        for c in kids.get(todo.pop(), ()):
            found.add(c)
            todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


def _session(sid: int) -> set[int]:
    out = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.getsid(int(name)) == sid and _alive(int(name)):
                    out.add(int(name))
            except OSError:
                pass
    return out


def _done(command: str, work: Path) -> bool:
    """Whether the command's last output is there, whole: it had finished its work."""
    try:
        json.loads((work / "out" / "results.json").read_text())
    except (OSError, ValueError):
        return False
    return command in ("bench", "simulate")


def _torn(command: str, work: Path, status: int | None) -> list[str]:
    """What is half-written in ``work`` after the command ended (see the module docstring)."""
    bad = []
    for path in sorted(work.rglob("*.jsonl")):
        text = path.read_text(errors="replace")
        if text and not text.endswith("\n"):
            bad.append(f"{path.name}: torn last line")
        for k, line in enumerate(text.splitlines()):
            try:
                json.loads(line)
            except ValueError:
                bad.append(f"{path.name}:{k + 1}: not JSON")
                break
    out = work / "out"
    if command == "simulate" and out.exists():
        res = out / "results.json"
        try:
            json.loads(res.read_text())
        except (OSError, ValueError):
            bad.append(f"simulate --out left without a whole results.json (status {status})")
    db = work / "db.sqlite"
    if command == "serve" and db.exists():
        try:
            with sqlite3.connect(db) as con:
                row = con.execute("PRAGMA integrity_check").fetchone()
            if row is None or row[0] != "ok":
                bad.append(f"db.sqlite: integrity_check {row}")
        except sqlite3.DatabaseError as exc:
            bad.append(f"db.sqlite: {exc}")
    return bad


def trial(command: str, delay: float, work: Path, *, program: list[str] | None = None,
          ready: Callable[[], bool] | None = None, wait: float = WAIT) -> Outcome:
    """Start ``command`` in ``work``, SIGTERM it after ``delay`` seconds, and check what it left
    (``program``: another argv to run instead of ``gensolver``, and ``ready``: an event to wait
    for before the signal, to show that the checks can fail; ``wait``: the bound on the exit and on
    the session's draining)."""
    out = Outcome(command, delay)
    code = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    argv = program if program is not None else [sys.executable, "-c", code, *_argv(command, work)]
    errfile = work / "stderr.txt"  # a file, not a pipe: a process left behind would hold a pipe open
    with open(errfile, "wb") as errf:
        proc = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=errf,
                                start_new_session=True)
    try:
        time.sleep(delay)  # the random moment itself (a benchmark: the checks hold at any moment)
        deadline = time.monotonic() + wait
        while ready is not None and not ready() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        finished = proc.poll() is not None
        had = _descendants(proc.pid)
        if not finished:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            out.kind = "hung"
            return out
        err = errfile.read_text(errors="replace")
        out.stderr = (err.strip().splitlines() or [""])[-1][:300]
        out.status = proc.returncode
        out.kind = ("finished" if finished and proc.returncode == 0 else
                    "handler" if proc.returncode == 143 and "Traceback" not in err else
                    "before handler" if proc.returncode == -signal.SIGTERM else f"status {proc.returncode}")
        if out.kind == "before handler" and _done(command, work):
            out.kind = "after handler"  # the command had returned; the interpreter was shutting down
        pids = work / "task-pids"
        tasks = {int(p) for p in pids.read_text().split()} if pids.exists() else set()
        deadline = time.monotonic() + wait
        while True:  # the resource tracker exits by itself once the command has gone: an event, bounded
            left = sorted(p for p in had | tasks | _session(proc.pid) if _alive(p))
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        out.left = left
        out.torn = _torn(command, work, out.status)
        return out
    finally:
        for pid in (_session(proc.pid) | set(out.left)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def stress(commands: tuple[str, ...], runs: int, seed: int, *, scale: float = 1.0,
           report: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """``runs`` trials of each command, at moments drawn from ``random.Random(seed)``."""
    rng = random.Random(seed)
    plan = [(c, rng.uniform(0.0, WINDOW[c] * scale)) for c in commands for _ in range(runs)]
    results = []
    for command, delay in plan:
        with tempfile.TemporaryDirectory(prefix=f"stress-{command}-") as tmp:
            res = trial(command, delay, Path(tmp))
        results.append(res)
        if report is not None:
            report(res)
    return results


def table(results: list[Outcome]) -> str:
    rows = ["| command | trials | 143 (handler) | SIGTERM at start-up | SIGTERM at shutdown | finished first | "
            "left alive | torn | failed |", "|---|---|---|---|---|---|---|---|---|"]
    for c in dict.fromkeys(r.command for r in results):
        rs = [r for r in results if r.command == c]
        rows.append(f"| {c} | {len(rs)} | {sum(r.kind == 'handler' for r in rs)} | "
                    f"{sum(r.kind == 'before handler' for r in rs)} | {sum(r.kind == 'after handler' for r in rs)} | "
                    f"{sum(r.kind == 'finished' for r in rs)} | "
                    f"{sum(len(r.left) for r in rs)} | {sum(len(r.torn) for r in rs)} | {sum(not r.ok for r in rs)} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="Trials per command (default 20).")
    ap.add_argument("--seed", type=int, default=0, help="Seed of the signals' moments.")
    ap.add_argument("--commands", default=",".join(COMMANDS), help="Comma-separated subset of " + ", ".join(COMMANDS))
    ap.add_argument("--window", type=float, default=1.0, help="Scale of the moments' windows (1: "
                    + ", ".join(f"{k} {v:g} s" for k, v in WINDOW.items()) + ").")
    args = ap.parse_args(argv)
    commands = tuple(c for c in args.commands.split(",") if c)
    bad = [c for c in commands if c not in COMMANDS]
    if bad or args.runs < 1 or not args.window > 0:
        ap.error(f"--commands: one of {', '.join(COMMANDS)}; --runs >= 1; --window > 0")

    def show(r: Outcome) -> None:
        extra = f" left {r.left}" if r.left else ""
        extra += f" torn {r.torn}" if r.torn else ""
        extra += f" stderr: {r.stderr}" if not r.ok and r.stderr else ""
        print(f"{r.command:9s} signal at {r.delay:6.2f} s: {r.kind} (status {r.status}){extra}", flush=True)

    t0 = time.monotonic()
    results = stress(commands, args.runs, args.seed, scale=args.window, report=show)
    print()
    print(table(results))
    print(f"\n{len(results)} trials in {time.monotonic() - t0:.0f} s; load average {os.getloadavg()[0]:.1f}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
