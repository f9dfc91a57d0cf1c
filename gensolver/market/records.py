"""The configuration and the records of the round-by-round market (:mod:`.market`).

:class:`MarketConfig` holds the market's options (validated here, once); :class:`Candidate` and
:class:`Reservation` are what a round is built from; :class:`Assignment`, :class:`CreditEntry`
and :class:`Clearing` are what it returns. The model they serve is documented in
:mod:`gensolver.market.market`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .._deprecation import method_alias, warn_renamed
from ..errors import InputError, check_time_limit
from ..model.tasks import Task

__all__ = ["MarketConfig", "Candidate", "Reservation", "Assignment", "Clearing", "CreditEntry"]


@dataclass(frozen=True)
class MarketConfig:
    """Options of the market (all keyword-only; see the module docstring).

    Attributes
    ----------
    lease : int
        Steps per round.
    engine : {"credit", "auction"}
        The round engine ``gensolver serve`` clears with: the market (``"credit"``, the
        default: :class:`gensolver.market.engine.CreditEngine`, the engine of the simulator's
        ``market`` policy; only ``lease`` and ``credit`` apply), or the welfare auction
        (``"auction"``, :class:`gensolver.market.Market`; deprecated, removed in the next
        release; every option below except ``credit`` is its own, and ``gensolver serve``
        refuses them with the credit engine).
    credit : Mapping
        Options of :class:`gensolver.market.engine.CreditEngine` (``clearing``, ``smith``,
        ``between``, ...; the simulator's ``market:KEY=VALUE`` options), validated here.
    blocks : int
        Horizon length in leases (``horizon = blocks * lease`` steps).
    mechanism : str
        A :func:`gensolver.mechanisms.run_mechanism` name, or ``"pay-as-bid"``.
    method : str
        Winner-determination method (``gensolver methods``). ``solver`` is its deprecated alias,
        as a keyword and as an attribute (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).
    time_limit : float
        Seconds for each round's solve (``None``: unlimited; keep rounds fast).
    greedy_above : int
        Use ``"greedy"`` when an instance has more bids than this.
    memory_levels : int
        Memory levels offered per task (min .. preferred).
    max_gpu_options : int
        GPU groups offered per task, level and block.
    max_bidders : int
        Tasks admitted to one round (running first, then by aged value per GiB).
    checkpoint_steps : float
        Work added when a preemptible task moves or pauses.
    aging : float
        Value multiplier growth per waited duration (see module docstring).
    switch_penalty : float
        Fraction of value a running task's bundle loses when it moves or pauses (switching
        cost beyond the checkpoint steps; keeps optimal solvers from reshuffling ties).
    late_value : float
        Floor of a bundle's value, as a fraction of the task's reported value: a task past
        its deadline (or whose utility has decayed to 0) still bids this much, times its
        tenant weight and its aging factor, so it is never stranded (in ``(0, 1]``).
    budget, refill, refill_every, budget_cap : float
        Credits: initial balance, refill amount, refill period (steps), balance cap.
    eta, w_min, w_max : float
        Weight update rate and bounds.
    deterministic : bool
        With ``method="auto"``, ``time_limit`` is a budget of *work units* (the anytime
        engine's deterministic clock, :class:`gensolver.solvers.anytime.budget.WorkClock`), not
        wall-clock seconds: a round's outcome depends only on the instance, the seed (0) and
        ``threads``, so reruns give identical logs. ``False``: wall-clock limits (faster to
        stop, not reproducible).
    threads : int
        Solver threads (part of what fixes a deterministic outcome).
    alpha : float or None
        ``mechanism="lavi-swamy"`` only: the lottery's scaling, fixed before any report (from
        earlier rounds), which makes the mechanism truthful in expectation; ``None`` computes it
        from each round's reports and every outcome is marked not truthful.
    """

    lease: int = 5
    blocks: int = 2
    mechanism: str = "pay-as-bid"
    method: str = "auto"
    time_limit: float | None = 0.2
    greedy_above: int = 3000
    memory_levels: int = 3
    max_gpu_options: int = 4
    max_bidders: int = 48
    checkpoint_steps: float = 1.0
    aging: float = 1.0
    switch_penalty: float = 0.2
    bid_model: str = "deferral"
    deferral_floor: float = 0.05
    late_value: float = 0.05
    budget: float = 1000.0
    refill: float = 500.0
    refill_every: int = 60
    budget_cap: float = 5000.0
    eta: float = 0.5
    w_min: float = 0.25
    w_max: float = 4.0
    deterministic: bool = True
    threads: int = 1
    alpha: float | None = None
    engine: str = "credit"
    credit: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.engine not in ("credit", "auction"):
            raise InputError(f"MarketConfig.engine must be 'credit' or 'auction', got {self.engine!r}")
        self._check_engine_options()
        if self.alpha is not None and (isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float))
                                       or not math.isfinite(self.alpha) or self.alpha < 1):
            raise InputError(f"MarketConfig.alpha must be None or a finite number >= 1, got {self.alpha!r}")
        if not isinstance(self.deterministic, bool):
            raise InputError(f"MarketConfig.deterministic must be true or false, got {self.deterministic!r}")
        for name in ("lease", "blocks", "memory_levels", "max_gpu_options", "max_bidders", "refill_every", "greedy_above",
                     "threads"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"MarketConfig.{name} must be a positive integer, got {v!r}")
        if self.bid_model not in ("deferral", "absolute"):
            raise InputError(f"MarketConfig.bid_model must be 'deferral' or 'absolute', got {self.bid_model!r}")
        if isinstance(self.late_value, bool) or not isinstance(self.late_value, (int, float)) \
                or not 0 < self.late_value <= 1:
            raise InputError(f"MarketConfig.late_value must be in (0, 1], got {self.late_value!r}")
        if not 0 < self.deferral_floor <= 1:
            raise InputError(f"MarketConfig.deferral_floor must be in (0, 1], got {self.deferral_floor!r}")
        if not 0 <= self.switch_penalty < 1:
            raise InputError(f"MarketConfig.switch_penalty must be in [0, 1), got {self.switch_penalty!r}")
        for name in ("checkpoint_steps", "aging", "budget", "refill", "budget_cap", "eta", "w_min", "w_max"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"MarketConfig.{name} must be a finite non-negative number, got {v!r}")
        check_time_limit(self.time_limit, name="MarketConfig.time_limit")
        if not 0 < self.w_min <= 1 <= self.w_max:
            raise InputError("MarketConfig needs 0 < w_min <= 1 <= w_max")
        from ..solvers import get_method  # an unknown name is refused here, not by every round

        if not isinstance(self.method, str):
            raise InputError(f"MarketConfig.method must be a method name, got {self.method!r}")
        get_method(self.method)

    @property
    def horizon(self) -> int:
        return self.lease * self.blocks

    @property
    def solver(self) -> str:
        """Deprecated alias of :attr:`method` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release)."""
        warn_renamed("MarketConfig", "solver", "method")
        return self.method

    def _check_engine_options(self) -> None:
        """Refuse options of the other engine (an option that would be silently ignored)."""
        if not isinstance(self.credit, Mapping):
            raise InputError(f"MarketConfig.credit must be a mapping of CreditEngine options, got {self.credit!r}")
        if self.engine == "auction":
            if self.credit:
                raise InputError("MarketConfig.credit: options of the credit engine; this market has engine 'auction'")
            return
        from .engine import CreditEngine

        try:
            CreditEngine(**self.credit)
        except (TypeError, ValueError) as exc:
            raise InputError(f"MarketConfig.credit: {exc}") from None


_fields_init = MarketConfig.__init__


@functools.wraps(_fields_init)
def _init_with_alias(self: MarketConfig, *args: Any, solver: str | None = None, **kwargs: Any) -> None:
    """The fields' ``__init__``, taking ``solver=`` as the deprecated alias of ``method=``."""
    if solver is not None:
        kwargs["method"] = method_alias(kwargs.get("method", "auto"), solver, where="MarketConfig")
    _fields_init(self, *args, **kwargs)


MarketConfig.__init__ = _init_with_alias  # type: ignore[method-assign]


@dataclass(frozen=True)
class Candidate:
    """A task that wants GPUs this round.

    Attributes
    ----------
    task : Task
        ``release`` is its arrival step (used by the value decay).
    remaining : float
        Work left, in steps at preferred memory.
    waited : float
        Steps it has waited (not running) so far.
    placement : tuple of str or None
        GPUs it runs on now (running preemptible tasks), else ``None``.
    memory : float or None
        Memory per GPU it has now, when running.
    models : tuple of str or None
        GPU models it may run on (its ``gpu_spec``); ``None``: any.
    """

    task: Task
    remaining: float
    waited: float = 0.0
    placement: tuple[str, ...] | None = None
    memory: float | None = None
    models: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Reservation:
    """Capacity held on ``gpu`` for the next ``steps`` steps by a task that keeps its GPU."""

    gpu: str
    memory: float
    compute: float
    steps: float


@dataclass(frozen=True)
class Assignment:
    """A committed winner: start now on ``gpus`` with ``memory`` GiB per GPU."""

    task: str
    gpus: tuple[str, ...]
    memory: float
    length: int
    value: float
    keep: bool


@dataclass(frozen=True)
class CreditEntry:
    """One change of a tenant's balance (``reason``: budget, refill, payment)."""

    time: float
    tenant: str
    amount: float
    reason: str
    task: str = ""


@dataclass(frozen=True)
class Clearing:
    """Frozen result of one round (:meth:`Market.clear`).

    Attributes
    ----------
    time : float
    assignments : Mapping[str, Assignment]
        Committed winners (start now, or keep running) by task id.
    preempted : tuple of str
        Running candidates that lost their GPUs.
    charges : Mapping[str, float]
        Credits charged per task this round.
    candidates, bids : int
    mechanism, method, status : str
    welfare : float
    seconds : float
        Wall-clock time of the clearing (mechanism and solves).
    build_seconds : float
        Time to build the auction.
    payments_exact : bool
        The mechanism's ``Outcome.exact``: the payments charged are the exact payments of its
        definition (``True`` for an empty round).
    payment_bounds : Mapping[str, tuple[float, float]]
        Per bidder (task), an interval certain to contain its exact payment.
    payments_note : str
        Why the payments are not exact (``""`` when they are).
    """

    time: float
    assignments: Mapping[str, Assignment]
    preempted: tuple[str, ...]
    charges: Mapping[str, float]
    candidates: int
    bids: int
    mechanism: str
    method: str
    status: str
    welfare: float
    seconds: float
    build_seconds: float
    payments_exact: bool = True
    payment_bounds: Mapping[str, tuple[float, float]] = field(default_factory=lambda: MappingProxyType({}))
    payments_note: str = ""
