"""The fuzz targets: each takes bytes and must return, or raise a ``GensolverError``.

Anything else (a ``KeyError``, an ``OverflowError``, a ``UnicodeEncodeError`` from printing,
a CLI exit status other than 0, 1 or 2) is a crash: the fuzzer stops and writes the input.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path
from typing import Callable

from gensolver.errors import GensolverError

__all__ = ["HARNESSES", "check"]

_DIR = Path(tempfile.mkdtemp(prefix="gensolver-fuzz-"))


def _file(data: bytes, name: str) -> Path:
    p = _DIR / name
    p.write_bytes(data)
    return p


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def instance_file(data: bytes) -> None:
    from gensolver.model import read_instance

    suffix = (".json", ".cats", ".json.gz", "")[data[0] % 4] if data else ".json"
    read_instance(_file(data[1:], "in" + suffix))


def instance_json(data: bytes) -> None:
    from gensolver.model import from_dict
    from gensolver.model.inputs import loads_json

    try:
        doc = loads_json(_text(data))
    except ValueError as exc:  # JSONDecodeError is the reader's message, not a crash
        if not isinstance(exc, GensolverError) and type(exc).__name__ != "JSONDecodeError":
            raise
        return
    if isinstance(doc, dict):
        from_dict(doc)


def cats_text(data: bytes) -> None:
    from gensolver.model.io import parse_cats

    parse_cats(_text(data), name="fuzz")


def gpuround(data: bytes) -> None:
    from gensolver.model import GpuRound
    from gensolver.model.inputs import loads_json

    try:
        doc = loads_json(_text(data))
    except ValueError as exc:
        if not isinstance(exc, GensolverError) and type(exc).__name__ != "JSONDecodeError":
            raise
        return
    rnd = GpuRound.from_dict(doc)
    if rnd.expansion_size() < 20_000:  # keep an iteration short; the size model is what is fuzzed
        rnd.expand()


def plan(data: bytes) -> None:
    from gensolver.executor import read_plan

    read_plan(_file(data, "plan.json"))


def gentask_yaml(data: bytes) -> None:
    from gensolver.market.spec import load_gentasks

    load_gentasks(_file(data, "tasks.yaml"))


def traces(data: bytes) -> None:
    from gensolver.traces import read_alibaba_nodes, read_alibaba_pods, read_philly

    which = data[0] % 3 if data else 0
    f = _file(data[1:], "trace.csv")
    (read_philly, read_alibaba_pods, read_alibaba_nodes)[which](f)


def strings(data: bytes) -> None:
    """The small parsers of option values: quantities, faults, synthetic specs."""
    from gensolver.model.quantity import parse_memory_bytes, parse_quantity
    from gensolver.sim.faults import parse_fault
    from gensolver.sim.workload import parse_synthetic

    text = _text(data[1:])
    kind = data[0] % 4 if data else 0
    if kind == 0:
        parse_quantity(text)
    elif kind == 1:
        parse_memory_bytes(text)
    elif kind == 2:
        parse_fault(text)
    elif len(text) < 200:  # synthetic workloads are bounded by GENSOLVER_MAX_TASKS, set low below
        parse_synthetic("synthetic:" + text)


def cli_solve(data: bytes) -> None:
    """``gensolver solve FILE`` in process: exit 0 or 2, never an exception."""
    from gensolver.cli import main

    f = _file(data, "cli.json")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["solve", str(f), "--method", "greedy"])
    if rc not in (0, 2) or "Traceback" in err.getvalue():
        raise AssertionError(f"solve exited {rc}: {err.getvalue()[-500:]}")
    out.getvalue().encode("utf-8")  # what a UTF-8 terminal would have to write


#: harness name -> target
HARNESSES: dict[str, Callable[[bytes], None]] = {
    "instance_file": instance_file,
    "instance_json": instance_json,
    "cats_text": cats_text,
    "gpuround": gpuround,
    "plan": plan,
    "gentask_yaml": gentask_yaml,
    "traces": traces,
    "strings": strings,
    "cli_solve": cli_solve,
}

#: small limits while fuzzing: a refusal by name is a pass, and an iteration stays short
FUZZ_LIMITS = {"GENSOLVER_MAX_FILE_BYTES": "1000000", "GENSOLVER_MAX_INFLATED_BYTES": "1000000",
               "GENSOLVER_MAX_TASKS": "2000", "GENSOLVER_MAX_CATS_GOODS": "5000",
               "GENSOLVER_MAX_ROUND_ENTRIES": "200000", "GENSOLVER_MAX_MEMORY_LEVELS": "64"}


def check(name: str, data: bytes) -> None:
    """Run harness ``name`` on ``data``: a :class:`GensolverError` is a clean refusal."""
    for key, value in FUZZ_LIMITS.items():
        os.environ.setdefault(key, value)
    try:
        HARNESSES[name](data)
    except GensolverError:
        pass
