"""Scheduling policies behind one registry.

Every policy is an object with a ``name`` and ``schedule(cluster, boundary)``, called by the
simulator after each batch of simultaneous events (arrivals, completions, failures,
recoveries; ``boundary=False``) and at every round boundary (``boundary=True``, every
``lease`` steps). It acts through :meth:`Cluster.start`, :meth:`Cluster.stop` and
:meth:`Cluster.resize`.

=====================  =======================================================================
name                   behaviour
=====================  =======================================================================
``fcfs-whole-gpu``     arrival order; each task holds whole GPUs (Kubernetes ``nvidia.com/gpu``)
``fcfs-packing``       arrival order; preferred memory, first fit or best fit on shared GPUs
``elastic``            like packing, but starts with less than preferred (>= minimum) when only
                       that is free, and grows tasks back as memory frees
``finish-time-fair``   Themis-like: each round favours the worst finish-time fairness rho
``market``             the market: Themis' rho x Karma-style credits, priced, with backfill;
                       an adapter over the one round engine
                       :class:`gensolver.market.engine.CreditEngine`, which ``gensolver serve``
                       runs too (``clearing="solver"``: rounds cleared by the solver layer,
                       :mod:`gensolver.market.clearing`)
``time-slicing``       NVIDIA time-slicing: replicas per GPU, turns on the whole device
``mps``                CUDA MPS: compute shares, memory-bandwidth interference
``mig``                Multi-Instance GPU: fixed profiles, reconfiguration cost
=====================  =======================================================================

``auction`` is a deprecated alias (:data:`.base.DEPRECATED_POLICIES`, one release): it runs
``market`` with ``clearing="solver"`` and warns; the separate welfare-auction policy is gone.

Arrival-order policies skip a task that does not fit and try the next (as the Kubernetes
scheduler does); ``strict=True`` stops at the first task that does not fit (head-of-line).
Gangs (``gpus > 1``) take GPUs of one node.

References
----------
.. [1] K. Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020.
.. [2] Q. Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
   Fragmentation Gradient Descent", USENIX ATC 2023.
"""

from __future__ import annotations

from typing import Any

from .base import (
    DEPRECATED_POLICIES,
    POLICIES,
    Policy,
    UnknownPolicyError,
    deprecated_policy_note,
    find_placement,
    get_policy,
    list_policies,
    policy_label,
    register_policy,
)
from .ftf import FinishTimeFair, finish_time_rho
from .queue import Elastic, FcfsPacking, FcfsWholeGpu
from .sharing import Mig, Mps, TimeSlicing, mig_profiles

__all__ = ["Policy", "POLICIES", "DEPRECATED_POLICIES", "register_policy", "get_policy", "list_policies",
           "UnknownPolicyError", "deprecated_policy_note", "policy_label", "find_placement", "FcfsWholeGpu", "FcfsPacking", "Elastic",
           "FinishTimeFair", "finish_time_rho", "MarketPolicy", "TimeSlicing", "Mps", "Mig", "mig_profiles"]

# the market is named by path: importing the simulator imports no market code
for _name, _factory in (("fcfs-whole-gpu", FcfsWholeGpu), ("fcfs-packing", FcfsPacking), ("elastic", Elastic),
                        ("finish-time-fair", FinishTimeFair), ("market", "gensolver.sim.policies.market:MarketPolicy"),
                        ("time-slicing", TimeSlicing), ("mps", Mps), ("mig", Mig)):
    register_policy(_name, _factory)


def __getattr__(name: str) -> Any:  # MarketPolicy, imported on first use
    if name == "MarketPolicy":
        from .market import MarketPolicy

        return MarketPolicy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
