"""Every Prometheus metric of the service, in one place, on a registry owned by the app.

Names are in base units with the standard suffixes (``_seconds``, ``_bytes``, ``_total``,
``_credits``); labels have bounded cardinality: ``tenant`` (tenants are created by the operator's
tokens, whose names are checked by :func:`gensolver.service.auth.check_tenant_name`), ``state``
(four values), ``route`` (the route *template*, never a task id) and ``status`` (HTTP status).
No metric is labelled with a task id or a round number.

The metrics labelled by tenant (their balances and payments among them) live on a second
registry, exported only to an operator's token (``GET /metrics`` with
``Authorization: Bearer``); without a token the exposition has the cluster-wide aggregates
below and no per-tenant series, so its size does not grow with the number of tenants.

=================================================  =========  ===================================
metric                                             type       meaning
=================================================  =========  ===================================
``gensolver_round_clear_seconds``                  histogram  wall time of one clearing (build, mechanism, commit)
``gensolver_rounds_total``                         counter    rounds cleared
``gensolver_round_welfare``                        gauge      welfare (reported values) of the last round
``gensolver_round_bound_gap_ratio``                gauge      relative gap to the proven bound of the last round (NaN without one)
``gensolver_round_bids``                           gauge      bids in the last round
``gensolver_round_tasks``                          gauge      tasks that bid in the last round
``gensolver_round_revenue_credits``                gauge      credits charged in the last round
``gensolver_payments_credits_total{tenant}``       counter    credits charged, per tenant
``gensolver_tenant_credit_balance_credits{tenant}`` gauge     balance after the last change
``gensolver_tasks{state}``                         gauge      tasks per state (waiting is the queue)
``gensolver_tasks_submitted_total{tenant}``        counter    tasks accepted
``gensolver_executor_memory_bytes{tenant}``        gauge      GPU memory the executors last reported, summed over the tenant's running tasks
``gensolver_feedback_reports_total{tenant}``       counter    executor usage reports received
``gensolver_revenue_credits_total``                counter    credits charged, all tenants
``gensolver_submissions_total``                    counter    tasks accepted, all tenants
``gensolver_feedback_total``                       counter    executor usage reports, all tenants
``gensolver_cluster_executor_memory_bytes``        gauge      GPU memory executors last reported, all running tasks
``gensolver_tenants``                              gauge      tenants with an account
``gensolver_http_requests_total{route,method,status}``  counter  requests answered
``gensolver_http_request_duration_seconds{route}`` histogram  time to answer
=================================================  =========  ===================================
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["Metrics", "CONTENT_TYPE_LATEST"]

_CLEAR_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_HTTP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class Metrics:
    """The service's metrics on their own :class:`~prometheus_client.CollectorRegistry`
    (so that several apps in one process never share or clash)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        t = self.tenant_registry = CollectorRegistry(auto_describe=True)
        self.round_clear_seconds = Histogram("gensolver_round_clear_seconds", "Wall time of one clearing round.",
                                             buckets=_CLEAR_BUCKETS, registry=r)
        self.rounds_total = Counter("gensolver_rounds_total", "Rounds cleared.", registry=r)
        self.round_welfare = Gauge("gensolver_round_welfare", "Welfare (sum of winning reported values) of the last round.",
                                   registry=r)
        self.round_gap = Gauge("gensolver_round_bound_gap_ratio",
                               "Relative gap between the last round's welfare and its proven bound (NaN without a bound).",
                               registry=r)
        self.round_bids = Gauge("gensolver_round_bids", "Bids in the last round.", registry=r)
        self.round_tasks = Gauge("gensolver_round_tasks", "Tasks that bid in the last round.", registry=r)
        self.round_revenue = Gauge("gensolver_round_revenue_credits", "Credits charged in the last round.", registry=r)
        self.payments_total = Counter("gensolver_payments_credits", "Credits charged, per tenant.", ["tenant"], registry=t)
        self.balance = Gauge("gensolver_tenant_credit_balance_credits", "Credit balance of a tenant.", ["tenant"], registry=t)
        self.tasks = Gauge("gensolver_tasks", "Tasks per state (waiting is the queue).", ["state"], registry=r)
        self.submitted_total = Counter("gensolver_tasks_submitted", "Tasks accepted.", ["tenant"], registry=t)
        self.executor_memory = Gauge("gensolver_executor_memory_bytes",
                                     "GPU memory executors last reported for a tenant's running tasks.", ["tenant"],
                                     registry=t)
        self.feedback_total = Counter("gensolver_feedback_reports", "Executor usage reports received.", ["tenant"],
                                      registry=t)
        self.revenue_total = Counter("gensolver_revenue_credits", "Credits charged, all tenants.", registry=r)
        self.submissions = Counter("gensolver_submissions", "Tasks accepted, all tenants.", registry=r)
        self.feedback_all = Counter("gensolver_feedback", "Executor usage reports received, all tenants.", registry=r)
        self.executor_memory_all = Gauge("gensolver_cluster_executor_memory_bytes",
                                         "GPU memory executors last reported, all running tasks.", registry=r)
        self.tenants = Gauge("gensolver_tenants", "Tenants with an account.", registry=r)
        self.http_requests = Counter("gensolver_http_requests", "HTTP requests answered.", ["route", "method", "status"],
                                     registry=r)
        self.http_seconds = Histogram("gensolver_http_request_duration_seconds", "Time to answer a request.", ["route"],
                                      buckets=_HTTP_BUCKETS, registry=r)
        for state in ("waiting", "running", "done", "cancelled"):
            self.tasks.labels(state).set(0)

    def exposition(self, *, per_tenant: bool = False) -> bytes:
        """The text exposition format: the aggregates, and the per-tenant series if ``per_tenant``."""
        out = generate_latest(self.registry)
        return out + generate_latest(self.tenant_registry) if per_tenant else out
