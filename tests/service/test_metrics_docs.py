"""The Grafana dashboard and the metrics table of the how-to name only metrics the service exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gensolver.service.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]


def exported() -> set[str]:
    """Every sample name of a fresh registry (histogram _bucket/_sum/_count, counter _total)."""
    names = set()
    m = Metrics()
    for family in list(m.registry.collect()) + list(m.tenant_registry.collect()):
        names.add(family.name)
        for suffix in ("_total", "_bucket", "_sum", "_count", "_created"):
            names.add(family.name + suffix)
    return names


def test_dashboard_uses_only_exported_metrics():
    dash = json.loads((ROOT / "docs" / "grafana" / "gensolver-service.json").read_text())
    used = {m for p in dash["panels"] for t in p["targets"] for m in re.findall(r"gensolver_[a-z_]+", t["expr"])}
    assert len(dash["panels"]) >= 10 and used
    assert used <= exported(), used - exported()


def test_howto_metrics_exist_and_use_base_units():
    text = (ROOT / "docs" / "how-to" / "service.md").read_text()
    named = set(re.findall(r"`(gensolver_[a-z_]+)", text))
    assert "gensolver_round_clear_seconds" in named
    assert named <= exported(), named - exported()
    for family in Metrics().registry.collect():
        assert not re.search(r"_(ms|milliseconds|kb|mb|gb|gib|minutes)(_|$)", family.name), family.name


def test_labels_have_bounded_cardinality():
    """Labels are tenant, task state, route template, method and status: never a task or round."""
    from prometheus_client.metrics import MetricWrapperBase

    metrics = [m for m in vars(Metrics()).values() if isinstance(m, MetricWrapperBase)]
    assert len(metrics) >= 19
    for m in metrics:
        assert set(m._labelnames) <= {"tenant", "state", "route", "method", "status"}, m._name


def test_public_metrics_have_no_tenant_label():
    """Without an operator token the exposition is the aggregate registry: no series per tenant."""
    m = Metrics()
    m.balance.labels("alice").set(5.0)
    m.payments_total.labels("alice").inc(3.0)
    assert b'tenant="alice"' not in m.exposition()
    assert b'gensolver_tenant_credit_balance_credits{tenant="alice"} 5.0' in m.exposition(per_tenant=True)
