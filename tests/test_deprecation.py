"""``method=`` is the solver everywhere; ``solver=`` is a deprecated alias for one release
(:mod:`gensolver._deprecation`) on :func:`~gensolver.mechanisms.run_mechanism`, every mechanism
function, the helpers :func:`~gensolver.mechanisms.vcg.pivot_welfare` and
:func:`~gensolver.mechanisms.core.separate`, and the regret front ends of
:mod:`gensolver.verify`; a user mechanism written to the old contract (its parameter named
``solver``) still runs, with a warning (:func:`~gensolver.mechanisms.call_mechanism`)."""

from __future__ import annotations

import inspect
import warnings

import pytest

from gensolver import GensolverDeprecationWarning, from_dict
from gensolver.errors import InputError
from gensolver.mechanisms import MECHANISMS, Mechanism, run_mechanism
from gensolver.mechanisms.core import separate
from gensolver.mechanisms.vcg import pivot_welfare
from gensolver.verify import expected_regret, max_expected_regret, max_regret, regret

INST = from_dict({"schema": "gensolver.instance/v1",
                  "slots": [{"id": "s", "capacity": {"units": 1}}],
                  "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"units": 1}}},
                           {"id": "b", "bidder": "B", "value": 3, "demand": {"s": {"units": 1}}}]})

#: what A (the winner of the one unit, bid 5 against B's 3) pays under each mechanism, worked
#: out by hand: second price for the truthful ones (and the core: B's 3 blocks below it), its
#: bid for pay-as-bid; the method each runs on (lavi-swamy's oracle is greedy or auto)
PAID_BY_A = {"vcg": (3.0, "cpsat"), "greedy-critical": (3.0, "greedy"), "pay-as-bid": (5.0, "cpsat"),
             "core": (3.0, "cpsat"), "lavi-swamy": (3.0, "greedy")}


def _used_method(**kwargs: object) -> str:
    seen: list[object] = []

    def mech(instance, *, method, time_limit, executor, options):  # type: ignore[no-untyped-def]
        seen.append(method)
        return run_mechanism(instance, mechanism="pay-as-bid", method="greedy")

    run_mechanism(INST, mechanism=mech, **kwargs)  # type: ignore[arg-type]
    return str(seen[0])


def test_method_is_passed_to_the_mechanism_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _used_method(method="cpsat") == "cpsat"
        assert _used_method() == "auto"


def test_solver_still_works_and_warns() -> None:
    with pytest.warns(GensolverDeprecationWarning, match="run_mechanism: solver= is deprecated; use method="):
        assert _used_method(solver="cpsat") == "cpsat"
    with pytest.warns(GensolverDeprecationWarning):  # the same value twice is not a conflict
        assert _used_method(method="cpsat", solver="cpsat") == "cpsat"


def test_both_names_with_different_values_are_refused() -> None:
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(InputError, match="give method= only"):
        _used_method(method="greedy", solver="cpsat")


@pytest.mark.parametrize("name", sorted(PAID_BY_A))
def test_every_mechanism_function_takes_method_and_warns_on_solver(name: str) -> None:
    paid, method = PAID_BY_A[name]
    fn = MECHANISMS.get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = fn(INST, method=method, time_limit=None, executor=None, options=None)
    with pytest.warns(GensolverDeprecationWarning, match=f"{fn.__name__}: solver= is deprecated; use method="):
        old = fn(INST, solver=method, time_limit=None, executor=None, options=None)  # type: ignore[call-arg]
    for out in (new, old):
        assert dict(out.payments) == pytest.approx({"A": paid, "B": 0.0})
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(InputError, match="give method= only"):
        fn(INST, method="lp", solver=method, time_limit=None, executor=None, options=None)  # type: ignore[call-arg]


def test_the_registered_mechanisms_have_the_protocol_signature() -> None:
    wanted = [p for p in inspect.signature(Mechanism.__call__).parameters if p != "self"]
    for name in MECHANISMS:
        params = list(inspect.signature(MECHANISMS.get(name)).parameters)
        assert params[:len(wanted)] == wanted, name
        assert params[len(wanted):] == ["solver"], name  # the deprecated alias, last


def test_the_pivot_and_separation_helpers_take_method_and_warn_on_solver() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # without A, B's 3 is the best welfare (the pivot); with A winning at 3, no coalition blocks
        assert pivot_welfare(INST.without_bidder("A"), method="cpsat", time_limit=None, threads=1,
                             hint=None).welfare == pytest.approx(3.0)
        won = {"A": INST.bids[0]}
        assert separate(INST, won, {"A": 3.0}, method="cpsat").z == pytest.approx(3.0)
    with pytest.warns(GensolverDeprecationWarning, match="pivot_welfare: solver= is deprecated"):
        assert pivot_welfare(INST.without_bidder("A"), solver="cpsat", time_limit=None, threads=1,
                             hint=None).welfare == pytest.approx(3.0)
    with pytest.warns(GensolverDeprecationWarning, match="separate: solver= is deprecated"):
        # at A paying 1, B's coalition (3) beats the revenue: the separation finds it
        assert separate(INST, won, {"A": 1.0}, solver="cpsat").coalition == ("B",)


def test_a_user_mechanism_that_names_the_method_solver_still_runs_and_warns() -> None:
    seen: list[object] = []

    def old_style(instance, *, solver, time_limit, executor, options):  # type: ignore[no-untyped-def]
        seen.append(solver)
        return run_mechanism(instance, mechanism="vcg", method=solver)

    with pytest.warns(GensolverDeprecationWarning, match="mechanism old_style: name its parameter method="):
        out = run_mechanism(INST, mechanism=old_style, method="cpsat")  # type: ignore[arg-type]
    assert seen == ["cpsat"] and dict(out.payments) == pytest.approx({"A": 3.0, "B": 0.0})
    with pytest.warns(GensolverDeprecationWarning, match="mechanism old_style"):
        assert regret(old_style, INST, "B", method="cpsat").regret <= 1e-9
    assert set(seen) == {"cpsat"}


def test_a_mechanism_with_keyword_catch_all_gets_method() -> None:
    seen: list[dict[str, object]] = []

    def catch_all(instance, **kw):  # type: ignore[no-untyped-def]
        seen.append(kw)
        return run_mechanism(instance, mechanism="pay-as-bid", method="greedy")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_mechanism(INST, mechanism=catch_all, method="greedy")  # type: ignore[arg-type]
    assert seen[0]["method"] == "greedy" and "solver" not in seen[0]


def test_regret_front_ends_take_method_and_warn_on_solver() -> None:
    # VCG with an exact method is truthful: no misreport gains (an independent fact, not a re-run)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert regret("vcg", INST, "A", method="cpsat").regret <= 1e-9
    with pytest.warns(GensolverDeprecationWarning, match="max_regret: solver= is deprecated"):
        assert max_regret("vcg", INST, solver="cpsat").regret <= 1e-9
    # pay-as-bid is not truthful: A gains by shading its bid towards B's 3
    with pytest.warns(GensolverDeprecationWarning, match="^expected_regret: solver= is deprecated"):
        assert expected_regret("pay-as-bid", INST, "A", solver="cpsat").regret > 0.5
    with pytest.warns(GensolverDeprecationWarning, match="^max_expected_regret: solver= is deprecated"):
        assert max_expected_regret("pay-as-bid", INST, solver="cpsat").regret > 0.5


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


def test_the_credit_engine_takes_method_and_warns_on_solver() -> None:
    from gensolver.market.engine import CreditEngine

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert CreditEngine().method == "greedy" and CreditEngine(method="lp").method == "lp"
    with pytest.warns(GensolverDeprecationWarning, match="CreditEngine: solver= is deprecated; use method="):
        assert CreditEngine(solver="lp").method == "lp"
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(InputError, match="give method= only"):
        CreditEngine(method="lp", solver="auto", budget=1.0)


def test_autos_sub_method_option_and_its_deprecated_alias() -> None:
    from gensolver import solve

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert solve(INST, method="auto", options={"sub_method": "cpsat"}).winners == ("a",)
    with pytest.warns(GensolverDeprecationWarning, match="option sub_solver is deprecated; use sub_method"):
        assert solve(INST, method="auto", options={"sub_solver": "cpsat"}).winners == ("a",)
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(InputError, match="give option sub_method only"):
        solve(INST, method="auto", options={"sub_solver": "cpsat", "sub_method": "scip"})


def test_pivot_records_name_their_settlement_how_and_keep_the_old_names_one_release() -> None:
    """:func:`pivot_welfare` returns the frozen :class:`~gensolver.mechanisms.pivots.PivotResult`;
    the keys of the dict it returned and ``PivotResult.method`` still read, with a warning."""
    import pickle

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = pivot_welfare(INST.without_bidder("A"), method="cpsat", time_limit=None, threads=1, hint=None)
        assert (r.status.value, r.welfare, r.bound, r.winners) == ("optimal", 3.0, 3.0, ("b",))
        assert pickle.loads(pickle.dumps(r)) == r  # what a worker process sends back
    with pytest.warns(GensolverDeprecationWarning, match=r"PivotResult: \['message'\] is deprecated; use \.how"):
        assert r["message"] == r.how
    with pytest.warns(GensolverDeprecationWarning, match=r"PivotResult: \['status'\] is deprecated"):
        assert r["status"] == "optimal" and type(r["status"]) is str
    with pytest.warns(GensolverDeprecationWarning):
        assert (r["welfare"], r["bound"], r["winners"]) == (3.0, 3.0, ["b"])
    with pytest.raises(KeyError):
        r["how"]  # new names are attributes only
    with pytest.warns(GensolverDeprecationWarning, match="PivotResult: method is deprecated; use how"):
        assert r.method == r.how


def test_market_config_method_and_its_deprecated_alias_solver() -> None:
    """The deprecated auction's method is ``MarketConfig.method``; ``solver`` (keyword,
    attribute, ``Market`` option, ``Market.clear`` override, service setting) warns and is used."""
    import dataclasses

    from gensolver.market import Candidate, Market, MarketConfig
    from gensolver.model.tasks import GpuSpec, Task
    from gensolver.service.settings import Settings

    gpus = [GpuSpec("g0", 16.0, 1.0, "n0")]
    cands = [Candidate(Task("a", 8.0, 8.0, 4, value=3.2, tenant="a"), 4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = MarketConfig(engine="auction", method="greedy")
        # the round runs on the configured method, not on the default "auto"
        assert MarketConfig().method == "auto" and Market(new).clear(0, gpus=gpus, candidates=cands).method == "greedy"
        assert Market(method="lp").config.method == "lp"
        assert Market(new).clear(0, gpus=gpus, candidates=cands, method="lp").method == "lp"
        assert dataclasses.replace(new, lease=3).method == "greedy"  # no warning from replace()
        assert Settings(market={"engine": "auction", "method": "greedy"}).market_config().method == "greedy"
    with pytest.warns(GensolverDeprecationWarning, match="MarketConfig: solver= is deprecated; use method="):
        old = MarketConfig(engine="auction", solver="greedy")  # type: ignore[call-arg]
    assert old == new
    with pytest.warns(GensolverDeprecationWarning, match="MarketConfig: solver is deprecated; use method"):
        assert old.solver == "greedy"
    with pytest.warns(GensolverDeprecationWarning, match="Market: option solver is deprecated; use method"):
        assert Market(solver="lp").config.method == "lp"
    with pytest.warns(GensolverDeprecationWarning, match="Market.clear: solver= is deprecated; use method="):
        assert Market(new).clear(0, gpus=gpus, candidates=cands, solver="lp").method == "lp"
    with pytest.warns(GensolverDeprecationWarning, match="market: option solver is deprecated; use method"):
        settings = Settings(market={"engine": "auction", "solver": "greedy"})
    assert settings.market == {"engine": "auction", "method": "greedy"} and settings.market_config() == new
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(InputError, match="give method= only"):
        MarketConfig(method="lp", solver="greedy")  # type: ignore[call-arg]


def _recording(seen: list[object]):  # type: ignore[no-untyped-def]
    """A mechanism that records the ``time_limit`` of each of its runs and clears by pay-as-bid."""
    def mech(instance, *, method, time_limit, executor, options):  # type: ignore[no-untyped-def]
        seen.append(time_limit)
        return run_mechanism(instance, mechanism="pay-as-bid", method="greedy")

    return mech


#: the regret front ends, each on INST with the scale family only
REGRET_FRONTS = {
    "regret": lambda m, **kw: regret(m, INST, "A", families=("scale",), **kw),
    "max_regret": lambda m, **kw: max_regret(m, INST, families=("scale",), **kw),
    "expected_regret": lambda m, **kw: expected_regret(m, INST, "A", families=("scale",), **kw),
    "max_expected_regret": lambda m, **kw: max_expected_regret(m, INST, families=("scale",), **kw),
}


@pytest.mark.parametrize("name", list(REGRET_FRONTS))
def test_per_run_limit_is_every_runs_time_limit_and_time_limit_its_deprecated_alias(name: str) -> None:
    from gensolver.verify import DEFAULT_FACTORS

    call = REGRET_FRONTS[name]
    new: list[object] = []
    old: list[object] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_new = call(_recording(new), per_run_limit=7.0)
    with pytest.warns(GensolverDeprecationWarning, match=f"^{name}: time_limit= is deprecated; use per_run_limit="):
        by_old = call(_recording(old), time_limit=7.0)
    # the truthful run and one run per misreport, each with the limit (both bidders for max_*)
    runs = 1 + len(DEFAULT_FACTORS) * (2 if name.startswith("max") else 1)
    assert new == old == [7.0] * runs
    # pay-as-bid, worked out by hand: A (value 5) shades by 0.8 to 4, still beats B's 3, pays 4
    assert by_new.regret == by_old.regret == max(5 - 5 * f for f in DEFAULT_FACTORS if 5 * f > 3) == 1.0
    if name.startswith("max"):
        assert {b: r.regret for b, r in by_new.per_bidder.items()} == \
            {b: r.regret for b, r in by_old.per_bidder.items()} == {"A": 1.0, "B": 0.0}
    with pytest.warns(GensolverDeprecationWarning), \
            pytest.raises(ValueError, match=f"^{name}: give per_run_limit= only .* per_run_limit=7.0 and time_limit=3.0"):
        call(_recording([]), per_run_limit=7.0, time_limit=3.0)
    with pytest.warns(GensolverDeprecationWarning):  # the same value under both names is that value
        assert call(_recording([]), per_run_limit=7.0, time_limit=7.0).regret == 1.0


def test_assert_truthful_takes_per_run_limit_and_warns_on_time_limit() -> None:
    from gensolver.testing import assert_truthful

    def vcg_recording(seen: list[object]):  # type: ignore[no-untyped-def]
        def mech(instance, *, method, time_limit, executor, options):  # type: ignore[no-untyped-def]
            seen.append(time_limit)
            return run_mechanism(instance, mechanism="vcg", method="cpsat")
        return mech

    new: list[object] = []
    old: list[object] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_truthful(vcg_recording(new), INST, per_run_limit=7.0)
    with pytest.warns(GensolverDeprecationWarning, match="^assert_truthful: time_limit= is deprecated; use per_run_limit="):
        assert_truthful(vcg_recording(old), INST, time_limit=7.0)
    # the truthful run and every misreport of both bidders, each with the limit
    assert len(new) > 2 and new == old == [7.0] * len(new)
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(ValueError, match="give per_run_limit= only"):
        assert_truthful(vcg_recording([]), INST, per_run_limit=7.0, time_limit=3.0)


def test_max_regret_with_a_real_budget_is_the_same_under_both_names() -> None:
    # VCG with an exact method is truthful (regret 0); pay-as-bid's is the hand-worked 1.0 above
    for mechanism, expected in (("vcg", 0.0), ("pay-as-bid", 1.0)):
        by_new = max_regret(mechanism, INST, method="cpsat", per_run_limit=5.0)
        with pytest.warns(GensolverDeprecationWarning, match="max_regret: time_limit= is deprecated"):
            by_old = max_regret(mechanism, INST, method="cpsat", time_limit=5.0)
        regrets = {b: r.regret for b, r in by_new.per_bidder.items()}
        assert regrets == {b: r.regret for b, r in by_old.per_bidder.items()}
        assert by_new.regret == by_old.regret and abs(by_new.regret - expected) <= 1e-9
    with pytest.raises(InputError, match="per_run_limit must be a positive"):
        max_regret("vcg", INST, per_run_limit=0.0)


def test_the_nash_checks_take_per_run_limit_and_warn_on_time_limit() -> None:
    from gensolver.verify import best_response_dynamics, is_nash_equilibrium

    profile, space = {"A": 1.0, "B": 1.0}, [0.8, 1.0]
    new: list[object] = []
    old: list[object] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_new = is_nash_equilibrium(_recording(new), INST, profile, space, per_run_limit=7.0)
    with pytest.warns(GensolverDeprecationWarning, match="^is_nash_equilibrium: time_limit= is deprecated"):
        by_old = is_nash_equilibrium(_recording(old), INST, profile, space, time_limit=7.0)
    # truthful pay-as-bid is no equilibrium: A gains 1 by shading to 0.8 (4 still beats 3)
    assert by_new == by_old and not by_new.is_equilibrium
    assert [(d.bidder, d.to, d.gain) for d in by_new.deviations] == [("A", 0.8, 1.0)]
    assert new == old and len(new) > 1 and set(new) == {7.0}
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(ValueError, match="give per_run_limit= only"):
        is_nash_equilibrium(_recording([]), INST, profile, space, per_run_limit=7.0, time_limit=3.0)
    new.clear()
    old.clear()
    dyn_new = best_response_dynamics(_recording(new), INST, space, per_run_limit=7.0)
    with pytest.warns(GensolverDeprecationWarning, match="^best_response_dynamics: time_limit= is deprecated"):
        dyn_old = best_response_dynamics(_recording(old), INST, space, time_limit=7.0)
    assert dyn_new == dyn_old and new == old and len(new) > 1 and set(new) == {7.0}
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(ValueError, match="give per_run_limit= only"):
        best_response_dynamics(_recording([]), INST, space, per_run_limit=7.0, time_limit=3.0)
