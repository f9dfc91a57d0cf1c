"""Readers for the public GPU cluster traces in ``shared/traces/``.

- :func:`read_alibaba_pods`, :func:`read_alibaba_nodes`, :func:`read_alibaba`: Alibaba's
  heterogeneous GPU-sharing cluster (Weng et al., ATC 2023 [1]_).
- :func:`read_philly`: Microsoft Philly (Jeon et al., ATC 2019 [2]_).

Every reader returns frozen records (:class:`~gensolver.traces.TraceJob`,
:class:`~gensolver.traces.TraceNode`) sorted by arrival, models the GPU memory the trace lacks
(see :mod:`gensolver.traces.records`), supports scaling options (``window``, ``max_jobs``,
``nodes``) and raises :class:`~gensolver.traces.TraceError` naming the file and line of a bad
row.

References
----------
.. [1] Q. Weng et al. "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
   Fragmentation Gradient Descent", USENIX ATC 2023.
.. [2] M. Jeon et al. "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
   Workloads", USENIX ATC 2019.
"""

from __future__ import annotations

import csv
import math
import numbers
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..errors import InputError, check_seed
from ..model.inputs import ReadError, iter_lines_limited
from .records import (
    ALIBABA_MODEL_GPUS,
    GPU_MODEL_MEMORY_GIB,
    TraceError,
    TraceJob,
    TraceNode,
    min_memory,
    philly_preferred_memory,
)

__all__ = [
    "AlibabaTrace",
    "read_alibaba",
    "read_alibaba_pods",
    "read_alibaba_nodes",
    "read_philly",
    "ALIBABA_POD_FILE",
    "ALIBABA_NODE_FILE",
]

ALIBABA_POD_FILE = "openb_pod_list_default.csv"
ALIBABA_NODE_FILE = "openb_node_list_gpu_node.csv"
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
               "pod_phase", "creation_time", "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
#: Sanity bounds on GPU counts read from a trace (far above any real cluster; a larger value is
#: a corrupt row, not a workload): GPUs per node, GPUs per job/pod.
MAX_NODE_GPUS = 1024
MAX_JOB_GPUS = 65536


# ------------------------------------------------------------------------------ argument checks
def _check_path(arg: str, path: object) -> Path:
    if isinstance(path, (bytes, bytearray)) or not isinstance(path, (str, os.PathLike)):
        raise InputError(f"{arg} must be a path (str or os.PathLike), got {type(path).__name__} {path!r}")
    return Path(path)


def _check_bool(arg: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{arg} must be True or False, got {value!r}")
    return bool(value)


def _check_names(arg: str, value: object) -> list[str] | None:
    """``None`` or a sequence of str; a bare string is rejected (it would be read as characters)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise InputError(f"{arg} must be a sequence of str (e.g. [{value!r}]), not a bare string")
    try:
        items = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise InputError(f"{arg} must be a sequence of str or None, got {value!r}") from None
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise InputError(f"{arg} must hold only str, got {bad[0]!r}")
    return items


def _check_nodes(nodes: object) -> int | list[str] | None:
    if nodes is None:
        return None
    if isinstance(nodes, numbers.Integral) and not isinstance(nodes, (bool, np.bool_)):
        if nodes < 0:
            raise InputError(f"nodes must be non-negative, got {nodes}")
        return int(nodes)
    if isinstance(nodes, (str, bytes)):
        raise InputError("nodes must be an int or a sequence of node ids, not a string")
    if isinstance(nodes, (bool, np.bool_, numbers.Number)):
        raise InputError(f"nodes must be a non-negative integer or a sequence of node ids, got {nodes!r}")
    return _check_names("nodes", nodes)


def _rows(path: Path, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line, row)`` of a CSV file whose header must contain ``columns``.

    Bounded: ``GENSOLVER_MAX_FILE_BYTES`` in all and :data:`~gensolver.model.inputs.MAX_LINE_BYTES`
    a line (``/dev/zero``, a FIFO); work and memory linear in the file's bytes.
    """
    name = str(path)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise TraceError(name, None, "no such file") from None
    except IsADirectoryError:
        raise TraceError(name, None, "is a directory") from None
    except OSError as exc:  # a name too long, no permission, ...
        raise TraceError(name, None, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        try:  # a BOM (spreadsheet exports) is not part of the header
            yield from _csv_rows(name, iter_lines_limited(fh), columns)
        except ReadError as exc:
            raise TraceError(name, None, str(exc)) from None


def _csv_rows(name: str, lines: Iterator[str], columns: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.reader(lines, strict=True)  # strict: an unterminated quote is an error, not data
    try:
        header = next(reader)
    except StopIteration:
        raise TraceError(name, 1, "empty file (no header)") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise TraceError(name, 1, f"unreadable header: {exc}") from None
    header = [h.strip() for h in header]
    repeated = [c for c in columns if header.count(c) > 1]
    if repeated:
        raise TraceError(name, 1, f"header repeats column {repeated[0]!r}")
    missing = [c for c in columns if c not in header]
    if missing:
        raise TraceError(name, 1, f"header lacks column(s) {', '.join(missing)}; expected {','.join(columns)}")
    pos = {c: header.index(c) for c in columns}
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            raise TraceError(name, reader.line_num, f"unreadable row: {exc}") from None
        line = reader.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise TraceError(name, line, f"expected {len(header)} fields, got {len(row)}")
        yield line, {c: row[i].strip() for c, i in pos.items()}


def _num(path: Path, line: int, row: dict[str, str], col: str, *, integer: bool = False,
         optional: bool = False, minimum: float = 0.0,
         maximum: float | None = None) -> float | None:
    text = row[col]
    if text == "":
        if optional:
            return None
        raise TraceError(str(path), line, f"column {col!r} is empty")
    try:
        val = float(text)
    except ValueError:
        raise TraceError(str(path), line, f"column {col!r}: not a number: {text!r}") from None
    if not math.isfinite(val):
        raise TraceError(str(path), line, f"column {col!r}: not finite: {text!r}")
    if integer and val != int(val):
        raise TraceError(str(path), line, f"column {col!r}: not an integer: {text!r}")
    if val < minimum:
        raise TraceError(str(path), line, f"column {col!r}: must be >= {minimum:g}, got {text!r}")
    if maximum is not None and val > maximum:
        raise TraceError(str(path), line, f"column {col!r}: must be <= {maximum:g}, got {text!r}")
    return val


def _check_scaling(window: tuple[float, float] | None, max_jobs: int | None) -> None:
    if window is not None:
        ok = (not isinstance(window, (str, bytes)) and hasattr(window, "__len__") and hasattr(window, "__getitem__")
              and len(window) == 2
              and all(isinstance(w, numbers.Real) and not isinstance(w, (bool, np.bool_)) and math.isfinite(w)
                      for w in window)
              and window[0] <= window[1])
        if not ok:
            raise InputError(f"window must be (start_s, end_s) with start_s <= end_s, got {window!r}")
    if max_jobs is not None and (isinstance(max_jobs, (bool, np.bool_)) or not isinstance(max_jobs, numbers.Integral)
                                 or max_jobs < 0):
        raise InputError(f"max_jobs must be a non-negative integer or None, got {max_jobs!r}")


def _select(jobs: list[TraceJob], window: tuple[float, float] | None, max_jobs: int | None) -> tuple[TraceJob, ...]:
    jobs.sort(key=lambda j: (j.arrival_s, j.line))
    if window is not None:
        jobs = [j for j in jobs if window[0] <= j.arrival_s < window[1]]
    if max_jobs is not None:
        jobs = jobs[:max_jobs]
    return tuple(jobs)


# ------------------------------------------------------------------------------ Alibaba
def read_alibaba_nodes(
    path: str | os.PathLike[str],
    *,
    nodes: int | Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> tuple[TraceNode, ...]:
    """Read Alibaba's GPU node list (``openb_node_list_gpu_node.csv``) [1]_.

    Parameters
    ----------
    path : path-like
        The CSV file (columns ``sn,cpu_milli,memory_mib,gpu,model``).
    nodes : int or sequence of str, optional, keyword-only
        Keep only the first ``nodes`` nodes (file order, after ``models``) or the nodes with
        these ids (in file order; an unknown id is an error).
    models : sequence of str, optional
        Keep only nodes of these GPU models (a sequence: a bare string is rejected).

    Returns
    -------
    tuple of TraceNode

    Raises
    ------
    TraceError
        Missing file, bad header, a malformed row or an unknown GPU model (names file and line).
    ValueError
        Bad options.

    References
    ----------
    .. [1] Q. Weng et al. "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
       Fragmentation Gradient Descent", USENIX ATC 2023.
    """
    p = _check_path("path", path)
    nodes = _check_nodes(nodes)
    models = _check_names("models", models)
    out: list[TraceNode] = []
    seen: set[str] = set()
    for line, row in _rows(p, NODE_COLUMNS):
        sn = row["sn"]
        if not sn:
            raise TraceError(str(p), line, "column 'sn' is empty")
        if sn in seen:
            raise TraceError(str(p), line, f"duplicate node {sn!r}")
        seen.add(sn)
        model = row["model"]
        if model not in GPU_MODEL_MEMORY_GIB:
            raise TraceError(str(p), line, f"unknown GPU model {model!r}; known: {', '.join(GPU_MODEL_MEMORY_GIB)}")
        gpus = int(_num(p, line, row, "gpu", integer=True, maximum=MAX_NODE_GPUS))  # type: ignore[arg-type]
        cpu = int(_num(p, line, row, "cpu_milli", integer=True))  # type: ignore[arg-type]
        mem = int(_num(p, line, row, "memory_mib", integer=True))  # type: ignore[arg-type]
        out.append(TraceNode(sn, gpus, model, GPU_MODEL_MEMORY_GIB[model], cpu, mem, line))
    if models is not None:
        unknown = sorted(set(models) - set(GPU_MODEL_MEMORY_GIB))
        if unknown:
            raise InputError(f"unknown GPU model(s) {unknown}; known: {', '.join(GPU_MODEL_MEMORY_GIB)}")
        out = [n for n in out if n.gpu_model in set(models)]
    if nodes is None:
        return tuple(out)
    if isinstance(nodes, int):
        return tuple(out[:nodes])
    by_id = {n.id: n for n in out}
    missing = [n for n in nodes if n not in by_id]
    if missing:
        raise InputError(f"unknown node id(s): {missing[:5]}")
    wanted = set(nodes)
    return tuple(n for n in out if n.id in wanted)


def read_alibaba_pods(
    path: str | os.PathLike[str],
    *,
    seed: int = 0,
    model_gpus: Mapping[str, float] | None = None,
    window: tuple[float, float] | None = None,
    max_jobs: int | None = None,
    gpu_only: bool = True,
) -> tuple[TraceJob, ...]:
    """Read Alibaba's pod list (``openb_pod_list_default.csv``) [1]_ into :class:`TraceJob`.

    Parameters
    ----------
    path : path-like
        The CSV file (``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
        creation_time,deletion_time,scheduled_time``).
    seed : int, keyword-only
        Seed of the memory model (GPU model assignment and elasticity draws); a non-negative
        integer (``None`` is rejected: the result must be reproducible).
    model_gpus : mapping, optional
        Weights of the GPU models a pod may be assigned (default: the cluster's GPU counts,
        :data:`~gensolver.traces.records.ALIBABA_MODEL_GPUS`). A pod whose ``gpu_spec`` names
        models (``A|B``) gets the smallest-memory one of them instead.
    window : (float, float), optional
        Keep pods with ``window[0] <= arrival_s < window[1]``.
    max_jobs : int, optional
        Keep at most this many pods (earliest arrivals first, after ``window``).
    gpu_only : bool
        Drop pods with ``num_gpu == 0`` (default). Must be a bool.

    Returns
    -------
    tuple of TraceJob
        Sorted by arrival. ``arrival_s`` is ``creation_time``; ``duration_s`` is
        ``deletion_time - scheduled_time`` (``- creation_time`` for a pod never scheduled);
        memory is modelled per :mod:`gensolver.traces.records`.

    Raises
    ------
    TraceError
        A malformed row (e.g. a non-numeric field, ``gpu_milli`` outside ``0..1000``, a
        deletion before creation), naming the file and line.
    """
    _check_scaling(window, max_jobs)
    seed = check_seed(seed)
    gpu_only = _check_bool("gpu_only", gpu_only)
    weights = _model_weights(model_gpus)
    p = _check_path("path", path)
    parsed = []
    for line, row in _rows(p, POD_COLUMNS):
        name = row["name"]
        if not name:
            raise TraceError(str(p), line, "column 'name' is empty")
        num_gpu = int(_num(p, line, row, "num_gpu", integer=True, maximum=MAX_JOB_GPUS))  # type: ignore[arg-type]
        milli = _num(p, line, row, "gpu_milli", integer=True)
        assert milli is not None
        if milli > 1000:
            raise TraceError(str(p), line, f"column 'gpu_milli' must be in 0..1000, got {row['gpu_milli']!r}")
        if num_gpu > 0 and milli == 0:
            raise TraceError(str(p), line, "a GPU pod (num_gpu > 0) with gpu_milli 0")
        created = _num(p, line, row, "creation_time")
        deleted = _num(p, line, row, "deletion_time")
        scheduled = _num(p, line, row, "scheduled_time", optional=True)
        assert created is not None and deleted is not None
        start = created if scheduled is None else scheduled
        if scheduled is not None and scheduled < created:
            raise TraceError(str(p), line, f"scheduled_time {row['scheduled_time']} before creation_time {row['creation_time']}")
        if deleted < start:
            raise TraceError(str(p), line, f"deletion_time {row['deletion_time']} before start {start:g}")
        spec = [s for s in row["gpu_spec"].split("|") if s]
        bad = [s for s in spec if s not in GPU_MODEL_MEMORY_GIB]
        if bad:
            raise TraceError(str(p), line, f"unknown GPU model {bad[0]!r} in gpu_spec")
        cpu = int(_num(p, line, row, "cpu_milli", optional=True) or 0)
        mem = int(_num(p, line, row, "memory_mib", optional=True) or 0)
        parsed.append((line, name, row, num_gpu, milli / 1000.0, created, deleted - start, spec, cpu, mem))
    # one draw per row in file order, whatever the filters keep
    rng = np.random.default_rng(seed)
    n = len(parsed)
    names = sorted(weights)
    prob = np.array([weights[m] for m in names], dtype=np.float64)
    assigned = rng.choice(len(names), size=n, p=prob / prob.sum()) if n else np.zeros(0, dtype=int)
    frac_draw = rng.uniform(0.0, 1.0, size=n)
    jobs: list[TraceJob] = []
    for k, (line, name, row, num_gpu, frac, created, duration, spec, cpu, mem) in enumerate(parsed):
        if gpu_only and num_gpu == 0:
            continue
        model = min(spec, key=lambda s: GPU_MODEL_MEMORY_GIB[s]) if spec else names[int(assigned[k])]
        if num_gpu == 0:
            pref = mn = 0.0
        else:
            pref = round(frac * GPU_MODEL_MEMORY_GIB[model], 3)
            mn = float(min_memory(np.array([pref]), _FixedUniform(frac_draw[k]))[0])  # type: ignore[arg-type]
        jobs.append(TraceJob(name, float(created), float(duration), num_gpu, frac if num_gpu else 0.0,
                             pref, mn, "alibaba", model if num_gpu else "", row["qos"], row["pod_phase"],
                             cpu, mem, line))
    return _select(jobs, window, max_jobs)


def _model_weights(model_gpus: Any) -> dict[str, float]:
    """The GPU model draw's weights: ``model_gpus`` checked, or Alibaba's node mix by default."""
    if model_gpus is not None and not isinstance(model_gpus, Mapping):
        raise InputError(f"model_gpus must be a mapping of GPU model to weight, got {model_gpus!r}")
    weights = dict(ALIBABA_MODEL_GPUS if model_gpus is None else model_gpus)
    unknown = sorted(set(weights) - set(GPU_MODEL_MEMORY_GIB))
    if any(isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Real) or not math.isfinite(w)
           for w in weights.values()):
        raise InputError(f"model_gpus weights must be finite numbers, got {weights!r}")
    if unknown or not weights or sum(weights.values()) <= 0 or min(weights.values()) < 0:
        raise InputError(f"model_gpus must map known models ({', '.join(GPU_MODEL_MEMORY_GIB)}) to non-negative weights, got {weights!r}")
    return weights


class _FixedUniform:
    """Adapter giving :func:`min_memory` a pre-drawn U[0, 1] value (one draw per row)."""

    def __init__(self, u: float) -> None:
        self.u = float(u)

    def uniform(self, lo: float, hi: float, size: tuple[int, ...]) -> np.ndarray:
        return np.full(size, lo + (hi - lo) * self.u)


@dataclass(frozen=True)
class AlibabaTrace:
    """Pods and nodes of the Alibaba trace (see :func:`read_alibaba`)."""

    jobs: tuple[TraceJob, ...]
    nodes: tuple[TraceNode, ...]

    @property
    def gpus(self) -> int:
        """Total GPUs of the selected nodes."""
        return sum(n.gpus for n in self.nodes)


def read_alibaba(
    directory: str | os.PathLike[str],
    *,
    seed: int = 0,
    window: tuple[float, float] | None = None,
    max_jobs: int | None = None,
    nodes: int | Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    gpu_only: bool = True,
) -> AlibabaTrace:
    """Read the Alibaba GPU trace directory (pods and nodes) [1]_.

    The pods' GPU models are drawn in proportion to the GPUs of each model among the selected
    nodes, so a node subset yields pods that fit it.

    Parameters
    ----------
    directory : path-like
        Holds ``openb_pod_list_default.csv`` and ``openb_node_list_gpu_node.csv``.
    seed, window, max_jobs, gpu_only
        As in :func:`read_alibaba_pods`.
    nodes, models
        As in :func:`read_alibaba_nodes`.

    Returns
    -------
    AlibabaTrace

    References
    ----------
    .. [1] Q. Weng et al. "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
       Fragmentation Gradient Descent", USENIX ATC 2023.
    """
    d = _check_path("directory", directory)
    if d.exists() and not d.is_dir():
        raise TraceError(str(d), None, "not a directory (expected the Alibaba trace folder)")
    _check_scaling(window, max_jobs)
    check_seed(seed)
    _check_bool("gpu_only", gpu_only)
    node_list = read_alibaba_nodes(d / ALIBABA_NODE_FILE, nodes=nodes, models=models)
    weights: dict[str, float] = {}
    for n in node_list:
        weights[n.gpu_model] = weights.get(n.gpu_model, 0.0) + n.gpus
    weights = {m: w for m, w in weights.items() if w > 0}
    if not weights:
        raise InputError("the node selection has no GPUs")
    jobs = read_alibaba_pods(d / ALIBABA_POD_FILE, seed=seed, model_gpus=weights, window=window,
                             max_jobs=max_jobs, gpu_only=gpu_only)
    return AlibabaTrace(jobs, node_list)


# ------------------------------------------------------------------------------ Philly
def read_philly(
    path: str | os.PathLike[str],
    *,
    seed: int = 0,
    window: tuple[float, float] | None = None,
    max_jobs: int | None = None,
    clusters: Sequence[str] | None = None,
) -> tuple[TraceJob, ...]:
    """Read the Philly trace (``philly.csv``: ``timestamp,duration,num_gpus,gpu_time,cluster``) [2]_.

    Parameters
    ----------
    path : path-like
    seed : int, keyword-only
        Seed of the memory model (:mod:`gensolver.traces.records`: log-normal preferred memory
        by gang size, elasticity draw for the minimum); a non-negative integer.
    window : (float, float), optional
        Keep jobs with ``window[0] <= arrival_s < window[1]``; ``arrival_s`` counts seconds
        from the earliest ``timestamp`` in the file (all rows, before any filter;
        timestamps are read as UTC so that no daylight-saving shift distorts gaps).
    max_jobs : int, optional
        Keep at most this many jobs (earliest first, after the other filters).
    clusters : sequence of str, optional
        Keep only jobs of these virtual clusters (a sequence: a bare string is rejected).

    Returns
    -------
    tuple of TraceJob
        Sorted by arrival; ``gpu_fraction`` is 1 (whole GPUs); ids are ``philly-<line>``.

    Raises
    ------
    TraceError
        A malformed row (bad timestamp, non-numeric or negative duration, ``num_gpus`` outside
        ``1..MAX_JOB_GPUS``), a repeated header column or an unterminated quote, naming the file
        and line.
    ValueError
        Bad options (naming the argument; a bare string for ``clusters`` is rejected).

    References
    ----------
    .. [2] M. Jeon et al. "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
       Workloads", USENIX ATC 2019.
    """
    _check_scaling(window, max_jobs)
    seed = check_seed(seed)
    clusters = _check_names("clusters", clusters)
    p = _check_path("path", path)
    parsed = []
    for line, row in _rows(p, PHILLY_COLUMNS):
        try:
            ts = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            raise TraceError(str(p), line, f"column 'timestamp': expected 'YYYY-MM-DD HH:MM:SS', got {row['timestamp']!r}") from None
        duration = _num(p, line, row, "duration")
        gpus = _num(p, line, row, "num_gpus", integer=True, minimum=1, maximum=MAX_JOB_GPUS)
        parsed.append((line, ts, float(duration), int(gpus), row["cluster"]))  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    counts = np.array([r[3] for r in parsed], dtype=np.int64)
    pref = philly_preferred_memory(counts, rng)
    mins = min_memory(pref, rng)
    origin = min((r[1] for r in parsed), default=0.0)
    wanted = None if clusters is None else set(clusters)
    jobs = [
        TraceJob(f"philly-{line}", ts - origin, dur, gpus, 1.0, float(pref[k]), float(mins[k]), "philly",
                 group=cluster, line=line)
        for k, (line, ts, dur, gpus, cluster) in enumerate(parsed)
        if wanted is None or cluster in wanted
    ]
    return _select(jobs, window, max_jobs)
