"""Mechanisms: allocation plus payments, behind one front end.

:func:`run_mechanism` resolves a mechanism name through :data:`MECHANISMS` (or accepts a
callable with the same signature) and returns a frozen :class:`Outcome`.

==================  ===========================================================================
``vcg``             Vickrey–Clarke–Groves, Clarke pivot; truthful and efficient with an exact
                    solver; certified payment intervals otherwise (:mod:`.vcg`).
``greedy-critical`` LOS greedy with critical payments; truthful for single-minded bidders
                    (:mod:`.greedy_critical`).
``pay-as-bid``      First price; the non-truthful baseline (:mod:`.pay_as_bid`).
``core``            Bidder-optimal, VCG-nearest core payments (Day–Raghavan constraint
                    generation, Day–Cramton tie-break) (:mod:`.core`).
``lavi-swamy``      Lottery over integral allocations from the LP relaxation with scaled
                    fractional VCG payments; truthful in expectation (:mod:`.lavi_swamy`).
==================  ===========================================================================
"""

from __future__ import annotations

import inspect
import warnings
from concurrent.futures import Executor
from typing import Any, Callable, Mapping, Protocol

from .._deprecation import GensolverDeprecationWarning, method_alias
from ..errors import InputTypeError, UnknownNameError, check_executor, check_time_limit, extras_named
from ..model import Instance, coerce_instance
from ..model.canonical import canonical
from ..registry import Registry
from .core import core
from .greedy_critical import critical_value, greedy_critical
from .lavi_swamy import lavi_swamy
from .outcome import RESULT_SCHEMA, Outcome, inexact_reason, outcome_to_dict, result_to_dict
from .pay_as_bid import pay_as_bid
from .vcg import vcg

__all__ = [
    "Outcome",
    "outcome_to_dict",
    "result_to_dict",
    "RESULT_SCHEMA",
    "inexact_reason",
    "MECHANISMS",
    "Mechanism",
    "MechanismFn",
    "DESCRIPTIONS",
    "UnknownMechanismError",
    "run_mechanism",
    "call_mechanism",
    "get_mechanism",
    "vcg",
    "greedy_critical",
    "critical_value",
    "pay_as_bid",
    "core",
    "lavi_swamy",
]

class Mechanism(Protocol):
    """The contract of a mechanism: ``f(instance, *, method, time_limit, executor, options) -> Outcome``.

    ``instance`` holds the reported bids; ``method`` is the winner determination method (a
    registry name or a callable, see :func:`gensolver.solve`); ``time_limit`` the mechanism's
    budget; ``executor`` parallelises independent solves; ``options`` the mechanism's own
    options (unknown keys raise). Every registered mechanism has this signature, and so should
    any callable given to :func:`run_mechanism`; one that still names the method ``solver`` is
    called with ``solver=`` and a :class:`~gensolver.GensolverDeprecationWarning` (see
    :func:`call_mechanism`).
    """

    def __call__(self, instance: Instance, *, method: str | Callable[..., Any], time_limit: float | None,
                 executor: Executor | None, options: Mapping[str, Any] | None) -> Outcome: ...


#: the type of a mechanism function (:class:`Mechanism`)
MechanismFn = Mechanism


class UnknownMechanismError(UnknownNameError):
    """An unknown mechanism name; the message lists the valid ones."""


#: registry of mechanism names (``MECHANISMS.register(name, fn)`` adds one)
MECHANISMS: Registry[MechanismFn] = Registry("mechanism", error=UnknownMechanismError)
for _name, _fn in (("vcg", vcg), ("greedy-critical", greedy_critical), ("pay-as-bid", pay_as_bid), ("core", core),
                   ("lavi-swamy", lavi_swamy)):
    MECHANISMS.register(_name, _fn)


#: one line per mechanism: what it guarantees and where it is worth using (``gensolver methods``)
DESCRIPTIONS: dict[str, str] = {
    "vcg": "efficient; truthful with exact pivots, certified payment intervals on a budget; the default "
           "for GPU rounds",
    "greedy-critical": "LOS greedy with critical values; truthful for single-minded bidders, fast on any size",
    "pay-as-bid": "first price; not truthful (a baseline)",
    "core": "bidder-optimal core payments nearest VCG; not truthful, revenue and stability",
    "lavi-swamy": "lottery, truthful in expectation only with --alpha fixed before the reports; expected "
                  "welfare LP*/alpha: with --relaxation clique alpha 1.06-1.13 (87-94% of LP*) on rounds of "
                  "a few hundred bids, where it is worth using; plain LP alpha 1.4-1.6; about half the "
                  "welfare on GPU rounds of 8x16x60 and up (use vcg there)",
}


def get_mechanism(mechanism: str | MechanismFn) -> MechanismFn:
    """The mechanism function for a registry name (or the callable itself)."""
    if callable(mechanism):
        return mechanism
    if not isinstance(mechanism, str):
        raise InputTypeError(f"mechanism must be a name or a callable, got {type(mechanism).__name__}")
    return MECHANISMS.get(mechanism)


def run_mechanism(
    instance: Instance,
    *,
    mechanism: str | MechanismFn = "vcg",
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    executor: Executor | None = None,
    options: Mapping[str, Any] | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> Outcome:
    """Run a mechanism on one round: allocation and payments.

    Parameters
    ----------
    instance : Instance
        The reported bids (validated on entry).
    mechanism : str or callable, keyword-only
        A name in :data:`MECHANISMS` (``vcg``, ``greedy-critical``, ``pay-as-bid``, ``core``)
        or a callable ``f(instance, *, method, time_limit, executor, options) -> Outcome``
        (:class:`Mechanism`).
    method : str or callable
        Winner determination method (see :func:`gensolver.solve`).
    time_limit : float, optional
        The mechanism's time budget: for ``vcg`` the whole budget of the main solve and every
        pivot together (shared adaptively, see :func:`~gensolver.mechanisms.vcg.vcg`); for the
        others, seconds for each solve the mechanism makes.
    executor : concurrent.futures.Executor, optional
        Parallelises independent solves (VCG pivots) on threads, processes or a cluster.
    options : mapping, optional
        Mechanism-specific options; each mechanism's docstring lists them, unknown keys raise.
    solver : str or callable, optional
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).

    Returns
    -------
    Outcome
        Computed on the canonical form of the instance (:func:`gensolver.model.canonical.canonical`:
        slots, bids and bidders sorted by id), so allocation, payments and lottery do not
        depend on the order of the bids; winners and bidders are listed in id order.

    Raises
    ------
    UnknownMechanismError
        Unknown name (the message lists the valid ones).
    ValueError
        Bad ``time_limit`` or options.
    MissingExtraError
        The mechanism needs a package of an optional extra that is not installed (``vcg`` and
        ``core`` need OR-Tools, ``lavi-swamy`` highspy: ``pip install "gensolver[solvers]"``).

    Examples
    --------
    >>> from gensolver import from_dict
    >>> from gensolver.mechanisms import run_mechanism
    >>> inst = from_dict({"schema": "gensolver.instance/v1",
    ...     "slots": [{"id": "s", "capacity": {"units": 1}}],
    ...     "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"units": 1}}},
    ...              {"id": "b", "bidder": "B", "value": 3, "demand": {"s": {"units": 1}}}]})
    >>> dict(run_mechanism(inst, mechanism="vcg", method="cpsat").payments)
    {'A': 3.0, 'B': 0.0}
    """
    func = get_mechanism(mechanism)
    check_time_limit(time_limit)
    check_executor(executor)
    instance = canonical(coerce_instance(instance))
    method = method_alias(method, solver, where="run_mechanism")
    with extras_named(f"mechanism {mechanism!r}" if isinstance(mechanism, str) else "this mechanism"):
        return call_mechanism(func, instance, method=method, time_limit=time_limit, executor=executor,
                              options=options)


def _names_solver(func: Callable[..., Any]) -> bool:
    """Whether ``func`` takes ``solver`` but not ``method`` (a mechanism written to the old
    contract); ``**kwargs`` and signatures that cannot be read count as taking ``method``."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "solver" in params and "method" not in params and not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def call_mechanism(
    func: Callable[..., Outcome],
    instance: Instance,
    *,
    method: str | Callable[..., Any],
    time_limit: float | None,
    executor: Executor | None,
    options: Mapping[str, Any] | None,
) -> Outcome:
    """Call a mechanism function with the winner determination method under the name it takes.

    The one place the package calls a mechanism function (:func:`run_mechanism`,
    :mod:`gensolver.verify`): as ``func(instance, method=..., ...)`` (:class:`Mechanism`), or,
    for a function whose parameter is still named ``solver`` (the contract's old name, accepted
    for one release), as ``func(instance, solver=..., ...)`` with a
    :class:`~gensolver.GensolverDeprecationWarning` that names the function.

    Examples
    --------
    >>> from gensolver import from_dict
    >>> inst = from_dict({"schema": "gensolver.instance/v1",
    ...     "slots": [{"id": "s", "capacity": {"units": 1}}],
    ...     "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"units": 1}}}]})
    >>> call_mechanism(pay_as_bid, inst, method="greedy", time_limit=None, executor=None,
    ...                options=None).payments["A"]
    5.0
    """
    if _names_solver(func):
        name = getattr(func, "__name__", type(func).__name__)
        warnings.warn(f"mechanism {name}: name its parameter method= (solver= is deprecated, the same value)",
                      GensolverDeprecationWarning, stacklevel=3)
        return func(instance, solver=method, time_limit=time_limit, executor=executor, options=options)
    return func(instance, method=method, time_limit=time_limit, executor=executor, options=options)
