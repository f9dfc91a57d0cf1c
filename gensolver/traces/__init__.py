"""Readers for real GPU cluster traces (Alibaba 2023, Philly 2017) with a documented memory model.

See :mod:`gensolver.traces.records` for the records and the GPU-memory model, and
:mod:`gensolver.traces.readers` for the readers and their scaling options.

References
----------
.. [1] Q. Weng et al. "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
   Fragmentation Gradient Descent", USENIX ATC 2023.
.. [2] M. Jeon et al. "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
   Workloads", USENIX ATC 2019.
"""

from .readers import (
    ALIBABA_NODE_FILE,
    ALIBABA_POD_FILE,
    AlibabaTrace,
    read_alibaba,
    read_alibaba_nodes,
    read_alibaba_pods,
    read_philly,
)
from .records import (
    ALIBABA_MODEL_GPUS,
    GPU_MODEL_MEMORY_GIB,
    MIN_MEMORY_FRACTION,
    PHILLY_MEDIAN_GIB,
    TraceError,
    TraceJob,
    TraceNode,
)

__all__ = [
    "TraceError",
    "TraceJob",
    "TraceNode",
    "AlibabaTrace",
    "read_alibaba",
    "read_alibaba_pods",
    "read_alibaba_nodes",
    "read_philly",
    "GPU_MODEL_MEMORY_GIB",
    "ALIBABA_MODEL_GPUS",
    "PHILLY_MEDIAN_GIB",
    "MIN_MEMORY_FRACTION",
    "ALIBABA_POD_FILE",
    "ALIBABA_NODE_FILE",
]
