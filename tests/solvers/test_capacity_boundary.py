"""One answer at the capacity boundary from every registered method and every mechanism.

The instances sit on the format's ``1e-9`` boundary, where sums in different orders, integer
scalings and backend tolerances used to disagree (three bids of compute ``0.666666667`` on a
slot of capacity ``2.0``). The expected optimum comes from an enumeration in exact rational
arithmetic over the instance's numbers, independent of gensolver.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from gensolver.mechanisms import MECHANISMS, run_mechanism
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.solvers import Status, get_method, list_methods, solve
from gensolver.verify import check_allocation


def _rule(demands: list[float], cap: float) -> bool:
    return float(sum(map(Fraction, demands), Fraction(0))) <= cap + (1e-9 + 1e-12 * abs(cap))


def rational_optimum(inst: Instance) -> float:
    """Best welfare over all subsets of single-bid bidders (the instances here have one bid each)."""
    best = 0.0
    bids = inst.bids
    caps = {(s.id, r): q for s in inst.slots for r, q in s.capacity.items()}
    for k in range(len(bids) + 1):
        for sub in itertools.combinations(bids, k):
            rows: dict[tuple[str, str], list[float]] = {}
            for b in sub:
                for s, res in b.demand.items():
                    for r, q in res.items():
                        rows.setdefault((s, r), []).append(q)
            if all(_rule(d, caps[key]) for key, d in rows.items()):
                best = max(best, sum(b.value for b in sub))
    return best


def _inst(demands: list[float], cap: float, extra: dict[str, float] | None = None) -> Instance:
    slot_cap = {"compute": cap, "memory": 10.0}
    bids = tuple(Bid(f"b{k}", f"B{k}", 3.0 + k, {"s": {"compute": d, "memory": 1.0}}) for k, d in enumerate(demands))
    return Instance((Slot("s", slot_cap),), bids)


BOUNDARY = {
    "issue-case": _inst([0.666666667] * 3, 2.0),          # fits: 2 + 1e-9
    "just-over": _inst([0.6666666677] * 3, 2.0),          # 3.1e-9 over: two of three
    "halves": _inst([0.5000000005, 0.5000000005, 0.4], 1.0),
    "bytes": _inst([8e10 / 3] * 3, 8e10),                  # round-off of 8e10 is far above 1e-9
    "byte-over": _inst([26666666667.0] * 3, 8e10),
}
METHODS = [m.name for m in list_methods(only_available=True)]


@pytest.mark.parametrize("name", sorted(BOUNDARY))
def test_every_method_gives_the_rational_optimum(name: str) -> None:
    inst = BOUNDARY[name]
    want = rational_optimum(inst)
    answers = {}
    for method in METHODS:
        if not get_method(method).available()[0]:
            continue  # 'highs' once PuLP has loaded its own HiGHS in this process
        res = solve(inst, method=method, threads=1)
        assert res.status in (Status.OPTIMAL, Status.FEASIBLE), (method, res.status, res.message)
        assert check_allocation(inst, res.winners).feasible
        answers[method] = (round(res.welfare, 9), tuple(sorted(res.winners)))
    assert {"auto", "cpsat", "greedy", "lp"} <= set(answers)
    assert {w for w, _ in answers.values()} == {round(want, 9)}, answers


@pytest.mark.parametrize("mechanism", MECHANISMS.names())
def test_every_mechanism_allocates_at_the_boundary(mechanism: str) -> None:
    inst = BOUNDARY["issue-case"]
    out = run_mechanism(inst, mechanism=mechanism, method="greedy" if mechanism == "lavi-swamy" else "auto")
    assert out.allocation.status in (Status.OPTIMAL, Status.FEASIBLE), out.message
    assert out.allocation.welfare == pytest.approx(rational_optimum(inst))
    assert "error" not in out.message


def test_cli_exit_status_is_never_0_on_an_error(tmp_path, monkeypatch, capsys) -> None:
    """A solve ending with status ``error`` prints its answer and exits 1."""
    import json

    from gensolver.cli import main, solve_cmd
    from gensolver.model import write_instance
    from gensolver.solvers.result import finish

    path = tmp_path / "round.json"
    write_instance(BOUNDARY["issue-case"], path)
    assert main(["solve", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["welfare"] == 12.0

    def broken(instance, **_):
        return finish(instance, None, method="broken", proven_optimal=False, bound=None, build=0.0, solve=0.0,
                      status=Status.ERROR, message="backend failed")

    monkeypatch.setattr(solve_cmd, "solve", broken)
    assert main(["solve", str(path), "--json"]) == solve_cmd.EXIT_SOLVE_ERROR == 1
    assert json.loads(capsys.readouterr().out)["status"] == "error"
    assert main(["solve", str(path)]) == 1
