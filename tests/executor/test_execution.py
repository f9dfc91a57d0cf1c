"""The execution-backend registry (:mod:`gensolver.executor.execution`) and ``gensolver run``
resolving ``--backend`` and its backend-specific options through it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.cli.choices import BACKENDS, BACKENDS_HELP
from gensolver.executor import SimulatedBackend, write_plan
from gensolver.executor.execution import (
    EXECUTION_BACKENDS,
    PlanDevicesError,
    UnknownExecutionBackendError,
    open_simulated,
)

from .helpers import plan_of

PLAN = {"a": {"at": [("gpu0", 0, 1)], "memory": 2, "command": ["python", "-c", "pass"]}}


def test_cli_choices_are_the_registry() -> None:
    assert BACKENDS == tuple(EXECUTION_BACKENDS) == ("nvml", "sim", "slurm")
    for name in BACKENDS:
        assert f"{name} ({EXECUTION_BACKENDS.get(name).description})" in BACKENDS_HELP


def test_entries_declare_what_they_take_and_do() -> None:
    for name in EXECUTION_BACKENDS:
        entry = EXECUTION_BACKENDS.get(name)
        assert entry.name == name
        # a backend either submits to a scheduler or opens devices here, never both
        assert entry.submits == (entry.open is None)
    with pytest.raises(UnknownExecutionBackendError, match="valid execution backends: nvml, sim, slurm"):
        EXECUTION_BACKENDS.get("k8s")


def test_open_simulated_uses_the_specs_or_the_plan(tmp_path: Path) -> None:
    plan = plan_of({"gpu0": 4}, PLAN)
    gpu = open_simulated(plan, sim_devices=["2:1Gi"], state_dir=tmp_path / "a")
    try:
        assert isinstance(gpu, SimulatedBackend)
        assert [d.memory for d in gpu.devices()] == [1 << 30, 1 << 30]
    finally:
        gpu.close()
    gpu = open_simulated(plan, state_dir=tmp_path / "b")
    try:
        assert [d.memory for d in gpu.devices()] == [d.memory for d in plan.devices]
    finally:
        gpu.close()
    no_memory = dataclasses.replace(plan, devices=tuple(dataclasses.replace(d, memory=None) for d in plan.devices))
    with pytest.raises(PlanDevicesError, match=r"does not give the memory of \['gpu0'\]"):
        open_simulated(no_memory)
    with pytest.raises(ValueError, match="COUNT:MEMORY"):
        open_simulated(plan, sim_devices=["x"])


@pytest.mark.parametrize(("args", "message"), [
    (["--backend", "sim", "--mps"], "--mps: only with --backend nvml"),
    (["--backend", "nvml", "--sim-devices", "1:1Gi"], "--sim-devices: only with --backend sim"),
    (["--backend", "slurm", "--sim-state", "x"], "--sim-state: only with --backend sim"),
    (["--backend", "k8s"], "--backend: unknown backend 'k8s'; choose one of: nvml, sim, slurm"),
])
def test_run_refuses_an_option_its_backend_does_not_take(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         args: list[str], message: str) -> None:
    path = tmp_path / "plan.json"
    write_plan(plan_of({"gpu0": 4}, PLAN), path)
    assert main(["run", str(path), *args]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # nothing created
