"""Hypothesis strategies and assertions for property-testing mechanisms.

Use them in your own test suite::

    from hypothesis import given, settings
    from gensolver.testing import single_minded_instances, assert_truthful

    @settings(max_examples=20, deadline=None)
    @given(single_minded_instances())
    def test_my_mechanism_is_truthful(instance):
        assert_truthful(my_mechanism, instance)

``my_mechanism`` is a registry name or a callable
``f(instance, *, method, time_limit, executor, options) -> Outcome``.

The strategies draw small instances (a handful of slots, bidders and bids) so that exact
solvers and brute force stay fast; every instance they return is valid.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from hypothesis import strategies as st

from ._deprecation import NOT_GIVEN, keyword_alias, method_alias
from .model import Bid, Bidder, Instance, Slot, validate
from .verify.regret import DEFAULT_FACTORS, TRUTHFUL_FAMILIES, max_regret

__all__ = ["instances", "single_minded_instances", "gpu_round_instances", "assert_truthful"]

_VALUES = st.one_of(st.integers(1, 100).map(float), st.floats(0.5, 100.0, allow_nan=False, allow_infinity=False))


@st.composite
def instances(
    draw: Any,
    *,
    max_slots: int = 3,
    max_bidders: int = 4,
    max_bids_per_bidder: int = 2,
    single_minded: bool = False,
    divisible: bool = True,
    budgets: bool = False,
) -> Instance:
    """Small random instances.

    Parameters
    ----------
    max_slots : int
        Slots ``s0..``; each has ``units`` capacity 1 (or, with ``divisible``, a random
        capacity 1-4 of ``units`` that bids ask 1-3 of).
    max_bidders : int
    max_bids_per_bidder : int
        XOR bids per bidder (1 when ``single_minded``).
    single_minded : bool
    divisible : bool
        Allow capacities and demands other than one unit.
    budgets : bool
        Give some bidders a random budget.
    """
    n_slots = draw(st.integers(1, max_slots))
    caps = [float(draw(st.integers(1, 4))) if divisible else 1.0 for _ in range(n_slots)]
    slots = tuple(Slot(f"s{k}", {"units": caps[k]}) for k in range(n_slots))
    n_bidders = draw(st.integers(1, max_bidders))
    bids: list[Bid] = []
    bidders: list[Bidder] = []
    for i in range(n_bidders):
        n_bids = 1 if single_minded else draw(st.integers(1, max_bids_per_bidder))
        for j in range(n_bids):
            chosen = draw(st.lists(st.integers(0, n_slots - 1), min_size=1, max_size=n_slots, unique=True))
            demand = {}
            for k in sorted(chosen):
                q = float(draw(st.integers(1, min(3, int(caps[k]))))) if divisible else 1.0
                demand[f"s{k}"] = {"units": q}
            bids.append(Bid(f"b{i}_{j}", f"B{i}", draw(_VALUES), demand))
        if budgets and draw(st.booleans()):
            bidders.append(Bidder(f"B{i}", float(draw(st.integers(0, 60)))))
    return validate(Instance(slots, tuple(bids), tuple(bidders), name="hypothesis"))


def single_minded_instances(*, max_slots: int = 3, max_bidders: int = 5, divisible: bool = False) -> st.SearchStrategy[Instance]:
    """Instances with one bid per bidder (single-unit goods by default, the LOS setting)."""
    return instances(max_slots=max_slots, max_bidders=max_bidders, single_minded=True, divisible=divisible)


@st.composite
def gpu_round_instances(draw: Any, *, max_gpus: int = 2, max_steps: int = 3, max_bidders: int = 4,
                        max_bids_per_bidder: int = 2) -> Instance:
    """Small GPU rounds: slots ``g<k>t<t>`` with ``memory`` (GiB) and ``compute`` capacity.

    Each bid asks, on one GPU, for a run of consecutive time steps with the same memory
    (10-80 GiB) and compute share (0.25-1) on every step; bids of a bidder are XOR (e.g. the
    same job on another GPU or at another time).
    """
    n_gpus = draw(st.integers(1, max_gpus))
    steps = draw(st.integers(1, max_steps))
    mem_cap = float(draw(st.sampled_from([40, 80])))
    slots = tuple(
        Slot(f"g{g}t{t}", {"memory": mem_cap, "compute": 1.0}, gpu=f"gpu{g}", start=60.0 * t, end=60.0 * (t + 1))
        for g in range(n_gpus) for t in range(steps)
    )
    bids: list[Bid] = []
    for i in range(draw(st.integers(1, max_bidders))):
        for j in range(draw(st.integers(1, max_bids_per_bidder))):
            g = draw(st.integers(0, n_gpus - 1))
            start = draw(st.integers(0, steps - 1))
            length = draw(st.integers(1, steps - start))
            mem = min(mem_cap, float(draw(st.sampled_from([10, 20, 40, 80]))))
            comp = draw(st.sampled_from([0.25, 0.5, 1.0]))
            demand = {f"g{g}t{t}": {"memory": mem, "compute": comp} for t in range(start, start + length)}
            bids.append(Bid(f"job{i}_{j}", f"tenant{i}", draw(_VALUES), demand))
    return validate(Instance(slots, tuple(bids), (), name="gpu-round"))


def assert_truthful(
    mechanism: str | Callable[..., Any],
    instance: Instance,
    *,
    tol: float = 1e-6,
    families: Sequence[str] = TRUTHFUL_FAMILIES,
    factors: Sequence[float] = DEFAULT_FACTORS,
    method: str | Callable[..., Any] = "auto",
    per_run_limit: float | None = None,
    options: Any = None,
    solver: str | Callable[..., Any] | None = None,
    time_limit: Any = NOT_GIVEN,
) -> None:
    """Fail (``AssertionError``) if some bidder gains more than ``tol`` by a misreport.

    Misreports are those of :func:`gensolver.verify.misreports` in ``families`` (by default
    all but false-name bids, which truthful mechanisms like VCG do not withstand). The message
    names the bidder, its gain and the misreport. ``method`` is the solver method the mechanism
    runs on (``solver=`` is its deprecated alias); ``per_run_limit`` is the ``time_limit`` of every
    run of the mechanism, as in :func:`gensolver.verify.max_regret` (``time_limit=`` is its
    deprecated alias).
    """
    method = method_alias(method, solver, where="assert_truthful")
    per_run_limit = keyword_alias(per_run_limit, time_limit, old="time_limit", new="per_run_limit",
                                  where="assert_truthful", default=None)
    res = max_regret(mechanism, instance, families=families, factors=factors, method=method,
                     per_run_limit=per_run_limit, options=options)
    if res.regret > tol:
        w = res.worst
        assert w is not None and w.best_misreport is not None
        raise AssertionError(
            f"mechanism {res.mechanism!r} is not truthful on {instance!r}: bidder {w.bidder!r} gains "
            f"{w.regret:.9g} (utility {w.truthful_utility:.9g} -> {w.best_utility:.9g}) by "
            f"'{w.best_misreport.description}'"
        )
