"""GPU backends behind one protocol: :class:`GpuBackend`, :class:`NvmlBackend`, :class:`SimulatedBackend`.

A backend answers four questions about devices, which is all the executor needs: which devices
exist (:meth:`~GpuBackend.devices`), how much memory is free on one
(:meth:`~GpuBackend.memory_info`), how much each process uses
(:meth:`~GpuBackend.process_memory`) and how busy it is (:meth:`~GpuBackend.utilization`).
Devices are addressed by UUID (``GPU-...``), as NVML and ``CUDA_VISIBLE_DEVICES`` name them.

Errors are typed (all :class:`BackendError`): NVML return codes go through one table,
:data:`NVML_ERRORS`, and codes absent from it keep their raw value in :class:`NvmlError`.

References
----------
.. [NVML] NVIDIA Management Library (NVML) API Reference, "Device Queries"
   (``nvmlDeviceGetMemoryInfo``, ``nvmlDeviceGetComputeRunningProcesses``,
   ``nvmlDeviceGetUtilizationRates``) and "Error reporting" (``nvmlReturn_t``),
   https://docs.nvidia.com/deploy/nvml-api/
.. [MPS] NVIDIA Multi-Process Service documentation, https://docs.nvidia.com/deploy/mps/
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..errors import UnavailableError
from .procs import is_alive

__all__ = [
    "DeviceInfo",
    "MemoryInfo",
    "Utilization",
    "GpuBackend",
    "BackendError",
    "DeviceNotFoundError",
    "NvmlError",
    "NvmlUnavailableError",
    "NvmlPermissionError",
    "NvmlNotSupportedError",
    "NvmlGpuLostError",
    "NVML_ERRORS",
    "NvmlBackend",
    "SimDevice",
    "SimulatedBackend",
    "parse_memory",
    "USAGE_FILE_ENV",
]

#: environment variable naming the file a simulated process reports its usage to
USAGE_FILE_ENV = "GENSOLVER_SIM_USAGE_FILE"


# ---------------------------------------------------------------------- records
@dataclass(frozen=True)
class DeviceInfo:
    """A device: position ``index``, NVML ``uuid``, marketing ``name``, ``memory`` in bytes."""

    index: int
    uuid: str
    name: str
    memory: int


@dataclass(frozen=True)
class MemoryInfo:
    """Device memory in bytes (``nvmlMemory_t``): ``total``, ``used``, ``free``."""

    total: int
    used: int
    free: int


@dataclass(frozen=True)
class Utilization:
    """Percent of the last sample period (``nvmlUtilization_t``): kernels running, memory busy."""

    gpu: int
    memory: int


@runtime_checkable
class GpuBackend(Protocol):
    """What the executor needs from a GPU stack. Devices are named by UUID."""

    name: str

    def devices(self) -> tuple[DeviceInfo, ...]:
        """Every device, in index order."""
        ...

    def memory_info(self, uuid: str) -> MemoryInfo:
        """Memory of one device."""
        ...

    def process_memory(self, uuid: str) -> Mapping[int, int | None]:
        """Device memory used by each process (pid to bytes; ``None`` when not reported)."""
        ...

    def utilization(self, uuid: str) -> Utilization:
        """Device utilisation rates."""
        ...

    def child_env(self, run_id: str) -> Mapping[str, str]:
        """Extra environment for a process the executor launches (empty for real devices)."""
        ...

    def close(self) -> None:
        """Release the backend."""
        ...


# ---------------------------------------------------------------------- errors
class BackendError(UnavailableError):
    """A backend could not answer."""


class DeviceNotFoundError(BackendError, KeyError):
    """A device id that the backend does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class NvmlError(BackendError):
    """An NVML call failed; ``code`` is the raw ``nvmlReturn_t`` value, ``call`` the function."""

    def __init__(self, message: str, *, code: int | None = None, call: str = "") -> None:
        self.code = code
        self.call = call
        super().__init__(message)


class NvmlUnavailableError(NvmlError):
    """NVML cannot be used on this machine: no NVIDIA driver, or nvidia-ml-py missing."""


class NvmlPermissionError(NvmlError):
    """NVML refused the call for lack of permission."""


class NvmlNotSupportedError(NvmlError):
    """The device or driver does not support the query."""


class NvmlGpuLostError(NvmlError):
    """The GPU fell off the bus or stopped responding."""


#: nvmlReturn_t name -> (exception type, message); the one mapping table of this adapter
NVML_ERRORS: Mapping[str, tuple[type[NvmlError], str]] = MappingProxyType({
    "NVML_ERROR_LIBRARY_NOT_FOUND": (NvmlUnavailableError,
                                     "no NVIDIA driver was found: the NVML library (libnvidia-ml.so.1) is not installed on this machine"),
    "NVML_ERROR_DRIVER_NOT_LOADED": (NvmlUnavailableError, "no NVIDIA driver was found: the NVIDIA kernel driver is not loaded"),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": (NvmlUnavailableError,
                                           "the NVIDIA driver and the NVML library have different versions (reboot or reinstall the driver)"),
    "NVML_ERROR_FUNCTION_NOT_FOUND": (NvmlUnavailableError, "the installed NVIDIA driver is too old for this NVML call"),
    "NVML_ERROR_NO_PERMISSION": (NvmlPermissionError, "NVML refused the call: no permission"),
    "NVML_ERROR_NOT_SUPPORTED": (NvmlNotSupportedError, "this device or driver does not support the query"),
    "NVML_ERROR_GPU_IS_LOST": (NvmlGpuLostError, "the GPU is lost (fell off the bus or stopped responding)"),
    "NVML_ERROR_NOT_FOUND": (NvmlError, "NVML did not find the device or object"),
    "NVML_ERROR_INVALID_ARGUMENT": (NvmlError, "invalid argument to NVML"),
    "NVML_ERROR_UNINITIALIZED": (NvmlError, "NVML is not initialised (backend closed?)"),
})


def _map_nvml(exc: Exception, call: str) -> NvmlError:
    import pynvml

    code = getattr(exc, "value", None)
    for name, (kind, message) in NVML_ERRORS.items():
        if code is not None and code == getattr(pynvml, name, object()):
            return kind(f"{call}: {message} (NVML: {exc})", code=code, call=call)
    return NvmlError(f"{call} failed: {exc} (nvmlReturn_t {code})", code=code, call=call)


# ---------------------------------------------------------------------- NVML
class NvmlBackend:
    """Real devices through NVML (nvidia-ml-py's ``pynvml``) [NVML]_.

    Parameters
    ----------
    library : module, optional
        The ``pynvml`` module to use (default: import it). Only for embedding.

    Raises
    ------
    NvmlUnavailableError
        nvidia-ml-py is not installed, or no NVIDIA driver was found (``nvmlInit`` returned
        ``NVML_ERROR_LIBRARY_NOT_FOUND`` or ``NVML_ERROR_DRIVER_NOT_LOADED``).

    Notes
    -----
    - ``process_memory`` uses ``nvmlDeviceGetComputeRunningProcesses``; its pids are in the
      host's pid namespace, so inside a container they may not match the executor's pids.
      Under MPS, clients' memory may be reported for the MPS server instead [MPS]_.
    - ``usedGpuMemory`` is ``None`` where the driver does not report it (e.g. Windows WDDM).
    """

    name = "nvml"

    def __init__(self, *, library: Any = None, mps: bool = False) -> None:
        if library is None:
            try:
                import pynvml as library  # type: ignore[no-redef]
            except ImportError as exc:
                raise NvmlUnavailableError(
                    "nvidia-ml-py is not installed (pip install 'gensolver[gpu]'); cannot talk to NVIDIA drivers",
                    call="import pynvml") from exc
        self._nv = library
        self._call("nvmlInit")
        self._open = True
        self._handles: dict[str, Any] = {}
        self._devices: tuple[DeviceInfo, ...] | None = None

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._nv, fn)(*args)
        except self._nv.NVMLError as exc:
            raise _map_nvml(exc, fn) from exc

    @staticmethod
    def _text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    def devices(self) -> tuple[DeviceInfo, ...]:
        """Every device in NVML index order (UUID, name, total memory)."""
        if self._devices is None:
            out = []
            for i in range(int(self._call("nvmlDeviceGetCount"))):
                h = self._call("nvmlDeviceGetHandleByIndex", i)
                uuid = self._text(self._call("nvmlDeviceGetUUID", h))
                self._handles[uuid] = h
                mem = self._call("nvmlDeviceGetMemoryInfo", h)
                out.append(DeviceInfo(i, uuid, self._text(self._call("nvmlDeviceGetName", h)), int(mem.total)))
            self._devices = tuple(out)
        return self._devices

    def _handle(self, uuid: str) -> Any:
        if uuid not in self._handles:
            self.devices()
        try:
            return self._handles[uuid]
        except KeyError:
            raise DeviceNotFoundError(f"no device with UUID {uuid!r}; NVML lists "
                                      f"{[d.uuid for d in self.devices()]}") from None

    def memory_info(self, uuid: str) -> MemoryInfo:
        """``nvmlDeviceGetMemoryInfo``: total, used and free bytes."""
        m = self._call("nvmlDeviceGetMemoryInfo", self._handle(uuid))
        return MemoryInfo(int(m.total), int(m.used), int(m.free))

    def process_memory(self, uuid: str) -> Mapping[int, int | None]:
        """``nvmlDeviceGetComputeRunningProcesses``: pid to ``usedGpuMemory`` bytes."""
        out: dict[int, int | None] = {}
        for p in self._call("nvmlDeviceGetComputeRunningProcesses", self._handle(uuid)):
            used = getattr(p, "usedGpuMemory", None)
            out[int(p.pid)] = None if used is None or used >= (1 << 64) - 1 else int(used)
        return MappingProxyType(out)

    def utilization(self, uuid: str) -> Utilization:
        """``nvmlDeviceGetUtilizationRates``: percent of time kernels / memory were busy."""
        u = self._call("nvmlDeviceGetUtilizationRates", self._handle(uuid))
        return Utilization(int(u.gpu), int(u.memory))

    def child_env(self, run_id: str) -> Mapping[str, str]:
        """Nothing: NVML observes real processes directly."""
        return MappingProxyType({})

    def close(self) -> None:
        """``nvmlShutdown`` (idempotent)."""
        if getattr(self, "_open", False):
            self._open = False
            try:
                self._nv.nvmlShutdown()
            except self._nv.NVMLError:
                pass

    def __enter__(self) -> NvmlBackend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---------------------------------------------------------------------- simulated
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "KI": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "MI": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "GI": 1 << 30,
          "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40, "TI": 1 << 40}


def parse_memory(text: str | int) -> int:
    """Bytes from ``"80G"``, ``"512M"``, ``"1.5GiB"``, Kubernetes' ``"80Gi"`` or a plain integer (binary units)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"not a memory size: {text!r} (examples: 80G, 80Gi, 512M, 1.5GiB, 1073741824)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


@dataclass(frozen=True)
class SimDevice:
    """A simulated device: ``uuid`` (any string), ``memory`` in bytes, optional ``name``."""

    uuid: str
    memory: int
    name: str = "Simulated GPU"


class SimulatedBackend:
    """Devices declared in a config; processes report their own usage (no GPU needed).

    The usage channel (documented, stable)
    --------------------------------------
    A process reports its current device memory by writing a file whose path is in the
    environment variable ``GENSOLVER_SIM_USAGE_FILE`` (the executor sets it for the processes it
    launches; any other process may pick a path in :attr:`state_dir` ending in ``.usage``). The
    file holds one JSON object::

        {"pid": 1234, "bytes": 1073741824, "devices": "SIM-GPU-0"}

    ``devices`` is the process's ``CUDA_VISIBLE_DEVICES`` (comma-separated UUIDs); the bytes are
    held on each of them. Writers replace the file atomically (write a temporary file in the same
    folder, then rename): :func:`gensolver.executor.report_usage` does exactly that. Reports of
    processes that have exited are ignored, so a crash frees its memory as on a real device.

    Parameters
    ----------
    devices : sequence of SimDevice or (uuid, memory) pairs
        The devices, in index order; memory in bytes or a size string (``"16G"``).
    state_dir : path, keyword-only, optional
        Folder of the usage files (created if missing; default: a new temporary folder). A
        restarted executor must use the same folder to see its adopted processes.
    utilization : callable, keyword-only, optional
        ``f(uuid) -> Utilization``; default: 100 % while any process uses the device, else 0.
    """

    name = "sim"

    def __init__(self, devices: Sequence[SimDevice | tuple[str, int | str]], *,
                 state_dir: str | os.PathLike[str] | None = None,
                 utilization: Callable[[str], Utilization] | None = None) -> None:
        devs = []
        for k, d in enumerate(devices):
            if not isinstance(d, SimDevice):
                try:
                    uuid, mem = d
                except (TypeError, ValueError):
                    raise ValueError(f"devices[{k}]: expected SimDevice or (uuid, memory), got {d!r}") from None
                d = SimDevice(str(uuid), parse_memory(mem))
            if d.memory <= 0:
                raise ValueError(f"devices[{k}]: memory must be positive, got {d.memory}")
            devs.append(d)
        if not devs:
            raise ValueError("devices must not be empty")
        if len({d.uuid for d in devs}) != len(devs):
            raise ValueError("duplicate device uuids")
        self._devices = tuple(devs)
        self.state_dir = Path(state_dir) if state_dir is not None else Path(tempfile.mkdtemp(prefix="gensolver-sim-"))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._util = utilization

    @classmethod
    def from_specs(cls, specs: Sequence[str], **kwargs: Any) -> SimulatedBackend:
        """Devices from ``"COUNT:MEMORY"`` strings, e.g. ``["2:16G", "1:80G"]``.

        Devices are named ``SIM-GPU-0``, ``SIM-GPU-1``, ... in order.
        """
        devs: list[SimDevice] = []
        for spec in specs:
            count, sep, mem = str(spec).partition(":")
            if not sep or not count.strip().isdigit() or int(count) < 1:
                raise ValueError(f"--sim-devices expects COUNT:MEMORY such as 2:16G, got {spec!r}")
            size = parse_memory(mem)
            for _ in range(int(count)):
                devs.append(SimDevice(f"SIM-GPU-{len(devs)}", size))
        return cls(devs, **kwargs)

    def devices(self) -> tuple[DeviceInfo, ...]:
        """The declared devices."""
        return tuple(DeviceInfo(i, d.uuid, d.name, d.memory) for i, d in enumerate(self._devices))

    def _device(self, uuid: str) -> SimDevice:
        for d in self._devices:
            if d.uuid == uuid:
                return d
        raise DeviceNotFoundError(f"no simulated device {uuid!r}; declared: {[d.uuid for d in self._devices]}")

    def _reports(self) -> list[dict[str, Any]]:
        out = []
        for f in self.state_dir.glob("*.usage"):
            try:
                doc = json.loads(f.read_text())
                pid = int(doc["pid"])
                used = int(doc["bytes"])
                devs = [s for s in str(doc.get("devices", "")).split(",") if s]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # being replaced, or not ours
            if is_alive(pid):
                out.append({"pid": pid, "bytes": used, "devices": devs})
        return out

    def process_memory(self, uuid: str) -> Mapping[int, int | None]:
        """Reported bytes of every live process on the device."""
        self._device(uuid)
        out: dict[int, int | None] = {}
        for r in self._reports():
            if uuid in r["devices"]:
                out[r["pid"]] = (out.get(r["pid"]) or 0) + r["bytes"]
        return MappingProxyType(out)

    def memory_info(self, uuid: str) -> MemoryInfo:
        """Declared total; used is the sum of live reports (capped at total)."""
        total = self._device(uuid).memory
        used = min(total, sum(v or 0 for v in self.process_memory(uuid).values()))
        return MemoryInfo(total, used, total - used)

    def utilization(self, uuid: str) -> Utilization:
        """Configured callable, or 100 % while any process uses the device."""
        if self._util is not None:
            return self._util(uuid)
        busy = any(v for v in self.process_memory(uuid).values())
        return Utilization(100 if busy else 0, 0)

    def child_env(self, run_id: str) -> Mapping[str, str]:
        """``GENSOLVER_SIM_USAGE_FILE`` pointing into :attr:`state_dir`."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)
        return MappingProxyType({USAGE_FILE_ENV: str(self.state_dir / f"{safe}.usage")})

    def close(self) -> None:
        """Nothing to release (usage files are left for a restarted executor)."""
