"""Executor adapters: turn a cleared round into running processes on real or simulated GPUs.

- :func:`to_plan` lays an allocation out as per-device timelines (:class:`ExecutionPlan`, JSON
  schema ``gensolver.plan/v1``: :func:`read_plan`, :func:`write_plan`), :func:`check_plan`
  certifies it independently, :func:`plot_plan` draws it.
- Backends behind :class:`GpuBackend`: :class:`NvmlBackend` (NVIDIA devices through NVML) and
  :class:`SimulatedBackend` (declared devices; processes report usage themselves).
- :class:`PlanRunner` launches, watches, preempts and journals the processes; its
  :class:`ExecutionReport` carries one :class:`UsageFeedback` per task for the market. Its
  clock is injectable (:class:`ManualClock`: plan time moves only when the caller says).
- In the launched processes: :func:`report_usage` and :func:`apply_memory_limit`.
"""

from .backends import (
    NVML_ERRORS,
    BackendError,
    DeviceInfo,
    DeviceNotFoundError,
    GpuBackend,
    MemoryInfo,
    MpsStatus,
    MpsUnavailableError,
    NvmlBackend,
    NvmlError,
    NvmlGpuLostError,
    NvmlNotSupportedError,
    NvmlPermissionError,
    NvmlUnavailableError,
    SimDevice,
    SimulatedBackend,
    Utilization,
    parse_memory,
)
from .check import PlanCheck, PlanViolation, check_plan
from .child import apply_memory_limit, report_usage
from .clock import SYSTEM_CLOCK, Clock, ManualClock, SystemClock
from .gantt import plot_plan
from .journal import Journal, JournalError, read_journal
from .plan import (
    PLAN_SCHEMA,
    DevicePlan,
    ExecutionPlan,
    PlanEntry,
    PlanError,
    PlanTask,
    PreemptionPoint,
    Run,
    lease_plan,
    plan_from_dict,
    read_plan,
    to_plan,
    write_plan,
)
from .runner import (
    _DEPRECATED_EXECUTOR,
    FEEDBACK_SCHEMA,
    ExecutionReport,
    ExecutorError,
    ExecutorPolicy,
    PlanRunner,
    UsageFeedback,
    resolve_devices,
)

__all__ = [
    "PLAN_SCHEMA", "FEEDBACK_SCHEMA", "NVML_ERRORS",
    "ExecutionPlan", "DevicePlan", "PlanEntry", "PlanTask", "PreemptionPoint", "Run", "PlanError",
    "to_plan", "lease_plan", "plan_from_dict", "read_plan", "write_plan", "check_plan", "PlanCheck", "PlanViolation", "plot_plan",
    "GpuBackend", "DeviceInfo", "MemoryInfo", "Utilization", "NvmlBackend", "SimulatedBackend", "SimDevice",
    "parse_memory", "BackendError", "DeviceNotFoundError", "NvmlError", "NvmlUnavailableError",
    "NvmlPermissionError", "NvmlNotSupportedError", "NvmlGpuLostError", "MpsUnavailableError", "MpsStatus",
    "PlanRunner", "ExecutorPolicy", "ExecutionReport", "UsageFeedback", "ExecutorError", "resolve_devices",
    "Journal", "JournalError", "read_journal", "Clock", "SystemClock", "ManualClock", "SYSTEM_CLOCK",
    "report_usage", "apply_memory_limit",
]


def __getattr__(name: str) -> object:
    if name == "Executor":  # the deprecated name of PlanRunner
        import warnings

        from .._deprecation import GensolverDeprecationWarning

        warnings.warn(_DEPRECATED_EXECUTOR, GensolverDeprecationWarning, stacklevel=2)
        return PlanRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
