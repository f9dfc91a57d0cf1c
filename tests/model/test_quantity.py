"""One memory unit (issue 20, item 1): ``16G`` is the same amount in a GenTask, in
``--sim-devices`` and in ``--over-grant-tolerance``, with Kubernetes' rules."""

from __future__ import annotations

import pytest

from gensolver.executor import SimulatedBackend, parse_memory
from gensolver.market.spec import SpecError, loads_gentasks
from gensolver.market.spec import parse_quantity as spec_quantity
from gensolver.model.quantity import QuantityError, parse_memory_bytes, parse_quantity

GENTASK = """apiVersion: scheduling.gen.io/v1alpha1
kind: GenTask
metadata: {{name: t0}}
spec:
  genResources:
    gpuMemory: {{preferred: {mem}}}
"""


@pytest.mark.parametrize("text, expected", [
    ("16G", 16 * 10 ** 9), ("16Gi", 16 * 2 ** 30), ("512Mi", 512 * 2 ** 20), ("1k", 1000),
    ("1Ki", 1024), ("1.5Gi", 3 * 2 ** 29), ("1.5e9", 1_500_000_000), ("2E", 2 * 10 ** 18),
    ("1E6", 10 ** 6), ("1073741824", 2 ** 30), (" 8Ti ", 8 * 2 ** 40), (4096, 4096),
])
def test_kubernetes_memory_quantities(text, expected) -> None:
    assert parse_memory_bytes(text) == expected
    assert parse_memory(text) == expected  # the executor's parser is the same one


@pytest.mark.parametrize("text, hint", [
    ("16GB", "'16G' (decimal, 10**n) or '16Gi' (binary, 2**n)"),
    ("16g", "'16G' (decimal, 10**n) or '16Gi'"),
    ("16GiB", "'16Gi' (binary"),
    ("16K", "'16k' (10**3) or '16Ki'"),
    ("16gi", "'16Gi'"),
])
def test_non_kubernetes_suffixes_are_refused_with_a_suggestion(text, hint) -> None:
    for parse in (parse_memory_bytes, parse_memory):
        with pytest.raises(ValueError, match="unknown suffix") as info:
            parse(text)
        assert hint in str(info.value)


@pytest.mark.parametrize("text", ["500m", "1.1Ki", 0.5, "0.3"])
def test_fractional_bytes_are_refused(text) -> None:
    with pytest.raises(QuantityError, match="whole number of bytes"):
        parse_memory_bytes(text, field="spec.x")
    assert parse_quantity("500m") == 0.5  # a compute share may be fractional


@pytest.mark.parametrize("bad", ["-1Gi", "lots", "", "1e999", float("inf"), True, None, [1], "9" * 100, 2 ** 100])
def test_garbage_is_refused_naming_the_field(bad) -> None:
    with pytest.raises(QuantityError, match="^mem.size: "):
        parse_memory_bytes(bad, field="mem.size")


def test_a_gentask_and_a_sim_device_agree_on_16g() -> None:
    """The audit's case: ``preferred: 16G`` on a ``--sim-devices 1:16G`` device fills it exactly."""
    for mem in ("16G", "16Gi", "1.5e10"):
        task, = loads_gentasks(GENTASK.format(mem=mem))
        device, = SimulatedBackend.from_specs([f"1:{mem}"]).devices()
        assert task.preferred_memory * 2 ** 30 == pytest.approx(device.memory, rel=1e-15)
        assert device.memory == parse_memory_bytes(mem)


def test_gentask_refuses_what_the_executor_refuses() -> None:
    for mem in ("16GB", "16g", "500m"):
        with pytest.raises(SpecError, match="spec.genResources.gpuMemory.preferred"):
            loads_gentasks(GENTASK.format(mem=mem))
        with pytest.raises(ValueError):
            parse_memory(mem)
    assert spec_quantity("500m", field="c") == 0.5
