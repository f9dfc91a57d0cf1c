#!/usr/bin/env python
"""Fuzz the command line with malformed inputs: no traceback, exit 0 or 2, bounded memory.

A corpus of hostile files is generated on the fly into a temporary folder, then every file is
given to ``gensolver solve``, ``verify`` and ``plan`` (instance-shaped files) or ``simulate``
(GenTask YAML), each run as a child process with a memory cap (``RLIMIT_AS``) and a wall-clock
cap. Shapes (issue 20): deep nesting, huge integers, ``1e308`` values whose sums overflow,
duplicate JSON/YAML keys and CATS headers, byte-order marks, ``.gz`` files that are not gzip
and truncated gzip, JSON scalars (``null``), ids with ESC and other control characters, bombs
bounded in size (gzip of spaces, YAML aliases, CATS headers of 10**11 goods, ``/dev/zero``),
truncations and byte mutations of the bundled instances, GenTask quantities Kubernetes
refuses, and the valid extreme-magnitude instances of ``scripts/fuzz_magnitudes.py`` (which
must be solved, exit 0).

A run passes when it exits 0 or 2 with no ``Traceback`` in its output, within the caps. The
summary table counts, per command, the runs, exit codes, tracebacks, time-outs and the
largest resident memory.

Modes: ``fork`` (default) imports the CLI once and forks a child per run (each child sets its
``RLIMIT_AS`` to the parent's address space plus ``--mem-mb``); ``exec`` runs the installed
``gensolver`` script per run (``RLIMIT_AS`` of ``--mem-mb`` in ``preexec_fn``), about 2 s of
start-up each.

Usage::

    python scripts/fuzz_cli.py                      # >= 1000 inputs, fork mode
    python scripts/fuzz_cli.py --count 200 --mode exec --jobs 2

Exit status 0 when every run passes, 1 otherwise (each failure is printed).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parents[1]
TRACEBACK = "Traceback (most recent call last)"
OK_CODES = (0, 2)


@dataclass(frozen=True)
class Case:
    """One input file and the kinds of command that read it (``instance``, ``large-instance``:
    not verified, or ``gentask``)."""

    name: str
    path: Path
    kind: str
    shape: str


@dataclass
class Outcome:
    """What one run did."""

    case: Case
    command: str
    rc: int | None
    seconds: float
    maxrss_kib: int = 0
    traceback: bool = False
    timed_out: bool = False
    tail: str = ""

    @property
    def ok(self) -> bool:
        return not self.traceback and not self.timed_out and self.rc in OK_CODES


# ----------------------------------------------------------------------------- the corpus
def _doc(n_slots: int = 2, n_bids: int = 3) -> dict:
    return {"schema": "gensolver.instance/v1", "name": "fuzz",
            "slots": [{"id": f"s{k}", "capacity": {"memory": 80, "compute": 1.0}} for k in range(n_slots)],
            "bids": [{"id": f"b{j}", "bidder": f"B{j % 2}", "value": 5 + j,
                      "demand": {f"s{j % n_slots}": {"memory": 30, "compute": 0.5}}} for j in range(n_bids)]}


GENTASK = """apiVersion: scheduling.gen.io/v1alpha1
kind: GenTask
metadata:
  name: {name}
spec:
  genResources:
    gpuMemory:
      preferred: {preferred}
      minRequired: {minimum}
    computeTime:
      duration: {duration}
"""

CATS = "%% fuzz\ngoods 3\nbids 3\ndummy 1\n0 5.0 0 1 3 #\n1 4.0 1 2 3 #\n2 3.5 2 #\n"


def _gzip_of_repeats(unit: bytes, total: int) -> bytes:
    """gzip of ``unit`` repeated to ``total`` bytes, built in chunks (bounded memory)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = unit * max(1, (1 << 20) // len(unit))
    out, done = [], 0
    while done < total:
        piece = chunk[: total - done]
        out.append(comp.compress(piece))
        done += len(piece)
    out.append(comp.flush())
    return b"".join(out)


def _bundled(limit: int = 12) -> list[tuple[str, bytes]]:
    """The bundled smoke/small instances, inflated (name, JSON bytes)."""
    out = []
    for folder in ("smoke", "small"):
        for p in sorted((ROOT / "instances" / folder).glob("*.json.gz"))[:limit]:
            out.append((p.name.split(".")[0], gzip.decompress(p.read_bytes())))
    return out


def _mutations(rng: random.Random, data: bytes, n: int) -> Iterable[tuple[str, bytes]]:
    """``n`` damaged copies of ``data``: truncations, byte flips, deletions, splices, number swaps."""
    swaps = [b"-1", b"1e309", b"NaN", b"Infinity", b"9" * 5000, b"1e308", b"null", b'"x"', b"[]", b"{}", b"true",
             b"-0", b"0.0000000000000000000001", b"\x1b[2J", b"\xff\xfe"]
    for _ in range(n):
        how = rng.choice(["truncate", "flip", "delete", "splice", "number", "number", "key"])
        d = bytearray(data)
        if how == "truncate":
            d = d[: rng.randrange(0, max(1, len(d)))]
        elif how == "flip":
            for _ in range(rng.randint(1, 8)):
                d[rng.randrange(len(d))] = rng.randrange(256)
        elif how == "delete":
            a = rng.randrange(len(d))
            del d[a: a + rng.randint(1, 64)]
        elif how == "splice":
            a = rng.randrange(len(d))
            d[a:a] = rng.choice([b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\x00", "\ufeff".encode()])
        elif how == "number":
            digits = [i for i in range(len(d)) if 48 <= d[i] <= 57]
            if digits:
                a = rng.choice(digits)
                b = a
                while b < len(d) and (48 <= d[b] <= 57 or d[b] in b".eE+-"):
                    b += 1
                d[a:b] = rng.choice(swaps)
        else:  # a key repeated, or renamed to a near miss
            text = bytes(d)
            for key in (b'"memory"', b'"value"', b'"bidder"', b'"id"', b'"capacity"', b'"demand"'):
                if key in text:
                    at = text.index(key)
                    d[at:at + len(key)] = rng.choice([key + b": 1, " + key, key[:-2] + b'x"', b'"' + key.upper()[1:]])
                    break
        yield how, bytes(d)


def generate_corpus(folder: str | os.PathLike[str], *, count: int = 1000, seed: int = 0,
                    bomb_bytes: int = 300 * 2 ** 20, bundled: bool = True) -> list[Case]:
    """Write at least ``count`` hostile files into ``folder``; return the cases.

    ``bomb_bytes`` is what the gzip bombs inflate to (past the default 256 MiB limit, so the
    readers must stop them); a smaller value keeps a quick run quick.
    """
    rng = random.Random(seed)
    base = Path(folder)
    base.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def add(shape: str, kind: str, suffix: str, data: bytes | str) -> None:
        k = len(cases)
        p = base / f"{k:05d}-{shape}{suffix}"
        p.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        cases.append(Case(p.name, p, kind, shape))

    good = json.dumps(_doc())
    # nesting (2)
    for depth in (100, 1000, 10_000, 100_000, 1_000_000):
        for opener, closer in (("[", "]"), ('{"a":', "}"), ('[{"a":', "}]")):
            add("nesting", "instance", ".json", opener * depth)
            add("nesting", "instance", ".json", opener * depth + "1" + closer * depth)
        add("nesting", "instance", ".json", good.replace('"value": 5', '"value": ' + "[" * depth + "]" * depth))
    # huge ints and floats that overflow (2, 3)
    for digits in (20, 308, 309, 400, 401, 4300, 5000, 100_000):
        for field_ in ('"memory": 80', '"value": 5', '"memory": 30'):
            add("big-int", "instance", ".json", good.replace(field_, field_.split(":")[0] + ": " + "9" * digits, 1))
            add("big-int", "instance", ".json", good.replace(field_, field_.split(":")[0] + ": -" + "9" * digits, 1))
    for v in ("1e308", "1.7976931348623157e308", "1e309", "-1e308", "NaN", "Infinity", "-Infinity", "5e-324"):
        doc = _doc(2, 4)
        add("overflow", "instance", ".json", json.dumps(doc).replace('"value": 5', f'"value": {v}')
            .replace('"value": 6', f'"value": {v}').replace('"value": 7', f'"value": {v}'))
        add("overflow", "instance", ".json", json.dumps(doc).replace('"memory": 30', f'"memory": {v}'))
        add("overflow", "instance", ".json", json.dumps(doc).replace('"memory": 80', f'"memory": {v}'))
        add("overflow", "instance", ".txt", f"goods 2\nbids 2\n0 {v} 0 #\n1 {v} 1 #\n")
    # duplicates (5)
    for key, repl in (('"memory": 80', '"memory": 80, "memory": 1'), ('"schema"', '"schema": "x", "schema"'),
                      ('"bids"', '"bids": [], "bids"'), ('"id": "b0"', '"id": "b0", "id": "b9"')):
        add("duplicate", "instance", ".json", good.replace(key, repl, 1))
    for header in ("goods 3", "bids 3", "dummy 1"):
        add("duplicate", "instance", ".txt", CATS.replace(header, f"{header}\n{header}"))
        add("duplicate", "instance", ".txt", CATS.replace(header, f"{header}\n{header.split()[0]} 7"))
    # BOMs, wrong gzip, scalars (6)
    for body in (good, CATS):
        add("bom", "instance", ".json", "\ufeff" + body)
        add("bom", "instance", ".txt", "\ufeff" + body)
        add("bom", "instance", ".json", body.encode("utf-16"))
        add("not-gzip", "instance", ".json.gz", body)
        gz = gzip.compress(body.encode())
        for cut in (2, 10, len(gz) // 2, len(gz) - 4, len(gz) - 1):
            add("truncated-gzip", "instance", ".json.gz", gz[:cut])
        add("gzip-garbage", "instance", ".json.gz", gz + b"garbage")
        add("gzip-of-gzip", "instance", ".json.gz", gzip.compress(gz))
        add("gzip-members", "instance", ".json.gz", gzip.compress(body[:20].encode()) + gzip.compress(body[20:].encode()))
    for scalar in ("null", "true", "false", "42", "-1", "1e999", '"text"', "[]", "{}", "[null]", "", " \n\t ", "\ufeff"):
        add("scalar", "instance", ".json", scalar)
        add("scalar", "instance", ".txt", scalar)
    # ids with control characters (7)
    for bad in ("\x1b[31mred", "\x1b]0;title\x07", "\x9b2J", "a\u202eb", "\x00", "a\rb", "\x7f", "a\nb"):
        doc = _doc()
        doc["bids"][0]["id"] = bad
        doc["bids"][1]["bidder"] = bad
        doc["name"] = bad
        add("escape-id", "instance", ".json", json.dumps(doc))
        doc["slots"][0]["id"] = bad
        add("escape-id", "instance", ".json", json.dumps(doc))
        add("escape-id", "gentask", ".yaml", GENTASK.format(name=json.dumps(bad), preferred="8Gi", minimum="4Gi",
                                                            duration="2m"))
    # bombs bounded in size (4)
    add("gzip-bomb", "instance", ".json.gz", _gzip_of_repeats(b" ", bomb_bytes))
    add("gzip-bomb", "instance", ".json.gz", _gzip_of_repeats(b"[", bomb_bytes))
    add("gzip-bomb", "instance", ".txt.gz", _gzip_of_repeats(b"% comment\n", bomb_bytes))
    for goods in ("99999999999", "1000001", "9" * 40):
        add("cats-bomb", "instance", ".txt", f"goods {goods}\nbids 1\n0 1.0 0 #\n")
        add("cats-bomb", "instance", ".txt", f"goods 2\nbids 1\ndummy {goods}\n0 1.0 0 #\n")
        add("cats-bomb", "instance", ".txt", f"goods 2\nbids {goods}\n0 1.0 0 #\n")
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]" for k in range(1, 10)]
    add("yaml-bomb", "gentask", ".yaml", GENTASK.format(name="t0", preferred="8Gi", minimum="4Gi", duration="2m")
        + "\n".join("  " + ln for ln in levels) + "\n")
    add("yaml-bomb", "gentask", ".yaml", "\n".join(levels) + "\n")
    add("yaml-nesting", "gentask", ".yaml", "[" * 100_000)
    add("yaml-nesting", "gentask", ".yaml", "a:\n" + "".join(" " * k + "- \n" for k in range(1, 3000)))
    cases.append(Case("dev-zero", Path("/dev/zero"), "instance", "dev-zero"))
    # GenTask quantities and fields (1, 5)
    quantities = ["16G", "16Gi", "16GB", "16g", "16GiB", "500m", "1.1Ki", "-1Gi", "0", "1e400", "9" * 100, "lots", "",
                  "16 Gi", "0x10", "1E", "1e3", "∞", "null", "[8Gi]", "{a: 1}", "'8Gi'", "8Gi # c"]
    durations = ["2m", "1h30m", "-5m", "1e309", "99999999999h", "x", "0", "1.5", "[]"]
    for q in quantities:
        add("gentask-quantity", "gentask", ".yaml", GENTASK.format(name="t0", preferred=q, minimum="1Gi", duration="2m"))
        add("gentask-quantity", "gentask", ".yaml", GENTASK.format(name="t0", preferred="8Gi", minimum=q, duration="2m"))
    for dur in durations:
        add("gentask-duration", "gentask", ".yaml", GENTASK.format(name="t0", preferred="8Gi", minimum="4Gi", duration=dur))
    ok_task = GENTASK.format(name="t0", preferred="8Gi", minimum="4Gi", duration="2m")
    add("gentask-duplicate", "gentask", ".yaml", ok_task.replace("  name: t0", "  name: t0\n  name: t1"))
    add("gentask-duplicate", "gentask", ".yaml", ok_task + "---\n" + ok_task)
    add("gentask-bom", "gentask", ".yaml", "\ufeff" + ok_task)
    add("gentask-binary", "gentask", ".yaml", b"\xff\xfe\x00garbage")
    for how, data in _mutations(rng, ok_task.encode(), 60):
        add(f"gentask-{how}", "gentask", ".yaml", data)
    # the magnitude fuzz's instances: valid, extreme magnitudes (must exit 0)
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import fuzz_magnitudes
        import numpy as np

        mrng = np.random.default_rng(seed)
        for _ in range(40):
            inst = fuzz_magnitudes.instance(mrng)
            add("magnitudes", "instance", ".json", json.dumps(inst.to_dict()))
    finally:
        sys.path.pop(0)
    # truncations and mutations of the bundled instances, plain and gzip, fill up to ``count``
    sources = _bundled() if bundled else []
    sources += [("doc", good.encode()), ("cats", CATS.encode())]
    k = 0
    while len(cases) < count:
        name, data = sources[k % len(sources)]
        k += 1
        for how, mutated in _mutations(rng, data, 1):
            zipped = rng.random() < 0.3
            # a bundled instance is large enough that verify's many solves take minutes whatever
            # the damage: these are solved and planned, not verified
            kind = "instance" if name in ("doc", "cats") else "large-instance"
            add(f"mutate-{how}", kind, ".json.gz" if zipped else (".txt" if name == "cats" else ".json"),
                gzip.compress(mutated) if zipped else mutated)
    return cases


def sample(cases: list[Case], n: int, *, seed: int = 0) -> list[Case]:
    """``n`` cases spread over the shapes: one of each shape first (in a seeded order), then more."""
    rng = random.Random(seed)
    by: dict[str, list[Case]] = {}
    for c in cases:
        by.setdefault(c.shape, []).append(c)
    for group in by.values():
        rng.shuffle(group)
    out: list[Case] = []
    while len(out) < min(n, len(cases)):
        for group in by.values():
            if group and len(out) < n:
                out.append(group.pop())
    return out


# ----------------------------------------------------------------------------- running
def argv_for(case: Case, command: str, out_dir: Path) -> list[str]:
    """The gensolver arguments for ``command`` on ``case``."""
    f = str(case.path)
    if command == "solve":
        return ["solve", f, "--method", "greedy"]
    if command == "solve-auto":
        return ["solve", f, "--time-limit", "1", "--json"]
    if command == "verify":
        return ["verify", f, "--mechanism", "vcg", "--per-run-limit", "1", "--families", "scale"]
    if command == "plan":
        return ["plan", f, "--method", "greedy", "--output", str(out_dir / f"{case.name}.plan.json")]
    if command == "simulate":
        return ["simulate", f, "--policy", "fcfs-packing", "--gpus", "80,40"]
    raise ValueError(command)


COMMANDS = {"instance": ("solve", "solve-auto", "verify", "plan"), "large-instance": ("solve", "solve-auto", "plan"),
            "gentask": ("simulate",)}


def _vm_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_forked(argv: list[str], *, mem_bytes: int, timeout: float) -> tuple[int | None, str, float, int, bool]:
    """``main(argv)`` in a forked child capped at the parent's address space plus ``mem_bytes``.

    Returns (exit status or None if killed, output, seconds, max RSS in KiB, timed out).
    """
    from gensolver.cli import main

    cap = _vm_bytes() + mem_bytes
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child
            rc = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
                rc = main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - what the real script would print
                traceback.print_exc()
                rc = 1
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(rc)
        timed_out = False
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() - t0 > timeout:
                os.kill(pid, signal.SIGKILL)
                done, status, usage = os.wait4(pid, 0)
                timed_out = True
                break
            time.sleep(0.005)
        seconds = time.monotonic() - t0
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return (None if rc < 0 else rc), text, seconds, usage.ru_maxrss, timed_out


def run_exec(argv: list[str], *, mem_bytes: int, timeout: float) -> tuple[int | None, str, float, int, bool]:
    """The installed ``gensolver`` script with ``RLIMIT_AS`` of ``mem_bytes`` (``preexec_fn``)."""
    script = Path(sys.executable).parent / "gensolver"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))

    t0 = time.monotonic()
    proc = subprocess.Popen([str(script), *argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=limit)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        timed_out = True
    _, _, usage = os.wait4(proc.pid, os.WNOHANG) if proc.returncode is None else (0, 0, resource.getrusage(
        resource.RUSAGE_CHILDREN))
    rc = proc.returncode
    return (None if rc is None or rc < 0 else rc), out.decode("utf-8", "replace"), time.monotonic() - t0, \
        usage.ru_maxrss, timed_out


def run_inprocess(argv: list[str]) -> tuple[int | None, str, float, int, bool]:
    """``main(argv)`` in this process (no memory cap), for the unit test."""
    from gensolver.cli import main

    buf = io.StringIO()
    t0 = time.monotonic()
    with redirect_stdout(buf), redirect_stderr(buf):
        try:
            rc: int | None = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001
            traceback.print_exc(file=buf)
            rc = 1
    return rc, buf.getvalue(), time.monotonic() - t0, 0, False


def fuzz(cases: list[Case], runner: Callable[[list[str]], tuple[int | None, str, float, int, bool]], *,
         out_dir: Path, commands: dict[str, tuple[str, ...]] = COMMANDS,
         on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every case through every command of its kind."""
    outcomes = []
    for case in cases:
        for command in commands.get(case.kind, ()):
            rc, text, seconds, rss, timed_out = runner(argv_for(case, command, out_dir))
            o = Outcome(case, command, rc, seconds, rss, TRACEBACK in text, timed_out, text[-600:])
            outcomes.append(o)
            if on_outcome is not None:
                on_outcome(o)
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    """A plain-text table: per command, runs, exit codes, tracebacks, time-outs, max RSS."""
    rows = [("command", "runs", "exit 0", "exit 2", "other exit", "tracebacks", "time-outs", "max RSS MiB",
             "max s", "total s")]
    by: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by.setdefault(o.command, []).append(o)
    by["all"] = outcomes
    for name, group in by.items():
        rows.append((name, str(len(group)), str(sum(o.rc == 0 for o in group)), str(sum(o.rc == 2 for o in group)),
                     str(sum(o.rc not in OK_CODES for o in group)), str(sum(o.traceback for o in group)),
                     str(sum(o.timed_out for o in group)), f"{max((o.maxrss_kib for o in group), default=0) / 1024:.0f}",
                     f"{max((o.seconds for o in group), default=0):.1f}", f"{sum(o.seconds for o in group):.0f}"))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000, help="inputs in the corpus (at least)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", choices=("fork", "exec"), default="fork")
    ap.add_argument("--mem-mb", type=int, default=2048, help="memory cap of each run (MiB)")
    ap.add_argument("--timeout", type=float, default=60.0, help="wall-clock cap of each run (s)")
    ap.add_argument("--keep", type=Path, default=None, help="write the corpus here (default: a temporary folder)")
    ap.add_argument("--commands", nargs="+", default=None, help="subset of: solve solve-auto verify plan simulate")
    args = ap.parse_args(argv)
    commands = {k: tuple(c for c in v if args.commands is None or c in args.commands) for k, v in COMMANDS.items()}
    if args.mode == "fork":  # import everything a command may need, once, before forking
        import gensolver.cli  # noqa: F401
        import gensolver.executor  # noqa: F401
        import gensolver.market  # noqa: F401
        import gensolver.mechanisms  # noqa: F401
        import gensolver.sim  # noqa: F401
        import gensolver.solvers.auto  # noqa: F401
        import gensolver.verify  # noqa: F401

        def runner(a: list[str]):  # noqa: ANN202
            return run_forked(a, mem_bytes=args.mem_mb << 20, timeout=args.timeout)
    else:
        def runner(a: list[str]):  # noqa: ANN202
            return run_exec(a, mem_bytes=args.mem_mb << 20, timeout=args.timeout)

    with tempfile.TemporaryDirectory(prefix="gensolver-fuzz-") as tmp:
        folder = args.keep or Path(tmp) / "corpus"
        t0 = time.monotonic()
        cases = generate_corpus(folder, count=args.count, seed=args.seed)
        print(f"{len(cases)} inputs generated in {time.monotonic() - t0:.1f} s into {folder}", flush=True)
        failures: list[Outcome] = []
        seen = [0]

        def report(o: Outcome) -> None:
            seen[0] += 1
            if not o.ok:
                failures.append(o)
                print(f"FAIL {o.command} {o.case.name}: exit {o.rc}, traceback {o.traceback}, timed out {o.timed_out}\n"
                      f"    {o.tail[-400:]!r}", flush=True)
            if seen[0] % 250 == 0:
                print(f"... {seen[0]} runs", flush=True)

        out_dir = Path(tmp) / "out"
        out_dir.mkdir()
        outcomes = fuzz(cases, runner, out_dir=out_dir, commands=commands, on_outcome=report)
    shapes = sorted({c.shape.split("-")[0] for c in cases})
    print(f"\n{len(cases)} inputs ({', '.join(shapes)}), {len(outcomes)} runs, mode {args.mode}, "
          f"cap {args.mem_mb} MiB{' above the parent' if args.mode == 'fork' else ''}, {args.timeout:g} s each")
    print(summary(outcomes))
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
