"""The report audit (:mod:`gensolver.market.evidence`) on hand-computed cases, and the engine's
stored state, whose keys the service and ``gensolver run`` journals keep."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from gensolver.market.engine import CreditEngine
from gensolver.market.evidence import ReportAudit
from gensolver.model.tasks import Task


def _finished(tid: str, tenant: str, reported: int, worked: float, overhead: float = 0.0):
    """A finished task as the engine sees it: ``executed`` counts overhead and lost work too."""
    return SimpleNamespace(id=tid, task=Task(tid, 4, 4, reported, 1.0, compute=0.3, tenant=tenant),
                           executed=worked + overhead, overhead=overhead, lost=0.0)


def _audit(**kw) -> ReportAudit:
    return ReportAudit(**{"tolerance": 0.05, "evidence": True, "calibrate": "max", "verify_memory": True, **kw})


def test_learn_counts_work_against_reports_within_and_beyond_the_band():
    a = _audit()
    a.learn(_finished("x", "A", 10, 10.4, overhead=2.0))  # 1.04: within the band (1 / 0.95 = 1.0526)
    assert a.ratio == {"A": 1.0} and a.low == {}
    a.learn(_finished("y", "A", 10, 20.0))  # 2.0: a lie
    a.learn(_finished("z", "B", 10, 9.6))  # 0.96: an honest over-estimate, not low
    a.learn(_finished("w", "B", 10, 5.0))  # 0.5: over-reported
    assert a.ratio == {"A": 2.0, "B": 1.0}
    assert a.low == {"B": 0.5}
    assert a.worked == pytest.approx({"A": 30.4, "B": 14.6}) and a.reported == {"A": 20.0, "B": 20.0}
    assert a.calibration("A") == pytest.approx(30.4 / 20) and a.calibration("C") == 1.0
    # with no tolerance, 1.04 is evidence and 0.96 is low
    b = _audit(tolerance=0.0)
    b.learn(_finished("x", "A", 10, 10.4))
    b.learn(_finished("z", "B", 10, 9.6))
    assert b.ratio == {"A": pytest.approx(1.04), "B": 1.0} and b.low == {"B": pytest.approx(0.96)}


def test_kappas_without_running_evidence_follow_the_rule():
    a = _audit()
    a.learn(_finished("x", "A", 10, 20.0))
    a.learn(_finished("y", "A", 10, 10.0))
    assert a.kappas(0.0, []) == {"A": 2.0}
    assert _audit(calibrate="mean").kappas(0.0, []) == {}
    m = _audit(calibrate="mean")
    m.learn(_finished("x", "A", 10, 20.0))
    m.learn(_finished("y", "A", 10, 10.0))
    assert m.kappas(0.0, []) == {"A": pytest.approx(1.5)}


def test_forget_drops_marks_and_keeps_sums_and_the_state_round_trips():
    a = _audit()
    a.learn(_finished("x", "A", 10, 20.0))
    a.slow |= {"s1", "s2"}
    a.short |= {"h1"}
    assert a.tracked() == {"s1", "s2", "h1"}
    a.forget({"s1", "h1", "other"})
    assert a.slow == {"s2"} and a.short == set() and a.ratio == {"A": 2.0}
    b = _audit()
    b.load_state(json.loads(json.dumps(a.state())))
    assert b.state() == a.state() and isinstance(b.slow, set)


def test_the_engine_state_keeps_its_stored_keys_and_restores_the_audit():
    eng = CreditEngine()
    eng.learn(_finished("x", "A", 10, 5.0))
    eng.audit.slow.add("r")
    st = json.loads(json.dumps(eng.state()))
    # the keys journals and the service's database hold, in their order
    assert list(st) == ["seen", "arrived", "price", "worked", "reported", "ratio", "low", "slow", "short", "memory",
                        "balances"]
    assert st["low"] == {"A": 0.5} and st["slow"] == ["r"]
    again = CreditEngine()
    again.load_state(st)
    assert again.state() == eng.state() and again.audit.low == {"A": 0.5}
    # a state stored before the memory factors (no "memory" key) still loads: no factor yet
    older = CreditEngine()
    older.load_state({k: v for k, v in st.items() if k != "memory"})
    assert older.audit.memory == {} and older.audit.low == {"A": 0.5}
