"""The compact, task-level form of a GPU round and its expansion into XOR bundles.

A :class:`GpuRound` is a set of GPUs (:class:`GpuSpec`), a time grid of ``steps`` steps of
``step_seconds`` each, and elastic :class:`Task` objects. :meth:`GpuRound.expand` turns it into
an :class:`~gensolver.model.Instance` of the ``gensolver.instance/v1`` form: one slot per
(GPU, step) with ``memory`` (GiB) and ``compute`` capacity, and for every task one XOR bid per
feasible (GPU group, memory level, start step). Both forms define the same welfare problem, so
they have the same optimum.

Task utility model (documented, used by generators, the market and the simulator)
----------------------------------------------------------------------------------
- **Speed.** With memory ``m`` between ``min_memory`` and ``preferred_memory`` a task runs at
  speed ``(m / preferred_memory) ** elasticity`` (``elasticity = 0``: memory does not matter;
  ``1``: proportional). It never runs below ``min_memory``.
- **Duration.** ``duration`` is the work in steps at preferred memory; with memory ``m`` the
  task holds its GPU(s) for ``ceil(duration / speed(m) - 1e-9)`` steps.
- **Value.** ``value`` is the task's worth when it finishes at its ideal time
  ``release + duration``; finishing ``L`` steps later is worth
  ``value * (1 - urgency) ** (L / duration)`` (``urgency = 0``: no decay; ``1``: worthless
  when late). A finish after ``deadline`` is not offered.
- **Compute.** The task takes ``compute`` (share of one device) on every GPU and step it holds.
- **Gangs.** A task with ``gpus = k > 1`` needs ``k`` GPUs at once; it bids on aligned blocks of
  ``k`` consecutive GPUs of the same ``node`` (documented restriction that keeps the bundle
  count linear in the number of GPUs), with the memory level on each.
- **Memory levels.** ``memory_levels`` evenly spaced levels from ``min_memory`` to
  ``preferred_memory`` (one level when they are equal).

Size limits (refused by name before anything is allocated; see :mod:`gensolver.model.inputs`):
memories at most :data:`MAX_MEMORY_GIB`; ``elasticity * ln(preferred_memory / min_memory)`` at
most :data:`MAX_SLOWDOWN_LOG` (the speed at ``min_memory`` stays a normal double);
``memory_levels`` at most ``GENSOLVER_MAX_MEMORY_LEVELS``; the expansion's slots, bids and demand
entries at most ``GENSOLVER_MAX_ROUND_ENTRIES`` (:meth:`GpuRound.expansion_size`).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence, TypeVar

import numpy as np

from .inputs import check_size, max_memory_levels, max_round_entries
from .instance import Bid, Bidder, Instance, Slot
from .validate import InstanceError, _esc, check_totals, digits, is_finite_real, is_integer, mark_validated

__all__ = ["GpuSpec", "TaskIds", "Task", "GpuRound", "BundleOption", "aligned_blocks", "task_value", "task_steps", "task_speed",
           "speed_law", "MAX_MEMORY_GIB", "MAX_SLOWDOWN_LOG"]

#: a GPU's name or index (:func:`aligned_blocks`)
G = TypeVar("G")

#: the largest memory (GiB) of a GPU or a task: 2**50 GiB = 2**80 bytes, the largest quantity
#: :mod:`gensolver.model.quantity` reads (every byte count stays a finite, exact-enough float)
MAX_MEMORY_GIB = float(2 ** 50)
#: the largest ``elasticity * ln(preferred_memory / min_memory)``: the slowest speed,
#: ``exp(-700)``, is still a normal double, so no step count overflows or divides by zero
MAX_SLOWDOWN_LOG = 700.0
#: a step count that no horizon reaches (a task too slow at some memory is never offered it)
_NEVER = 2 ** 62


def _kind(value: Any) -> str:
    """``"str 'x'"``-style description of a bad value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1024:
        return f"int of {digits(value)}"  # beyond a double's range (and maybe too long to print)
    return f"{type(value).__name__} {value!r}"


def _argv(command: Any, where: str) -> tuple[str, ...]:
    """A command as an argv tuple: a list of strings, or one string split like a shell would."""
    if isinstance(command, str):
        try:
            return tuple(shlex.split(command))
        except ValueError as exc:
            raise InstanceError(where, f"cannot split {command!r} into arguments: {exc}") from None
    if not isinstance(command, (list, tuple)):
        raise InstanceError(where, f"expected a list of strings or a string, got {_kind(command)}")
    for i, arg in enumerate(command):
        if not isinstance(arg, str):
            raise InstanceError(f"{where}/{i}", f"expected a string, got {_kind(arg)}")
    return tuple(command)


@dataclass(frozen=True)
class GpuSpec:
    """One GPU: ``memory`` in GiB, ``compute`` capacity (1.0 = whole device)."""

    id: str
    memory: float
    compute: float = 1.0
    node: str = ""
    model: str = ""


class TaskIds(dict):  # type: ignore[type-arg]  # dict[str, None]
    """The ids of the tasks on one GPU: a set that iterates in the order the tasks came.

    A ``set`` of strings iterates in an order that follows the process's string hashes
    (``PYTHONHASHSEED``), so a float sum over it, or the first id that fits, may differ between
    two runs of the same schedule. This keeps ``add``, ``discard``, ``in``, ``len`` and truth
    of a set and iterates in insertion order, which a run's events fix.

    >>> ids = TaskIds(); ids.add("b"); ids.add("a"); ids.add("b"); ids.discard("c")
    >>> list(ids), "a" in ids, len(ids)
    (['b', 'a'], True, 2)
    """

    def add(self, task_id: str) -> None:
        self[task_id] = None

    def discard(self, task_id: str) -> None:
        self.pop(task_id, None)

    def __repr__(self) -> str:
        return f"TaskIds({list(self)!r})"


@dataclass(frozen=True)
class Task:
    """An elastic GPU task (see the module docstring for the utility model).

    Attributes
    ----------
    id : str
    preferred_memory, min_memory : float
        GiB per GPU; ``0 < min_memory <= preferred_memory``.
    duration : int
        Work in steps at preferred memory (>= 1).
    value : float
        Worth when finished at ``release + duration``.
    urgency : float
        In ``[0, 1]``; decay of value with lateness.
    elasticity : float
        Speed exponent (>= 0).
    compute : float
        Share of one device per GPU held, in ``(0, 1]``.
    preemptible : bool
        May lose its GPU at a round boundary (market/simulator).
    release : int
        First step it may start.
    deadline : int or None
        Last step by which it must finish (exclusive end), or ``None``.
    gpus : int
        GPUs needed at once.
    tenant : str
        The owner (for budgets and fairness); defaults to the task id.
    command : tuple of str
        Argv for executors (empty: none).
    """

    id: str
    preferred_memory: float
    min_memory: float
    duration: int
    value: float
    urgency: float = 0.5
    elasticity: float = 1.0
    compute: float = 1.0
    preemptible: bool = True
    release: int = 0
    deadline: int | None = None
    gpus: int = 1
    tenant: str = ""
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        where = f"/tasks/{self.id}"
        if not isinstance(self.id, str) or not self.id:
            raise InstanceError(f"{where}/id", f"expected a non-empty string, got {_kind(self.id)}")
        if not isinstance(self.tenant, str):
            raise InstanceError(f"{where}/tenant", f"expected a string, got {_kind(self.tenant)}")
        if not self.tenant:
            object.__setattr__(self, "tenant", self.id)
        object.__setattr__(self, "command", _argv(self.command, f"{where}/command"))
        if not isinstance(self.preemptible, (bool, np.bool_)):
            raise InstanceError(f"{where}/preemptible", f"expected true or false, got {_kind(self.preemptible)}")
        for name in ("preferred_memory", "min_memory", "value", "urgency", "elasticity", "compute"):
            val = getattr(self, name)
            if not isinstance(val, (int, float)) or not is_finite_real(val) or val < 0:
                raise InstanceError(f"/tasks/{self.id}/{name}", f"must be a finite non-negative number, got {_kind(val)}")
        if self.min_memory <= 0 or self.min_memory > self.preferred_memory:
            raise InstanceError(f"/tasks/{self.id}/min_memory",
                                f"need 0 < min_memory <= preferred_memory, got {self.min_memory} and {self.preferred_memory}")
        if self.preferred_memory > MAX_MEMORY_GIB:
            raise InstanceError(f"/tasks/{self.id}/preferred_memory",
                                f"must be at most {MAX_MEMORY_GIB:.0f} GiB (2**80 bytes), got {self.preferred_memory!r}")
        if self.elasticity * math.log(self.preferred_memory / self.min_memory) > MAX_SLOWDOWN_LOG:
            raise InstanceError(f"/tasks/{self.id}/elasticity",
                                f"too large: the speed at min_memory, (min_memory/preferred_memory)**elasticity, "
                                f"is below exp(-{MAX_SLOWDOWN_LOG:g}) (elasticity {self.elasticity!r}, memory "
                                f"{self.min_memory!r} of {self.preferred_memory!r})")
        if self.urgency > 1:
            raise InstanceError(f"/tasks/{self.id}/urgency", f"must be in [0, 1], got {self.urgency}")
        if not 0 < self.compute <= 1:
            raise InstanceError(f"/tasks/{self.id}/compute", f"must be in (0, 1], got {self.compute}")
        for name in ("duration", "gpus"):
            val = getattr(self, name)
            if not is_integer(val) or val < 1:
                raise InstanceError(f"/tasks/{self.id}/{name}", f"must be a positive integer, got {_kind(val)}")
        if not is_integer(self.release) or self.release < 0:
            raise InstanceError(f"/tasks/{self.id}/release", f"must be a non-negative integer, got {_kind(self.release)}")
        if self.deadline is not None and (not is_integer(self.deadline) or self.deadline <= self.release):
            raise InstanceError(f"/tasks/{self.id}/deadline", f"must be an integer after release, got {_kind(self.deadline)}")

    def memory_levels(self, count: int) -> np.ndarray:
        """``count`` evenly spaced memory levels from ``min_memory`` to ``preferred_memory``."""
        if self.min_memory == self.preferred_memory or count <= 1:
            return np.array([self.preferred_memory])
        return np.unique(np.linspace(self.min_memory, self.preferred_memory, count))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["command"] = list(self.command)
        return out


def task_speed(task: Task, memory: float) -> float:
    """Work (steps at preferred memory) done per step with ``memory`` GiB per GPU:
    ``(min(memory, preferred) / preferred) ** elasticity`` (the utility model's speed; memory
    beyond the preferred amount does not speed a task up). The one speed law of the package:
    the bundles of a round, the market, the simulator and the service all use it."""
    return speed_law(memory, task.preferred_memory, task.elasticity)


def speed_law(memory: float, preferred: float, elasticity: float) -> float:
    """:func:`task_speed` from the numbers alone (for a record that keeps no :class:`Task`).

    >>> speed_law(8.0, 16.0, 0.5) == task_speed(Task("t", 16.0, 4.0, 10, 1.0, elasticity=0.5), 8.0)
    True
    """
    return float((min(memory, preferred) / preferred) ** elasticity)


def task_steps(task: Task, memory: float, *, work: float | None = None) -> int:
    """Steps the task holds its GPU(s) with ``memory`` GiB to do ``work`` steps of work (at
    preferred memory; default its whole ``duration``): ``ceil(work / task_speed - 1e-9)``, at
    least 1 (see the utility model)."""
    w = task.duration if work is None else work
    speed = task_speed(task, memory)
    steps = w / speed if speed > 0 else math.inf
    if not steps < _NEVER:  # slower than any horizon (never offered), and no float overflow
        return _NEVER
    return max(1, math.ceil(steps - 1e-9))


def task_value(task: Task, finish: float) -> float:
    """Worth of finishing at step ``finish`` (exclusive end), per the utility model."""
    ideal = task.release + task.duration
    late = max(0.0, finish - ideal)
    if late == 0:
        return float(task.value)
    if task.urgency >= 1:
        return 0.0
    return float(task.value * (1.0 - task.urgency) ** (late / task.duration))


@dataclass(frozen=True)
class BundleOption:
    """One XOR bundle of a task: GPUs (indices), memory level, start and length in steps."""

    task: int
    gpus: tuple[int, ...]
    memory: float
    level: int
    start: int
    length: int
    value: float


def aligned_blocks(by_node: Mapping[str, Sequence[G]], k: int) -> list[tuple[G, ...]]:
    """The gang placements of ``k`` GPUs: aligned blocks of ``k`` consecutive GPUs of one node
    (``by_node``: each node's GPUs in order), node by node; a node's last GPUs that do not
    fill a block are left out.

    >>> aligned_blocks({"n0": ["a", "b", "c"], "n1": ["d", "e"]}, 2)
    [('a', 'b'), ('d', 'e')]
    """
    return [tuple(members[i:i + k]) for members in by_node.values() for i in range(0, len(members) - k + 1, k)]


@dataclass(frozen=True, eq=False)
class GpuRound:
    """Compact task-level form of a round: GPUs, a time grid and tasks.

    Attributes
    ----------
    gpus : tuple of GpuSpec
    tasks : tuple of Task
    steps : int
        Number of time steps in the horizon.
    step_seconds : float
        Length of one step (slot metadata ``start``/``end`` are in seconds).
    memory_levels : int
        Memory levels offered per task (see :meth:`Task.memory_levels`).
    name : str
    budgets : Mapping[str, float]
        Optional budget per tenant (becomes ``bidders`` when tenants are the bidders).
    """

    gpus: tuple[GpuSpec, ...]
    tasks: tuple[Task, ...]
    steps: int
    step_seconds: float = 60.0
    memory_levels: int = 3
    name: str = ""
    budgets: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus", tuple(self.gpus))
        object.__setattr__(self, "tasks", tuple(self.tasks))
        if not self.gpus:
            raise InstanceError("/gpus", "must not be empty")
        if not is_integer(self.steps) or self.steps < 1:
            raise InstanceError("/steps", f"must be a positive integer, got {_kind(self.steps)}")
        if not is_finite_real(self.step_seconds) or self.step_seconds <= 0:
            raise InstanceError("/step_seconds", f"must be a finite positive number, got {_kind(self.step_seconds)}")
        if not is_integer(self.memory_levels) or self.memory_levels < 1:
            raise InstanceError("/memory_levels", f"must be a positive integer, got {_kind(self.memory_levels)}")
        check_size("/memory_levels", self.memory_levels, max_memory_levels(), "GENSOLVER_MAX_MEMORY_LEVELS",
                   "memory levels")
        if not isinstance(self.name, str):
            raise InstanceError("/name", f"expected a string, got {_kind(self.name)}")
        seen: dict[Any, int] = {}
        for k, g in enumerate(self.gpus):
            if not isinstance(g, GpuSpec):
                raise InstanceError(f"/gpus/{k}", f"expected a GpuSpec, got {type(g).__name__}")
            if not isinstance(g.id, str) or not g.id:
                raise InstanceError(f"/gpus/{k}/id", f"expected a non-empty string, got {_kind(g.id)}")
            if g.id in seen:
                raise InstanceError(f"/gpus/{k}/id", f"duplicate GPU id {g.id!r} (also /gpus/{seen[g.id]})")
            seen[g.id] = k
            for name in ("memory", "compute"):
                val = getattr(g, name)
                if not is_finite_real(val) or val <= 0:
                    raise InstanceError(f"/gpus/{k}/{name}", f"must be a finite positive number, got {_kind(val)}")
            if g.memory > MAX_MEMORY_GIB:
                raise InstanceError(f"/gpus/{k}/memory", f"must be at most {MAX_MEMORY_GIB:.0f} GiB (2**80 bytes), "
                                                         f"got {g.memory!r}")
            for name in ("node", "model"):
                if not isinstance(getattr(g, name), str):
                    raise InstanceError(f"/gpus/{k}/{name}", f"expected a string, got {_kind(getattr(g, name))}")
        seen = {}
        for k, t in enumerate(self.tasks):
            if not isinstance(t, Task):
                raise InstanceError(f"/tasks/{k}", f"expected a Task, got {type(t).__name__}")
            if t.id in seen:
                raise InstanceError(f"/tasks/{k}/id", f"duplicate task id {t.id!r} (also /tasks/{seen[t.id]})")
            seen[t.id] = k
        if not isinstance(self.budgets, Mapping):
            raise InstanceError("/budgets", f"expected an object (tenant -> budget), got {_kind(self.budgets)}")
        owners = {t.id for t in self.tasks} | {t.tenant for t in self.tasks}
        for key, val in self.budgets.items():
            where = f"/budgets/{_esc(key) if isinstance(key, str) else _kind(key)}"
            if not isinstance(key, str) or key not in owners:
                raise InstanceError(where, f"{_kind(key)} is neither a task id nor a tenant of this round")
            if not is_finite_real(val) or val < 0:
                raise InstanceError(where, f"must be a finite non-negative number, got {_kind(val)}")

    # ----------------------------------------------------------------- options
    def gpu_groups(self, k: int) -> list[tuple[int, ...]]:
        """Aligned blocks of ``k`` consecutive GPUs on one node (:func:`aligned_blocks`; all
        single GPUs, in GPU order, for k=1)."""
        if k == 1:
            return [(g,) for g in range(len(self.gpus))]
        by_node: dict[str, list[int]] = {}
        for g, spec in enumerate(self.gpus):
            by_node.setdefault(spec.node, []).append(g)
        return aligned_blocks(by_node, k)

    def options(self, task_index: int) -> Iterator[BundleOption]:
        """Every feasible bundle of task ``task_index``, in a fixed order."""
        task = self.tasks[task_index]
        end_limit = self.steps if task.deadline is None else min(self.steps, task.deadline)
        groups = self.gpu_groups(task.gpus)
        for level, mem in enumerate(task.memory_levels(self.memory_levels)):
            length = task_steps(task, mem)
            for group in groups:
                if any(self.gpus[g].memory + 1e-9 < mem or self.gpus[g].compute + 1e-9 < task.compute for g in group):
                    continue
                for start in range(task.release, end_limit - length + 1):
                    value = task_value(task, start + length)
                    if value <= 0:
                        continue
                    yield BundleOption(task_index, group, float(mem), level, start, length, value)

    def expansion_size(self) -> int:
        """An upper bound of the work of :meth:`expand`: slots, plus bids and demand entries.

        ``gpus * steps`` slots; per task and memory level ``m`` (length ``L`` steps, ``k`` GPUs),
        ``G(m) * S(L)`` bids of ``k * L`` entries each, where ``G(m)`` counts the GPU groups that
        fit ``m`` and ``S(L)`` the start steps. Costs ``O(tasks * levels * groups)`` arithmetic,
        nothing proportional to ``steps`` or to the expansion itself.
        """
        total = len(self.gpus) * self.steps
        mins: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for task in self.tasks:
            if task.gpus not in mins:
                groups = self.gpu_groups(task.gpus)
                mins[task.gpus] = (np.array([min(self.gpus[g].memory for g in grp) for grp in groups]),
                                   np.array([min(self.gpus[g].compute for g in grp) for grp in groups]))
            mem, cmp_ = mins[task.gpus]
            end_limit = self.steps if task.deadline is None else min(self.steps, task.deadline)
            fits_compute = cmp_ + 1e-9 >= task.compute
            for level in task.memory_levels(self.memory_levels):
                length = task_steps(task, level)
                starts = max(0, end_limit - length - task.release + 1)
                if starts:
                    fitting = int(np.count_nonzero(fits_compute & (mem + 1e-9 >= level)))
                    total += fitting * starts * (1 + task.gpus * length)
        return total

    def slot_id(self, gpu: int, step: int) -> str:
        """Id of the slot of GPU index ``gpu`` at ``step``."""
        return f"{self.gpus[gpu].id}@t{step}"

    def bid_id(self, opt: BundleOption) -> str:
        """Id of the bid for bundle option ``opt``."""
        gpus = "+".join(self.gpus[g].id for g in opt.gpus)
        return f"{self.tasks[opt.task].id}|{gpus}|m{opt.level}|s{opt.start}"

    def expand(self, *, bidder: str = "task") -> Instance:
        """The ``gensolver.instance/v1`` instance with the same optimum.

        Parameters
        ----------
        bidder : {"task", "tenant"}
            XOR groups: one per task (default), or one per tenant (a tenant then wins at most
            one of its tasks' bundles — only meaningful when tenants bid for one task each).
        """
        if bidder not in ("task", "tenant"):
            raise InstanceError("", f"bidder must be 'task' or 'tenant', got {bidder!r}")
        size = self.expansion_size()
        check_size("/steps", size, max_round_entries(), "GENSOLVER_MAX_ROUND_ENTRIES",
                   f"{len(self.gpus)} GPUs x {self.steps} steps with {len(self.tasks)} tasks expand to slots, bids "
                   "and demand entries:")
        slots = []
        for g, spec in enumerate(self.gpus):
            for t in range(self.steps):
                slots.append(Slot(self.slot_id(g, t), {"memory": spec.memory, "compute": spec.compute},
                                  spec.id, t * self.step_seconds, (t + 1) * self.step_seconds))
        bids = []
        for i, task in enumerate(self.tasks):
            owner = task.id if bidder == "task" else task.tenant
            for opt in self.options(i):
                demand = {self.slot_id(g, t): {"memory": opt.memory, "compute": task.compute}
                          for g in opt.gpus for t in range(opt.start, opt.start + opt.length)}
                bids.append(Bid(self.bid_id(opt), owner, opt.value, demand))
        names = {t.id if bidder == "task" else t.tenant for t in self.tasks}
        bidders = tuple(Bidder(n, float(self.budgets[n])) for n in sorted(names) if n in self.budgets)
        meta = {"family": "gpu-round", "steps": self.steps, "step_seconds": self.step_seconds,
                "gpus": [g.id for g in self.gpus], "tasks": len(self.tasks)}
        if not bids:
            raise InstanceError("/tasks", "no task has a feasible bundle in this round")
        instance = Instance(tuple(slots), tuple(bids), bidders, self.name, meta)
        check_totals(instance)  # values of 1e308 each: their sum must stay finite
        return mark_validated(instance)

    # ----------------------------------------------------------------- I/O
    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the compact form (``schema: gensolver.gpuround/v1``)."""
        return {
            "schema": "gensolver.gpuround/v1",
            "name": self.name,
            "steps": self.steps,
            "step_seconds": self.step_seconds,
            "memory_levels": self.memory_levels,
            "gpus": [{"id": g.id, "memory": g.memory, "compute": g.compute, "node": g.node, "model": g.model} for g in self.gpus],
            "tasks": [t.to_dict() for t in self.tasks],
            "budgets": dict(self.budgets),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> GpuRound:
        """Inverse of :meth:`to_dict`.

        Raises
        ------
        InstanceError
            Naming the offending place as a JSON pointer (``/tasks/3/memory``, ``/steps``): a
            missing or unknown field, a value of the wrong type (no coercion: ``"80"`` is not a
            number, ``2.7`` not an integer) or out of range. ``command`` is a list of strings, or
            one string split into arguments as a POSIX shell would (:func:`shlex.split`).
        """
        if not isinstance(doc, Mapping):
            raise InstanceError("", f"expected an object, got {type(doc).__name__}")
        if doc.get("schema") != "gensolver.gpuround/v1":
            raise InstanceError("/schema", f"expected 'gensolver.gpuround/v1', got {doc.get('schema')!r}")
        _fields(doc, "", ("schema", "steps", "gpus", "tasks"), _ROUND_FIELDS)
        gpus = []
        for k, g in enumerate(_array(doc["gpus"], "/gpus")):
            g = _fields(g, f"/gpus/{k}", ("id", "memory"), tuple(GpuSpec.__dataclass_fields__))
            gpus.append(GpuSpec(**g))
        tasks = []
        for k, t in enumerate(_array(doc["tasks"], "/tasks")):
            t = _fields(t, f"/tasks/{k}", _TASK_REQUIRED, tuple(Task.__dataclass_fields__))
            try:
                tasks.append(Task(**t))
            except InstanceError as exc:
                prefix = f"/tasks/{t.get('id')}"
                pointer = exc.pointer
                if pointer == prefix or pointer.startswith(prefix + "/"):
                    pointer = f"/tasks/{k}" + pointer[len(prefix):]
                raise InstanceError(pointer, exc.reason) from None
        return cls(tuple(gpus), tuple(tasks), doc["steps"], doc.get("step_seconds", 60.0),
                   doc.get("memory_levels", 3), doc.get("name", ""), doc.get("budgets", {}))


_ROUND_FIELDS = ("schema", "name", "steps", "step_seconds", "memory_levels", "gpus", "tasks", "budgets")
_TASK_REQUIRED = ("id", "preferred_memory", "min_memory", "duration", "value")


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise InstanceError(where, f"expected a list, got {_kind(value)}")
    return list(value)


def _fields(value: Any, where: str, required: Sequence[str], allowed: Sequence[str]) -> dict[str, Any]:
    """``value`` as a dict after checking it is an object with every required and no unknown key."""
    if not isinstance(value, Mapping):
        raise InstanceError(where, f"expected an object, got {_kind(value)}")
    for key in value:
        if key not in allowed:
            raise InstanceError(f"{where}/{_esc(str(key))}", f"unknown field {key!r} (expected one of: {', '.join(allowed)})")
    for key in required:
        if key not in value:
            raise InstanceError(f"{where}/{key}", "missing required field")
    return dict(value)

def uniform_gpus(memories: Sequence[float], *, per_node: int = 8, prefix: str = "gpu") -> tuple[GpuSpec, ...]:
    """GPUs with the given memories, grouped ``per_node`` to a node (ids ``gpu0``, ...)."""
    return tuple(GpuSpec(f"{prefix}{k}", float(m), 1.0, f"node{k // per_node}") for k, m in enumerate(memories))


__all__.append("uniform_gpus")
