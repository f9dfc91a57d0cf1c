"""Mechanism and market arguments are checked even where a mechanism does not use them."""

from __future__ import annotations

import pytest

from gensolver.market.market import MarketConfig
from gensolver.mechanisms import run_mechanism
from gensolver.model import Bid, Instance, Slot
from gensolver.solvers import UnknownMethodError

INST = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 5.0, {"s": {"units": 1.0}}),
                                               Bid("b", "B", 3.0, {"s": {"units": 1.0}})))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"mechanism": "greedy-critical", "method": "nope"}, UnknownMethodError, "unknown method 'nope'"),
    ({"mechanism": "greedy-critical", "time_limit": -1}, ValueError, "time_limit must be a positive"),
    ({"mechanism": "greedy-critical", "time_limit": "1"}, ValueError, "time_limit must be a positive"),
    ({"mechanism": "greedy-critical", "options": {"alpha": "x"}}, ValueError, "alpha must be a finite number"),
    ({"mechanism": "vcg", "options": {"warm_start": "no"}}, ValueError, "warm_start must be True or False"),
])
def test_bad_mechanism_arguments_are_refused(kwargs, error, message) -> None:
    """greedy-critical ignores the solver and time limit (its allocation is the greedy) but a
    typo in them was accepted silently; warm_start='no' was read as true."""
    with pytest.raises(error, match=message):
        run_mechanism(INST, **kwargs)


def test_greedy_critical_still_runs_with_good_arguments() -> None:
    out = run_mechanism(INST, mechanism="greedy-critical", method="cpsat", time_limit=1.0)
    assert out.payments == {"A": 3.0, "B": 0.0}


def test_market_config_refuses_an_unknown_method_up_front() -> None:
    """Each round used to catch the error and fall back to the greedy without a word."""
    with pytest.raises(UnknownMethodError, match="unknown method 'nope'"):
        MarketConfig(method="nope")
    with pytest.raises(ValueError, match="MarketConfig.method must be a method name"):
        MarketConfig(method=None)  # type: ignore[arg-type]
    assert MarketConfig(method="greedy").method == "greedy"


@pytest.mark.parametrize("name", ["vcg", "core", "pay_as_bid", "greedy_critical"])
def test_mechanism_functions_called_directly_check_their_input(name) -> None:
    """Called without run_mechanism, vcg(None) or vcg(doc, executor=5) used to fail with an
    AttributeError from inside; an instance document is now read like run_mechanism does."""
    import importlib

    fn = getattr(importlib.import_module(f"gensolver.mechanisms.{name}"), name)
    doc = INST.to_dict()
    assert fn(doc).payments == run_mechanism(INST, mechanism=name.replace("_", "-")).payments
    with pytest.raises(TypeError, match="instance must be an Instance or an instance document"):
        fn(None)
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor"):
        fn(INST, executor=5)
