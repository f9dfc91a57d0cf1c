"""Request and response models of the HTTP API, tied to the file formats' JSON Schemas.

The document formats keep one validation place each (their readers); the API reuses them:
``POST /v1/solve`` bodies are read by :func:`gensolver.model.from_dict`, GenTasks by
:func:`gensolver.market.parse_gentask`, and the OpenAPI document advertises the same JSON Schemas
the formats ship (:mod:`gensolver.schemas`) for those bodies and for the ``plan`` of a round
(``gensolver.plan/v1``). Responses are pydantic models, so FastAPI checks every answer against
its schema before sending it; ``tests/service`` checks the OpenAPI document with schemathesis.
"""

from __future__ import annotations

import copy
import math
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from ..schemas import SCHEMA_FILES, load_schema

__all__ = ["COMPONENTS", "SCHEMA_KINDS", "openapi_components", "Problem", "TaskView", "TaskList", "RoundSummary",
           "RoundDetail", "RoundList", "AuditEntry", "AuditPage", "TenantView", "TenantList", "FeedbackIn", "Health", "SolveResult",
           "GENTASK_SCHEMA"]

#: URL name (``/v1/schemas/{kind}``) -> schema name
SCHEMA_KINDS = {"instance": "gensolver.instance/v1", "gpuround": "gensolver.gpuround/v1", "plan": "gensolver.plan/v1"}
#: schema name -> OpenAPI component name
COMPONENTS = {name: "Gensolver" + kind.capitalize() + "V1" for kind, name in SCHEMA_KINDS.items()}

#: the shape of a GenTask for OpenAPI (the reader, parse_gentask, checks everything else)
GENTASK_SCHEMA: dict[str, Any] = {
    "title": "GenTask (scheduling.gen.io/v1alpha1)",
    "description": "One job's elastic GPU request (docs/tutorial/first-round.md); read by gensolver.market.parse_gentask.",
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "scheduling.gen.io/v1alpha1"},
        "kind": {"const": "GenTask"},
        "metadata": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 253},
            "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "spec": {"type": "object", "required": ["genResources"], "properties": {
            "genResources": {"type": "object", "required": ["gpuMemory"], "properties": {
                "gpuMemory": {"type": "object", "required": ["preferred"], "properties": {
                    "preferred": {"type": ["string", "number"]}, "minRequired": {"type": ["string", "number"]},
                    "urgencyFactor": {"type": "number", "minimum": 0, "maximum": 1},
                    "elasticity": {"type": "number", "minimum": 0}}},
                "computeTime": {"type": "object", "properties": {
                    "preemptible": {"type": "boolean"}, "duration": {"type": ["string", "number"]},
                    "arrival": {"type": ["string", "number"]}, "deadline": {"type": ["string", "number"]}}},
                "gpuCompute": {"type": ["string", "number"]},
                "value": {"type": "number", "minimum": 0}}},
            "containers": {"type": "array", "items": {"type": "object"}}}},
    },
}


def _rebase(node: Any, base: str) -> Any:
    """Rewrite a schema's local ``#/...`` references to point inside ``base``."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/"):
                out[k] = base + v[1:]
            else:
                out[k] = _rebase(v, base)
        return out
    if isinstance(node, list):
        return [_rebase(v, base) for v in node]
    return node


def openapi_components() -> dict[str, Any]:
    """The shipped schemas as OpenAPI 3.1 components (``$id``/``$schema`` dropped, refs rebased)."""
    out = {}
    for name in SCHEMA_FILES:
        schema = load_schema(name)
        schema.pop("$id", None)
        schema.pop("$schema", None)
        comp = COMPONENTS[name]
        out[comp] = _rebase(schema, f"#/components/schemas/{comp}")
    out["GenTask"] = copy.deepcopy(GENTASK_SCHEMA)
    return out


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{COMPONENTS.get(name, name)}"}


Num = Optional[float]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Problem(_Model):
    """RFC 9457 problem details; ``field`` names the offending input."""

    type: str
    title: str
    status: int
    detail: str
    field: Optional[str] = None
    instance: Optional[str] = None


class TaskView(_Model):
    id: str = Field(description="the task's name (metadata.name), unique per tenant")
    key: str = Field(description="TENANT/NAME: its id in rounds, payments and plans")
    tenant: str
    state: Literal["waiting", "running", "done", "cancelled"]
    submitted: float
    remaining: float = Field(description="work left, in steps at preferred memory")
    gpus: Optional[list[str]] = Field(description="GPUs it runs on (running tasks)")
    memory: Num = Field(description="GiB per GPU it runs with (running tasks)")
    started_round: Optional[int]
    finished_round: Optional[int]
    task: dict[str, Any] = Field(description="the task as the market reads it (gensolver.gpuround/v1 task fields)")


class TaskList(_Model):
    tasks: list[TaskView]
    next: Optional[str] = Field(default=None, description="pass as ?after= for the next page (null: no more)")


class Assignment(_Model):
    task: str
    tenant: str
    gpus: list[str]
    memory: float
    start: float
    length: int
    keep: bool


class Payment(_Model):
    task: str
    tenant: str
    payment: Num = Field(description="credit engine: price x GiB x GPUs x lease, what the tenant's price asks for "
                                     "the round; auction: the mechanism's payment for the task's bundle")
    payment_bounds: Annotated[list[Num], Field(min_length=2, max_length=2,
                                               description="[low, high] certain to hold the exact payment (null: unbounded)")]
    exact: bool
    charge: float = Field(description="credits debited this round (credit engine: the payment capped at the task's "
                                      "income share; auction: the payment's lease share, capped at the balance)")


class CreditChange(_Model):
    tenant: str
    amount: float
    reason: str
    task: str


class TaskRef(_Model):
    task: str
    tenant: str


class Seconds(_Model):
    build: float
    clear: float
    total: float


class RoundSummary(_Model):
    round: int
    time: float = Field(description="market step of the round")
    at: float = Field(description="Unix time it was cleared")
    trigger: str
    status: str
    mechanism: str
    method: str
    welfare: float
    gap: Num
    candidates: int
    bids: int
    revenue: float
    queue: int
    seconds: Seconds
    assignments: list[Assignment]


PlanDoc = Annotated[Optional[dict[str, Any]],
                    WithJsonSchema({"anyOf": [ref("gensolver.plan/v1"), {"type": "null"}]})]


class Lottery(_Model):
    alpha: float = Field(description="the scaling of this round's lottery")
    alpha_requested: Optional[float] = Field(description="alpha fixed by the settings before any report")
    alpha_verified: float = Field(description="the smallest scaling the decomposition verified on this round")
    truthful_in_expectation: bool = Field(description="alpha fixed before the reports and verified on this round")
    expected_welfare: float


class RoundDetail(RoundSummary):
    bound: Num
    exact: Optional[bool]
    lottery: Optional[Lottery] = Field(default=None, description="lavi-swamy rounds only: the lottery's scaling")
    preempted: list[TaskRef]
    finished: list[TaskRef]
    payments: list[Payment]
    credits: list[CreditChange]
    prices: dict[str, float] = Field(default_factory=dict, description="credit engine: each tenant's price per "
                                     "GiB-step after the round, set by other tenants' bids only (empty: auction)")
    plan: PlanDoc = Field(description="gensolver.plan/v1 of the committed assignments (null when none)")


class RoundList(_Model):
    rounds: list[RoundSummary]
    next: Optional[str] = Field(default=None, description="pass as ?after= for the next page (null: no more)")


class LedgerEntry(_Model):
    round: int
    time: float
    amount: float
    reason: str
    task: str


class Usage(_Model):
    memory_gib_steps: float
    executor_memory_bytes: float


class TenantView(_Model):
    tenant: str
    opened: bool
    balance: float
    weight: float
    spent: float
    tasks: dict[str, int]
    usage: Usage
    credits: list[LedgerEntry]


class TenantList(_Model):
    tenants: list[TenantView]
    next: Optional[str] = Field(default=None, description="pass as ?after= for the next page (null: no more)")


class FeedbackIn(_Model):
    """An executor's report on a running task."""

    task: str = Field(min_length=1, max_length=253, description="the task's name")
    tenant: Optional[str] = Field(default=None, min_length=1, max_length=64,
                                  description="its tenant (an operator's report, when two tenants use the name)")
    memory_bytes: Optional[float] = Field(default=None, gt=0, description="device memory the task uses now, bytes")
    progress: Optional[float] = Field(default=None, ge=0, le=1, description="share of its work done")

    @model_validator(mode="after")
    def _something(self) -> FeedbackIn:
        if self.memory_bytes is None and self.progress is None:
            raise ValueError("give memory_bytes, progress or both")
        if self.memory_bytes is not None and not math.isfinite(self.memory_bytes):
            raise ValueError("memory_bytes must be finite")
        return self


class Me(_Model):
    tenant: str
    admin: bool
    role: Literal["tenant", "operator"]
    expires: Optional[float] = Field(description="Unix time the token stops working (null: never)")


class AuditEntry(_Model):
    seq: int
    at: float
    actor: str
    action: str
    subject: str
    detail: dict[str, Any]


class AuditPage(_Model):
    entries: list[AuditEntry]
    next: Optional[int] = Field(description="pass as ?after= for the next page (null: no more)")


class Gpu(_Model):
    id: str
    memory: float
    compute: float
    node: str
    model: str


class Health(_Model):
    status: str
    replica: str = Field(description="this process's name among the service's replicas (new at each start)")
    rounds: int
    clock: float
    tasks: dict[str, int]
    gpus: list[Gpu]
    lease: int
    step_seconds: float
    engine: str = Field(description="the market engine: credit (the default) or auction (deprecated)")
    mechanism: str
    method: str = Field(description="the winner determination method of the market's rounds")
    solver: str = Field(description="deprecated: the same as method (removed in the next release)")
    round_seconds: float


class SolveResult(BaseModel):
    """What ``gensolver solve --json`` prints (extra backend keys allowed)."""

    model_config = ConfigDict(extra="allow")
    status: Literal["optimal", "feasible", "infeasible", "error"]
    welfare: float
    bound: Num
    gap: Num
    winners: list[str]
    method: str
    seconds: dict[str, float]
    details: dict[str, Any]
    message: str
    mechanism: Optional[str] = None
    payments: Optional[dict[str, Num]] = None
    revenue: Num = None
    exact: Optional[bool] = None
    payment_bounds: Optional[dict[str, list[Num]]] = None
