"""MIG instances as devices and the MPS control daemon under ``NvmlBackend(mps=True)``.

There is no NVIDIA GPU, driver or MPS daemon on the test machines, so these tests use stand-ins
where the real thing cannot run, and only there: a fake ``pynvml`` module (the NVML calls
:class:`NvmlBackend` makes, with the documented return shapes of nvidia-ml-py) and a fake
``nvidia-cuda-mps-control`` program (a shell script keeping the daemon's state in a file, with
the real program's interface: ``-d`` starts it, ``get_server_list`` on stdin fails while it is
down, ``quit`` stops it). ``scripts/gpu_check.py --mps`` runs the real ones on a GPU machine.
"""

from __future__ import annotations

import importlib.util
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pynvml
import pytest

from gensolver.executor import MpsUnavailableError, NvmlBackend, resolve_devices

GIB = 1 << 30


class FakeNVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"fake NVML error {value}")
        self.value = value


class FakeNvml:
    """GPU 0 in MIG mode with two instances (slot 1 empty), GPU 1 without MIG support."""

    NVMLError = FakeNVMLError
    NVML_DEVICE_MIG_ENABLE = 1

    def __init__(self, *, mig: int = 1) -> None:
        self.mig = mig
        self.calls: list[str] = []
        self.gpus = [SimpleNamespace(uuid="GPU-aaaa", name="NVIDIA A100-SXM4-40GB", total=40 * GIB),
                     SimpleNamespace(uuid="GPU-bbbb", name="NVIDIA L4", total=24 * GIB)]
        self.migs = {0: SimpleNamespace(uuid="MIG-1111", name="NVIDIA A100-SXM4-40GB MIG 3g.20gb", total=20 * GIB,
                                        attrs=None),
                     2: SimpleNamespace(uuid="MIG-2222", name="NVIDIA A100-SXM4-40GB", total=4864 << 20,
                                        attrs=SimpleNamespace(gpuInstanceSliceCount=1, memorySizeMB=4864))}

    def nvmlInit(self) -> None:
        self.calls.append("init")

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int):
        return self.gpus[i]

    def nvmlDeviceGetUUID(self, h) -> str:
        return h.uuid

    def nvmlDeviceGetName(self, h) -> bytes:
        return h.name.encode()

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=h.total, used=GIB, free=h.total - GIB)

    def nvmlDeviceGetMigMode(self, h):
        if h is self.gpus[1]:
            raise FakeNVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return (self.mig, self.mig)

    def nvmlDeviceGetMaxMigDeviceCount(self, h) -> int:
        return 3

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, k: int):
        if k not in self.migs:
            raise FakeNVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return self.migs[k]

    def nvmlDeviceGetAttributes(self, h):
        if h.attrs is None:
            raise FakeNVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return h.attrs


def test_mig_instances_are_listed_as_devices_with_their_profiles() -> None:
    nvml = NvmlBackend(library=FakeNvml())
    devs = nvml.devices()
    assert [(d.index, d.uuid, d.memory, d.parent, d.profile) for d in devs] == [
        (0, "MIG-1111", 20 * GIB, "GPU-aaaa", "3g.20gb"),
        (1, "MIG-2222", 4864 << 20, "GPU-aaaa", "1g.5gb"),  # profile from the attributes: 1 slice, 4864 MB
        (2, "GPU-bbbb", 24 * GIB, None, None)]
    assert nvml.memory_info("MIG-2222").total == 4864 << 20  # queries go to the instance's own handle
    assert resolve_devices(["gpu1", "MIG-1111", "2"], nvml) == {"gpu1": "MIG-2222", "MIG-1111": "MIG-1111",
                                                                 "2": "GPU-bbbb"}
    nvml.close()


def test_a_gpu_with_mig_off_is_one_device() -> None:
    nvml = NvmlBackend(library=FakeNvml(mig=0))
    assert [(d.uuid, d.parent, d.profile) for d in nvml.devices()] == [("GPU-aaaa", None, None),
                                                                       ("GPU-bbbb", None, None)]


FAKE_MPS = """#!/bin/sh
# stand-in for nvidia-cuda-mps-control (see the module docstring)
state="$FAKE_MPS_STATE"
if [ "$1" = "-d" ]; then
  [ -n "$FAKE_MPS_FAIL" ] && { echo "An instance of this daemon is already running" >&2; exit 1; }
  touch "$state"; exit 0
fi
read -r cmd
case "$cmd" in
  get_server_list) [ -f "$state" ] || { echo "Cannot find MPS control daemon process" >&2; exit 1; } ;;
  quit) rm -f "$state" ;;
esac
"""


@pytest.fixture
def fake_mps(tmp_path: Path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    prog = bin_dir / "nvidia-cuda-mps-control"
    prog.write_text(FAKE_MPS)
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    state = tmp_path / "mps.running"
    monkeypatch.setenv("FAKE_MPS_STATE", str(state))
    return state


def test_mps_is_started_when_down_and_stopped_on_close(fake_mps: Path) -> None:
    nvml = NvmlBackend(library=FakeNvml(), mps=True)
    assert nvml.mps is not None and nvml.mps.started and fake_mps.exists()
    nvml.close()
    assert not fake_mps.exists()  # started here: stopped here


def test_a_running_mps_daemon_is_used_and_left_running(fake_mps: Path) -> None:
    fake_mps.touch()
    nvml = NvmlBackend(library=FakeNvml(), mps=True)
    assert nvml.mps is not None and not nvml.mps.started
    nvml.close()
    assert fake_mps.exists()


def test_mps_that_does_not_start_is_reported(fake_mps: Path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_MPS_FAIL", "1")
    lib = FakeNvml()
    with pytest.raises(MpsUnavailableError, match="-d failed .*already running"):
        NvmlBackend(library=lib, mps=True)
    assert lib.calls == ["init", "shutdown"]  # NVML is closed again


def test_absent_mps_is_reported_clearly(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-cuda-mps-control anywhere
    with pytest.raises(MpsUnavailableError, match="nvidia-cuda-mps-control is not on PATH"):
        NvmlBackend(library=FakeNvml(), mps=True)
    assert NvmlBackend(library=FakeNvml()).mps is None  # without --mps nothing is asked of it


FAKE_PYNVML = '''
"""Stand-in for nvidia-ml-py on a machine without a GPU (tests/executor/test_mps_mig.py)."""
from types import SimpleNamespace
NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NOT_FOUND, NVML_DEVICE_MIG_ENABLE = 3, 6, 1
class NVMLError(Exception):
    def __init__(self, value):
        super().__init__("fake NVML error %d" % value)
        self.value = value
G = 1 << 30
_gpu = SimpleNamespace(uuid="GPU-aaaa", name="NVIDIA H100 80GB HBM3", total=80 * G)
_mig = SimpleNamespace(uuid="MIG-1111", name="NVIDIA H100 80GB HBM3 MIG 3g.40gb", total=40 * G)
def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(i): return _gpu
def nvmlDeviceGetUUID(h): return h.uuid
def nvmlDeviceGetName(h): return h.name
def nvmlDeviceGetMemoryInfo(h): return SimpleNamespace(total=h.total, used=0, free=h.total)
def nvmlDeviceGetMigMode(h): return (1, 1)
def nvmlDeviceGetMaxMigDeviceCount(h): return 2
def nvmlDeviceGetMigDeviceHandleByIndex(h, k):
    if k: raise NVMLError(NVML_ERROR_NOT_FOUND)
    return _mig
def nvmlDeviceGetComputeRunningProcesses(h): return []
def nvmlDeviceGetUtilizationRates(h): raise NVMLError(NVML_ERROR_NOT_SUPPORTED)  # as on a MIG instance
'''


def test_gpu_check_lists_mig_instances_and_checks_mps(fake_mps: Path, tmp_path: Path) -> None:
    """The script's listing and MPS steps against the stand-ins; it then fails where a real GPU is
    needed (exit 4 without an allocator, 1 when the children cannot allocate on the fake device)."""
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("PyTorch is installed: it would look for a real device")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "pynvml.py").write_text(FAKE_PYNVML)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), str(root)]))
    out = subprocess.run([sys.executable, str(root / "scripts" / "gpu_check.py"), "--mps"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert "device 0: MIG-1111 NVIDIA H100 80GB HBM3 MIG 3g.40gb, 40.0 GiB, MIG 3g.40gb on GPU-aaaa" in out.stdout
    assert "MPS control daemon started by this check" in out.stdout
    assert out.returncode in (1, 4), out.stdout + out.stderr
    assert not fake_mps.exists()  # stopped again on the way out
    monkey_path = os.environ["PATH"].split(os.pathsep, 1)[1]
    out = subprocess.run([sys.executable, str(root / "scripts" / "gpu_check.py"), "--mps"], capture_output=True,
                         text=True, env=dict(env, PATH=monkey_path), timeout=60)
    assert out.returncode == 5 and "nvidia-cuda-mps-control is not on PATH" in out.stdout
