"""Execution backends: where ``gensolver run`` runs a plan's processes, behind one registry.

An *execution backend* (not to be confused with a solver backend, or with the GPU backends of
:mod:`gensolver.executor.backends` it may open) is one entry of :data:`EXECUTION_BACKENDS`, an
:class:`ExecutionBackend` that declares what it can do:

==========  ==================================================================================
``nvml``    processes launched here on real NVIDIA GPUs (NVML); takes ``mps``
``sim``     processes launched here on simulated devices; takes ``sim_devices``, ``sim_state``
``slurm``   jobs submitted to Slurm (:mod:`gensolver.adapters.slurm`); opens no device here
==========  ==================================================================================

A front end resolves ``--backend`` through the registry (an unknown name lists the valid ones),
refuses an option the entry does not take, and either opens the entry's devices
(:attr:`ExecutionBackend.open`) and runs the plan with :class:`~gensolver.executor.PlanRunner`,
or, for an entry that ``submits``, hands the plan to its cluster scheduler.

Examples
--------
>>> from gensolver.executor.execution import EXECUTION_BACKENDS
>>> list(EXECUTION_BACKENDS)
['nvml', 'sim', 'slurm']
>>> sorted(EXECUTION_BACKENDS.get("sim").takes)
['sim_devices', 'sim_state']
>>> EXECUTION_BACKENDS.get("slurm").submits
True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import InputError, UnknownNameError
from ..registry import Registry
from .backends import GpuBackend, NvmlBackend, SimulatedBackend
from .plan_model import ExecutionPlan

__all__ = ["ExecutionBackend", "EXECUTION_BACKENDS", "UnknownExecutionBackendError", "PlanDevicesError",
           "open_nvml", "open_simulated"]


class UnknownExecutionBackendError(UnknownNameError):
    """An unknown execution backend name; the message lists the valid ones."""


class PlanDevicesError(InputError):
    """The plan's devices cannot be simulated as declared (a device without its memory)."""


#: opens the devices a plan runs on: ``open(plan, *, mps, sim_devices, state_dir) -> GpuBackend``
DeviceOpener = Callable[..., GpuBackend]


@dataclass(frozen=True)
class ExecutionBackend:
    """One entry of :data:`EXECUTION_BACKENDS`.

    Attributes
    ----------
    name : str
        The registry name (``--backend``).
    description : str
        One line for ``--help``.
    takes : frozenset of str
        The backend-specific options it accepts (``"mps"``, ``"sim_devices"``, ``"sim_state"``);
        a front end refuses the others.
    submits : bool
        ``True``: the jobs go to a cluster scheduler, and no device is opened here.
    open : callable or None
        ``open(plan, *, mps, sim_devices, state_dir)``: the :class:`~gensolver.executor.GpuBackend`
        the plan's processes run on (``None`` when ``submits``). Raises
        :class:`~gensolver.executor.BackendError` when the devices are unavailable,
        ``ValueError`` for bad device specs, ``OSError`` for an unusable ``state_dir``.
    """

    name: str
    description: str
    takes: frozenset[str] = frozenset()
    submits: bool = False
    open: DeviceOpener | None = None


def open_nvml(plan: ExecutionPlan, *, mps: bool = False, sim_devices: Sequence[str] = (),
              state_dir: Path | None = None) -> GpuBackend:
    """The real NVIDIA GPUs of this machine (NVML), with the CUDA MPS daemon when ``mps``."""
    return NvmlBackend(mps=mps)


def open_simulated(plan: ExecutionPlan, *, mps: bool = False, sim_devices: Sequence[str] = (),
                   state_dir: Path | None = None) -> GpuBackend:
    """Simulated devices: from ``sim_devices`` (``COUNT:MEMORY`` specs), else the plan's own devices.

    Raises
    ------
    ValueError
        A bad ``sim_devices`` spec.
    PlanDevicesError
        No ``sim_devices`` and a plan device without its memory (or with 0 bytes).
    """
    if sim_devices:
        return SimulatedBackend.from_specs(list(sim_devices), state_dir=state_dir)
    missing = [d.id for d in plan.devices if d.memory is None]
    if missing:
        raise PlanDevicesError(f"the plan does not give the memory of {missing}; pass --sim-devices COUNT:MEMORY")
    empty = [d.id for d in plan.devices if not d.memory]
    if empty:
        raise PlanDevicesError(f"devices {empty} have no memory (0 bytes); pass --sim-devices COUNT:MEMORY")
    return SimulatedBackend([(d.id, d.memory) for d in plan.devices], state_dir=state_dir)  # type: ignore[misc]


#: the execution backends of ``gensolver run --backend`` (``register`` adds one)
EXECUTION_BACKENDS: Registry[ExecutionBackend] = Registry("execution backend", error=UnknownExecutionBackendError,
                                                          sort=False)
for _entry in (
    ExecutionBackend("nvml", "real NVIDIA GPUs", frozenset({"mps"}), open=open_nvml),
    ExecutionBackend("sim", "simulated devices", frozenset({"sim_devices", "sim_state"}), open=open_simulated),
    ExecutionBackend("slurm", "submit to Slurm", submits=True),
):
    EXECUTION_BACKENDS.register(_entry.name, _entry)
