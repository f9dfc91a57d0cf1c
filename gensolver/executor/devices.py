"""Plan device names resolved to backend UUIDs: :func:`resolve_devices`."""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from .backends import GpuBackend
from .policy import ExecutorError

_INDEXED = re.compile(r"^(?:cuda:|gpu|GPU|sim|SIM-GPU-)?(\d+)$", re.ASCII)


def resolve_devices(names: Sequence[str], backend: GpuBackend, device_map: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map plan device names to backend UUIDs.

    Rules, in order: ``device_map[name]`` (a UUID or an index); a backend UUID equal to the name;
    a decimal index (``"0"``); an indexed name ``gpu<N>``, ``cuda:<N>`` or ``SIM-GPU-<N>``.

    Raises
    ------
    ExecutorError
        A name matches no device (the message lists the backend's devices).
    """
    devs = backend.devices()
    by_uuid = {d.uuid: d for d in devs}
    out = {}
    for name in names:
        key = (device_map or {}).get(name, name)
        if key in by_uuid:
            out[name] = key
            continue
        m = _INDEXED.match(key)
        if m and int(m.group(1)) < len(devs):
            out[name] = devs[int(m.group(1))].uuid
            continue
        listing = ", ".join(f"{d.index}={d.uuid}" for d in devs) or "none"
        raise ExecutorError(f"plan device {name!r} matches no {backend.name} device (devices: {listing}); "
                            f"use a UUID, an index, or a device map")
    return out

