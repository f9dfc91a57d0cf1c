"""The front end :func:`simulate` and its frozen result :class:`SimResult`."""

from __future__ import annotations

import inspect
import logging
import math
import numbers
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import InputError, check_seed
from ..model.tasks import GpuSpec, Task, task_value
from ..model.validate import is_real
from .engine import Cluster, Event, SimError
from .faults import Fault, parse_fault
from .metrics import Metrics, TaskRecord, compute_metrics
from .policies import POLICIES, Policy, get_policy
from .workload import Workload

logger = logging.getLogger(__name__)
__all__ = ["simulate", "SimResult"]


@dataclass(frozen=True)
class SimResult:
    """Frozen result of :func:`simulate`.

    Attributes
    ----------
    policy : str
    workload : str
    events : tuple of Event
        The full event log (see :class:`gensolver.sim.records.Event`), input of the audit.
    tasks : Mapping[str, TaskRecord]
    metrics : Metrics
    gpus : tuple of GpuSpec
    rounds : tuple of Mapping
        Per boundary round (market): time, boundary, waiting, candidates, bids, price, winners...
    balances : Mapping[str, float]
        Final credit balance per tenant (market; empty otherwise).
    end_time : float
        Simulated time at the end (steps).
    complete : bool
        Every accepted task finished.
    stalled : bool
        The run stopped because nothing could ever start again (e.g. permanent failures).
    wall_seconds : float
    step_seconds : float
    """

    policy: str
    workload: str
    events: tuple[Event, ...]
    tasks: Mapping[str, TaskRecord]
    metrics: Metrics
    gpus: tuple[GpuSpec, ...]
    rounds: tuple[Mapping[str, Any], ...]
    balances: Mapping[str, float]
    end_time: float
    complete: bool
    stalled: bool
    wall_seconds: float
    step_seconds: float = 60.0

    def jct(self) -> dict[str, float]:
        """JCT per finished task (steps)."""
        return {k: r.jct for k, r in self.tasks.items() if r.jct is not None}


def simulate(workload: Workload | Sequence[Task], *, policy: str | Policy | Callable[..., Policy] = "fcfs-packing",
             gpus: Sequence[GpuSpec] | None = None, until: float | None = None, seed: int = 0,
             faults: Iterable[Fault | str] = (), lease: int = 5, checkpoint_steps: float = 1.0,
             policy_options: Mapping[str, Any] | None = None, interference: float = 0.0) -> SimResult:
    """Run one policy on one workload.

    Parameters
    ----------
    workload : Workload or sequence of Task
        Tasks (``release`` = arrival step).
    policy : str, Policy or factory, keyword-only
        A registry name (:func:`gensolver.sim.list_policies`), an instance or a factory.
    gpus : sequence of GpuSpec, keyword-only
        The cluster (default: the workload's GPUs).
    until : float, keyword-only
        Stop at this step (default: when every task is done).
    seed : int, keyword-only
        Seeds the simulation (policies here are deterministic; kept for stochastic ones).
    faults : iterable of Fault or str, keyword-only
        Failures (``"gpu:ID@T1-T2"``, ``"node:NAME@T1-T2"`` or :class:`Fault`).
    lease : int, keyword-only
        Round length in steps (checkpoints, round-boundary decisions).
    checkpoint_steps : float, keyword-only
        Work added to a preempted task (restore cost).
    policy_options : mapping, keyword-only
        Options for the policy factory (e.g. ``{"mechanism": "vcg", "time_limit": 0.1}``).
    interference : float, keyword-only
        Memory-bandwidth interference between co-located tasks, for every policy
        (:class:`gensolver.sim.engine.Cluster`; 0: none).

    Returns
    -------
    SimResult

    Raises
    ------
    ValueError
        A bad argument, named in the message (checked before any work).
    FaultError
        A malformed fault string.
    SimError
        A fault naming a GPU or node the cluster lacks (the message names the fault).
    """
    tasks, name, default_gpus, step_s, truths, models = _unpack(workload)
    gpus, lease, fitems = _check_args(gpus, default_gpus, lease=lease, until=until, seed=seed, faults=faults,
                                      interference=interference, checkpoint_steps=checkpoint_steps)
    options = _check_policy(policy, policy_options)
    flist = [parse_fault(f) if isinstance(f, str) else f for f in fitems]
    pol = get_policy(policy, **options)
    logger.info("simulate %s: %d tasks on %d GPUs under %s (lease %d steps)", name, len(tasks), len(gpus),
                getattr(pol, "name", type(pol).__name__), lease)
    t0 = time.perf_counter()
    cluster = Cluster(gpus, tasks, lease=lease, checkpoint_steps=checkpoint_steps, truths=truths, gpu_models=models,
                      interference=float(interference))
    _check_fault_targets(cluster, fitems, flist)
    _run(cluster, pol, flist, until)
    env = cluster.env
    wall = time.perf_counter() - t0
    logger.info("simulate %s under %s: stopped at step %g after %.2f s, %d rounds, %d unfinished", name,
                getattr(pol, "name", type(pol).__name__), float(env.now), wall, len(pol.rounds), cluster.unfinished)
    records = {s.id: _record(s) for s in cluster.tasks.values() if s.state != "rejected" and s.state != "pending"}
    rounds = tuple(MappingProxyType(dict(r)) for r in pol.rounds)
    events = tuple(cluster.log)
    metrics = compute_metrics(events, records, rounds, end=float(env.now))
    balances: dict[str, float] = {}
    holder = getattr(pol, "market", None) or getattr(pol, "bank", None)
    if holder is not None:
        balances = dict(sorted(holder.balances.items()))
    return SimResult(getattr(pol, "name", type(pol).__name__), name, events, MappingProxyType(records), metrics, gpus,
                     rounds, MappingProxyType(balances), float(env.now), cluster.unfinished == 0, cluster.stalled, wall,
                     step_s)


def _unpack(workload: Workload | Sequence[Task]) -> tuple[
        Sequence[Task], str, Sequence[GpuSpec], float, Mapping[str, Task], Mapping[str, tuple[str, ...]]]:
    """The tasks, name, default GPUs, seconds per step, true tasks and GPU models of ``workload``."""
    if isinstance(workload, Workload):
        return (workload.tasks, workload.name, workload.gpus, workload.step_seconds, workload.truths,
                workload.gpu_models)
    tasks = _items("workload", workload, Task, "a Workload or a sequence of Task")
    return tasks, "tasks", (), 60.0, {}, {}


def _check_args(gpus: Sequence[GpuSpec] | None, default_gpus: Sequence[GpuSpec], *, lease: Any, until: Any,
                seed: Any, faults: Any, interference: Any, checkpoint_steps: Any) -> tuple[
                    tuple[GpuSpec, ...], int, Sequence[Fault | str]]:
    """Check :func:`simulate`'s arguments before any work: the GPUs, the lease and the faults as given.

    Raises :class:`~gensolver.errors.InputError` naming the bad argument.
    """
    if gpus is not None:
        gpus = _items("gpus", gpus, GpuSpec, "a sequence of GpuSpec")
    cluster_gpus = tuple(gpus if gpus is not None else default_gpus)
    if not cluster_gpus:
        raise InputError("no GPUs: pass gpus=... or a Workload with GPUs")
    if isinstance(lease, bool) or not isinstance(lease, numbers.Integral) or lease < 1:
        raise InputError(f"lease must be a positive integer, got {lease!r}")
    if until is not None and not (is_real(until) and math.isfinite(until) and until > 0):
        raise InputError(f"until must be a positive finite number or None, got {until!r}")
    check_seed(seed)
    if not (is_real(interference) and math.isfinite(interference) and interference >= 0):
        raise InputError(f"interference must be a finite number >= 0, got {interference!r}")
    if not (is_real(checkpoint_steps) and math.isfinite(checkpoint_steps) and checkpoint_steps >= 0):
        raise InputError(f"checkpoint_steps must be a finite number >= 0, got {checkpoint_steps!r}")
    if isinstance(faults, (str, bytes)):
        raise InputError(f"faults must be a sequence of Fault or str (e.g. [{faults!r}]), not a bare string")
    fitems = _items("faults", faults, (Fault, str), "an iterable of Fault or str")
    return cluster_gpus, int(lease), fitems


def _check_fault_targets(cluster: Cluster, fitems: Sequence[Fault | str], flist: Sequence[Fault]) -> None:
    """Check that every fault names a GPU or node of ``cluster`` (:class:`SimError` naming the fault)."""
    for spec, f in zip(fitems, flist):
        try:
            cluster.fault_targets(f)  # validate targets before running
        except SimError as exc:
            raise SimError(f"fault {spec if isinstance(spec, str) else f!r}: {exc}") from None


def _run(cluster: Cluster, pol: Any, flist: Sequence[Fault], until: float | None) -> None:
    """Attach ``pol`` to ``cluster``, start the arrivals, ticks and faults, and run to ``until``."""
    pol.attach(cluster)
    cluster.on_pass = lambda boundary: pol.schedule(cluster, boundary)
    env = cluster.env
    env.process(cluster.arrivals())
    env.process(cluster.ticks(lambda: pol.schedule(cluster, True)))
    if flist:
        env.process(cluster.fault_process(flist))
    env.run(until=until)


def _record(s: Any) -> TaskRecord:
    """A finished or unfinished task's outcome, in true terms (owner, arrival, work, value)."""
    true = s.truth
    achieved = 0.0
    if s.finish is not None and (true.deadline is None or s.finish <= true.deadline + 1e-9):
        achieved = task_value(true, s.finish)
    return TaskRecord(s.id, true.tenant, s.true_arrival, float(true.duration), s.first_start, s.finish,
                      s.preemptions, s.faults, s.lost, float(true.value), float(achieved),
                      None if true.deadline is None else float(true.deadline),
                      float(true.preferred_memory if true.elasticity > 0 else true.min_memory),
                      float(true.elasticity), float(s.overhead))


def _items(arg: str, value: object, kind: type | tuple[type, ...], what: str) -> tuple[Any, ...]:
    """``value`` as a tuple whose items are all ``kind`` (ValueError naming ``arg`` otherwise)."""
    if value is None or isinstance(value, (str, bytes, Mapping)):
        raise InputError(f"{arg} must be {what}, got {value!r}")
    try:
        items: tuple[Any, ...] = tuple(value)  # type: ignore[call-overload,arg-type]
    except TypeError:
        raise InputError(f"{arg} must be {what}, got {type(value).__name__} {value!r}") from None
    for k, item in enumerate(items):
        if not isinstance(item, kind):
            raise InputError(f"{arg}[{k}] must be {what.split(' of ')[-1]}, got {type(item).__name__} {item!r}")
    return items


def _check_policy(policy: object, policy_options: object) -> dict[str, Any]:
    """Check ``policy`` and ``policy_options`` before any work; return the options as a dict."""
    if not (isinstance(policy, (str, Policy)) or callable(policy)):
        raise InputError(f"policy must be a policy name, a Policy or a factory, got {policy!r}")
    if policy_options is None:
        return {}
    if not isinstance(policy_options, Mapping):
        raise InputError(f"policy_options must be a mapping of option name to value, got {policy_options!r}")
    options = dict(policy_options)
    bad = [k for k in options if not isinstance(k, str)]
    if bad:
        raise InputError(f"policy_options keys must be option names (str), got {bad[0]!r}")
    if options and isinstance(policy, Policy):
        raise InputError("policy_options cannot be applied to a policy instance")
    factory: Any = policy
    if isinstance(policy, str):
        factory = POLICIES.get(policy) if policy in POLICIES else None  # get_policy reports unknown names
    if options and factory is not None:
        try:
            sig = inspect.signature(factory)
        except (TypeError, ValueError):
            return options  # not introspectable: the factory checks its own options
        try:
            sig.bind(**options)
        except TypeError as exc:
            raise InputError(f"policy_options {options!r} do not fit policy {policy!r}: {exc}") from None
    return options
