"""Trace replay: Alibaba 2023 (fractional GPUs) and Philly (whole GPUs) as :class:`Workload`.

Both use the readers of :mod:`gensolver.traces` (and their documented GPU-memory model) and
scale the replay so that it fits a laptop:

- **window** ``(t0, t1)`` seconds of arrivals, and ``max_jobs``;
- **nodes**: a subset of the cluster (Alibaba: ``nodes`` nodes sampled across GPU models in
  proportion to their GPU counts, or explicit ids; Philly: ``nodes`` synthetic 8-GPU nodes);
- **compress**: arrival gaps are divided by this factor (more load on fewer nodes);
- **step_seconds** and **max_duration** (steps): durations become
  ``min(max_duration, max(1, ceil(duration_s / step_seconds)))`` steps (truncation is counted
  in ``info['truncated']``).

Mapping to :class:`~gensolver.model.tasks.Task` (documented assumptions):

- Alibaba: ``compute = gpu_fraction``, memory per GPU from the trace model; tenant = ``qos``;
  ``LS`` and ``Guaranteed`` pods are non-preemptible with urgency 0.8, ``BE`` and ``Burstable``
  preemptible with urgency 0.4. GPUs: the selected nodes' GPUs (``<node>/g<k>``).
- Philly: whole-GPU jobs of ``num_gpus`` GPUs (gangs above 8 are capped at 8, counted in
  ``info['capped']``), ``compute = 1`` (a training job uses its device), memory per GPU from the
  trace model; tenant = virtual cluster; preemptible; urgency 0.5. GPUs: ``nodes`` nodes of 8
  GPUs of ``gpu_memory`` GiB (24 GiB: Philly's P40s [2]_).
- Both: ``value = duration * preferred * gpus / 10`` credits, elasticity 1.
- Alibaba pods whose ``gpu_spec`` names GPU models run only on those models
  (:attr:`Workload.gpu_models`; a pod whose models are absent from the selected nodes is
  rejected at arrival, never placed elsewhere).

References
----------
.. [1] Q. Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
   Fragmentation Gradient Descent", USENIX ATC 2023.
.. [2] M. Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
   Workloads", USENIX ATC 2019.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Sequence

from ..model.inputs import iter_lines_limited, read_head
from ..model.tasks import GpuSpec, Task
from .workload import Workload, WorkloadError

__all__ = ["alibaba_workload", "philly_workload", "detect_trace_format", "DEFAULT_ALIBABA_WINDOW",
           "DEFAULT_PHILLY_WINDOW", "TRACE_FORMATS"]

#: a busy stretch of the Alibaba trace (seconds of ``creation_time``)
DEFAULT_ALIBABA_WINDOW = (11_400_000.0, 11_800_000.0)
#: day 40 of the Philly trace, 8 hours
DEFAULT_PHILLY_WINDOW = (40 * 86400.0, 40 * 86400.0 + 8 * 3600.0)


def _steps(seconds: float, step: float, cap: int | None) -> tuple[int, bool]:
    n = max(1, math.ceil(seconds / step - 1e-9))
    if cap is not None and n > cap:
        return cap, True
    return n, False


def alibaba_workload(directory: str | Path | None = None, *,
                     window: tuple[float, float] | None = DEFAULT_ALIBABA_WINDOW,
                     max_jobs: int | None = 500, nodes: int | Sequence[str] = 16, step_seconds: float = 300.0,
                     compress: float = 1.0, max_duration: int | None = 288, seed: int = 0,
                     pods: str | Path | None = None, node_list: str | Path | None = None) -> Workload:
    """Replay a window of the Alibaba GPU trace (see the module docstring).

    ``directory`` holds the trace's two files (``openb_pod_list_default.csv`` and
    ``openb_node_list_gpu_node.csv``); ``pods`` and ``node_list`` name either file instead
    (e.g. a ``gpuspec`` variant of the pod list).

    Raises
    ------
    gensolver.traces.TraceError
        A malformed trace file (names the file and line).
    """
    from ..traces import read_alibaba_nodes, read_alibaba_pods
    from ..traces.readers import ALIBABA_NODE_FILE, ALIBABA_POD_FILE

    if not compress > 0:
        raise WorkloadError(f"compress must be positive, got {compress!r}")
    if directory is None and (pods is None or node_list is None):
        raise WorkloadError("give the trace directory, or both pods= and node_list=")
    pod_file = Path(pods) if pods is not None else Path(directory) / ALIBABA_POD_FILE  # type: ignore[arg-type]
    node_file = Path(node_list) if node_list is not None else Path(directory) / ALIBABA_NODE_FILE  # type: ignore[arg-type]
    if isinstance(nodes, int):
        all_nodes = read_alibaba_nodes(node_file)
        by_model: dict[str, list] = {}
        for n in all_nodes:
            by_model.setdefault(n.gpu_model, []).append(n)
        total = sum(n.gpus for n in all_nodes)
        picked: list[str] = []
        for _model, ns in sorted(by_model.items(), key=lambda kv: -sum(n.gpus for n in kv[1])):
            share = sum(n.gpus for n in ns) / total
            k = max(1, round(share * nodes)) if len(picked) < nodes else 0
            picked.extend(n.id for n in ns[:k])
        node_ids: Sequence[str] = picked[:max(nodes, 1)]
    else:
        node_ids = list(nodes)
    node_sel = read_alibaba_nodes(node_file, nodes=list(node_ids))
    weights: dict[str, float] = {}
    for n in node_sel:  # pods' modelled GPU models follow the selected nodes (as read_alibaba does)
        weights[n.gpu_model] = weights.get(n.gpu_model, 0.0) + n.gpus
    weights = {m: w for m, w in weights.items() if w > 0}
    if not weights:
        raise WorkloadError("the node selection has no GPUs")
    jobs = read_alibaba_pods(pod_file, seed=seed, model_gpus=weights, window=window, max_jobs=max_jobs)
    gpus = tuple(GpuSpec(f"{n.id}/g{k}", float(n.gpu_memory_gib), 1.0, n.id, n.gpu_model)
                 for n in node_sel for k in range(n.gpus))
    if not jobs:
        raise WorkloadError("the Alibaba window holds no GPU pods")
    t0 = jobs[0].arrival_s
    tasks, truncated = [], 0
    for j in jobs:
        dur, cut = _steps(j.duration_s, step_seconds, max_duration)
        truncated += cut
        fixed = j.group in ("LS", "Guaranteed")
        pref = float(j.memory_gib_preferred)
        tasks.append(Task(id=j.id, preferred_memory=pref, min_memory=float(min(j.memory_gib_min, pref)), duration=dur,
                          value=dur * pref * j.num_gpus / 10.0, urgency=0.8 if fixed else 0.4, elasticity=1.0,
                          compute=float(j.gpu_fraction), preemptible=not fixed,
                          release=int((j.arrival_s - t0) / (step_seconds * compress)), gpus=int(j.num_gpus),
                          tenant=j.group or "default"))
    pinned = _pinned_models(pod_file, {t.id for t in tasks})
    info = {"source": "alibaba-2023", "window": window, "jobs": len(tasks), "nodes": len(node_sel),
            "gpus": len(gpus), "compress": compress, "truncated": truncated, "step_seconds": step_seconds,
            "pinned": len(pinned)}
    return Workload(f"alibaba[{len(tasks)} pods, {len(node_sel)} nodes]", tuple(tasks), gpus, step_seconds, info,
                    gpu_models=pinned)


def _pinned_models(path: Path, ids: set[str]) -> dict[str, tuple[str, ...]]:
    """Pod name -> the GPU models its ``gpu_spec`` column names (pods that name none: absent)."""
    import csv

    out: dict[str, tuple[str, ...]] = {}
    with open(path, "rb") as fh:  # bounded as the reader was (the same file, read before)
        for row in csv.DictReader(iter_lines_limited(fh)):
            name, spec = row.get("name", ""), row.get("gpu_spec") or ""
            if name in ids and spec:
                out[name] = tuple(s for s in spec.split("|") if s)
    return out


def philly_workload(path: str | Path, *, window: tuple[float, float] | None = DEFAULT_PHILLY_WINDOW,
                    max_jobs: int | None = 500, nodes: int = 8, gpu_memory: float = 24.0,
                    step_seconds: float = 300.0, compress: float = 1.0, max_duration: int | None = 288,
                    clusters: Sequence[str] | None = None, seed: int = 0) -> Workload:
    """Replay a window of the Philly trace on ``nodes`` 8-GPU nodes (see the module docstring)."""
    from ..traces import read_philly

    if not compress > 0:
        raise WorkloadError(f"compress must be positive, got {compress!r}")
    if nodes < 1:
        raise WorkloadError(f"nodes must be positive, got {nodes!r}")
    jobs = read_philly(path, seed=seed, window=window, max_jobs=max_jobs, clusters=clusters)
    if not jobs:
        raise WorkloadError("the Philly window holds no jobs")
    gpus = tuple(GpuSpec(f"n{i}/g{k}", float(gpu_memory), 1.0, f"n{i}", "P40") for i in range(nodes) for k in range(8))
    t0 = jobs[0].arrival_s
    tasks, truncated, capped = [], 0, 0
    for j in jobs:
        dur, cut = _steps(j.duration_s, step_seconds, max_duration)
        truncated += cut
        k = min(8, int(j.num_gpus))
        capped += k != j.num_gpus
        pref = float(min(j.memory_gib_preferred, gpu_memory))
        mini = float(min(j.memory_gib_min, pref))
        tasks.append(Task(id=j.id, preferred_memory=pref, min_memory=mini, duration=dur, value=dur * pref * k / 10.0,
                          urgency=0.5, elasticity=1.0, compute=1.0, preemptible=True,
                          release=int((j.arrival_s - t0) / (step_seconds * compress)), gpus=k, tenant=j.group or "default"))
    info = {"source": "philly", "window": window, "jobs": len(tasks), "nodes": nodes, "gpus": len(gpus),
            "compress": compress, "truncated": truncated, "capped": capped, "step_seconds": step_seconds}
    return Workload(f"philly[{len(tasks)} jobs, {nodes} nodes]", tuple(tasks), gpus, step_seconds, info)


#: columns that identify each trace file format (the header's first line)
ALIBABA_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                   "creation_time", "deletion_time", "scheduled_time")
ALIBABA_SAMPLED_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus")
TRACE_FORMATS = ("alibaba", "philly", "gentask")


def detect_trace_format(path: str | Path) -> str:
    """``"alibaba"``, ``"philly"`` or ``"gentask"`` from a file's name and first line.

    A ``.yaml``/``.yml`` file is GenTask; anything else must be a CSV whose header names the
    Alibaba 2023 pod-list columns or Philly's (``timestamp,duration,num_gpus,...``). A CSV is
    never taken for YAML.

    Raises
    ------
    WorkloadError
        The file cannot be read, or its header matches no format (the message quotes it), or
        it is one of the Alibaba 2023 *sampled* pod lists (``openb_pod_list_multigpu50.csv``
        and the other 5-column variants): they hold no arrival, run or deletion times, so a
        replay has nothing to replay; the message names the missing columns.
    """
    p = Path(path)
    try:
        is_dir = p.is_dir()
    except OSError as exc:  # a name too long for the file system, a loop of links
        raise WorkloadError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if is_dir:
        raise WorkloadError(f"{p}: is a directory; give a trace file (an Alibaba pod list, philly.csv or GenTask YAML)")
    if p.suffix.lower() in (".yaml", ".yml"):
        return "gentask"  # read once, by the bounded reader
    try:
        regular = stat.S_ISREG(os.stat(p).st_mode)
    except OSError as exc:
        raise WorkloadError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if not regular:  # a FIFO or a device can be read once; a CSV trace is read twice (header, rows)
        raise WorkloadError(f"{p}: not a regular file (a FIFO or a device); a CSV trace is read more than once: "
                            "save it to a file first")
    try:  # one bounded read (/dev/zero, a FIFO): the header is the first line of the first 64 KiB
        head = read_head(p).decode("utf-8", errors="replace").splitlines()[:1]
    except OSError as exc:
        raise WorkloadError(f"{p}: cannot read: {exc.strerror or exc}") from None
    first = head[0].strip() if head else ""
    cols = tuple(c.strip() for c in first.split(","))
    if set(ALIBABA_COLUMNS) <= set(cols):
        return "alibaba"
    if set(PHILLY_COLUMNS) <= set(cols):
        return "philly"
    if cols == ALIBABA_SAMPLED_COLUMNS or (set(ALIBABA_SAMPLED_COLUMNS) <= set(cols) and "creation_time" not in cols):
        missing = [c for c in ALIBABA_COLUMNS if c not in cols]
        raise WorkloadError(
            f"{p}: an Alibaba 2023 sampled pod list ({','.join(cols)}) lacks the columns {', '.join(missing)}: "
            "without arrival and run times there is nothing to replay; use openb_pod_list_default.csv or a "
            "gpuspec variant (they have every column)")
    if "," in first or p.suffix.lower() in (".csv", ".tsv", ".txt"):
        shown = first if len(first) <= 120 else first[:117] + "..."
        raise WorkloadError(f"{p}: unknown CSV header {shown!r}; expected the Alibaba 2023 pod list "
                            f"({','.join(ALIBABA_COLUMNS)}) or Philly ({','.join(PHILLY_COLUMNS)},...)")
    return "gentask"
