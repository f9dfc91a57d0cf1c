"""The capabilities a method declares on its registry entry (:class:`gensolver.solvers.Method`:
``hints``, ``threads``, ``deterministic``) hold, and callers read them from the entry."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gensolver import from_dict
from gensolver.errors import InputError
from gensolver.mechanisms.common import solve_wdp
from gensolver.solvers import Method, list_methods, register, solve
from gensolver.solvers.registry import METHODS
from gensolver.solvers.result import finish

INSTANCE = from_dict({"schema": "gensolver.instance/v1",
                      "slots": [{"id": "s", "capacity": {"units": 2}}],
                      "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"units": 1}}},
                               {"id": "b", "bidder": "B", "value": 3, "demand": {"s": {"units": 1}}},
                               {"id": "c", "bidder": "C", "value": 4, "demand": {"s": {"units": 2}}}]})

AVAILABLE = [m.name for m in list_methods(only_available=True)]


@pytest.mark.parametrize("name", AVAILABLE)
def test_a_method_takes_a_hint_exactly_when_it_declares_hints(name: str) -> None:
    method = METHODS.get(name)
    if method.hints:
        res = solve(INSTANCE, method=name, threads=1, options={"hint": ["c"]})
        assert sorted(res.winners) == ["a", "b"]  # optimal (8 > 4) whatever the warm start
    else:
        with pytest.raises(InputError, match="does not take option"):
            solve(INSTANCE, method=name, threads=1, options={"hint": ["c"]})


@pytest.mark.parametrize("name", [n for n in AVAILABLE if METHODS.get(n).deterministic])
def test_a_deterministic_method_repeats_its_answer(name: str) -> None:
    runs = {(tuple(r.winners), r.welfare, r.bound) for r in (solve(INSTANCE, method=name) for _ in range(3))}
    assert len(runs) == 1


def test_solve_wdp_passes_hints_by_the_entry_not_by_name() -> None:
    seen: list[dict[str, Any]] = []

    def recording(instance: Any, *, time_limit: Any, threads: Any, seed: Any, options: dict[str, Any]) -> Any:
        seen.append(dict(options))
        return finish(instance, np.zeros(instance.n_bids), method="recording", proven_optimal=False, bound=None,
                      build=0.0, solve=0.0)

    for name, hints in (("test-recording-hints", True), ("test-recording-plain", False)):
        register(Method(name, recording, False, (), "records its options", hints=hints))
        try:
            solve_wdp(INSTANCE, method=name, time_limit=None, hint=["a"])
        finally:
            METHODS.unregister(name)
    assert seen == [{"hint": ["a"]}, {}]
