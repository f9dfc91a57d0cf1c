"""``solve -t 5`` on 2 bids over 100,000 slots took 42 s: the work of solving a few bids must grow
linearly with the number of slots listed (reading and checking them), never faster. Counted in Python
function calls (``sys.setprofile``), not seconds, so the machine's speed does not matter."""

from __future__ import annotations

import sys

import pytest

from gensolver import solve
from gensolver.model import Bid, Instance, Slot


def two_bids(n: int) -> Instance:
    slots = tuple(Slot(f"s{i}", {"mem": 1.0}) for i in range(n))
    bids = (Bid("a", "x", 1.0, {"s0": {"mem": 1.0}}), Bid("b", "y", 2.0, {f"s{n - 1}": {"mem": 1.0}}))
    return Instance(slots, bids)


def calls(inst: Instance, method: str) -> int:
    count = 0

    def prof(frame, event, arg):  # type: ignore[no-untyped-def]
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(prof)
    try:
        alloc = solve(inst, method=method, time_limit=30)
    finally:
        sys.setprofile(None)
    # both bids win (disjoint slots): checked against the instance, not the solver
    assert set(alloc.winners) == {"a", "b"}
    return count


@pytest.mark.parametrize("method", ["greedy", "auto"])
def test_solving_two_bids_is_linear_in_the_slot_count(method: str) -> None:
    small, large = calls(two_bids(1000), method), calls(two_bids(8000), method)
    # 8x the slots: at most ~8x the calls (plus a constant); a quadratic step would give ~64x
    assert large <= 8 * small * 1.25, (small, large)
