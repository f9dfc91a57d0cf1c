"""The instance model: slots, bids, bidders, validation and file formats."""

from .instance import SCHEMA, Bid, Bidder, Instance, Slot
from .io import atomic_write, format_cats, parse_cats, read_cats, read_instance, write_cats, write_instance
from .validate import InstanceError, coerce_instance, from_dict, mark_validated, validate

__all__ = [
    "SCHEMA",
    "Bid",
    "Bidder",
    "Instance",
    "Slot",
    "InstanceError",
    "from_dict",
    "validate",
    "mark_validated",
    "coerce_instance",
    "read_instance",
    "write_instance",
    "read_cats",
    "write_cats",
    "parse_cats",
    "format_cats",
    "atomic_write",
]

from .tasks import BundleOption, GpuRound, GpuSpec, Task, task_steps, task_value, uniform_gpus  # noqa: E402

__all__ += ["GpuRound", "GpuSpec", "Task", "BundleOption", "task_steps", "task_value", "uniform_gpus"]
