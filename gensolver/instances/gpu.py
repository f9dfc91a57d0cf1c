"""GPU-sharing rounds in the compact task form (:class:`~gensolver.model.GpuRound`).

:func:`gpu_round` draws a synthetic round on heterogeneous GPUs; :func:`trace_round` takes a
snapshot of a real cluster trace's queue (:mod:`gensolver.traces`). Both return the compact
form; :meth:`GpuRound.expand` gives the ``gensolver.instance/v1`` instance (one XOR bid per
task and feasible (GPU group, memory level, start)), and :func:`gensolver.instances.generate`
does both.

References
----------
.. [1] Q. Weng et al. "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
   Fragmentation Gradient Descent", USENIX ATC 2023 (Alibaba trace).
.. [2] M. Jeon et al. "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
   Workloads", USENIX ATC 2019 (Philly trace).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from ..model import GpuRound, GpuSpec, Task
from ..traces import TraceJob, read_alibaba, read_philly
from ._common import check_int, check_pos, check_prob, rng_of

__all__ = ["gpu_round", "trace_round", "default_trace_dir", "user_trace_dir", "GPU_MEMORIES", "TRACE_ENV"]

#: default GPU memory sizes (GiB): A10/L4-class 24, A100-40, A100/H100-80, H200-141
GPU_MEMORIES: tuple[float, ...] = (24.0, 40.0, 80.0, 141.0)
#: environment variable that overrides :func:`default_trace_dir`
TRACE_ENV = "GENSOLVER_TRACES"


def _gpus(memories: Sequence[float], n_gpus: int, per_node: int, rng: np.random.Generator) -> tuple[GpuSpec, ...]:
    """``n_gpus`` GPUs, ``per_node`` to a node, each node of one memory size drawn uniformly."""
    out = []
    n_nodes = math.ceil(n_gpus / per_node)
    sizes = rng.choice(np.asarray(memories, dtype=np.float64), size=n_nodes)
    for k in range(n_gpus):
        node = k // per_node
        out.append(GpuSpec(f"gpu{k}", float(sizes[node]), 1.0, f"node{node}", f"{sizes[node]:g}GB"))
    return tuple(out)


def gpu_round(n_gpus: int = 4, n_tasks: int = 10, steps: int = 6, *, seed: int | np.random.Generator = 0,
              gpu_memories: Sequence[float] = GPU_MEMORIES, per_node: int = 4, step_seconds: float = 60.0,
              memory_levels: int = 2, max_duration: int = 3, gang_prob: float = 0.1,
              deadline_prob: float = 0.5, name: str | None = None) -> GpuRound:
    """A synthetic GPU-sharing round with heterogeneous GPUs and elastic tasks.

    GPUs: ``n_gpus`` devices, ``per_node`` to a node; every node's GPUs share one memory size
    drawn uniformly from ``gpu_memories`` (GiB). Tasks, each drawn independently:

    - ``preferred_memory``: log-normal, median 16 GiB, log-sd 0.7, clipped to
      ``[2, 0.9 * max(gpu_memories)]``, rounded to 1 GiB; ``min_memory = preferred * U[0.5, 1]``
      (rounded to 0.5 GiB);
    - ``elasticity ~ U[0, 1.5]``, ``urgency ~ U[0, 1]``, ``compute`` uniform on
      {0.25, 0.5, 1.0}, ``preemptible`` with probability 1/2;
    - ``duration ~ U{1..max_duration}`` steps, ``release ~ U{0..steps // 3}``; with probability
      ``deadline_prob`` a deadline ``release + duration + U{0..steps // 2}``;
    - ``gpus = 2`` (a gang on one node) with probability ``gang_prob`` when ``per_node >= 2``;
    - ``value = preferred_memory * duration * gpus * U[0.5, 2]`` (a random price per GiB-step);
    - tenants: one per task (``t<k>``).

    Parameters
    ----------
    n_gpus, n_tasks, steps : int
    seed : int or numpy.random.Generator, keyword-only
    gpu_memories : sequence of float
        GiB per GPU model.
    per_node : int
    step_seconds : float
    memory_levels : int
        Memory levels offered per task (see :class:`~gensolver.model.GpuRound`).
    max_duration : int
    gang_prob, deadline_prob : float
    name : str, optional

    Returns
    -------
    GpuRound
    """
    check_int("n_gpus", n_gpus)
    check_int("n_tasks", n_tasks)
    check_int("steps", steps)
    check_int("per_node", per_node)
    check_int("memory_levels", memory_levels)
    check_int("max_duration", max_duration)
    check_pos("step_seconds", step_seconds)
    check_prob("gang_prob", gang_prob)
    check_prob("deadline_prob", deadline_prob)
    if not gpu_memories or any(not (isinstance(m, (int, float)) and m > 0) for m in gpu_memories):
        raise InputError(f"gpu_memories must be positive numbers, got {gpu_memories!r}")
    rng = rng_of(seed)
    gpus = _gpus(gpu_memories, n_gpus, per_node, rng)
    cap = 0.9 * max(gpu_memories)
    tasks = []
    for k in range(n_tasks):
        pref = float(np.round(np.clip(16.0 * math.exp(0.7 * rng.standard_normal()), 2.0, cap)))
        mn = max(0.5, float(np.round(pref * rng.uniform(0.5, 1.0) * 2.0) / 2.0))
        mn = min(mn, pref)
        duration = int(rng.integers(1, max_duration + 1))
        release = int(rng.integers(0, steps // 3 + 1))
        deadline = None
        if rng.random() < deadline_prob:
            deadline = release + duration + int(rng.integers(0, steps // 2 + 1))
        n = 2 if per_node >= 2 and rng.random() < gang_prob else 1
        tasks.append(Task(
            id=f"t{k}", preferred_memory=pref, min_memory=mn, duration=duration,
            value=round(float(pref * duration * n * rng.uniform(0.5, 2.0)), 4),
            urgency=round(float(rng.uniform(0.0, 1.0)), 4), elasticity=round(float(rng.uniform(0.0, 1.5)), 4),
            compute=float(rng.choice([0.25, 0.5, 1.0])), preemptible=bool(rng.random() < 0.5),
            release=release, deadline=deadline, gpus=n,
        ))
    seed_txt = seed if isinstance(seed, int) else "g"
    return GpuRound(gpus, tuple(tasks), steps, float(step_seconds), memory_levels,
                    name or f"gpu-{n_gpus}g{n_tasks}t{steps}s-s{seed_txt}")


# ------------------------------------------------------------------------------ traces
def default_trace_dir() -> Path:
    """Where the traces are read from by default.

    ``$GENSOLVER_TRACES`` if set; else ``shared/traces`` beside a project checkout when that
    folder exists; else :func:`user_trace_dir`, where ``gensolver traces fetch NAME`` puts the
    public traces by default. No trace data ships with the package.
    """
    env = os.environ.get(TRACE_ENV)
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[3] / "shared" / "traces"
    return checkout if checkout.is_dir() else user_trace_dir()


def user_trace_dir() -> Path:
    """The per-user trace folder: ``$XDG_DATA_HOME/gensolver/traces`` (``~/.local/share`` when
    ``XDG_DATA_HOME`` is unset), the default of ``gensolver traces fetch --dir``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gensolver" / "traces"


@functools.lru_cache(maxsize=8)
def _alibaba(directory: str, trace_seed: int):  # type: ignore[no-untyped-def]
    return read_alibaba(directory, seed=trace_seed)


@functools.lru_cache(maxsize=4)
def _philly(path: str, trace_seed: int) -> tuple[TraceJob, ...]:
    return read_philly(path, seed=trace_seed)


def trace_round(source: str = "alibaba", n_gpus: int = 8, max_tasks: int = 12, steps: int = 6, *,
                seed: int | np.random.Generator = 0, time_s: float | None = None, step_seconds: float = 600.0,
                memory_levels: int = 2, trace_dir: str | os.PathLike[str] | None = None, trace_seed: int = 0,
                gpu_memories: Sequence[float] = GPU_MEMORIES, per_node: int = 8,
                name: str | None = None) -> GpuRound:
    """A round from a snapshot of a real trace's queue at time ``time_s``.

    GPUs: for ``source="alibaba"``, whole nodes of the real node list drawn at random (seeded)
    until ``n_gpus`` GPUs are reached (the last node truncated), with their models' memories
    (:data:`~gensolver.traces.GPU_MODEL_MEMORY_GIB`); for ``"philly"`` (no node list in the
    trace) nodes of ``per_node`` GPUs with memories drawn from ``gpu_memories``.

    Tasks: the jobs running at ``time_s`` (release 0, remaining time as duration) and those
    arriving within the horizon ``steps * step_seconds`` (release at their arrival step), at most
    ``max_tasks`` of them sampled at random (seeded). A job's duration in steps is
    ``ceil(seconds / step_seconds)`` clipped to ``[1, steps]``; its memory per GPU is the trace
    reader's modelled preferred/minimum memory (clipped to the largest GPU); ``compute`` is the
    Alibaba GPU share (``gpu_milli / 1000``) or 1 for Philly; a gang is capped at the largest
    node. Values, which traces lack, follow a documented model: ``value = compute * gpus *
    duration_steps * preferred_memory * U[0.5, 1.5]``, doubled for Alibaba latency-sensitive
    (``LS``) pods; ``urgency`` 0.8 for LS, 0.2 for best-effort (``BE``), 0.5 otherwise and
    ``U[0, 1]`` for Philly; ``elasticity ~ U[0.5, 1.5]``; ``preemptible`` unless LS; the tenant is
    the Philly virtual cluster (Alibaba: the pod).

    Parameters
    ----------
    source : {"alibaba", "philly"}
    n_gpus, max_tasks, steps : int
    seed : int or numpy.random.Generator, keyword-only
        Seeds the node sample, the snapshot time (when ``time_s`` is None: the arrival of a
        random job, so the queue is not empty), the task sample and the value model.
    time_s : float, optional
        Snapshot time in trace seconds.
    step_seconds : float
    memory_levels : int
    trace_dir : path-like, optional
        The ``traces`` folder (default :func:`default_trace_dir`).
    trace_seed : int
        Seed of the trace reader's memory model.
    gpu_memories, per_node
        GPUs for Philly.
    name : str, optional

    Returns
    -------
    GpuRound

    Raises
    ------
    FileNotFoundError
        The trace folder is missing (set ``$GENSOLVER_TRACES`` or pass ``trace_dir``).
    ValueError
        Bad parameters, or an empty queue at ``time_s``.

    References
    ----------
    .. [1] Weng et al., USENIX ATC 2023 (Alibaba). .. [2] Jeon et al., USENIX ATC 2019 (Philly).
    """
    if source not in ("alibaba", "philly"):
        raise InputError(f"source must be 'alibaba' or 'philly', got {source!r}")
    check_int("n_gpus", n_gpus)
    check_int("max_tasks", max_tasks)
    check_int("steps", steps)
    check_int("memory_levels", memory_levels)
    check_pos("step_seconds", step_seconds)
    rng = rng_of(seed)
    root = Path(trace_dir) if trace_dir is not None else default_trace_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"trace folder {root} not found; set ${TRACE_ENV} or pass trace_dir")
    jobs, gpus = _trace_cluster(source, root, int(trace_seed), n_gpus, gpu_memories, per_node, rng)
    if time_s is None:
        time_s = float(jobs[int(rng.integers(len(jobs)))].arrival_s)
    horizon = steps * step_seconds
    queue = [j for j in jobs if (j.arrival_s <= time_s < j.end_s) or (time_s <= j.arrival_s < time_s + horizon)]
    if not queue:
        raise InputError(f"no {source} job is running or arriving in [{time_s:g}, {time_s + horizon:g}) s")
    if len(queue) > max_tasks:
        pick = sorted(int(i) for i in rng.choice(len(queue), size=max_tasks, replace=False))
        queue = [queue[i] for i in pick]
    tasks = _trace_tasks(queue, source, gpus, time_s, steps, step_seconds, rng)
    seed_txt = seed if isinstance(seed, int) else "g"
    return GpuRound(gpus, tuple(tasks), steps, float(step_seconds), memory_levels,
                    name or f"trace-{source}-{n_gpus}g{len(tasks)}t-s{seed_txt}")


def _trace_cluster(source: str, root: Path, trace_seed: int, n_gpus: int, gpu_memories: Sequence[float],
                   per_node: int, rng: np.random.Generator) -> tuple[Any, tuple[GpuSpec, ...]]:
    """The trace's jobs and the round's GPUs (see :func:`trace_round`)."""
    if source == "alibaba":
        trace = _alibaba(str(root / "alibaba-gpu-2023"), trace_seed)
        jobs = trace.jobs
        order = rng.permutation(len(trace.nodes))
        specs: list[GpuSpec] = []
        for i in order:
            node = trace.nodes[int(i)]
            for k in range(node.gpus):
                if len(specs) < n_gpus:
                    specs.append(GpuSpec(f"{node.id}/g{k}", node.gpu_memory_gib, 1.0, node.id, node.gpu_model))
            if len(specs) >= n_gpus:
                break
        gpus = tuple(specs)
    else:
        jobs = _philly(str(root / "philly" / "philly.csv"), trace_seed)
        gpus = _gpus(gpu_memories, n_gpus, per_node, rng)
    return jobs, gpus


def _trace_tasks(queue: Sequence[Any], source: str, gpus: tuple[GpuSpec, ...], time_s: float, steps: int,
                 step_seconds: float, rng: np.random.Generator) -> list[Task]:
    """The round's tasks from the sampled queue, with the documented value model (:func:`trace_round`)."""
    max_mem = max(g.memory for g in gpus)
    largest_node: dict[str, int] = {}
    for g in gpus:
        largest_node[g.node] = largest_node.get(g.node, 0) + 1
    max_gang = max(largest_node.values())
    tasks = []
    for job in queue:
        running = job.arrival_s <= time_s
        release = 0 if running else int((job.arrival_s - time_s) // step_seconds)
        seconds = (job.end_s - time_s) if running else job.duration_s
        duration = int(min(steps, max(1, math.ceil(seconds / step_seconds))))
        pref = min(job.memory_gib_preferred, max_mem)
        mn = min(job.memory_gib_min, pref)
        if mn <= 0:
            continue
        n = max(1, min(job.num_gpus, max_gang))
        compute = min(1.0, job.gpu_fraction) if source == "alibaba" else 1.0
        ls = job.group == "LS"
        price = rng.uniform(0.5, 1.5) * (2.0 if ls else 1.0)
        if source == "alibaba":
            urgency = 0.8 if ls else 0.2 if job.group == "BE" else 0.5
        else:
            urgency = float(rng.uniform(0.0, 1.0))
        tasks.append(Task(
            id=job.id, preferred_memory=float(pref), min_memory=float(mn), duration=duration,
            value=round(float(compute * n * duration * pref * price), 4), urgency=round(urgency, 4),
            elasticity=round(float(rng.uniform(0.5, 1.5)), 4), compute=float(compute),
            preemptible=not ls, release=release, gpus=n,
            tenant=job.group if source == "philly" else job.id,
        ))
    return tasks
