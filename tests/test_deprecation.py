"""``method=`` is the solver everywhere; ``solver=`` is a deprecated alias for one release
(:mod:`gensolver._deprecation`) on :func:`~gensolver.mechanisms.run_mechanism` and the regret
front ends of :mod:`gensolver.verify`."""

from __future__ import annotations

import warnings

import pytest

from gensolver import from_dict
from gensolver._deprecation import GensolverDeprecationWarning
from gensolver.errors import InputError
from gensolver.mechanisms import run_mechanism
from gensolver.verify import max_regret, regret

INST = from_dict({"schema": "gensolver.instance/v1",
                  "slots": [{"id": "s", "capacity": {"units": 1}}],
                  "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"units": 1}}},
                           {"id": "b", "bidder": "B", "value": 3, "demand": {"s": {"units": 1}}}]})


def _used_method(**kwargs: object) -> str:
    seen: list[object] = []

    def mech(instance, *, solver, time_limit, executor, options):  # type: ignore[no-untyped-def]
        seen.append(solver)
        return run_mechanism(instance, mechanism="pay-as-bid", method="greedy")

    run_mechanism(INST, mechanism=mech, **kwargs)  # type: ignore[arg-type]
    return str(seen[0])


def test_method_is_passed_to_the_mechanism_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _used_method(method="cpsat") == "cpsat"
        assert _used_method() == "auto"


def test_solver_still_works_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match="run_mechanism: solver= is deprecated; use method="):
        assert _used_method(solver="cpsat") == "cpsat"
    with pytest.warns(DeprecationWarning):  # the same value twice is not a conflict
        assert _used_method(method="cpsat", solver="cpsat") == "cpsat"


def test_both_names_with_different_values_are_refused() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(InputError, match="give method= only"):
        _used_method(method="greedy", solver="cpsat")


def test_regret_front_ends_take_method_and_warn_on_solver() -> None:
    # VCG with an exact method is truthful: no misreport gains (an independent fact, not a re-run)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert regret("vcg", INST, "A", method="cpsat").regret <= 1e-9
    with pytest.warns(DeprecationWarning, match="max_regret: solver= is deprecated"):
        assert max_regret("vcg", INST, solver="cpsat").regret <= 1e-9


def test_the_suite_turns_the_packages_deprecations_into_errors() -> None:
    """``pyproject.toml``'s ``filterwarnings`` makes a :class:`GensolverDeprecationWarning` an
    error outside ``pytest.warns``, so no test (or package code) leans on an old name, while a
    third party's plain :class:`DeprecationWarning` stays a warning."""
    with warnings.catch_warnings(record=True) as caught:  # keeps the suite's filters, records the rest
        warnings.warn("a third party's deprecation", DeprecationWarning, stacklevel=1)
        with pytest.raises(GensolverDeprecationWarning, match="solver= is deprecated"):
            _used_method(solver="cpsat")
    assert [type(w.message) for w in caught] == [DeprecationWarning]
    assert issubclass(GensolverDeprecationWarning, DeprecationWarning)
