"""The discrete-event cluster model (on :mod:`simpy`) that every policy drives.

Time is measured in *steps* (``step_seconds`` each, for display only); it is continuous, so
a task slowed down by elasticity finishes between steps.

Execution model (documented; :mod:`gensolver.sim.audit` checks it from the event log alone)
-----------------------------------------------------------------------------------------
- A GPU has ``memory`` (GiB) and ``compute`` (share of the device) capacities, both hard: the
  sums over the tasks placed on it never exceed them. A task takes the same memory ``m`` and
  ``compute`` on each of its ``gpus`` GPUs, all on one node (gangs).
- A task with ``m`` GiB runs at speed ``(min(m, preferred) / preferred) ** elasticity``
  (:func:`gensolver.model.tasks.task_steps`'s utility model); co-located tasks do not slow
  each other down (compute is a hard share), unless ``interference`` is set: then a task runs
  at ``1 / (1 + interference * C)`` of that speed, ``C`` the compute share of the other tasks
  on its most loaded GPU (memory-bandwidth contention, the same model as the ``mps`` policy). Whole-GPU placement allocates the device's whole
  memory and compute to the task.
- A task's *work* is ``duration`` (steps at speed 1). Stopping a preemptible task at a round
  boundary keeps its progress but adds ``checkpoint_steps`` of work (restore cost).
  Preemptible tasks checkpoint at every round boundary (multiples of ``lease``); a GPU failure
  rolls them back to their last checkpoint, and restarts non-preemptible tasks from scratch;
  the rolled-back work is logged as *lost*.
- **Reports and truth.** A task's *report* (what its tenant declared: memory, duration, value,
  release) is what policies see; its *true type* is what runs: work is the true duration and
  speed follows the true preferred memory and elasticity. A task given less than its true
  minimum memory is not modelled as crashing: it runs at the speed law's value (a documented
  simplification; deflating memory is therefore a lie that can only slow the liar down).
- **GPU models.** A task pinned to GPU models (the trace's ``gpu_spec``) starts only on them.
- The event log records every state change (``arrive``, ``start``, ``resize``, ``stop``,
  ``finish``, ``gpu_up``, ``gpu_down``, ``credit``, ``reject``) with its time.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from ..errors import missing_extra

try:
    import simpy
except ImportError as _exc:  # the simulator is the [sim] extra
    raise missing_extra("simpy", "sim", "gensolver.sim (the cluster simulator)") from _exc
from ..model.tasks import GpuSpec, Task, task_speed
from .faults import unknown_target
from .records import TOL, Event, GpuState, SimError, TaskState

if TYPE_CHECKING:  # pragma: no cover
    from .faults import Fault

__all__ = ["Event", "GpuState", "TaskState", "Cluster", "SimError"]


class Cluster:
    """The simulated cluster: GPUs, tasks, the simpy environment and the event log.

    Policies act only through :meth:`start`, :meth:`stop` and :meth:`resize`, and read
    :meth:`waiting`, :meth:`running` and :attr:`gpus`.

    Parameters
    ----------
    gpus : sequence of GpuSpec
    tasks : sequence of Task
        ``release`` is the arrival step.
    lease : int
        Round length in steps (checkpoints and round-boundary decisions).
    checkpoint_steps : float
        Work added when a preemptible task is preempted (restore cost).
    truths : mapping, optional
        Task id -> true type, for tasks whose report (in ``tasks``) differs from the truth.
    gpu_models : mapping, optional
        Task id -> GPU models it may run on (the trace's ``gpu_spec``); absent: any model.
        :meth:`start` refuses any other placement.
    interference : float
        Memory-bandwidth interference between co-located tasks under *every* policy: a task
        runs at ``1 / (1 + interference * C)`` of its speed, ``C`` the compute share of the
        other tasks on its most loaded GPU (0: none, the default). Speeds change (logged as
        ``resize`` events) whenever a GPU's tenants change.
    """

    def __init__(self, gpus: Sequence[GpuSpec], tasks: Sequence[Task], *, lease: int = 5,
                 checkpoint_steps: float = 1.0, truths: Mapping[str, Task] | None = None,
                 gpu_models: Mapping[str, Sequence[str]] | None = None, interference: float = 0.0) -> None:
        self.env = simpy.Environment()
        self.gpus: dict[str, GpuState] = {g.id: GpuState(g) for g in gpus}
        self.nodes: dict[str, list[str]] = {}
        for g in gpus:
            self.nodes.setdefault(g.node, []).append(g.id)
        self.tasks: dict[str, TaskState] = {}
        for t in sorted(tasks, key=lambda t: (t.release, t.id)):
            if t.id in self.tasks:
                raise SimError(f"duplicate task id {t.id!r}")
            true = (truths or {}).get(t.id, t)
            self.tasks[t.id] = TaskState(t, true, remaining=float(true.duration), ckpt_remaining=float(true.duration))
        self.allowed: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in (gpu_models or {}).items()
                                                   if k in self.tasks and v}
        self.lease = int(lease)
        self.checkpoint_steps = float(checkpoint_steps)
        if not (math.isfinite(interference) and interference >= 0):
            raise SimError(f"interference must be a finite number >= 0, got {interference!r}")
        self.interference = float(interference)
        self.log: list[Event] = []
        self.unfinished = len(self.tasks)
        self._pass_pending = False
        self.on_pass: Callable[[bool], None] | None = None
        self.on_finish: Callable[[TaskState], None] | None = None
        self.recoveries_pending = 0
        self.stalled = False
        #: faults covering each GPU now: a GPU is up only when none does (overlapping faults)
        self.cover: dict[str, int] = {g.id: 0 for g in gpus}
        #: times of the next arrival and the next fault event still to come (inf: none)
        self.next_arrival = math.inf
        self.next_fault_event = math.inf
        #: set by a policy that can prove its boundary round a no-op (see :meth:`ticks`)
        self.quiet: Callable[[], bool] | None = None
        #: round boundaries held (policy called) and jumped over (idle or quiet)
        self.boundaries_held = 0
        self.boundaries_jumped = 0
        for g in gpus:
            self.emit("gpu_up", gpus=(g.id,), memory=g.memory, compute=g.compute)

    # ------------------------------------------------------------ reading
    @property
    def now(self) -> float:
        return float(self.env.now)

    def waiting(self) -> list[TaskState]:
        """Waiting tasks in arrival order (ties by id)."""
        return [s for s in self.tasks.values() if s.state == "waiting"]

    def running(self) -> list[TaskState]:
        """Running tasks in arrival order."""
        return [s for s in self.tasks.values() if s.state == "running"]

    def up_gpus(self) -> list[GpuState]:
        return [g for g in self.gpus.values() if g.up]

    def emit(self, kind: str, **kw: Any) -> None:
        self.log.append(Event(self.now, kind, **kw))

    def model_ok(self, task_id: str, gpu: str) -> bool:
        """Whether the task may run on ``gpu``'s model (its ``gpu_spec``, if any)."""
        allowed = self.allowed.get(task_id)
        return allowed is None or self.gpus[gpu].spec.model in allowed

    def feasible_anywhere(self, task: Task) -> bool:
        """Whether ``task`` could ever run on this cluster (empty, all GPUs up)."""
        for members in self.nodes.values():
            ok = [g for g in members if self.model_ok(task.id, g) and self.gpus[g].spec.memory + TOL >= task.min_memory
                  and self.gpus[g].spec.compute + TOL >= task.compute]
            if len(ok) >= task.gpus:
                return True
        return False

    def _fits_up(self, task: Task) -> bool:
        """Whether ``task`` fits on GPUs that are up now, were they all free."""
        for members in self.nodes.values():
            ok = [g for g in members if self.gpus[g].up and self.model_ok(task.id, g)
                  and self.gpus[g].spec.memory + TOL >= task.min_memory and self.gpus[g].spec.compute + TOL >= task.compute]
            if len(ok) >= task.gpus:
                return True
        return False

    # ------------------------------------------------------------ acting
    def _advance(self, st: TaskState) -> None:
        dt = self.now - st.since
        if dt > 0 and st.state == "running":
            done = dt * st.speed
            st.executed += done
            st.remaining = max(0.0, st.remaining - done)
        st.since = self.now

    def _countdown(self, st: TaskState, gen: int):
        delay = st.remaining / st.speed if st.speed > 0 else math.inf
        yield self.env.timeout(max(0.0, delay))
        if st.gen == gen and st.state == "running":
            self._finish(st)

    def _arm(self, st: TaskState) -> None:
        st.gen += 1
        self.env.process(self._countdown(st, st.gen))

    def start(self, task_id: str, gpus: Sequence[str], memory: float, *, whole: bool = False,
              compute: float | None = None, factor: float = 1.0, setup: float = 0.0) -> None:
        """Start a waiting task on ``gpus`` with ``memory`` GiB per GPU.

        ``whole=True`` allocates each GPU entirely (memory and compute) to the task.
        ``compute`` overrides the compute share allocated per GPU (sharing modes: a MIG slice,
        a time-slicing replica); ``factor`` multiplies the speed (interference, time share;
        :meth:`set_factor` changes it later); ``setup`` adds steps of work before the task's
        own (e.g. a MIG reconfiguration), logged on the ``start`` event.
        """
        st = self.tasks[task_id]
        t = st.task
        if st.state != "waiting":
            raise SimError(f"cannot start task {task_id!r} in state {st.state}")
        gpus = tuple(gpus)
        if len(gpus) != t.gpus or len(set(gpus)) != len(gpus):
            raise SimError(f"task {task_id!r} needs {t.gpus} distinct GPUs, got {gpus}")
        if len({self.gpus[g].node for g in gpus}) != 1:
            raise SimError(f"task {task_id!r}: a gang must stay on one node, got {gpus}")
        bad = [g for g in gpus if not self.model_ok(task_id, g)]
        if bad:
            raise SimError(f"task {task_id!r} may run only on {sorted(self.allowed[task_id])}, "
                           f"not on {bad[0]} ({self.gpus[bad[0]].spec.model or 'no model'})")
        if memory + TOL < t.min_memory:
            raise SimError(f"task {task_id!r}: memory {memory} below its minimum {t.min_memory}")
        if whole:
            if any(self.gpus[g].tasks for g in gpus):
                raise SimError(f"task {task_id!r}: whole GPUs requested but some are shared")
        alloc = []
        for g in gpus:
            gs = self.gpus[g]
            mem = gs.spec.memory if whole else memory
            comp = gs.spec.compute if whole else (t.compute if compute is None else compute)
            if not gs.fits(mem, comp):
                raise SimError(f"task {task_id!r} does not fit on {g} (free {gs.free_memory:.3f} GiB, "
                               f"{gs.free_compute:.3f} compute; asks {mem:.3f}, {comp:.3f})")
            alloc.append((gs, mem, comp))
        mem_alloc = alloc[0][1]
        comp_alloc = alloc[0][2]
        if whole and len({(a[1], a[2]) for a in alloc}) != 1:
            raise SimError(f"task {task_id!r}: whole-GPU gangs need identical GPUs")
        for gs, mem, comp in alloc:
            gs.memory_used += mem
            gs.compute_used += comp
            gs.tasks.add(task_id)
        st.state = "running"
        st.gpus, st.memory, st.compute = gpus, mem_alloc, comp_alloc
        true = st.truth
        assert true is not None
        if not factor > 0 or setup < 0:
            raise SimError(f"task {task_id!r}: speed factor must be positive and setup non-negative")
        st.factor = float(factor)
        st.inter = self._inter_factor(st)
        st.speed = task_speed(true, mem_alloc if whole else memory) * st.factor * st.inter
        if setup > 0:
            st.remaining += setup
            st.ckpt_remaining += setup
            st.overhead += setup
        st.since = self.now
        st.last_start = self.now
        if st.first_start is None:
            st.first_start = self.now
        self.emit("start", task=task_id, gpus=gpus, memory=mem_alloc, compute=comp_alloc, speed=st.speed,
                  tenant=t.tenant, work=float(setup))
        self._arm(st)
        self._interfere(gpus, skip=task_id)

    def resize(self, task_id: str, memory: float) -> None:
        """Change a running task's memory (per GPU) in place; its speed follows."""
        st = self.tasks[task_id]
        if st.state != "running":
            raise SimError(f"cannot resize task {task_id!r} in state {st.state}")
        if memory + TOL < st.task.min_memory:
            raise SimError(f"task {task_id!r}: memory {memory} below its minimum")
        delta = memory - st.memory
        if abs(delta) <= TOL:
            return
        for g in st.gpus:
            if self.gpus[g].free_memory + TOL < delta:
                raise SimError(f"task {task_id!r}: cannot grow by {delta:.3f} GiB on {g}")
        self._advance(st)
        for g in st.gpus:
            self.gpus[g].memory_used += delta
        st.memory = memory
        st.speed = task_speed(st.truth, memory) * st.factor * st.inter  # type: ignore[arg-type]
        self.emit("resize", task=task_id, gpus=st.gpus, memory=memory, compute=st.compute, speed=st.speed,
                  tenant=st.task.tenant)
        self._arm(st)

    def set_factor(self, task_id: str, factor: float) -> None:
        """Change a running task's speed factor (interference, time share); logged as a resize."""
        st = self.tasks[task_id]
        if st.state != "running":
            raise SimError(f"cannot change the speed of task {task_id!r} in state {st.state}")
        if not factor > 0:
            raise SimError(f"task {task_id!r}: speed factor must be positive, got {factor}")
        if abs(factor - st.factor) <= 1e-12:
            return
        self._advance(st)
        st.factor = float(factor)
        st.speed = task_speed(st.truth, st.memory) * st.factor * st.inter  # type: ignore[arg-type]
        self.emit("resize", task=task_id, gpus=st.gpus, memory=st.memory, compute=st.compute, speed=st.speed,
                  tenant=st.task.tenant)
        self._arm(st)

    def _inter_factor(self, st: TaskState) -> float:
        if self.interference == 0.0:
            return 1.0
        worst = max((sum(self.tasks[t].compute for t in sorted(self.gpus[g].tasks) if t != st.id) for g in st.gpus),
                    default=0.0)
        return 1.0 / (1.0 + self.interference * worst)

    def _interfere(self, gpus: Iterable[str], skip: str = "") -> None:
        """Re-rate the running tasks on ``gpus`` after their co-tenants changed."""
        if self.interference == 0.0:
            return
        seen = {skip}
        for g in sorted(set(gpus)):
            for tid in sorted(self.gpus[g].tasks):
                if tid in seen:
                    continue
                seen.add(tid)
                st = self.tasks[tid]
                new = self._inter_factor(st)
                if abs(new - st.inter) > 1e-12:
                    self._advance(st)
                    st.inter = new
                    st.speed = task_speed(st.truth, st.memory) * st.factor * st.inter  # type: ignore[arg-type]
                    self.emit("resize", task=tid, gpus=st.gpus, memory=st.memory, compute=st.compute,
                              speed=st.speed, tenant=st.task.tenant)
                    self._arm(st)

    def _release(self, st: TaskState) -> None:
        for g in st.gpus:
            gs = self.gpus[g]
            gs.memory_used -= st.memory
            gs.compute_used -= st.compute
            gs.tasks.discard(st.id)
            if not gs.tasks:
                gs.memory_used = 0.0
                gs.compute_used = 0.0
        gpus = st.gpus
        st.gpus, st.memory, st.compute, st.speed, st.factor, st.inter = (), 0.0, 0.0, 0.0, 1.0, 1.0
        st.gen += 1
        self._interfere(gpus)

    def stop(self, task_id: str, *, reason: str = "preempt") -> None:
        """Stop a running task and requeue it.

        ``reason="preempt"``: only preemptible tasks; progress kept, ``checkpoint_steps`` of work
        added. ``reason="fault"``: progress rolls back to the last checkpoint (preemptible) or to
        zero (non-preemptible); the rolled-back work is logged as lost.
        """
        st = self.tasks[task_id]
        if st.state != "running":
            raise SimError(f"cannot stop task {task_id!r} in state {st.state}")
        self._advance(st)
        gpus = st.gpus
        overhead = lost = 0.0
        if reason == "preempt":
            if not st.task.preemptible:
                raise SimError(f"task {task_id!r} is not preemptible")
            overhead = self.checkpoint_steps
            st.remaining += overhead
            st.ckpt_remaining = st.remaining
            st.preemptions += 1
            st.overhead += overhead
        elif reason == "fault":
            target = st.ckpt_remaining if st.task.preemptible else float(st.truth.duration)  # type: ignore[union-attr]
            lost = max(0.0, target - st.remaining)
            st.remaining = target
            st.ckpt_remaining = target
            st.faults += 1
            st.lost += lost
        else:
            raise SimError(f"unknown stop reason {reason!r}")
        self._release(st)
        st.state = "waiting"
        st.waiting_since = self.now
        self.emit("stop", task=task_id, gpus=gpus, work=overhead, lost=lost, note=reason, tenant=st.task.tenant)
        self.request_pass()

    def _finish(self, st: TaskState) -> None:
        self._advance(st)
        st.executed += st.remaining  # float residue of the countdown
        st.remaining = 0.0
        gpus = st.gpus
        self._release(st)
        st.state = "done"
        st.finish = self.now
        self.unfinished -= 1
        self.emit("finish", task=st.id, gpus=gpus, tenant=st.task.tenant)
        if self.on_finish is not None:
            self.on_finish(st)
        self.request_pass()

    def checkpoint(self) -> None:
        """Every running preemptible task saves its progress (called at round boundaries)."""
        for st in self.running():
            if st.task.preemptible:
                self._advance(st)
                st.ckpt_remaining = st.remaining

    # ------------------------------------------------------------ processes
    def request_pass(self) -> None:
        """Ask for a scheduling pass at the current time, after the other events of this instant."""
        if not self._pass_pending:
            self._pass_pending = True
            self.env.process(self._pass(False))

    def _pass(self, boundary: bool):
        yield self.env.timeout(0)
        self._pass_pending = False
        if self.on_pass is not None:
            self.on_pass(boundary)

    def arrivals(self):
        """simpy process: tasks arrive at their ``release`` step."""
        last = 0.0
        for st in list(self.tasks.values()):
            if st.arrival > last:
                self.next_arrival = st.arrival
                yield self.env.timeout(st.arrival - last)
                last = st.arrival
            st.since = self.now
            st.waiting_since = self.now
            if not self.feasible_anywhere(st.task):
                st.state = "rejected"
                self.unfinished -= 1
                self.emit("reject", task=st.id, tenant=st.task.tenant,
                          note=f"needs {st.task.gpus} GPU(s) with {st.task.min_memory:.3g} GiB on one node")
                continue
            st.state = "waiting"
            self.emit("arrive", task=st.id, memory=st.task.preferred_memory, compute=st.task.compute,
                      work=float(st.truth.duration), tenant=st.task.tenant,  # type: ignore[union-attr]
                      note="preemptible" if st.task.preemptible else "fixed")
            self.request_pass()
        self.next_arrival = math.inf

    def ticks(self, on_tick: Callable[[], None]):
        """simpy process: round boundaries every ``lease`` steps while work remains.

        A boundary that provably changes nothing is jumped over: the process waits several
        leases at once, and the checkpoints of the boundaries it passes are replayed (the same
        float operations in the same order, so progress figures are bit-identical). Two cases:

        - **Idle**: no task runs and either no GPU is up or no waiting task fits on the GPUs
          that are up. Policies start tasks only on up GPUs and credit refills catch up by time,
          so the boundaries before the next arrival or fault event change nothing. An outage of
          10**9 steps costs a few boundaries, not 10**8.
        - **Quiet** (:attr:`quiet`, set by a policy that can prove it): no scheduling pass is
          pending and the policy's ``quiet()`` returns ``True``. That is its promise that its
          boundary round, in the present state and in every state that time alone reaches from it
          (running tasks progressing; no arrival, finish, fault event or pass), calls none of
          :meth:`start`, :meth:`stop`, :meth:`resize`, :meth:`set_factor`, :meth:`emit`, and
          changes none of the policy's state that a later round reads. The boundaries are then
          jumped up to the last one at least one lease before the next arrival, fault event or
          finish (:meth:`_horizon`). Proof of equivalence: a jumped boundary would have run
          :meth:`checkpoint` (replayed exactly) and the round (a no-op by the promise); nothing
          else happens between events, so the event log is that of the step-by-step run, byte for
          byte (``tests/sim/test_time_jumps.py`` checks it against ``quiet = None``).

        Jumped rounds leave no row in the policy's ``rounds``; :attr:`boundaries_held` and
        :attr:`boundaries_jumped` count both kinds.
        """
        while self.unfinished > 0:
            k = self._idle_periods()
            if k == 1:
                k = self._quiet_periods()
            start = self.now
            yield self.env.timeout(self.lease * k)
            if k > 1:
                self._replay_checkpoints(start, k - 1)
                self.boundaries_jumped += k - 1
            self.boundaries_held += 1
            self.checkpoint()
            on_tick()
            # stall detection: nothing can ever happen again
            if (self.unfinished > 0 and not self.running() and self.recoveries_pending == 0
                    and all(s.state != "pending" for s in self.tasks.values()) and self.waiting()
                    and not self._pass_pending):
                self.stalled = True
                return

    def _idle_periods(self) -> int:
        """How many lease periods the next boundary may be ahead (1 unless the cluster is idle).

        Idle: no pass pending, no task running, and no waiting task fits on the GPUs that are up
        (all free, as nothing runs) -- a task that needs a device under an outage waits for the
        outage's end, not for each boundary inside it."""
        if self._pass_pending or self.running() or any(self._fits_up(st.task) for st in self.waiting()):
            return 1
        nxt = min(self.next_arrival, self.next_fault_event)
        if not math.isfinite(nxt):
            return 1
        # the last boundary strictly before ``nxt``: the boundaries from there on are as before
        return max(1, math.ceil((nxt - self.now) / self.lease) - 1)

    def _quiet_periods(self) -> int:
        """How many lease periods the next boundary may be ahead when the policy proves its round
        a no-op (:attr:`quiet`; see :meth:`ticks`), else 1."""
        if self.quiet is None or self._pass_pending or not self.quiet():
            return 1
        nxt = self._horizon()
        if not math.isfinite(nxt):
            return 1
        # a full lease of slack before ``nxt``: a finish time estimated from a checkpointed
        # task's progress may differ from its countdown's by float rounding
        return max(1, math.ceil((nxt - self.now) / self.lease) - 2)

    def _horizon(self) -> float:
        """The time of the next arrival, fault event or finish (``inf``: none)."""
        finishes = (st.since + st.remaining / st.speed for st in self.running() if st.speed > 0)
        return min(self.next_arrival, self.next_fault_event, *finishes)

    def _replay_checkpoints(self, start: float, count: int) -> None:
        """The checkpoints of the ``count`` boundaries after ``start`` that were jumped over:
        :meth:`checkpoint`'s arithmetic at each of their times, in order (bit-identical progress).
        Nothing else changed in between, so only running preemptible tasks move."""
        for st in self.running():
            if not st.task.preemptible:
                continue
            since, remaining, executed, speed = st.since, st.remaining, st.executed, st.speed
            for j in range(1, count + 1):
                at = start + self.lease * j
                dt = at - since
                if dt > 0:
                    done = dt * speed
                    executed += done
                    remaining = max(0.0, remaining - done)
                since = at
            st.since, st.remaining, st.executed = since, remaining, executed
            st.ckpt_remaining = remaining

    def fault_process(self, faults: Iterable[Fault]):
        """simpy process: take GPUs down and bring them back."""
        timeline: list[tuple[float, int, str, tuple[str, ...]]] = []
        for f in faults:
            gids = self.fault_targets(f)
            timeline.append((f.start, 0, "down", gids))
            if f.end is not None:
                timeline.append((f.end, 1, "up", gids))
                self.recoveries_pending += 1
        timeline.sort()
        for t, _, what, gids in timeline:
            if t > self.now:
                self.next_fault_event = t
                yield self.env.timeout(t - self.now)
            if what == "down":
                for g in gids:
                    self.cover[g] += 1
                self._fail(tuple(g for g in gids if self.cover[g] == 1))
            else:
                for g in gids:
                    self.cover[g] -= 1
                self._recover(tuple(g for g in gids if self.cover[g] == 0))
        self.next_fault_event = math.inf

    def fault_targets(self, f: Fault) -> tuple[str, ...]:
        """The GPUs ``f`` takes down (:class:`SimError` when it names none of this cluster's)."""
        why = unknown_target(f, list(self.gpus), list(self.nodes))
        if why is not None:
            raise SimError(f"fault {why}")
        return (f.target,) if f.kind == "gpu" else tuple(self.nodes[f.target])

    def _fail(self, gids: tuple[str, ...]) -> None:
        victims = sorted({tid for g in gids for tid in self.gpus[g].tasks}, key=lambda t: list(self.tasks).index(t))
        for tid in victims:
            self.stop(tid, reason="fault")
        for g in gids:
            if self.gpus[g].up:
                self.gpus[g].up = False
                self.emit("gpu_down", gpus=(g,))

    def _recover(self, gids: tuple[str, ...]) -> None:
        self.recoveries_pending -= 1
        for g in gids:
            gs = self.gpus[g]
            if not gs.up:
                gs.up = True
                gs.memory_used = gs.compute_used = 0.0
                self.emit("gpu_up", gpus=(g,), memory=gs.spec.memory, compute=gs.spec.compute)
        self.request_pass()
