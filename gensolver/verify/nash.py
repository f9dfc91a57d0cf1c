"""The bidding game of a mechanism: Nash equilibria and best-response dynamics.

Strategies are **bid multipliers**: a bidder playing ``f`` reports every one of its bids at
``f`` times its true value (``f = 1`` is truthful, ``f < 1`` shading, ``f > 1`` overbidding).
A strategy space is a finite sequence of multipliers (the same for everyone) or a mapping
from bidder to its own sequence. The mechanism runs on the reports; utilities are measured
under the true values of the instance (free disposal, see :mod:`gensolver.verify.regret`).

References
----------
Nisan, Roughgarden, Tardos & Vazirani (eds.), *Algorithmic Game Theory*, CUP 2007, ch. 1
(pure Nash equilibria) and ch. 17-19 (best-response dynamics, price of anarchy).
Koutsoupias & Papadimitriou, "Worst-case equilibria", STACS 1999 (price of anarchy).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._deprecation import NOT_GIVEN, keyword_alias, method_alias
from ..errors import InputError
from ..model import Bid, Instance, coerce_instance
from ..model.validate import mark_validated
from .regret import _runner, true_utility

__all__ = ["Deviation", "NashCheck", "Dynamics", "report", "is_nash_equilibrium", "best_response_dynamics"]


@dataclass(frozen=True)
class Deviation:
    """A profitable unilateral deviation: ``bidder`` gains ``gain`` by playing ``to``."""

    bidder: str
    current: float
    to: float
    gain: float


@dataclass(frozen=True)
class NashCheck:
    """Result of :func:`is_nash_equilibrium` (truthy when it is one)."""

    is_equilibrium: bool
    deviations: tuple[Deviation, ...]
    utilities: Mapping[str, float]

    def __bool__(self) -> bool:
        return self.is_equilibrium


@dataclass(frozen=True)
class Dynamics:
    """Result of :func:`best_response_dynamics`.

    Attributes
    ----------
    converged : bool
        A full round without any profitable move: ``profile`` is a pure Nash equilibrium
        (within the strategy space).
    cycle : bool
        A profile repeated at the end of a round: the dynamics cycle (no convergence).
    profile : Mapping[str, float]
        The last profile.
    rounds : int
    welfare : float
        True welfare (true values of the winning bids) at ``profile``.
    optimal_welfare : float
        Optimal welfare of the true instance (the truthful optimum).
    price_of_anarchy : float
        ``optimal_welfare / welfare`` (1 when both are 0, ``inf`` when only ``welfare`` is).
    history : tuple of (str, float, float, float)
        Every move: ``(bidder, from, to, gain)``.
    """

    converged: bool
    cycle: bool
    profile: Mapping[str, float]
    rounds: int
    welfare: float
    optimal_welfare: float
    price_of_anarchy: float
    history: tuple[tuple[str, float, float, float], ...]


def report(instance: Instance, profile: Mapping[str, float]) -> Instance:
    """The reported instance: each bidder's bids times its multiplier (default 1)."""
    bids = [Bid(b.id, b.bidder, b.value * float(profile.get(b.bidder, 1.0)), b.demand) for b in instance.bids]
    return mark_validated(instance.replace_bids(bids))


def _space(strategy_space: Sequence[float] | Mapping[str, Sequence[float]], bidder: str) -> list[float]:
    if isinstance(strategy_space, Mapping):
        return [float(f) for f in strategy_space.get(bidder, (1.0,))]
    return [float(f) for f in strategy_space]


def _multipliers(values: Any, name: str) -> list[float]:
    """Bid multipliers: a sequence of finite numbers ``>= 0`` (``ValueError`` naming ``name``)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InputError(f"{name} must be a sequence of multipliers, got {values!r}")
    out = []
    for f in values:
        if isinstance(f, bool) or not isinstance(f, numbers.Real) or not math.isfinite(f) or f < 0:
            raise InputError(f"{name}: multipliers must be finite numbers >= 0, got {f!r}")
        out.append(float(f))
    return out


_MECHANISM_KWARGS = ("method", "per_run_limit", "executor", "options", "solver", "time_limit")


def _method(kwargs: Mapping[str, Any], where: str) -> Any:
    """The mechanism's ``method`` (``solver`` is its deprecated alias, as in :func:`regret`)."""
    return method_alias(kwargs.get("method", "auto"), kwargs.get("solver"), where=where)


def _limit(kwargs: dict[str, Any], where: str) -> None:
    """Put in ``kwargs["per_run_limit"]`` the ``time_limit`` of every run of the mechanism, from
    ``per_run_limit`` or its deprecated alias ``time_limit`` (a warning; both differing raise)."""
    kwargs["per_run_limit"] = keyword_alias(kwargs.get("per_run_limit"), kwargs.pop("time_limit", NOT_GIVEN),
                                            old="time_limit", new="per_run_limit", where=where, default=None)


def _check_game(instance: Instance, profile: Any, strategy_space: Any, kwargs: Mapping[str, Any],
                tol: Any) -> None:
    """Every argument of the game, before any mechanism runs."""
    from .certificates import check_tolerance

    unknown = sorted(set(kwargs) - set(_MECHANISM_KWARGS))
    if unknown:
        raise InputError(f"unknown keyword argument(s) {unknown}; the mechanism takes {list(_MECHANISM_KWARGS)}")
    check_tolerance(tol)
    bidders = set(instance.bidder_ids)
    if profile is not None:
        if not isinstance(profile, Mapping):
            raise InputError(f"strategy profile must be a mapping bidder -> multiplier, got {profile!r}")
        stray = sorted(set(profile) - bidders)
        if stray:
            raise InputError(f"strategy profile names unknown bidder(s) {stray}")
        _multipliers(profile.values(), "strategy profile")
    if isinstance(strategy_space, Mapping):
        stray = sorted(set(strategy_space) - bidders)
        if stray:
            raise InputError(f"strategy_space names unknown bidder(s) {stray}")
        for b, space in strategy_space.items():
            _multipliers(space, f"strategy_space[{b!r}]")
    else:
        _multipliers(strategy_space, "strategy_space")


class _Game:
    def __init__(self, mechanism: Any, instance: Instance, kwargs: Mapping[str, Any]) -> None:
        self.instance = instance
        self.run = _runner(mechanism, _method(kwargs, "the Nash check"), kwargs.get("per_run_limit"),
                           kwargs.get("executor"), kwargs.get("options"))
        self.cache: dict[tuple[float, ...], tuple[dict[str, float], float]] = {}

    def play(self, profile: Mapping[str, float]) -> tuple[dict[str, float], float]:
        key = tuple(float(profile.get(b, 1.0)) for b in self.instance.bidder_ids)
        if key not in self.cache:
            rep = report(self.instance, profile)
            out = self.run(rep)
            util = {b: true_utility(self.instance, b, rep, out) for b in self.instance.bidder_ids}
            welfare = self.instance.welfare_of(out.allocation.winners)
            self.cache[key] = (util, welfare)
        return self.cache[key]

    def best_response(self, profile: Mapping[str, float], bidder: str, space: list[float],
                      tol: float) -> tuple[float, float]:
        cur = float(profile.get(bidder, 1.0))
        u_cur = self.play(profile)[0][bidder]
        best, best_u = cur, u_cur
        for f in space:
            u = self.play({**profile, bidder: f})[0][bidder]
            if u > best_u + tol:
                best, best_u = f, u
        return best, best_u - u_cur


def is_nash_equilibrium(
    mechanism: str | Callable[..., Any],
    instance: Instance,
    strategy_profile: Mapping[str, float],
    strategy_space: Sequence[float] | Mapping[str, Sequence[float]],
    *,
    tol: float = 1e-9,
    **mechanism_kwargs: Any,
) -> NashCheck:
    """Whether ``strategy_profile`` is a pure Nash equilibrium of the bidding game.

    Parameters
    ----------
    mechanism : str or callable
    instance : Instance
        True values.
    strategy_profile : Mapping[str, float]
        Multiplier of every bidder (missing bidders play 1, truthful).
    strategy_space : sequence of float or mapping
        Deviations tried for every bidder.
    tol : float
        A deviation counts when it gains more than ``tol``.
    **mechanism_kwargs
        ``method`` (``solver`` is its deprecated alias), ``executor``, ``options`` for the mechanism,
        and ``per_run_limit``, the ``time_limit`` of every run of it (``time_limit`` is its
        deprecated alias).

    Returns
    -------
    NashCheck
        Every profitable deviation (the best one per bidder).
    """
    instance = coerce_instance(instance)
    if not isinstance(strategy_profile, Mapping):
        raise InputError(f"strategy profile must be a mapping bidder -> multiplier, got {strategy_profile!r}")
    _check_game(instance, strategy_profile, strategy_space, mechanism_kwargs, tol)
    _limit(mechanism_kwargs, "is_nash_equilibrium")
    game = _Game(mechanism, instance, mechanism_kwargs)
    util, _ = game.play(strategy_profile)
    devs = []
    for b in instance.bidder_ids:
        to, gain = game.best_response(strategy_profile, b, _space(strategy_space, b), tol)
        if gain > tol:
            devs.append(Deviation(b, float(strategy_profile.get(b, 1.0)), to, gain))
    return NashCheck(not devs, tuple(devs), MappingProxyType(util))


def best_response_dynamics(
    mechanism: str | Callable[..., Any],
    instance: Instance,
    strategy_space: Sequence[float] | Mapping[str, Sequence[float]],
    *,
    start: Mapping[str, float] | None = None,
    max_rounds: int = 50,
    tol: float = 1e-9,
    **mechanism_kwargs: Any,
) -> Dynamics:
    """Round-robin best-response dynamics of the bidding game.

    Bidders, in instance order, switch to a best response when it gains more than ``tol``
    (ties go to the earliest strategy in the space; a bidder already best-responding stays).
    Stops when a full round has no move (a pure Nash equilibrium), when an end-of-round
    profile repeats (a cycle), or after ``max_rounds``. The welfare reached is compared with
    the truthful optimum (empirical price of anarchy). The optimum is computed with the
    mechanism's ``method`` (default ``"auto"``) under ``per_run_limit``; use an exact one for a
    meaningful ratio. ``**mechanism_kwargs`` as in :func:`is_nash_equilibrium`.
    """
    from ..mechanisms.common import solve_wdp

    instance = coerce_instance(instance)
    _check_game(instance, start, strategy_space, mechanism_kwargs, tol)
    _limit(mechanism_kwargs, "best_response_dynamics")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, numbers.Integral) or max_rounds < 1:
        raise InputError(f"max_rounds must be a positive integer, got {max_rounds!r}")
    game = _Game(mechanism, instance, mechanism_kwargs)
    profile = {b: float((start or {}).get(b, 1.0)) for b in instance.bidder_ids}
    seen = {tuple(profile.values())}
    history: list[tuple[str, float, float, float]] = []
    converged = cycle = False
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        moved = False
        for b in instance.bidder_ids:
            to, gain = game.best_response(profile, b, _space(strategy_space, b), tol)
            if gain > tol and to != profile[b]:
                history.append((b, profile[b], to, gain))
                profile[b] = to
                moved = True
        if not moved:
            converged = True
            break
        key = tuple(profile.values())
        if key in seen:
            cycle = True
            break
        seen.add(key)
    _, welfare = game.play(profile)
    opt = solve_wdp(instance, method=_method(mechanism_kwargs, "best_response_dynamics"),
                    time_limit=mechanism_kwargs.get("per_run_limit")).welfare
    if welfare > 0:
        poa = opt / welfare
    else:
        poa = 1.0 if opt <= 0 else math.inf
    return Dynamics(converged, cycle, MappingProxyType(dict(profile)), rounds, welfare, opt, poa, tuple(history))
