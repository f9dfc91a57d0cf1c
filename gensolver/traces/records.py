"""Frozen trace records (:class:`TraceJob`, :class:`TraceNode`), :class:`TraceError` and the
documented GPU-memory model used where a trace lacks memory figures.

Memory model
------------
Neither public trace records GPU memory per job, so the readers *model* it, reproducibly
(every draw comes from a :class:`numpy.random.Generator` seeded by the caller, one draw per
data row in file order, so selecting a window, a node subset or a job cap never changes the
memory of a job that is kept):

- **Alibaba** (Weng et al., ATC 2023): a pod asks for ``gpu_milli / 1000`` of a GPU. The trace
  does not say which GPU model serves it (``gpu_spec`` is empty in the published sample), so
  each pod is assigned a model drawn in proportion to the number of GPUs of each model in the
  cluster (:data:`ALIBABA_MODEL_GPUS`, counted from ``openb_node_list_gpu_node.csv``), and
  ``memory_gib_preferred = gpu_milli / 1000 * memory(model)`` per GPU, with the model memories
  of :data:`GPU_MODEL_MEMORY_GIB`.
- **Philly** (Jeon et al., ATC 2019): whole GPUs. ``memory_gib_preferred`` per GPU is drawn
  log-normally with a median that grows with the gang size (:data:`PHILLY_MEDIAN_GIB`:
  8 GiB for 1 GPU, 12 GiB for 2-4, 16 GiB for 8 or more), log-sd 0.5, clipped to
  ``[2, 80]`` GiB and rounded to 0.5 GiB. Larger gangs train larger models, hence the median.
- **Elasticity (both)**: ``memory_gib_min = memory_gib_preferred * f`` with
  ``f ~ U[0.5, 1.0]`` (:data:`MIN_MEMORY_FRACTION`), rounded to 0.25 GiB and kept positive:
  a job can run, more slowly, with at least half of its preferred memory (see the utility
  model of :mod:`gensolver.model.tasks`).

References
----------
.. [1] Q. Weng, L. Yang, Y. Yu, W. Wang, X. Tang, G. Yang, L. Zhang. "Beware of Fragmentation:
   Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023.
   Trace: alibaba/clusterdata, ``cluster-trace-gpu-v2023``.
.. [2] M. Jeon, S. Venkataraman, A. Phanishayee, J. Qian, W. Xiao, F. Yang. "Analysis of
   Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019.
   Trace: msr-fiddle/philly-traces (CC-BY-4.0), as derived by the Pollux artifact.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..errors import InputError

__all__ = [
    "TraceError",
    "TraceJob",
    "TraceNode",
    "GPU_MODEL_MEMORY_GIB",
    "ALIBABA_MODEL_GPUS",
    "PHILLY_MEDIAN_GIB",
    "MIN_MEMORY_FRACTION",
    "philly_preferred_memory",
    "min_memory",
]

#: GPU memory (GiB) per model name of the Alibaba trace. P100/T4/V100M16/V100M32/A10 are the
#: vendors' figures. ``G2`` and ``G3`` are anonymised in the trace; **assumed** here: G2 is a
#: 24 GiB card (the A10/L4 class, the bulk of a 2023 inference fleet) and G3 an 80 GiB card
#: (A100/H800 class, the trace's few large training nodes).
GPU_MODEL_MEMORY_GIB: Mapping[str, float] = MappingProxyType(
    {"P100": 16.0, "T4": 16.0, "V100M16": 16.0, "V100M32": 32.0, "A10": 24.0, "G2": 24.0, "G3": 80.0}
)

#: GPUs per model in the published node list (``openb_node_list_gpu_node.csv``, 1,213 nodes,
#: 6,212 GPUs); the default weights for assigning a model to a pod.
ALIBABA_MODEL_GPUS: Mapping[str, int] = MappingProxyType(
    {"G2": 4392, "T4": 842, "G3": 312, "P100": 265, "V100M32": 204, "V100M16": 195, "A10": 2}
)

#: median preferred memory (GiB per GPU) of a Philly job by gang size: (min GPUs, median)
PHILLY_MEDIAN_GIB: tuple[tuple[int, float], ...] = ((1, 8.0), (2, 12.0), (8, 16.0))
PHILLY_LOG_SD = 0.5
PHILLY_CLIP_GIB = (2.0, 80.0)

#: ``memory_gib_min / memory_gib_preferred`` is uniform on this interval
MIN_MEMORY_FRACTION = (0.5, 1.0)


class TraceError(InputError):
    """A malformed trace file or row; the message names the file and the 1-based line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class TraceJob:
    """One job (Philly) or pod (Alibaba) of a trace.

    Attributes
    ----------
    id : str
        The pod name (Alibaba) or ``philly-<line>`` (Philly, the file's line number).
    arrival_s : float
        Submission time in seconds from the trace's origin (Alibaba ``creation_time``; Philly
        seconds since the earliest timestamp in the file).
    duration_s : float
        Run time in seconds (Alibaba ``deletion_time - scheduled_time``, or ``- creation_time``
        for pods never scheduled; Philly ``duration``).
    num_gpus : int
        GPUs held at once (0 for CPU-only Alibaba pods, kept only on request).
    gpu_fraction : float
        Share of each GPU, in ``(0, 1]`` (``gpu_milli / 1000``; 1.0 for Philly).
    memory_gib_preferred, memory_gib_min : float
        Modelled GPU memory per GPU (see the module docstring); 0 for CPU-only pods.
    source : str
        ``"alibaba"`` or ``"philly"``.
    gpu_model : str
        The (modelled) GPU model for Alibaba pods; ``""`` for Philly.
    group : str
        Alibaba ``qos`` (LS, BE, Burstable, Guaranteed) or Philly virtual ``cluster``.
    phase : str
        Alibaba ``pod_phase``; ``""`` for Philly.
    cpu_milli, memory_mib : int
        Host CPU (thousandths of a core) and memory (MiB) for Alibaba pods; 0 for Philly.
    line : int
        1-based line of the row in its file.
    """

    id: str
    arrival_s: float
    duration_s: float
    num_gpus: int
    gpu_fraction: float
    memory_gib_preferred: float
    memory_gib_min: float
    source: str
    gpu_model: str = ""
    group: str = ""
    phase: str = ""
    cpu_milli: int = 0
    memory_mib: int = 0
    line: int = 0

    @property
    def end_s(self) -> float:
        """``arrival_s + duration_s``."""
        return self.arrival_s + self.duration_s

    @property
    def gpu_seconds(self) -> float:
        """``num_gpus * gpu_fraction * duration_s``."""
        return self.num_gpus * self.gpu_fraction * self.duration_s


@dataclass(frozen=True)
class TraceNode:
    """One GPU node (Alibaba ``openb_node_list_gpu_node.csv``).

    Attributes
    ----------
    id : str
        The node's ``sn``.
    gpus : int
        Number of GPUs.
    gpu_model : str
    gpu_memory_gib : float
        Memory per GPU from :data:`GPU_MODEL_MEMORY_GIB`.
    cpu_milli, memory_mib : int
        Host CPU and memory.
    line : int
        1-based line in the file.
    """

    id: str
    gpus: int
    gpu_model: str
    gpu_memory_gib: float
    cpu_milli: int = 0
    memory_mib: int = 0
    line: int = 0


def philly_preferred_memory(num_gpus: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Preferred GPU memory (GiB per GPU) for Philly jobs; one draw per job (module docstring)."""
    num_gpus = np.asarray(num_gpus)
    median = np.empty(num_gpus.shape, dtype=np.float64)
    for lo, med in PHILLY_MEDIAN_GIB:
        median[num_gpus >= lo] = med
    draw = median * np.exp(PHILLY_LOG_SD * rng.standard_normal(num_gpus.shape))
    return np.round(np.clip(draw, *PHILLY_CLIP_GIB) * 2.0) / 2.0


def min_memory(preferred: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Minimum memory: ``preferred * U[0.5, 1]``, rounded to 0.25 GiB, positive, <= preferred."""
    preferred = np.asarray(preferred, dtype=np.float64)
    frac = rng.uniform(*MIN_MEMORY_FRACTION, size=preferred.shape)
    out = np.round(preferred * frac * 4.0) / 4.0
    return np.minimum(preferred, np.maximum(out, np.minimum(preferred, 0.25)))
