"""What the Slurm and Kubernetes adapters share: the error type, where a plan device lives, the
grant of one run, and writing a folder of outputs all at once.

A plan names devices (``gpu0``, ``openb-node-0363/g0``, an NVML UUID); a cluster names nodes. The
node of a device is, in this order: its entry in an explicit map (``--node-map DEVICE=NODE``),
the part before the last ``/`` of a ``NODE/DEVICE`` id, or the default node (``--node``); with
none of these the device has no node and the adapter refuses the plan, naming the device.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ..errors import InputError
from ..executor.plan import ExecutionPlan, Run
from ..model.io import process_umask

__all__ = ["AdapterError", "node_of", "node_field", "RunGrant", "run_grants", "shares", "write_tree", "FULL_DEVICE_TOLERANCE"]

#: a compute share at least ``1 - FULL_DEVICE_TOLERANCE`` is a whole device
FULL_DEVICE_TOLERANCE = 1e-9


class AdapterError(InputError):
    """Input an adapter cannot turn into cluster objects; ``field`` names the option or plan place.

    Parameters
    ----------
    field : str
        The option (``--node-map``) or plan place (``/devices/gpu0``) at fault.
    reason : str
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}" if field else reason)


def node_of(device: str, nodes: Mapping[str, str], default: str | None) -> str:
    """The node that holds plan device ``device`` (see the module docstring).

    Raises
    ------
    AdapterError
        The device has no node (field ``--node-map``).
    """
    if device in nodes:
        return nodes[device]
    head, sep, _ = device.rpartition("/")
    if sep and head:
        return head
    if default:
        return default
    raise AdapterError("--node-map", f"plan device {device!r} has no node: map it with --node-map "
                                       f"{device}=NODE, or give every device one node with --node NODE")


@dataclass(frozen=True)
class RunGrant:
    """What one run of a task holds, per node: its plan devices, memory and compute.

    Attributes
    ----------
    run : Run
        The plan's run (task, index, start, end, devices, grants).
    nodes : tuple of str
        The nodes of the run's devices, sorted, without repeats.
    devices_per_node : int
        Most plan devices the run holds on any one node (a gang may span several).
    memory : int
        Smallest per-device memory grant (bytes).
    compute : float
        Smallest per-device compute share (1.0 = a whole device).
    fraction : float
        The share of one device the run needs, ``max(compute, memory / device memory)``, in
        ``(0, 1]``; 1.0 for a whole device or where the device's memory is unknown.
    where : tuple of str
        The node of each of ``run.devices``, in order (empty: not recorded).
    """

    run: Run
    nodes: tuple[str, ...]
    devices_per_node: int
    memory: int
    compute: float
    fraction: float
    where: tuple[str, ...] = ()

    @property
    def whole(self) -> bool:
        """Whether the run needs whole devices (no sharing)."""
        return self.fraction >= 1.0 - FULL_DEVICE_TOLERANCE

    @property
    def key(self) -> str:
        """``task.run``: the run's name in scripts, job names and journals."""
        return f"{self.run.task}.{self.run.index}"


def node_field(device: str, nodes: Mapping[str, str], default_field: str = "--node") -> str:
    """The option or plan place that gave ``device`` its node (for an error naming it)."""
    if device in nodes:
        return "--node-map"
    head, sep, _ = device.rpartition("/")
    return f"/devices/{device}" if sep and head else default_field


def run_grants(plan: ExecutionPlan, nodes: Mapping[str, str], default_node: str | None, *,
               node_rule: Callable[[str, str], None] | None = None,
               default_field: str = "--node") -> tuple[RunGrant, ...]:
    """Every run of every task of ``plan`` with its nodes and grant, sorted by (start, task, run).

    Every task and device id is checked by :func:`gensolver.adapters.names.check_id`, every
    node a run lands on by ``node_rule(node, field)`` (the emitter's node-name rule; ``field``
    is where the node came from: ``--node``, ``--node-map`` or ``/devices/<id>``).

    Raises
    ------
    AdapterError
        A device without a node, a ``--node-map`` entry naming no plan device, an id with a
        control character, a node name the emitter's rule refuses.
    """
    from .names import check_id

    for task in plan.tasks:
        check_id("task", task.id, f"/tasks/{task.id!r}")
    for device in plan.devices:
        check_id("device", device.id, f"/devices/{device.id!r}")
    known = {d.id for d in plan.devices}
    for name in nodes:
        if name not in known:
            raise AdapterError("--node-map", f"the plan has no device {name!r} (its devices: "
                                               f"{', '.join(sorted(known)) or 'none'})")
    capacity = {d.id: d.memory for d in plan.devices}
    out = []
    for task in plan.tasks:
        for run in plan.runs(task.id):
            where = [node_of(dev, nodes, default_node) for dev in run.devices]
            if node_rule is not None:
                for dev, node in zip(run.devices, where):
                    node_rule(node, node_field(dev, nodes, default_field))
            per_node = max(where.count(n) for n in set(where))
            shares = []
            for dev in run.devices:
                mem, cmp_ = run.grants[dev]
                cap = capacity.get(dev)
                shares.append(max(cmp_, mem / cap if cap else 1.0))
            fraction = min(1.0, max(shares)) if shares else 1.0
            out.append(RunGrant(run, tuple(sorted(set(where))), per_node, run.memory, run.compute,
                                fraction if fraction > 0 else 1.0, tuple(where)))
    out.sort(key=lambda g: (g.run.start, g.run.task, g.run.index))
    return tuple(out)


def shares(fraction: float, per_device: int) -> int:
    """Units of ``per_device`` a ``fraction`` of one device needs (rounded up, at least 1)."""
    return max(1, min(per_device, math.ceil(fraction * per_device - 1e-9)))


def write_tree(out: str | os.PathLike[str], files: Mapping[str, str], *, executable: tuple[str, ...] = ()) -> Path:
    """Write ``files`` (relative name -> text) as the folder ``out``, all at once.

    The files go to a temporary folder beside ``out``, which is then renamed to ``out``: a
    reader sees either no folder or the complete one. An existing ``out`` must be an empty
    folder (it is replaced); anything else is refused, so nothing of the user's is overwritten.

    Raises
    ------
    AdapterError
        ``out`` exists and is a file or a non-empty folder (field ``--out``).
    OSError
        The folder cannot be written (nothing is left behind).
    """
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise AdapterError("--out", f"{target} exists and is not an empty folder; give a new folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if name in executable:
                path.chmod(0o755)
        tmp.chmod(0o777 & ~process_umask())
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
