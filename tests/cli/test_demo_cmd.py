"""``gensolver demo``: it runs, writes its files, and its round is right by independent checks.

The payments are recomputed here from the written ``instance.json`` with the Clarke pivot rule
and a different solver (HiGHS through ``solve``, where the demo uses CP-SAT or ``auto``):
``p_i = W(N without i) - (W(N) - v_i)``. Each winner pays at most its bid (individual
rationality), losers pay nothing, the allocation passes the feasibility certificate, and the
plan keeps every device within capacity. The checks are shown to fail on tampered answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensolver.cli import main
from gensolver.cli.demo_cmd import DEMO_FILES
from gensolver.executor import check_plan, read_plan
from gensolver.model import read_instance
from gensolver.solvers import get_method, solve
from gensolver.verify import check_allocation

TOL = 1e-6


def _exact_method() -> str:
    for m in ("highs", "scip", "cpsat", "pulp-cbc"):
        if get_method(m).available()[0]:
            return m
    pytest.skip("no exact MILP backend installed")


def _payment_violations(instance, winners: list[dict], payments: dict[str, float], method: str) -> list[str]:
    """Independent VCG and IR checks of a claimed outcome (one line per violation)."""
    bad = []
    w_all = solve(instance, method=method).welfare
    claimed = sum(instance.bids[instance.bid_index[w["bid"]]].value for w in winners)
    if abs(claimed - w_all) > TOL * max(1.0, w_all):
        bad.append(f"welfare {claimed} is not the optimum {w_all}")
    for w in winners:
        bid = instance.bids[instance.bid_index[w["bid"]]]
        pay = payments[bid.bidder]
        if not -TOL <= pay <= bid.value + TOL:
            bad.append(f"{bid.bidder}: payment {pay} outside [0, bid {bid.value}]")
        others = instance.replace_bids([b for b in instance.bids if b.bidder != bid.bidder])
        clarke = solve(others, method=method).welfare - (w_all - bid.value)
        if abs(pay - clarke) > 1e-5 * max(1.0, abs(clarke)):
            bad.append(f"{bid.bidder}: payment {pay}, Clarke pivot {clarke}")
    won = {instance.bids[instance.bid_index[w["bid"]]].bidder for w in winners}
    bad += [f"loser {b} pays {p}" for b, p in payments.items() if b not in won and abs(p) > TOL]
    return bad


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "out"
    assert main(["demo", "--out", str(out)]) == 0
    return out


def test_demo_writes_every_file(demo: Path) -> None:
    assert sorted(p.name for p in demo.iterdir()) == sorted(DEMO_FILES)
    for png in ("gantt.png", "utilisation.png", "jct_cdf.png"):
        data = (demo / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert check_plan(read_plan(demo / "plan.json")).ok


def test_demo_round_is_vcg_individually_rational_and_feasible(demo: Path) -> None:
    summary = json.loads((demo / "summary.json").read_text())
    instance = read_instance(demo / "instance.json")
    assert summary["round"]["mechanism"] == "vcg" and summary["round"]["exact"] is True
    assert len(summary["tenants"]) >= 3 and len(summary["jobs"]) >= 6
    assert len(summary["winners"]) >= 2 and summary["losers"]  # a contested round
    winners = [w["bid"] for w in summary["winners"]]
    assert check_allocation(instance, winners).feasible
    assert any(w["payment"] > TOL for w in summary["winners"])  # someone pays: the story has prices
    for w in summary["winners"]:
        lo, hi = w["interval"]
        assert lo - TOL <= w["payment"] <= hi + TOL
    assert _payment_violations(instance, summary["winners"], summary["payments"], _exact_method()) == []
    policies = [r["policy"] for r in summary["simulation"]]
    assert {"market", "finish-time-fair", "fcfs-packing"} <= set(policies)


def test_the_payment_check_fails_on_wrong_payments(demo: Path) -> None:
    summary = json.loads((demo / "summary.json").read_text())
    instance = read_instance(demo / "instance.json")
    payer = next(w for w in summary["winners"] if w["payment"] > TOL)
    over = dict(summary["payments"], **{payer["job"]: payer["value"] + 1.0})
    assert any("outside" in v for v in _payment_violations(instance, summary["winners"], over, _exact_method()))
    off = dict(summary["payments"], **{payer["job"]: payer["payment"] * 0.9})
    assert any("Clarke" in v for v in _payment_violations(instance, summary["winners"], off, _exact_method()))
    loser = summary["losers"][0]
    charged = dict(summary["payments"], **{loser: 1.0})
    assert any("loser" in v for v in _payment_violations(instance, summary["winners"], charged, _exact_method()))


def test_demo_with_critical_values(tmp_path: Path) -> None:
    out = tmp_path / "gc"
    assert main(["demo", "--out", str(out), "--mechanism", "greedy-critical"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["round"]["mechanism"] == "greedy-critical"
    for w in summary["winners"]:
        assert -TOL <= w["payment"] <= w["value"] + TOL


@pytest.mark.parametrize(("args", "message"), [
    (["--time-limit", "0"], "--time-limit"),
    (["--mechanism", "pay-as-bid"], "--mechanism must be vcg or greedy-critical"),
])
def test_demo_bad_options_exit_2_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   args: list[str], message: str) -> None:
    out = tmp_path / "out"
    assert main(["demo", "--out", str(out), *args]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_demo_out_on_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["demo", "--out", str(blocker)]) == 2
    assert "--out" in capsys.readouterr().err and blocker.read_text() == "x"
