"""Workloads for the simulator: a frozen :class:`Workload` (tasks + default GPUs) and a
synthetic generator.

Synthetic model (documented)
----------------------------
``synthetic_workload(n, seed=...)`` draws, with :func:`numpy.random.default_rng`:

- arrivals: a Poisson process of ``rate`` tasks per step (inter-arrival times exponential),
  rounded down to whole steps (``rate=None``: all tasks arrive at step 0, a *batch*);
- preferred memory: one of ``memory_choices`` GiB (uniform); minimum memory
  ``preferred * U[min_fraction, 1]`` rounded to 0.5 GiB;
- duration: log-uniform integer in ``[duration_min, duration_max]`` steps;
- compute share: ``U[0.2, 0.6]`` rounded to 0.05; elasticity ``U[0.5, 1.0]``;
- urgency ``U[0.2, 0.8]``, value ``duration * preferred / 10`` credits, preemptible with
  probability ``preemptible_share``, tenants ``tenant0 .. tenant{tenants-1}`` round robin,
  gangs of 2 GPUs with probability ``gang_share``.

GPUs: ``gpus`` as a list of memories (GiB), ``per_node`` to a node (:func:`uniform_gpus`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError, check_seed
from ..model.inputs import check_size, max_tasks
from ..model.quantity import parse_number
from ..model.tasks import GpuSpec, Task, uniform_gpus
from ..model.validate import is_integer, is_real

__all__ = ["Workload", "synthetic_workload", "with_deadlines", "parse_synthetic", "WorkloadError", "DEFAULT_SYNTHETIC_GPUS"]

DEFAULT_SYNTHETIC_GPUS = (80.0, 80.0, 40.0, 40.0, 24.0, 24.0, 16.0, 16.0)


class WorkloadError(InputError):
    """A bad workload specification (names the offending key or line)."""


@dataclass(frozen=True)
class Workload:
    """Tasks (``release`` = arrival step) and the default GPUs to run them on.

    Attributes
    ----------
    name : str
    tasks : tuple of Task
    gpus : tuple of GpuSpec
    step_seconds : float
        Length of one step (display only).
    info : Mapping
        Provenance (trace, window, scaling, dropped jobs...).
    gpu_models : Mapping[str, tuple of str]
        Task id -> GPU models it may run on (a trace's ``gpu_spec``); tasks not listed run
        anywhere.
    truths : Mapping[str, Task]
        Task id -> true type, for tasks whose entry in ``tasks`` is a (strategic) report
        (:func:`gensolver.sim.strategy.apply_strategies`); empty: every report is the truth.
    """

    name: str
    tasks: tuple[Task, ...]
    gpus: tuple[GpuSpec, ...]
    step_seconds: float = 60.0
    info: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    gpu_models: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    truths: Mapping[str, Task] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "gpus", tuple(self.gpus))
        object.__setattr__(self, "info", MappingProxyType(dict(self.info)))
        object.__setattr__(self, "gpu_models", MappingProxyType({k: tuple(v) for k, v in self.gpu_models.items()}))
        object.__setattr__(self, "truths", MappingProxyType(dict(self.truths)))
        ids = {t.id for t in self.tasks}
        stray = sorted(set(self.truths) - ids)
        if stray:
            raise WorkloadError(f"truths names task {stray[0]!r}, which is not among the tasks")

    def true_tasks(self) -> tuple[Task, ...]:
        """The tasks' true types (the reports where no truth differs)."""
        return tuple(self.truths.get(t.id, t) for t in self.tasks)


def with_deadlines(workload: Workload, *, share: float = 0.3, slack: tuple[float, float] = (1.5, 4.0),
                   seed: int = 0) -> Workload:
    """``workload`` with deadlines on a random ``share`` of its tasks (documented model).

    A chosen task (each with probability ``share``, one draw per task in order with
    :func:`numpy.random.default_rng`) gets ``deadline = release + ceil(s * duration)`` with
    ``s ~ U[slack]``; tasks that already have a deadline keep it. Traces carry no deadlines;
    this is how the benchmarks give the policies some to meet.
    """
    if not _is_real(share) or not 0 <= share <= 1:
        raise WorkloadError(f"share must be a probability in [0, 1], got {share!r}")
    lo, hi = slack
    if not (_is_real(lo) and _is_real(hi) and 1 <= lo <= hi and math.isfinite(hi)):
        raise WorkloadError(f"slack must be (low, high) with 1 <= low <= high, got {slack!r}")
    if workload.truths:
        raise WorkloadError("with_deadlines applies to true tasks; add deadlines before any strategy")
    rng = np.random.default_rng(seed)
    pick = rng.random(len(workload.tasks)) < share
    s = rng.uniform(lo, hi, size=len(workload.tasks))
    tasks = [replace(t, deadline=t.release + max(1, math.ceil(float(f) * t.duration)))
             if p and t.deadline is None else t for t, p, f in zip(workload.tasks, pick, s)]
    info = {**workload.info, "deadlines": {"share": share, "slack": list(slack), "seed": seed}}
    return replace(workload, tasks=tuple(tasks), info=info)


def synthetic_workload(n: int = 50, *, seed: int = 0, rate: float | None = 0.5,
                       gpus: Sequence[float] = DEFAULT_SYNTHETIC_GPUS, per_node: int = 4,
                       memory_choices: Sequence[float] = (4, 8, 12, 16, 24, 32), min_fraction: float = 0.5,
                       duration_min: int = 2, duration_max: int = 40, preemptible_share: float = 0.7,
                       tenants: int = 4, gang_share: float = 0.0, name: str = "") -> Workload:
    """A reproducible random workload (see the module docstring for the model).

    Raises
    ------
    WorkloadError
        Naming the bad parameter (``n``, ``seed``, ``rate``, ``gpus``, ``per_node``, ...).
    """
    for key, v in (("n", n), ("per_node", per_node), ("tenants", tenants), ("duration_min", duration_min),
                   ("duration_max", duration_max)):
        if not is_integer(v) or v < 1:
            raise WorkloadError(f"{key} must be a positive integer, got {v!r}")
    check_seed(seed, error=WorkloadError)
    check_size("synthetic n", n, max_tasks(), "GENSOLVER_MAX_TASKS", "tasks")  # before any array of n draws
    if duration_max < duration_min:
        raise WorkloadError(f"need 1 <= duration_min <= duration_max, got {duration_min}, {duration_max}")
    if not _is_real(min_fraction) or not 0 < min_fraction <= 1:
        raise WorkloadError(f"min_fraction must be in (0, 1], got {min_fraction!r}")
    for key, share in (("preemptible_share", preemptible_share), ("gang_share", gang_share)):
        if not _is_real(share) or not 0 <= share <= 1:
            raise WorkloadError(f"{key} must be a probability in [0, 1], got {share!r}")
    gpus = tuple(gpus)
    if not gpus or not all(_is_real(m) and math.isfinite(m) and m > 0 for m in gpus):
        raise WorkloadError(f"gpus must be finite positive GPU memories in GiB, got {_plus(gpus)!r}")
    memory_choices = tuple(memory_choices)
    if not memory_choices or not all(_is_real(m) and math.isfinite(m) and m > 0 for m in memory_choices):
        raise WorkloadError(f"memory_choices must be finite positive GiB values, got {_plus(memory_choices)!r}")
    if rate is not None and (not _is_real(rate) or not math.isfinite(rate) or not rate > 0):
        raise WorkloadError(f"rate must be a finite positive number of tasks per step (or batch), got {rate!r}")
    rng = np.random.default_rng(seed)
    if rate is None:
        arrivals = np.zeros(n, dtype=int)
    else:
        times = np.cumsum(rng.exponential(1.0 / rate, size=n))
        if not times[-1] - times[0] < _MAX_SPAN:
            raise WorkloadError(f"rate={rate!r} is too small: arrivals would span {times[-1] - times[0]:.3g} steps "
                                f"(at most {_MAX_SPAN:.0e})")
        arrivals = np.floor(times).astype(int)
        arrivals -= arrivals[0]
    max_mem = max(gpus)
    tasks = []
    for i in range(n):
        pref = float(rng.choice([m for m in memory_choices if m <= max_mem] or [max_mem]))
        mini = max(0.5, round(pref * rng.uniform(min_fraction, 1.0) * 2) / 2)
        mini = min(mini, pref)
        dur = int(round(math.exp(rng.uniform(math.log(duration_min), math.log(duration_max)))))
        dur = max(duration_min, min(duration_max, dur))
        comp = round(rng.uniform(0.2, 0.6) * 20) / 20
        tasks.append(Task(
            id=f"t{i:04d}", preferred_memory=pref, min_memory=mini, duration=dur, value=dur * pref / 10.0,
            urgency=round(float(rng.uniform(0.2, 0.8)), 3), elasticity=round(float(rng.uniform(0.5, 1.0)), 3),
            compute=comp, preemptible=bool(rng.random() < preemptible_share), release=int(arrivals[i]),
            gpus=2 if rng.random() < gang_share else 1, tenant=f"tenant{i % tenants}"))
    return Workload(name or f"synthetic(n={n},seed={seed})", tuple(tasks), uniform_gpus(list(gpus), per_node=per_node),
                    60.0, {"source": "synthetic", "seed": seed, "n": n, "rate": rate})


_MAX_SPAN = 1e9  # steps between the first and last synthetic arrival


def _plus(values: Sequence[Any]) -> str:
    """``80+40+24`` (the spec's own spelling; no brackets, which rich would read as markup)."""
    return "+".join(f"{v:g}" if _is_real(v) or isinstance(v, float) else str(v) for v in values)


def _is_real(v: Any) -> bool:
    return is_real(v) and not math.isnan(v)


_KEYS = {"n": int, "seed": int, "rate": float, "per_node": int, "min_fraction": float, "duration_min": int,
         "duration_max": int, "preemptible_share": float, "tenants": int, "gang_share": float}


def parse_synthetic(spec: str, *, seed: int | None = None) -> Workload:
    """``synthetic:n=50,seed=1,rate=0.5,gpus=80+40+24`` (``rate=batch``: all at step 0).

    ``seed`` is the default for a spec without a ``seed`` key.

    Raises
    ------
    WorkloadError
        Naming the bad key and listing the valid ones.
    """
    if not spec.startswith("synthetic"):
        raise WorkloadError(f"not a synthetic spec: {spec!r}")
    rest = spec[len("synthetic"):]
    if rest and not rest.startswith(":"):
        raise WorkloadError(f"synthetic spec: expected synthetic:key=value,..., got {spec!r}")
    rest = rest[1:]
    valid = ", ".join(["gpus", *_KEYS])
    kw: dict[str, Any] = {}
    for part in filter(None, (s.strip() for s in rest.split(","))):
        if "=" not in part:
            raise WorkloadError(f"synthetic spec: expected key=value, got {part!r}; valid keys: {valid}")
        k, v = (s.strip() for s in part.split("=", 1))
        if k != "gpus" and k not in _KEYS:
            raise WorkloadError(f"synthetic spec: unknown key {k!r}; valid keys: {valid}")
        if k in kw:
            raise WorkloadError(f"synthetic spec: key {k!r} given twice")
        try:
            if k == "gpus":
                kw["gpus"] = tuple(parse_number(x, field=k) for x in v.split("+"))
            elif k == "rate" and v == "batch":
                kw["rate"] = None
            else:  # ASCII digits only (int() would read '٣')
                kw[k] = _KEYS[k](parse_number(v, field=k, integer=_KEYS[k] is int))
        except ValueError:
            kind = "an integer" if _KEYS.get(k) is int else "finite positive GiB values like 80+40+24" if k == "gpus" else "a number"
            raise WorkloadError(f"synthetic spec: bad value for {k!r}: {v!r} (expected {kind})") from None
    if seed is not None:
        kw.setdefault("seed", seed)
    try:
        return synthetic_workload(**kw)
    except WorkloadError as exc:
        raise WorkloadError(f"synthetic spec: {exc}") from None
