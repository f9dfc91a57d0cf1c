"""Empirical regret of a mechanism over a finite, documented family of misreports.

The mechanism runs on *reported* bids; utilities are measured under the bidder's *true* bids
(the instance). A bidder's true value for what it is allocated is, with free disposal, the
largest value of its true bids whose whole demand fits in the allocated demand (summed over
all identities it controls), and 0 when none fits.

Misreport families (all finite; ``factors`` defaults to :data:`DEFAULT_FACTORS`)
-------------------------------------------------------------------------------
``scale``       every value of the bidder multiplied by a factor ``f`` (``f = 0``: bid nothing).
``bid``         one bid shaded or inflated by ``f`` (bidders with several bids only).
``drop``        one bid left out (bidders with several bids only).
``subset``      one bid asks for less: one slot removed from its bundle (bundles of two or
                more slots), or every amount halved; value unchanged.
``superset``    one bid asks for more: one more slot (up to three, the first that carry a
                resource the bid uses, with the bid's largest amount of it capped at the
                slot's capacity), or every amount times 1.5 (capped at capacity).
``false-name``  the bidder poses as two bidders, ``<id>~fn1`` and ``<id>~fn2``: one bid of
                two or more slots is split into two halves (slots in order), each worth half
                the value, or each worth the full value.

:data:`TRUTHFUL_FAMILIES` leaves out ``false-name``: dominant-strategy truthfulness (VCG, LOS)
does not protect against false-name bids (Yokoo, Sakurai & Matsubara 2004).

References
----------
Yokoo, Sakurai & Matsubara, "The effect of false-name bids in combinatorial auctions: new
fraud in internet auctions", Games and Economic Behavior 46(1), 2004.
Lehmann, O'Callaghan & Shoham, J. ACM 49(5), 2002 (single-minded misreports of value and bundle).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .._deprecation import NOT_GIVEN, keyword_alias, method_alias
from ..errors import InputError, check_time_limit, extras_named
from ..model import Bid, Instance, coerce_instance
from ..model.tolerances import CAPACITY_ABS_TOL
from ..model.validate import mark_validated

__all__ = [
    "FAMILIES",
    "TRUTHFUL_FAMILIES",
    "DEFAULT_FACTORS",
    "Misreport",
    "RegretResult",
    "MaxRegretResult",
    "misreports",
    "apply_misreport",
    "true_value",
    "true_utility",
    "regret",
    "max_regret",
]

FAMILIES: tuple[str, ...] = ("scale", "bid", "drop", "subset", "superset", "false-name")
TRUTHFUL_FAMILIES: tuple[str, ...] = FAMILIES[:-1]
DEFAULT_FACTORS: tuple[float, ...] = (0.0, 0.5, 0.8, 0.95, 1.05, 1.25, 1.5, 2.0)

_FIT_TOL = CAPACITY_ABS_TOL


@dataclass(frozen=True)
class Misreport:
    """One misreport of one bidder.

    Attributes
    ----------
    bidder : str
        The (true) bidder.
    family : str
        One of :data:`FAMILIES` (or a user label).
    description : str
        Human-readable, e.g. ``"scale all values by 0.5"``.
    bids : tuple of Bid
        The bids reported in place of the bidder's true bids (their ``bidder`` fields may be
        false names).
    identities : tuple of str
        Bidder ids the bidder controls in the report (itself, or its false names).
    """

    bidder: str
    family: str
    description: str
    bids: tuple[Bid, ...]
    identities: tuple[str, ...]


@dataclass(frozen=True)
class RegretResult:
    """Result of :func:`regret`.

    Attributes
    ----------
    bidder : str
    mechanism : str
    regret : float
        ``max(0, best_utility - truthful_utility)``.
    truthful_utility : float
        Utility (true values) when reporting truthfully.
    best_utility : float
        Largest utility over the misreports tried (``-inf`` when none was tried).
    best_misreport : Misreport or None
        The misreport reaching ``best_utility`` (``None`` when none was tried).
    evaluated : int
        Number of misreports tried.
    """

    bidder: str
    mechanism: str
    regret: float
    truthful_utility: float
    best_utility: float
    best_misreport: Misreport | None
    evaluated: int


@dataclass(frozen=True)
class MaxRegretResult:
    """Result of :func:`max_regret`: ``per_bidder`` results, the largest ``regret``, ``worst``."""

    mechanism: str
    regret: float
    worst: RegretResult | None
    per_bidder: Mapping[str, RegretResult]


def _scaled(bid: Bid, f: float, **changes: Any) -> Bid:
    return Bid(changes.get("id", bid.id), changes.get("bidder", bid.bidder), bid.value * f,
               changes.get("demand", bid.demand))


def _fmt(f: float) -> str:
    return f"{f:g}"


def misreports(
    instance: Instance,
    bidder: str,
    *,
    families: Sequence[str] = FAMILIES,
    factors: Sequence[float] = DEFAULT_FACTORS,
) -> Iterator[Misreport]:
    """Yield the misreports of ``bidder`` in the given families (see the module docstring)."""
    if isinstance(families, str) or not families:
        raise InputError(f"families must be a non-empty sequence of family names from {', '.join(FAMILIES)}, "
                         f"got {families!r}")
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise InputError(f"unknown misreport famil(y/ies) {sorted(unknown)}; valid: {list(FAMILIES)}")
    if isinstance(factors, (str, bytes)) or not isinstance(factors, Iterable):
        raise InputError(f"factors must be a sequence of finite numbers >= 0, got {factors!r}")
    for f in factors:
        if isinstance(f, bool) or not isinstance(f, numbers.Real) or not math.isfinite(f) or f < 0:
            raise InputError(f"factors must be finite numbers >= 0, got {f!r}")
    if bidder not in instance.bids_of_bidder:
        raise InputError(f"bidder: unknown bidder {bidder!r}")
    index = instance.bid_index
    own = tuple(instance.bids[index[b]] for b in instance.bids_of_bidder[bidder])
    if not own:
        return
    caps = {s.id: s.capacity for s in instance.slots}
    factors = [float(f) for f in factors if not math.isclose(float(f), 1.0)]

    def mk(family: str, text: str, bids: Iterable[Bid], ids: tuple[str, ...] = (bidder,)) -> Misreport:
        return Misreport(bidder, family, text, tuple(bids), ids)

    def replace(k: int, new: Bid | None) -> list[Bid]:
        return [b if i != k else new for i, b in enumerate(own) if i != k or new is not None]  # type: ignore[misc]

    if "scale" in families:
        for f in factors:
            yield mk("scale", f"scale all values by {_fmt(f)}", (_scaled(b, f) for b in own))
    multi = len(own) > 1
    if "bid" in families and multi:
        for k, b in enumerate(own):
            for f in factors:
                yield mk("bid", f"bid {b.id} value times {_fmt(f)}", replace(k, _scaled(b, f)))
    if "drop" in families and multi:
        for k, b in enumerate(own):
            yield mk("drop", f"drop bid {b.id}", replace(k, None))
    if "subset" in families:
        for k, b in enumerate(own):
            if len(b.demand) > 1:
                for s in b.demand:
                    dem = {t: r for t, r in b.demand.items() if t != s}
                    yield mk("subset", f"bid {b.id} without slot {s}", replace(k, _scaled(b, 1.0, demand=dem)))
            half = {t: {r: q * 0.5 for r, q in res.items()} for t, res in b.demand.items()}
            yield mk("subset", f"bid {b.id} with every amount halved", replace(k, _scaled(b, 1.0, demand=half)))
    if "superset" in families:
        for k, b in enumerate(own):
            largest: dict[str, float] = {}
            for res in b.demand.values():
                for r, q in res.items():
                    largest[r] = max(largest.get(r, 0.0), q)
            added = 0
            for slot in instance.slots:
                if added >= 3:
                    break
                if slot.id in b.demand:
                    continue
                extra = {r: min(largest[r], c) for r, c in slot.capacity.items() if r in largest and largest[r] > 0}
                if not extra:
                    continue
                added += 1
                dem = {**{t: dict(r) for t, r in b.demand.items()}, slot.id: extra}
                yield mk("superset", f"bid {b.id} plus slot {slot.id}", replace(k, _scaled(b, 1.0, demand=dem)))
            more = {t: {r: min(q * 1.5, caps[t][r]) for r, q in res.items()} for t, res in b.demand.items()}
            if any(more[t][r] > q for t, res in b.demand.items() for r, q in res.items()):
                yield mk("superset", f"bid {b.id} with every amount times 1.5", replace(k, _scaled(b, 1.0, demand=more)))
    if "false-name" in families:
        taken = set(instance.bidder_ids)
        n1, n2 = f"{bidder}~fn1", f"{bidder}~fn2"
        if n1 in taken or n2 in taken:
            return
        for b in own:
            if len(b.demand) < 2:
                continue
            slots = list(b.demand)
            cut = len(slots) // 2
            d1 = {t: b.demand[t] for t in slots[:cut]}
            d2 = {t: b.demand[t] for t in slots[cut:]}
            for share, label in ((0.5, "half the value each"), (1.0, "the full value each")):
                yield mk("false-name", f"split bid {b.id} between false names {n1}, {n2}, {label}",
                         (Bid(f"{b.id}~fn1", n1, b.value * share, d1), Bid(f"{b.id}~fn2", n2, b.value * share, d2)),
                         (n1, n2))


_family = misreports


def apply_misreport(instance: Instance, misreport: Misreport) -> Instance:
    """The reported instance: the bidder's true bids replaced by ``misreport.bids``.

    The new bids take the place of the bidder's first bid, so the order of everyone else's
    bids (and any tie-breaking by order) is unchanged.
    """
    out: list[Bid] = []
    placed = False
    for b in instance.bids:
        if b.bidder == misreport.bidder:
            if not placed:
                out.extend(misreport.bids)
                placed = True
            continue
        out.append(b)
    if not placed:
        out.extend(misreport.bids)
    return mark_validated(instance.replace_bids(out))


def true_value(instance: Instance, bidder: str, demand: Mapping[str, Mapping[str, float]]) -> float:
    """Largest value of ``bidder``'s true bids whose whole demand fits within ``demand``."""
    index = instance.bid_index
    best = 0.0
    for bid_id in instance.bids_of_bidder.get(bidder, ()):
        bid = instance.bids[index[bid_id]]
        if all(q <= demand.get(s, {}).get(r, 0.0) + _FIT_TOL for s, res in bid.demand.items() for r, q in res.items()):
            best = max(best, bid.value)
    return best


def true_utility(instance: Instance, bidder: str, reported: Instance, outcome: Any,
                 identities: Sequence[str] | None = None) -> float:
    """Utility under true values of ``bidder`` (controlling ``identities``) in ``outcome``.

    ``reported`` is the instance the mechanism ran on; ``outcome`` its :class:`Outcome`.
    """
    ids = set(identities or (bidder,))
    index = reported.bid_index
    got: dict[str, dict[str, float]] = {}
    for w in outcome.allocation.winners:
        bid = reported.bids[index[w]]
        if bid.bidder in ids:
            for s, res in bid.demand.items():
                slot = got.setdefault(s, {})
                for r, q in res.items():
                    slot[r] = slot.get(r, 0.0) + q
    paid = math.fsum(outcome.payments.get(i, 0.0) for i in ids)
    return true_value(instance, bidder, got) - paid


def _runner(mechanism: Any, method: Any, per_run_limit: float | None, executor: Any,
            options: Mapping[str, Any] | None) -> Callable[[Instance], Any]:
    """One run of ``mechanism`` on an instance, with ``per_run_limit`` as that run's ``time_limit``."""
    from ..mechanisms import call_mechanism, get_mechanism

    func = get_mechanism(mechanism)

    feature = f"mechanism {mechanism!r}" if isinstance(mechanism, str) else "this mechanism"

    def run(inst: Instance) -> Any:
        with extras_named(feature):  # vcg without OR-Tools: the pip line, not a bare import error
            return call_mechanism(func, inst, method=method, time_limit=per_run_limit, executor=executor,
                                  options=options)

    return run


def _name(mechanism: Any) -> str:
    return mechanism if isinstance(mechanism, str) else getattr(mechanism, "__name__", type(mechanism).__name__)


def regret(
    mechanism: str | Callable[..., Any],
    instance: Instance,
    bidder: str,
    *,
    misreports: Iterable[Misreport] | None = None,
    families: Sequence[str] = FAMILIES,
    factors: Sequence[float] = DEFAULT_FACTORS,
    method: str | Callable[..., Any] = "auto",
    per_run_limit: float | None = None,
    executor: Any = None,
    options: Mapping[str, Any] | None = None,
    truthful: Any = None,
    utility: Callable[..., float] | None = None,
    solver: str | Callable[..., Any] | None = None,
    time_limit: Any = NOT_GIVEN,
) -> RegretResult:
    """Largest utility gain of ``bidder`` from misreporting, over a finite family.

    Parameters
    ----------
    mechanism : str or callable
        A mechanism name (:data:`gensolver.mechanisms.MECHANISMS`) or callable.
    instance : Instance
        The *true* bids.
    bidder : str
    misreports : iterable of Misreport, optional
        The misreports to try; by default :func:`misreports` with ``families`` and ``factors``.
    families, factors : keyword-only
        Default family selection (see the module docstring).
    method, executor, options : keyword-only
        Passed to the mechanism on every run (``method`` as in
        :func:`~gensolver.mechanisms.run_mechanism`; ``solver`` is its deprecated alias).
    per_run_limit : float or None, keyword-only
        The ``time_limit`` of every run of the mechanism (the truthful run and each misreport's),
        with that mechanism's meaning (wall seconds, or work units where the run is
        deterministic); ``None``: no limit. The call as a whole takes up to one such budget per run.
    truthful : Outcome, optional
        The mechanism's outcome on the truthful reports, if already computed.
    utility : callable, optional
        ``utility(instance, bidder, reported, outcome, identities)``, how an outcome is worth
        to ``bidder`` under its true values: :func:`true_utility` by default;
        :func:`gensolver.verify.expected_utility` for a randomised mechanism (exact expectation).
    time_limit : float or None, keyword-only
        Deprecated alias of ``per_run_limit`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        both with different values raise ``ValueError``).

    Returns
    -------
    RegretResult
        ``regret`` is ``0`` when no misreport tried does strictly better.
    """
    from ..mechanisms import get_mechanism

    get_mechanism(mechanism)  # fail early on unknown names
    instance = coerce_instance(instance)
    per_run_limit = keyword_alias(per_run_limit, time_limit, old="time_limit", new="per_run_limit", where="regret",
                                  default=None)
    method = method_alias(method, solver, where="regret")
    run = _runner(mechanism, method, per_run_limit, executor, options)
    worth = true_utility if utility is None else utility
    base = truthful if truthful is not None else run(instance)
    u0 = worth(instance, bidder, instance, base)
    tries = misreports if misreports is not None else _family(instance, bidder, families=families, factors=factors)
    best_u, best_m, n = -math.inf, None, 0
    for m in tries:
        reported = apply_misreport(instance, m)
        out = run(reported)
        u = worth(instance, bidder, reported, out, m.identities)
        n += 1
        if u > best_u:
            best_u, best_m = u, m
    return RegretResult(bidder, _name(mechanism), max(0.0, best_u - u0) if n else 0.0, u0, best_u, best_m, n)


def max_regret(
    mechanism: str | Callable[..., Any],
    instance: Instance,
    *,
    bidders: Sequence[str] | None = None,
    families: Sequence[str] = FAMILIES,
    factors: Sequence[float] = DEFAULT_FACTORS,
    method: str | Callable[..., Any] = "auto",
    per_run_limit: float | None = None,
    executor: Any = None,
    options: Mapping[str, Any] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    utility: Callable[..., float] | None = None,
    solver: str | Callable[..., Any] | None = None,
    time_limit: Any = NOT_GIVEN,
) -> MaxRegretResult:
    """:func:`regret` of every bidder (or of ``bidders``); the largest one and who has it.

    ``progress(bidder, done, total)``, when given, is called after each bidder (the CLI shows
    a progress bar with it); ``method`` (``solver``, deprecated), ``per_run_limit`` (the
    ``time_limit`` of every run of the mechanism; ``time_limit`` is its deprecated alias) and
    ``utility`` as in :func:`regret`.
    """
    if not families or isinstance(families, str):
        raise InputError(f"families must be a non-empty sequence of family names from {', '.join(FAMILIES)}")
    per_run_limit = keyword_alias(per_run_limit, time_limit, old="time_limit", new="per_run_limit",
                                  where="max_regret", default=None)
    # 0 would make every solve stop at once and report false regrets
    check_time_limit(per_run_limit, name="per_run_limit")
    instance = coerce_instance(instance)
    method = method_alias(method, solver, where="max_regret")
    run = _runner(mechanism, method, per_run_limit, executor, options)
    base = run(instance)
    per: dict[str, RegretResult] = {}
    todo = list(bidders if bidders is not None else instance.bidder_ids)
    for k, b in enumerate(todo, 1):
        per[b] = regret(mechanism, instance, b, families=families, factors=factors, method=method,
                        per_run_limit=per_run_limit, executor=executor, options=options, truthful=base,
                        utility=utility)
        if progress is not None:
            progress(b, k, len(todo))
    worst = max(per.values(), key=lambda r: r.regret, default=None)
    return MaxRegretResult(_name(mechanism), worst.regret if worst else 0.0, worst, MappingProxyType(per))
