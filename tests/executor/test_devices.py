"""Plan device names to backend UUIDs (:func:`gensolver.executor.devices.resolve_devices`), on
the simulated backend's declared devices."""

from __future__ import annotations

import pytest

from gensolver.executor import SimulatedBackend
from gensolver.executor.devices import resolve_devices
from gensolver.executor.policy import ExecutorError


@pytest.fixture
def backend(tmp_path):
    return SimulatedBackend([("GPU-aaaa", "16G"), ("GPU-bbbb", "16G")], state_dir=tmp_path)


def test_every_naming_rule_resolves_to_the_declared_device(backend) -> None:
    names = ["GPU-bbbb", "0", "gpu1", "cuda:0", "SIM-GPU-1", "mine"]
    got = resolve_devices(names, backend, {"mine": "1"})
    assert got == {"GPU-bbbb": "GPU-bbbb", "0": "GPU-aaaa", "gpu1": "GPU-bbbb", "cuda:0": "GPU-aaaa",
                   "SIM-GPU-1": "GPU-bbbb", "mine": "GPU-bbbb"}


@pytest.mark.parametrize("name", ["gpu2", "GPU-cccc", "node0/gpu0", "-1"])
def test_a_name_of_no_device_is_refused_with_the_list(backend, name) -> None:
    with pytest.raises(ExecutorError, match=rf"plan device '{name}' matches no sim device \(devices: 0=GPU-aaaa, "
                                            r"1=GPU-bbbb\)"):
        resolve_devices([name], backend)
