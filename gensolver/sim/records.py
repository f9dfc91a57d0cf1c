"""The records the cluster model (:mod:`.engine`) keeps: events, GPUs and tasks.

:class:`Event` is one line of the event log; :class:`GpuState` and :class:`TaskState` are a
GPU's and a task's state during a run (a task's report and true type side by side);
:func:`gensolver.model.tasks.task_speed` is the speed law. The execution model is documented in
:mod:`gensolver.sim.engine`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import GensolverError
from ..model.tasks import GpuSpec, Task, TaskIds
from ..model.tolerances import CAPACITY_ABS_TOL

__all__ = ["Event", "GpuState", "TaskState", "SimError", "TOL"]

#: tolerance of every capacity comparison in the simulator (the capacity tolerance of
#: :mod:`gensolver.model.tolerances`)
TOL = CAPACITY_ABS_TOL


class SimError(GensolverError, RuntimeError):
    """A policy asked for something the cluster cannot do (a bug in the policy)."""


@dataclass(frozen=True)
class Event:
    """One entry of the event log.

    Attributes
    ----------
    time : float
        Steps from the start.
    kind : str
        ``arrive``, ``reject``, ``start``, ``resize``, ``stop``, ``finish``, ``gpu_up``,
        ``gpu_down`` or ``credit``.
    task : str
        Task id (``""`` for GPU and credit events).
    gpus : tuple of str
        GPUs concerned (``start``: the placement; ``gpu_*``: the device).
    memory, compute : float
        Per-GPU allocation (``start``/``resize``), capacity (``gpu_up``), or the task's preferred
        memory (``arrive``).
    speed : float
        Progress per step from this event on (``start``/``resize``).
    work : float
        ``arrive``: the task's work (duration); ``stop``: work added by a checkpoint restore.
    lost : float
        ``stop`` after a fault: work rolled back.
    amount : float
        ``credit``: change of the tenant's balance (payments negative).
    tenant : str
    note : str
        ``stop``: ``"preempt"`` or ``"fault"``; ``credit``: ``"budget"``, ``"refill"``,
        ``"payment"``; ``arrive``: ``"preemptible"`` or ``"fixed"``.
    """

    time: float
    kind: str
    task: str = ""
    gpus: tuple[str, ...] = ()
    memory: float = 0.0
    compute: float = 0.0
    speed: float = 0.0
    work: float = 0.0
    lost: float = 0.0
    amount: float = 0.0
    tenant: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["gpus"] = list(self.gpus)
        return d


@dataclass
class GpuState:
    """Mutable state of one GPU inside the simulation."""

    spec: GpuSpec
    up: bool = True
    memory_used: float = 0.0
    compute_used: float = 0.0
    tasks: TaskIds = field(default_factory=TaskIds)  # iterates in arrival order, not by string hash

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def node(self) -> str:
        return self.spec.node

    @property
    def free_memory(self) -> float:
        return self.spec.memory - self.memory_used if self.up else 0.0

    @property
    def free_compute(self) -> float:
        return self.spec.compute - self.compute_used if self.up else 0.0

    def fits(self, memory: float, compute: float) -> bool:
        return self.up and self.free_memory + TOL >= memory and self.free_compute + TOL >= compute


@dataclass
class TaskState:
    """Mutable state of one task inside the simulation.

    ``task`` is what its tenant *reported* (what policies see and plan with); ``truth`` is its
    true type (what the engine executes: work, speed, and the value the metrics count). They
    are the same object for a truthful tenant (:mod:`gensolver.sim.strategy`).
    """

    task: Task
    truth: Task | None = None
    state: str = "pending"  # pending -> waiting -> running -> done (or rejected)
    remaining: float = 0.0
    executed: float = 0.0
    ckpt_remaining: float = 0.0
    gpus: tuple[str, ...] = ()
    memory: float = 0.0
    compute: float = 0.0
    speed: float = 0.0
    since: float = 0.0
    gen: int = 0
    first_start: float | None = None
    finish: float | None = None
    waiting_since: float = 0.0
    last_start: float = 0.0
    preemptions: int = 0
    faults: int = 0
    lost: float = 0.0
    overhead: float = 0.0
    factor: float = 1.0
    inter: float = 1.0

    def __post_init__(self) -> None:
        if self.truth is None:
            self.truth = self.task

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def arrival(self) -> float:
        """The step the task showed up (its reported release: what policies see)."""
        return float(self.task.release)

    @property
    def true_arrival(self) -> float:
        """The step the tenant had the task (JCT is measured from here)."""
        return float(self.truth.release)  # type: ignore[union-attr]

    @property
    def est_remaining(self) -> float:
        """Remaining work as the policies can estimate it: the *reported* duration plus restore
        and rolled-back work, minus the work done (never negative)."""
        return max(0.0, float(self.task.duration) + self.overhead + self.lost - self.executed)
