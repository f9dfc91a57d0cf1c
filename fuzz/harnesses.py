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
from typing import Any, Callable

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
    """``read_instance`` on a file named ``.json``, ``.cats``, ``.json.gz`` or nothing (``% 4``);
    ``// 4 % 4``: that file, a missing one, a folder, or the file under a 64-byte limit
    (``GENSOLVER_MAX_FILE_BYTES``), which must refuse it by name exactly when it is larger."""
    from gensolver.model import read_instance
    from gensolver.model.inputs import ReadError

    suffix = (".json", ".cats", ".json.gz", "")[data[0] % 4] if data else ".json"
    where = data[0] // 4 % 4 if data else 0
    path = _file(data[1:], "in" + suffix)
    if where == 1:
        path = _DIR / "missing.json"
    elif where == 2:
        path = _DIR
    if where != 3:
        read_instance(path)
        return
    old = os.environ.get("GENSOLVER_MAX_FILE_BYTES")
    os.environ["GENSOLVER_MAX_FILE_BYTES"] = "64"
    try:
        read_instance(path)
    except GensolverError as exc:
        if len(data) - 1 > 64 and "64" not in str(exc):
            raise AssertionError(f"a {len(data) - 1}-byte file over a 64-byte limit refused with {exc}") from None
        if len(data) - 1 > 64 and not isinstance(exc.__cause__ or exc, (ReadError, GensolverError)):
            raise
    else:
        if len(data) - 1 > 64:
            raise AssertionError(f"a {len(data) - 1}-byte file read under a 64-byte limit")
    finally:
        if old is None:
            os.environ.pop("GENSOLVER_MAX_FILE_BYTES", None)
        else:
            os.environ["GENSOLVER_MAX_FILE_BYTES"] = old


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
    _instance_views(inst, doc)
    try:
        text = format_cats(inst)
    except GensolverError:  # not single-unit: CATS cannot express it, refused by name
        return
    back = parse_cats(text, name="roundtrip")
    if sorted(b.value for b in back.bids) != sorted(b.value for b in inst.bids) or back.n_slots < inst.n_slots:
        raise AssertionError("CATS text reads back different values or goods")
    from gensolver.model.io import read_cats, write_cats

    cats = write_cats(inst, _DIR / ("rt.cats", "rt.txt.gz")[data[0] // 2 % 2 if data else 0])
    if {**read_cats(cats).to_dict(), "name": ""} != {**back.to_dict(), "name": ""}:
        raise AssertionError(f"{cats.name}: the CATS file reads back other than its text")


def _instance_views(inst: Any, doc: dict[str, Any]) -> None:
    """The instance's derived views against the document it was read from: each bidder's first
    bid's value (welfare), the bids left without a bidder, the XOR matrix (one 1 per bid, in its
    bidder's row), the slot order; the JSON-safe form dumps without NaN."""
    import json

    from gensolver.model.io import json_safe

    bids = [b for b in doc.get("bids", []) if isinstance(b, dict)]
    if len(bids) != inst.n_bids:
        raise AssertionError("bids lost or added")
    first: dict[str, Any] = {}
    for b in inst.bids:
        first.setdefault(b.bidder, b)
    want = sum(float(b.value) for b in first.values())
    got = inst.welfare_of([b.id for b in first.values()])
    if abs(got - want) > 1e-9 * max(1.0, abs(want)):
        raise AssertionError(f"welfare_of {got} != {want}")
    if first:
        gone = next(iter(first))
        rest = inst.without_bidder(gone)
        if sorted(b.id for b in rest.bids) != sorted(b.id for b in inst.bids if b.bidder != gone):
            raise AssertionError(f"without_bidder({gone!r}) kept other bids")
        again = inst.bids[0].rebid("again", gone, 1.0)
        if again.demand != inst.bids[0].demand:
            raise AssertionError("rebid changed the demand")
    xor = inst.xor_matrix.toarray()
    if xor.shape != (inst.n_bidders, inst.n_bids) or not (xor.sum(axis=0) == 1).all():
        raise AssertionError("the XOR matrix does not hold one 1 per bid")
    if [inst.slot_index[sl.id] for sl in inst.slots] != list(range(inst.n_slots)):
        raise AssertionError("slot_index is not the slot order")
    if len(inst.row_labels) != len(inst.capacity):
        raise AssertionError("a capacity row without a label")
    json.dumps(json_safe(inst.to_dict()), allow_nan=False)
    repr(inst)


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
    if GpuRound.from_dict(rnd.to_dict()).to_dict() != rnd.to_dict():
        raise AssertionError("GpuRound.from_dict(to_dict()) changed the round")
    if rnd.expansion_size() < 20_000:  # keep an iteration short; the size model is what is fuzzed
        rnd.expand(bidder="tenant" if len(data) % 2 else "task")


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


def fetch(data: bytes) -> None:
    """A hostile download: the served file is the input (through a ``file:`` mirror), and the first
    byte sets its table entry: the size right, one byte short or one long (``% 3``), the checksum
    right, wrong or absent (``// 3 % 3``), a second fetch (``& 16``: ``present`` unless forced,
    ``& 32``), an unknown trace name (``& 192 == 64``), a file missing on the mirror (``& 192 ==
    192``). The file is written, whole, exactly when it is there and its size and checksum match,
    and a refused download leaves nothing in the folder."""
    import hashlib
    import shutil
    import warnings

    from gensolver.traces.fetch import FetchError, TraceFile, TraceSource, UnknownTraceError, fetch_trace

    mode, body = (data[0], data[1:]) if data else (0, b"")
    mirror = _DIR / "mirror"
    (mirror / "toy").mkdir(parents=True, exist_ok=True)
    served = mirror / "toy" / "toy.csv"
    served.unlink(missing_ok=True)
    missing = mode & 192 == 192
    if not missing:
        served.write_bytes(body)
    size = max(0, len(body) + (0, -1, 1)[mode % 3])
    sha = (hashlib.sha256(body).hexdigest(), "0" * 64, None)[mode // 3 % 3]
    table = {"toy": TraceSource("toy", "toy", (TraceFile("toy.csv", "unused:", size, sha),), "", "")}
    dest = _DIR / "fetched"
    shutil.rmtree(dest, ignore_errors=True)
    ok = size == len(body) and sha != "0" * 64 and not missing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "unverified"
        try:
            got = fetch_trace("other" if mode & 192 == 64 else "toy", dest, mirror=mirror.as_uri(), sources=table)
        except FetchError:
            got = None
        except UnknownTraceError as exc:
            if mode & 192 != 64 or "'other'" not in str(exc) or "toy" not in str(exc):
                raise AssertionError(f"unknown trace refused with {exc}") from None
            return
        if mode & 192 == 64:
            raise AssertionError(f"an unknown trace name was fetched: {got}")
        if (got is not None) != ok:
            raise AssertionError(f"size {size} of {len(body)}, sha {sha}, missing {missing}: "
                                 f"{'accepted' if got else 'refused'}")
        left = sorted(p.name for p in (dest / "toy").iterdir())
        if left != (["toy.csv"] if ok else []) or (ok and (dest / "toy" / "toy.csv").read_bytes() != body):
            raise AssertionError(f"the folder holds {left} after {'an accepted' if ok else 'a refused'} download")
        if ok and mode & 16:
            again = fetch_trace("toy", dest, mirror=mirror.as_uri(), sources=table, force=bool(mode & 32),
                                progress=lambda f, st: None)
            want = "present" if sha is not None and not mode & 32 else "downloaded"
            if not again["toy.csv"].startswith(want):
                raise AssertionError(f"a second fetch says {again}, expected {want}")


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


_SPECIAL: dict[str, Callable[[], object]] = {
    "$nan": lambda: float("nan"), "$inf": lambda: float("inf"), "$-inf": lambda: float("-inf"),
    "$big": lambda: 10 ** 400, "$-big": lambda: -(10 ** 400), "$np": lambda: __import__("numpy").int64(3),
    "$npbool": lambda: __import__("numpy").bool_(True), "$bytes": lambda: b"T4", "$object": object,
    "$set": lambda: {"T4"}, "$path": lambda: _DIR / "missing", "$dir": lambda: _DIR,
}


def _python(value: object) -> object:
    """A JSON value with the values JSON cannot spell put in: ``"$nan"``, ``"$big"`` (10**400),
    ``"$np"`` (a NumPy integer), ``"$bytes"``, ``"$set"``, ``"$path"`` (a missing file)..."""
    if isinstance(value, str) and value in _SPECIAL:
        return _SPECIAL[value]()
    if isinstance(value, list):
        return [_python(v) for v in value]
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    return value


_NODES = b"sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,8,V100M16\nn2,32000,131072,2,T4\n"
_PODS = (b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         b"scheduled_time\np1,1000,2048,1,500,,LS,Running,0,100,5\np2,1000,2048,2,1000,T4,BE,Failed,10,90,12\n")
_PHILLY = b"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-03 10:00:00,3600,2,7200,vc1\n"


def api(data: bytes) -> None:
    """The Python API's argument checks: a JSON document (with :func:`_python`'s values) gives the
    arguments of the function the first byte picks (``% 7``): the quantity parsers, ``Task`` and
    ``GpuRound`` built directly, the trace readers' options and paths, ``coerce_instance`` (what
    ``gensolver.solve`` takes), the tolerance helpers, the bounded readers and their limits from
    the environment. Each must return or raise a ``GensolverError``; what is accepted must survive
    its writer (``Task.to_dict``, ``GpuRound.to_dict``) or equal its input (the bounded reads)."""
    doc = _json_doc(data[1:])
    if doc is None:
        return
    arg = _python(doc)
    opts: dict[str, Any] = arg if isinstance(arg, dict) else {"value": arg}
    pick = data[0] % 7 if data else 0
    if pick == 0:
        from gensolver.model.quantity import memory_has_unit, parse_memory_bytes, parse_quantity

        memory_has_unit(opts.get("value"))
        parse_quantity(opts.get("value"))
        parse_memory_bytes(opts.get("value"))
    elif pick == 1:
        from gensolver.model.tasks import Task

        fields = {"id": "t", "preferred_memory": 8.0, "min_memory": 4.0, "duration": 3, "value": 1.0}
        fields.update({k: v for k, v in opts.items() if k in Task.__dataclass_fields__})
        task = Task(**fields)  # type: ignore[arg-type]
        d = task.to_dict()
        if Task(**{**d, "command": tuple(d["command"])}) != task:
            raise AssertionError("Task(**to_dict()) is another task")
    elif pick == 2:
        from gensolver.model.tasks import GpuRound, GpuSpec, Task

        def build(kind: Any, value: object, base: dict[str, object]) -> Any:
            if not isinstance(value, dict):
                return value  # refused by name: not a GpuSpec / Task
            return kind(**{**base, **{k: v for k, v in value.items() if k in kind.__dataclass_fields__}})

        gpus = opts.get("gpus", [{}])
        tasks = opts.get("tasks", [{}])
        rnd = GpuRound(
            gpus=tuple(build(GpuSpec, g, {"id": "g0", "memory": 16.0})
                       for g in (gpus if isinstance(gpus, list) else [gpus])),
            tasks=tuple(build(Task, t, {"id": "t", "preferred_memory": 8.0, "min_memory": 4.0, "duration": 2,
                                        "value": 1.0}) for t in (tasks if isinstance(tasks, list) else [tasks])),
            **{k: v for k, v in opts.items() if k in ("steps", "step_seconds", "memory_levels", "name", "budgets")}
            | ({} if "steps" in opts else {"steps": 4}))  # type: ignore[arg-type]
        if GpuRound.from_dict(rnd.to_dict()).to_dict() != rnd.to_dict():
            raise AssertionError("GpuRound.from_dict(to_dict()) changed the round")
        if rnd.expansion_size() < 20_000:
            rnd.expand(bidder=opts.get("bidder", "task"))  # type: ignore[arg-type]
    elif pick == 3:
        _readers(opts)
    elif pick == 6:
        _bounded(opts)
    elif pick == 4:
        from gensolver.model.validate import coerce_instance

        coerce_instance(opts.get("bids"), opts.get("slots"), opts.get("bidders"))
    else:
        from gensolver.model import tolerances as tol

        for name in ("capacity_slack", "capacity_limit", "boundary_guard", "payment_tolerance"):
            value = opts.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e300:
                getattr(tol, name)(value)
        demands = opts.get("demands")
        if isinstance(demands, list) and all(isinstance(d, (int, float)) and not isinstance(d, bool)
                                             for d in demands) and isinstance(opts.get("cap"), (int, float)):
            tol.row_fits(demands, opts["cap"])


def _bounded(opts: dict[str, Any]) -> None:
    """The bounded reads (:mod:`gensolver.model.inputs`): ``text`` written to a file, read whole
    under ``limit``, its head, its lines under ``limit`` and ``max_line``; ``env``: the value of
    ``GENSOLVER_MAX_FILE_BYTES`` meanwhile. What is returned is the input, or a prefix of it."""
    from gensolver.model import inputs

    text, limit, max_line = opts.get("text", ""), opts.get("limit"), opts.get("max_line", 64)
    if not isinstance(text, str) or not (limit is None or type(limit) is int and 0 <= limit < 1 << 20) \
            or not (type(max_line) is int and 0 < max_line < 1 << 20):
        return
    data = text.encode("utf-8", errors="surrogateescape")
    path = _file(data, "bounded.txt")
    env = opts.get("env")
    old = os.environ.get("GENSOLVER_MAX_FILE_BYTES")
    if isinstance(env, str) and "\0" not in env:
        os.environ["GENSOLVER_MAX_FILE_BYTES"] = env
    try:
        cap = inputs.max_file_bytes() if limit is None else limit
        try:
            got = inputs.read_limited(path, limit=limit)
            if got != data or len(data) > cap:
                raise AssertionError(f"read_limited returned {len(got)} of {len(data)} bytes under a limit of {cap}")
        except inputs.ReadError:
            if len(data) <= cap:
                raise AssertionError(f"{len(data)} bytes refused under a limit of {cap}") from None
        if not data.startswith(inputs.read_head(path, size=max_line)):
            raise AssertionError("read_head is not a prefix")
        with open(path, "rb") as fh:
            try:
                lines = "".join(inputs.iter_lines_limited(fh, limit=limit, max_line=max_line))
            except UnicodeDecodeError:
                return
        if lines.encode() != data.removeprefix(b"\xef\xbb\xbf"):
            raise AssertionError("the lines read are not the file")
    finally:
        if old is None:
            os.environ.pop("GENSOLVER_MAX_FILE_BYTES", None)
        else:
            os.environ["GENSOLVER_MAX_FILE_BYTES"] = old


def _readers(opts: dict[str, Any]) -> None:
    """The trace readers with ``opts`` as their options (``path``: a file, a missing one, a folder)."""
    from gensolver.traces import read_alibaba, read_alibaba_nodes, read_alibaba_pods, read_philly

    folder = _DIR / "alibaba-api"
    folder.mkdir(exist_ok=True)
    (folder / "openb_node_list_gpu_node.csv").write_bytes(_NODES)
    (folder / "openb_pod_list_default.csv").write_bytes(_PODS)
    which = opts.get("reader", "nodes")
    keys = {"nodes": ("nodes", "models"), "pods": ("seed", "model_gpus", "window", "max_jobs", "gpu_only"),
            "philly": ("seed", "window", "max_jobs", "clusters"),
            "folder": ("seed", "window", "max_jobs", "nodes", "models", "gpu_only")}.get(str(which), ())
    kw: dict[str, Any] = {k: (tuple(v) if k == "window" and isinstance(v, list) else v)
                          for k, v in opts.items() if k in keys}
    default = {"nodes": folder / "openb_node_list_gpu_node.csv", "pods": folder / "openb_pod_list_default.csv",
               "philly": _file(_PHILLY, "philly.csv"), "folder": folder}.get(str(which))
    path: Any = opts.get("path", default)
    if which == "nodes":
        got = read_alibaba_nodes(path, **kw)
        if path == default and not kw and sum(n.gpus for n in got) != 10:  # _NODES lists 8 + 2 GPUs
            raise AssertionError(f"{sum(n.gpus for n in got)} GPUs read of the 10 listed")
    elif which == "pods":
        read_alibaba_pods(path, **kw)
    elif which == "philly":
        read_philly(path, **kw)
    elif which == "folder":
        trace = read_alibaba(path, **kw)
        if path == default and not 0 < trace.gpus <= 10:  # _NODES lists 8 + 2 GPUs
            raise AssertionError(f"{trace.gpus} GPUs selected from the 10 listed")
        for job in trace.jobs:
            if job.end_s < job.arrival_s or job.gpu_seconds < 0:
                raise AssertionError(f"job {job}: ends before it arrives, or negative GPU time")


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
    "fetch": fetch,
    "api": api,
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
