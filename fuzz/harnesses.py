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


def _json_doc(data: bytes) -> object:
    """The strict JSON reader's document, or ``None`` when it refuses the text cleanly."""
    from gensolver.model.inputs import loads_json

    try:
        return loads_json(_text(data))
    except ValueError as exc:  # JSONDecodeError is the reader's message, not a crash
        if not isinstance(exc, GensolverError) and type(exc).__name__ != "JSONDecodeError":
            raise
        return None


def roundtrip(data: bytes) -> None:
    """Any instance the reader accepts survives every writer unchanged: ``to_dict``, the JSON and
    gzip files, canonical order, and CATS text when it is single-unit (CATS renames bids, so
    there the bids' values and bundle sizes must match)."""
    from gensolver.model import format_cats, from_dict, parse_cats, read_instance, write_instance
    from gensolver.model.canonical import canonical, is_canonical

    doc = _json_doc(data[1:])
    if not isinstance(doc, dict):
        return
    inst = from_dict(doc)
    d = inst.to_dict()
    if from_dict(d).to_dict() != d:
        raise AssertionError("from_dict(to_dict(x)) changed the instance")
    path = write_instance(inst, _DIR / ("rt.json", "rt.json.gz")[data[0] % 2 if data else 0])
    if read_instance(path).to_dict() != d:
        raise AssertionError(f"{path.name}: the written file reads back different")
    c = canonical(inst)
    if not is_canonical(c) or sorted((b.id, b.bidder, b.value) for b in c.bids) \
            != sorted((b.id, b.bidder, b.value) for b in inst.bids):
        raise AssertionError("canonical() is not canonical or lost bids")
    try:
        text = format_cats(inst)
    except GensolverError:  # not single-unit: CATS cannot express it, refused by name
        return
    back = parse_cats(text, name="roundtrip")
    if sorted(b.value for b in back.bids) != sorted(b.value for b in inst.bids) or back.n_slots < inst.n_slots:
        raise AssertionError("CATS text reads back different values or goods")


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
    """The trace readers and their options: the first byte picks the reader (``% 4``) and the
    options (``// 4``: a window, a job cap, a node/model/cluster selection, ``gpu_only``); the
    rest is the CSV text (for the Alibaba folder, the nodes and the pods split at a blank line)."""
    from gensolver.traces import read_alibaba, read_alibaba_nodes, read_alibaba_pods, read_philly
    from gensolver.traces.readers import ALIBABA_NODE_FILE, ALIBABA_POD_FILE

    which, opt = (data[0] % 4, data[0] // 4) if data else (0, 0)
    window = (float(opt % 5), float(opt % 5 + 1000 * (opt % 3))) if opt & 1 else None
    max_jobs = opt % 5 if opt & 2 else None  # 0 is refused by name
    body = data[1:]
    if which == 0:
        read_philly(_file(body, "trace.csv"), window=window, max_jobs=max_jobs,
                    clusters=["0", "philly"][: opt % 3] if opt & 4 else None)
    elif which == 1:
        read_alibaba_pods(_file(body, "trace.csv"), window=window, max_jobs=max_jobs, gpu_only=not opt & 8,
                          model_gpus={"V100M16": 2.0, "T4": float(opt % 3)} if opt & 4 else None)
    elif which == 2:
        read_alibaba_nodes(_file(body, "trace.csv"), nodes=opt % 4 if opt & 4 else None,
                           models=["T4", "P100"][: opt % 3] if opt & 8 else None)
    else:
        folder = _DIR / "alibaba"
        folder.mkdir(exist_ok=True)
        nodes, _, pods = body.partition(b"\n\n")
        (folder / ALIBABA_NODE_FILE).write_bytes(nodes)
        (folder / ALIBABA_POD_FILE).write_bytes(pods)
        read_alibaba(folder, window=window, max_jobs=max_jobs, nodes=opt % 4 if opt & 4 else None,
                     gpu_only=not opt & 8)


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
    "roundtrip": roundtrip,
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
