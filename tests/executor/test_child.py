"""What a launched process uses (:mod:`gensolver.executor.child`): its usage report, read back
as JSON and as the simulated backend sees it, and the PyTorch memory cap computed against a
stand-in ``torch`` whose calls are recorded."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from gensolver.errors import InputError
from gensolver.executor import SimulatedBackend
from gensolver.executor.child import MEMORY_LIMIT_ENV, USAGE_FILE_ENV, apply_memory_limit, report_usage


def test_a_usage_report_is_what_the_simulated_backend_reads(tmp_path, monkeypatch) -> None:
    backend = SimulatedBackend([("GPU-a", "16G"), ("GPU-b", "16G")], state_dir=tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-b")
    target = tmp_path / "me.usage"
    assert report_usage(3 * 2**30, path=str(target))
    doc = json.loads(target.read_text())
    assert doc == {"pid": os.getpid(), "bytes": 3 * 2**30, "devices": "GPU-b"}
    assert dict(backend.process_memory("GPU-b")) == {os.getpid(): 3 * 2**30}
    assert dict(backend.process_memory("GPU-a")) == {}
    assert backend.memory_info("GPU-b").used == 3 * 2**30
    monkeypatch.setenv(USAGE_FILE_ENV, str(target))  # the environment's file is the default
    assert report_usage(2**30)
    assert json.loads(target.read_text())["bytes"] == 2**30
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".usage.")] == []  # replaced whole


def test_without_a_usage_file_nothing_is_written(monkeypatch) -> None:
    monkeypatch.delenv(USAGE_FILE_ENV, raising=False)
    assert report_usage(100) is False
    with pytest.raises(InputError, match="non-negative"):
        report_usage(-1, path="x.usage")


def _fake_torch(total: int, *, cuda: bool = True) -> tuple[types.ModuleType, list]:
    calls: list = []
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: cuda,
        get_device_properties=lambda d: types.SimpleNamespace(total_memory=total),
        set_per_process_memory_fraction=lambda f, d: calls.append((f, d)))
    return torch, calls


@pytest.mark.parametrize(("limit", "total", "fraction"), [(4 * 2**30, 16 * 2**30, 0.25), (32 * 2**30, 16 * 2**30, 1.0)])
def test_the_memory_cap_is_the_grant_over_the_device(monkeypatch, limit: int, total: int, fraction: float) -> None:
    torch, calls = _fake_torch(total)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, str(limit))
    assert apply_memory_limit(device=1) == fraction
    assert calls == [(fraction, 1)]


def test_no_cap_without_a_grant_torch_or_cuda(monkeypatch) -> None:
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    with pytest.warns(RuntimeWarning, match="is not set"):
        assert apply_memory_limit() is None
    monkeypatch.setenv(MEMORY_LIMIT_ENV, str(2**30))
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.warns(RuntimeWarning, match="PyTorch is not importable"):
        assert apply_memory_limit() is None
    torch, calls = _fake_torch(2**34, cuda=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    with pytest.warns(RuntimeWarning, match="CUDA is not available"):
        assert apply_memory_limit() is None
    assert calls == []
