"""Discrete-event GPU cluster simulator (on simpy) comparing scheduling policies.

Front end: :func:`simulate` -> :class:`SimResult` (event log + metrics); :func:`audit_log`
checks any log independently. Policies: :func:`list_policies`.
"""

from .api import SimResult, simulate
from .audit import AuditError, AuditReport, audit_log
from .bound import OfflineBound, offline_bound
from .engine import Cluster, Event, SimError
from .faults import Fault, FaultError, parse_fault
from .metrics import Metrics, TaskRecord, jain_index
from .policies import POLICIES, Policy, UnknownPolicyError, get_policy, list_policies, register_policy
from .workload import Workload, WorkloadError, parse_synthetic, synthetic_workload

__all__ = ["simulate", "SimResult", "offline_bound", "OfflineBound",
           "audit_log", "AuditReport", "AuditError", "Cluster", "Event", "SimError", "Fault",
           "FaultError", "parse_fault", "Metrics", "TaskRecord", "jain_index", "POLICIES", "Policy",
           "UnknownPolicyError", "get_policy", "list_policies", "register_policy", "Workload", "WorkloadError",
           "parse_synthetic", "synthetic_workload"]
