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
   (``nvidia-cuda-mps-control -d``, ``get_server_list``, ``quit``)
.. [MIG] NVIDIA Multi-Instance GPU user guide and NVML "Multi Instance GPU Management"
   (``nvmlDeviceGetMigMode``, ``nvmlDeviceGetMaxMigDeviceCount``,
   ``nvmlDeviceGetMigDeviceHandleByIndex``, ``nvmlDeviceGetAttributes``),
   https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..errors import InputError, UnavailableError
from ..model.quantity import QuantityError, parse_memory_bytes
from .procs import is_alive, safe_file_name

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
    "MpsUnavailableError",
    "MpsStatus",
    "MPS_CONTROL",
    "SimDevice",
    "SimulatedBackend",
    "parse_memory",
    "USAGE_FILE_ENV",
]

#: environment variable naming the file a simulated process reports its usage to
USAGE_FILE_ENV = "GENSOLVER_SIM_USAGE_FILE"
#: the CUDA MPS control program [MPS]_
MPS_CONTROL = "nvidia-cuda-mps-control"


# ---------------------------------------------------------------------- records
@dataclass(frozen=True)
class DeviceInfo:
    """A device: position ``index``, NVML ``uuid``, marketing ``name``, ``memory`` in bytes.

    A MIG instance [MIG]_ is a device of its own (``uuid`` ``MIG-...``); ``parent`` is then the
    UUID of its GPU and ``profile`` its GPU-instance profile (``"1g.10gb"``); both are ``None``
    for a whole GPU.
    """

    index: int
    uuid: str
    name: str
    memory: int
    parent: str | None = None
    profile: str | None = None


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


class MpsUnavailableError(BackendError):
    """``--mps`` was asked for but the CUDA MPS control daemon is absent or does not start."""


@dataclass(frozen=True)
class MpsStatus:
    """The MPS control daemon the backend found or started: the program's path, whether this
    backend started it (and so stops it on :meth:`NvmlBackend.close`), the MPS pipe folder."""

    control: str
    started: bool
    pipe_directory: str


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
    mps : bool, keyword-only
        Make sure the CUDA MPS control daemon runs [MPS]_: check it with ``get_server_list``,
        start it with ``nvidia-cuda-mps-control -d`` when it does not answer (and stop it on
        :meth:`close` if this backend started it). :attr:`mps` then describes it.

    Raises
    ------
    NvmlUnavailableError
        nvidia-ml-py is not installed, or no NVIDIA driver was found (``nvmlInit`` returned
        ``NVML_ERROR_LIBRARY_NOT_FOUND`` or ``NVML_ERROR_DRIVER_NOT_LOADED``).
    MpsUnavailableError
        ``mps=True`` but ``nvidia-cuda-mps-control`` is not on ``PATH`` or the daemon does not
        start.

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
                    'nvidia-ml-py is not installed (pip install "gensolver[gpu]"); cannot talk to NVIDIA drivers',
                    call="import pynvml") from exc
        self._nv = library
        self._call("nvmlInit")
        self._open = True
        self._handles: dict[str, Any] = {}
        self._devices: tuple[DeviceInfo, ...] | None = None
        self.mps: MpsStatus | None = None
        if mps:
            try:
                self.mps = _ensure_mps()
            except BaseException:
                self.close()
                raise

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._nv, fn)(*args)
        except self._nv.NVMLError as exc:
            raise _map_nvml(exc, fn) from exc

    @staticmethod
    def _text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    def devices(self) -> tuple[DeviceInfo, ...]:
        """Every device in NVML index order (UUID, name, total memory); a GPU in MIG mode is
        listed as its MIG instances instead (see :class:`DeviceInfo`)."""
        if self._devices is None:
            out: list[DeviceInfo] = []
            for i in range(int(self._call("nvmlDeviceGetCount"))):
                h = self._call("nvmlDeviceGetHandleByIndex", i)
                uuid = self._text(self._call("nvmlDeviceGetUUID", h))
                self._handles[uuid] = h
                migs = self._mig_devices(h, uuid, len(out))
                if migs:
                    out.extend(migs)
                    continue
                mem = self._call("nvmlDeviceGetMemoryInfo", h)
                out.append(DeviceInfo(len(out), uuid, self._text(self._call("nvmlDeviceGetName", h)), int(mem.total)))
            self._devices = tuple(out)
        return self._devices

    def _mig_devices(self, gpu: Any, parent: str, first: int) -> list[DeviceInfo]:
        """The MIG instances of ``gpu`` (empty when MIG is off or not supported) [MIG]_."""
        try:
            current, _pending = self._call("nvmlDeviceGetMigMode", gpu)
        except (NvmlNotSupportedError, AttributeError):  # no MIG on this GPU, or an old nvidia-ml-py
            return []
        if int(current) != int(getattr(self._nv, "NVML_DEVICE_MIG_ENABLE", 1)):
            return []
        out: list[DeviceInfo] = []
        for k in range(int(self._call("nvmlDeviceGetMaxMigDeviceCount", gpu))):
            try:
                h = self._call("nvmlDeviceGetMigDeviceHandleByIndex", gpu, k)
            except NvmlError:  # an empty slot (NVML_ERROR_NOT_FOUND)
                continue
            uuid = self._text(self._call("nvmlDeviceGetUUID", h))
            self._handles[uuid] = h
            name = self._text(self._call("nvmlDeviceGetName", h))
            memory = int(self._call("nvmlDeviceGetMemoryInfo", h).total)
            out.append(DeviceInfo(first + len(out), uuid, name, memory, parent, self._mig_profile(h, name)))
        return out

    def _mig_profile(self, handle: Any, name: str) -> str | None:
        """``"3g.40gb"``: from the device name (``"NVIDIA A100-SXM4-80GB MIG 3g.40gb"``), else
        from ``nvmlDeviceGetAttributes`` (slices and memory)."""
        m = re.search(r"MIG\s+(\d+g\.\d+gb)", name)
        if m:
            return m.group(1)
        try:
            attrs = self._call("nvmlDeviceGetAttributes", handle)
        except (NvmlError, AttributeError):
            return None
        return f"{int(attrs.gpuInstanceSliceCount)}g.{round(int(attrs.memorySizeMB) / 1024)}gb"

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
        """``nvmlShutdown``, and stop the MPS control daemon if this backend started it (idempotent)."""
        mps, self.mps = getattr(self, "mps", None), None
        if mps is not None and mps.started:
            _mps_command(mps.control, "quit")
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


def _mps_command(control: str, command: str) -> subprocess.CompletedProcess:
    """Send one command to the MPS control daemon (``echo COMMAND | nvidia-cuda-mps-control``)."""
    return subprocess.run([control], input=command + "\n", capture_output=True, text=True, timeout=30)


def _ensure_mps() -> MpsStatus:
    """Check that the MPS control daemon answers; start it (``-d``) when it does not [MPS]_."""
    control = shutil.which(MPS_CONTROL)
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
    if control is None:
        raise MpsUnavailableError(f"--mps: {MPS_CONTROL} is not on PATH: the CUDA MPS control daemon is not "
                                  f"installed here (it comes with the NVIDIA driver utilities); run without --mps, "
                                  f"or install it")
    try:
        if _mps_command(control, "get_server_list").returncode == 0:
            return MpsStatus(control, False, pipe)
        started = subprocess.run([control, "-d"], capture_output=True, text=True, timeout=30)
        if started.returncode != 0:
            raise MpsUnavailableError(f"--mps: {MPS_CONTROL} -d failed (exit {started.returncode}): "
                                      f"{(started.stderr or started.stdout).strip() or 'no message'}")
        if _mps_command(control, "get_server_list").returncode != 0:
            raise MpsUnavailableError(f"--mps: started {MPS_CONTROL} -d, but it does not answer on {pipe}")
    except (OSError, subprocess.SubprocessError) as exc:
        raise MpsUnavailableError(f"--mps: cannot run {control}: {exc}") from exc
    return MpsStatus(control, True, pipe)


# ---------------------------------------------------------------------- simulated
def parse_memory(text: str | int) -> int:
    """Bytes from a Kubernetes quantity: ``"80G"`` (8e10), ``"80Gi"`` (80 * 2**30), ``"512Mi"``, ``1073741824``.

    The one parser of :func:`gensolver.model.quantity.parse_memory_bytes` (also behind GenTask
    YAML); ``80GB``, ``80g`` and fractional bytes (``500m``) are refused with a suggestion.

    Raises
    ------
    ValueError
        ``"not a memory size: ..."`` naming the problem.
    """
    try:
        return parse_memory_bytes(text, field="")
    except QuantityError as exc:
        raise InputError(f"not a memory size: {exc.reason}") from None


#: the most devices :meth:`SimulatedBackend.from_specs` declares (``--sim-devices``)
MAX_SIM_DEVICES = 1024


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
                    raise InputError(f"devices[{k}]: expected SimDevice or (uuid, memory), got {d!r}") from None
                d = SimDevice(str(uuid), parse_memory(mem))
            if d.memory <= 0:
                raise InputError(f"devices[{k}]: memory must be positive, got {d.memory}")
            devs.append(d)
        if not devs:
            raise InputError("devices must not be empty")
        if len({d.uuid for d in devs}) != len(devs):
            uuids = [d.uuid for d in devs]
            raise InputError(f"devices: duplicate uuids {sorted({u for u in uuids if uuids.count(u) > 1})}")
        self._devices = tuple(devs)
        self.state_dir = Path(state_dir) if state_dir is not None else Path(tempfile.mkdtemp(prefix="gensolver-sim-"))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._util = utilization

    @classmethod
    def from_specs(cls, specs: Sequence[str], **kwargs: Any) -> SimulatedBackend:
        """Devices from ``"COUNT:MEMORY"`` strings, e.g. ``["2:16Gi", "1:80G"]``.

        Memory is a Kubernetes quantity: ``16Gi`` is 16 * 2**30 bytes, ``80G`` is 8e10.

        Devices are named ``SIM-GPU-0``, ``SIM-GPU-1``, ... in order; at most
        :data:`MAX_SIM_DEVICES` in all.
        """
        devs: list[SimDevice] = []
        total = 0
        for spec in specs:
            count, sep, mem = str(spec).partition(":")
            if not sep or not count.strip().isdigit() or int(count) < 1:
                raise InputError(f"--sim-devices expects COUNT:MEMORY such as 2:16Gi, got {spec!r}")
            total += int(count) if len(count.strip()) < 10 else MAX_SIM_DEVICES + 1
            if total > MAX_SIM_DEVICES:
                raise InputError(f"--sim-devices: at most {MAX_SIM_DEVICES} simulated devices in all, got {spec!r}")
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
        return MappingProxyType({USAGE_FILE_ENV: str(self.state_dir / f"{safe_file_name(run_id)}.usage")})

    def close(self) -> None:
        """Nothing to release (usage files are left for a restarted executor)."""
