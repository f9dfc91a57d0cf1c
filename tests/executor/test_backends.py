"""Backends, the child helpers, the journal, and the GPU check script on a machine without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensolver.executor import (
    BackendError,
    DeviceNotFoundError,
    ExecutorError,
    GpuBackend,
    Journal,
    JournalError,
    ManualClock,
    NvmlBackend,
    NvmlUnavailableError,
    PlanRunner,
    SimDevice,
    SimulatedBackend,
    apply_memory_limit,
    parse_memory,
    read_journal,
    report_usage,
    resolve_devices,
    write_plan,
)

from .helpers import GIB, MIB, plan_of

ROOT = Path(__file__).resolve().parents[2]
RUN = "import sys; from gensolver.cli import main; sys.exit(main(sys.argv[1:]))"


def _has_driver() -> bool:
    try:
        NvmlBackend().close()
    except NvmlUnavailableError:
        return False
    return True


no_driver = pytest.mark.skipif(_has_driver(), reason="an NVIDIA driver is present on this machine")


@no_driver
def test_nvml_backend_raises_a_typed_no_driver_error() -> None:
    with pytest.raises(NvmlUnavailableError, match="no NVIDIA driver was found") as info:
        NvmlBackend()
    assert isinstance(info.value, BackendError)
    assert info.value.call in ("nvmlInit", "import pynvml")


@no_driver
def test_cli_run_with_nvml_exits_3_without_a_driver(tmp_path: Path) -> None:
    plan = plan_of({"gpu0": 1}, {"a": {"at": [("gpu0", 0, 1)], "memory": 0.25, "command": ["true"]}})
    write_plan(plan, tmp_path / "plan.json")
    out = subprocess.run([sys.executable, "-c", RUN, "run", str(tmp_path / "plan.json"), "--backend", "nvml"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 3
    assert "no NVIDIA driver" in out.stderr


@no_driver
def test_gpu_check_script_reports_no_driver_with_exit_3() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "no NVIDIA driver found" in out.stdout


def test_simulated_backend_reads_the_documented_usage_channel(tmp_path: Path, monkeypatch) -> None:
    sim = SimulatedBackend([SimDevice("SIM-A", GIB), ("SIM-B", "512Mi")], state_dir=tmp_path)
    assert isinstance(sim, GpuBackend)
    assert [(d.index, d.uuid, d.memory) for d in sim.devices()] == [(0, "SIM-A", GIB), (1, "SIM-B", 512 * MIB)]
    env = sim.child_env("run:1")
    assert env["GENSOLVER_SIM_USAGE_FILE"].startswith(str(tmp_path)) and env["GENSOLVER_SIM_USAGE_FILE"].endswith(".usage")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "SIM-A,SIM-B")
    assert report_usage(300 * MIB, path=env["GENSOLVER_SIM_USAGE_FILE"])
    assert dict(sim.process_memory("SIM-A")) == {os.getpid(): 300 * MIB}
    assert sim.memory_info("SIM-B").free == 212 * MIB
    assert sim.utilization("SIM-A").gpu == 100
    # a report by a process that has exited is ignored
    Path(tmp_path / "dead.usage").write_text(json.dumps({"pid": 2**22 + 12345, "bytes": GIB, "devices": "SIM-A"}))
    assert sim.memory_info("SIM-A").used == 300 * MIB
    with pytest.raises(DeviceNotFoundError, match="SIM-C"):
        sim.memory_info("SIM-C")
    monkeypatch.delenv("GENSOLVER_SIM_USAGE_FILE", raising=False)
    assert report_usage(1) is False  # no channel configured: a no-op


def test_sim_device_specs_and_memory_sizes() -> None:
    sim = SimulatedBackend.from_specs(["2:16Gi", "1:512M"])  # Kubernetes: Gi binary, M decimal
    assert [(d.uuid, d.memory) for d in sim.devices()] == [("SIM-GPU-0", 16 * GIB), ("SIM-GPU-1", 16 * GIB),
                                                           ("SIM-GPU-2", 512 * 10 ** 6)]
    assert parse_memory("1.5Gi") == 3 * GIB // 2 and parse_memory("1024") == 1024
    with pytest.raises(ValueError, match="COUNT:MEMORY"):
        SimulatedBackend.from_specs(["16G"])
    with pytest.raises(ValueError, match="not a memory size"):
        parse_memory("lots")


def test_device_names_resolve_by_uuid_index_or_indexed_name() -> None:
    sim = SimulatedBackend.from_specs(["2:1G"])
    assert resolve_devices(["SIM-GPU-1", "0", "gpu1", "cuda:0"], sim) == {
        "SIM-GPU-1": "SIM-GPU-1", "0": "SIM-GPU-0", "gpu1": "SIM-GPU-1", "cuda:0": "SIM-GPU-0"}
    assert resolve_devices(["left"], sim, {"left": "1"}) == {"left": "SIM-GPU-1"}
    with pytest.raises(ExecutorError, match="matches no sim device"):
        resolve_devices(["gpu7"], sim)


def test_executor_rejects_tasks_without_commands() -> None:
    plan = plan_of({"gpu0": 1}, {"a": {"at": [("gpu0", 0, 1)], "memory": 0.25}})
    with pytest.raises(ExecutorError, match="without a command"):
        PlanRunner(plan, backend=SimulatedBackend([("gpu0", GIB)]))


def test_apply_memory_limit_without_torch_warns(monkeypatch) -> None:
    monkeypatch.setenv("GENSOLVER_MEMORY_LIMIT", str(GIB))
    monkeypatch.setitem(sys.modules, "torch", None)  # make `import torch` fail, as without PyTorch
    with pytest.warns(RuntimeWarning, match="PyTorch is not importable"):
        assert apply_memory_limit() is None


def test_journal_is_append_only_drops_a_torn_tail_and_is_exclusive(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path) as j:
        j.append("plan", digest="x", t0=1.0, time_scale=1.0)
        j.append("waiting", task="a", run=0)
        with pytest.raises(JournalError, match="in use"):
            Journal(path)
    with open(path, "ab") as fh:
        fh.write(b'{"seq": 2, "event": "sta')  # a crash mid-write
    with Journal(path) as j:
        assert [r["event"] for r in j.records] == ["plan", "waiting"]
        j.append("restart", pid=1)
    assert [r["seq"] for r in read_journal(path)] == [0, 1, 2]


def test_journal_of_another_plan_is_refused(tmp_path: Path) -> None:
    one = plan_of({"gpu0": 1}, {"a": {"at": [("gpu0", 0, 1)], "memory": 0.25, "command": ["true"]}})
    two = plan_of({"gpu0": 1}, {"a": {"at": [("gpu0", 0, 2)], "memory": 0.25, "command": ["true"]}})
    sim = SimulatedBackend([("gpu0", GIB)], state_dir=tmp_path / "sim")
    assert PlanRunner(one, backend=sim, journal=tmp_path / "j", clock=ManualClock()).run(timeout=60).ok
    with pytest.raises(JournalError, match="another plan"):
        PlanRunner(two, backend=sim, journal=tmp_path / "j").run(timeout=60)
