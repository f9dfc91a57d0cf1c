"""Helpers for the processes the executor launches (standard library only, cheap to import).

The executor passes each process its grant through the environment, in the forms real stacks
honour [MPS]_:

``CUDA_VISIBLE_DEVICES``
    The granted device UUIDs, comma-separated. Inside the process they are devices 0, 1, ...
``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``
    The compute share as a percentage (1-100) of the device's SMs an MPS client may use.
``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``
    The memory grant of an MPS client, ``"0=<N>M,1=<N>M"`` (device ordinal as the client sees
    it, MiB rounded down); the MPS server enforces it.
``GENSOLVER_MEMORY_LIMIT``
    The memory grant per device in bytes, for frameworks without MPS:
    :func:`apply_memory_limit` turns it into PyTorch's per-process memory fraction.
``GENSOLVER_COMPUTE_SHARE``, ``GENSOLVER_TASK``, ``GENSOLVER_RUN``, ``GENSOLVER_ATTEMPT``,
``GENSOLVER_RUN_ID``, ``GENSOLVER_RESUME``, ``GENSOLVER_RUN_END``
    The share as a float, the task id, run index, attempt number, a unique id of this launch,
    ``"1"`` when the task ran before (resume from a checkpoint) else ``"0"``, and the wall-clock
    time (seconds since the epoch) at which the grant ends.

References
----------
.. [MPS] NVIDIA Multi-Process Service, "Environment variables":
   ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``,
   https://docs.nvidia.com/deploy/mps/
.. [TORCH] ``torch.cuda.set_per_process_memory_fraction``,
   https://pytorch.org/docs/stable/generated/torch.cuda.set_per_process_memory_fraction.html
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings

from ..errors import InputError

__all__ = ["report_usage", "apply_memory_limit", "MEMORY_LIMIT_ENV", "USAGE_FILE_ENV"]

MEMORY_LIMIT_ENV = "GENSOLVER_MEMORY_LIMIT"
USAGE_FILE_ENV = "GENSOLVER_SIM_USAGE_FILE"


def report_usage(nbytes: int, *, path: str | None = None) -> bool:
    """Report this process's current device memory to a :class:`SimulatedBackend`.

    Parameters
    ----------
    nbytes : int
        Bytes now held on each device of ``CUDA_VISIBLE_DEVICES``.
    path : str, keyword-only, optional
        The usage file (default: ``$GENSOLVER_SIM_USAGE_FILE``).

    Returns
    -------
    bool
        ``True`` when written; ``False`` when no usage file is configured (on real GPUs NVML
        sees the process's memory without help, so this is a no-op there).
    """
    target = path or os.environ.get(USAGE_FILE_ENV)
    if not target:
        return False
    if isinstance(nbytes, bool) or int(nbytes) < 0:
        raise InputError(f"nbytes must be a non-negative integer, got {nbytes!r}")
    doc = {"pid": os.getpid(), "bytes": int(nbytes), "devices": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".usage.", dir=folder)
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh)
    os.replace(tmp, target)
    return True


def apply_memory_limit(*, device: int = 0) -> float | None:
    """Cap PyTorch's caching allocator at ``$GENSOLVER_MEMORY_LIMIT`` bytes on ``device``.

    Calls ``torch.cuda.set_per_process_memory_fraction(limit / total, device)`` [TORCH]_, so
    that an allocation beyond the grant raises an out-of-memory error inside the job instead of
    hurting its neighbours.

    Returns
    -------
    float or None
        The fraction set, or ``None`` (with a ``RuntimeWarning``) when there is no limit in the
        environment, PyTorch is not importable, or CUDA is not available.
    """
    raw = os.environ.get(MEMORY_LIMIT_ENV)
    if not raw:
        warnings.warn(f"{MEMORY_LIMIT_ENV} is not set; no memory limit applied", RuntimeWarning, stacklevel=2)
        return None
    limit = int(raw)
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        warnings.warn("PyTorch is not importable; the memory limit is not applied (MPS limits still hold)",
                      RuntimeWarning, stacklevel=2)
        return None
    if not torch.cuda.is_available():
        warnings.warn("CUDA is not available to PyTorch; the memory limit is not applied", RuntimeWarning, stacklevel=2)
        return None
    total = torch.cuda.get_device_properties(device).total_memory
    fraction = max(0.0, min(1.0, limit / total))
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    return fraction
