"""The credit economy of the fair market: accounts, income, bids and per-round prices.

This is the currency layer of the ``market`` scheduling policy
(:class:`gensolver.sim.policies.market.MarketPolicy`); it knows nothing about GPUs beyond the
numbers it is given, so a deployment can run it as well.

Model (documented; what is proved and what is only measured is in ``docs/explanation/market.md``)
-----------------------------------------------------------------------------------------------
- **Accounts.** Every tenant (a *name*: whoever reports tasks) has a balance of credits,
  opened at 0.
- **Income (Karma-like, per task).** Each round, ``income`` credits are shared by the tasks
  the caller lists (:meth:`CreditBank.pay_income`: the market lists every task seen so far;
  it can list only the active ones): the credits a tenant earns are its share of the
  cluster's fair entitlement (the per-job ``1/N`` of Themis), counted in tasks, not in names,
  so splitting a tenant into false names earns nothing more. A balance is capped at ``cap``
  rounds of the tenant's current income (credits unused for long do not pile up).
- **Bids.** A tenant commits ``spend`` of its balance per round and splits it over its bidding
  tasks in proportion to their *own-normalised urgency* ``q_j = d_j / mean_{k in tenant} d_k``
  where ``d_j`` is the value the task loses if it waits one more round (its reported value and
  urgency, :func:`deferral_cost`; the whole value when waiting makes it miss its deadline).
  Scaling every reported value of a tenant by one factor leaves ``q`` (and every bid)
  unchanged: across tenants only credits count; values only rank a tenant's own tasks.
  Urgency also only ranks a tenant's own tasks, but ``d_j`` is not linear in it, so scaling
  every urgency of a tenant reshapes that ranking (``docs/explanation/market.md``, "Scaled
  urgency: why it remains").
- **Score.** Task ``j`` is served in decreasing order of
  ``s_j = rho_j ** rho_power * clip(b_j / mean b, 1/spread, spread) ** credit_power`` where
  ``rho_j`` is its finish-time-fairness estimate (Themis' bid weight) and ``b_j`` its bid
  density (credits per GiB-step of remaining work: Smith's rule in credits).
- **Price.** Each round has one price per GiB-step: the bid density ``bid / (memory x gpus x
  lease)`` of the best-scored task left out for lack of capacity (0 when nothing is left
  out). Every task served in the round pays ``price x its GiB-steps``, at most its own income
  share of the round (``income / tasks seen``; the market's ``limit="share"``): a price set by
  the others, independent of its own bid (a posted-price rule; the critical value when every
  demand has the same size). A tenant runs at most as many tasks as it has brought, so its
  round income (or, at the cap, its balance; ``cap >= 1``) covers its charges: no balance runs
  dry, and a payment depends on no account,
  hence not on false names. (``limit="balance"``, the earlier rule, charged up to the
  tenant's balance: a false name whose balance its running tasks had drained paid less, while
  its other name kept its credits.)

Spending now lowers the balance, hence the bids and the scores of the tenant's later tasks: a
tenant that overstates urgency to be served now pays for it later.

References
----------
.. [1] M. Vuppalapati et al., "Karma: Resource Allocation for Dynamic Demands", OSDI 2023.
.. [2] K. Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020.
.. [3] A. Gorokh, S. Banerjee, K. Iyer, "From Monetary to Nonmonetary Mechanism Design via
   Artificial Currencies", Math. Oper. Res. 46(3), 2021.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError

__all__ = ["CreditConfig", "CreditBank", "deferral_cost", "loser_prices", "smith_factor", "split_relative"]


@dataclass(frozen=True)
class CreditConfig:
    """Options of the credit economy (see the module docstring).

    Attributes
    ----------
    income : float
        Credits shared each round by the tasks the caller lists (the market: every task seen
        so far).
    cap : float
        Balance cap, in rounds of the tenant's income (``cap x`` what its listed tasks earn
        this round: the cap counts tasks, not names).
    spend : float
        Fraction of its balance a tenant commits per round, in ``(0, 1]``.
    rho_power, credit_power, spread : float
        The score is ``rho ** rho_power * clip(b / mean b, 1 / spread, spread) ** credit_power``
        (``b``: bid density): fairness first, credits and urgency move a task by at most a
        factor ``spread ** credit_power`` (``spread >= 1``).
    """

    income: float = 100.0
    cap: float = 20.0
    spend: float = 0.5
    rho_power: float = 1.0
    credit_power: float = 1.0
    spread: float = 1.5

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"CreditConfig.{f.name} must be a finite non-negative number, got {v!r}")
        if self.spread < 1:
            raise InputError(f"CreditConfig.spread must be >= 1, got {self.spread!r}")
        if not 0 < self.spend <= 1:
            raise InputError(f"CreditConfig.spend must be in (0, 1], got {self.spend!r}")


def deferral_cost(value: np.ndarray, urgency: np.ndarray, duration: np.ndarray, ideal: np.ndarray,
                  finish: np.ndarray, deadline: np.ndarray, wait: float) -> np.ndarray:
    """Value lost by finishing ``wait`` steps later than ``finish`` (vectorised).

    ``value * (1 - urgency) ** (max(0, f - ideal) / duration)`` is the worth of finishing at
    ``f`` (:func:`gensolver.model.tasks.task_value`), 0 after ``deadline`` (``inf``: none).
    """
    def worth(f: np.ndarray) -> np.ndarray:
        late = np.maximum(0.0, f - ideal) / duration
        with np.errstate(divide="ignore", invalid="ignore"):
            w = value * np.where(urgency >= 1, (late <= 0).astype(float), np.power(1.0 - np.minimum(urgency, 1.0), late))
        return np.where(f <= deadline + 1e-9, w, 0.0)

    return np.maximum(0.0, worth(finish) - worth(finish + wait))


class CreditBank:
    """Balances and the per-round bid and price rules (see the module docstring)."""

    def __init__(self, config: CreditConfig | None = None, **options: Any) -> None:
        cfg = config or CreditConfig()
        if options:
            unknown = set(options) - {f.name for f in fields(CreditConfig)}
            if unknown:
                raise InputError(f"unknown credit option(s) {sorted(unknown)}; valid: "
                                 f"{sorted(f.name for f in fields(CreditConfig))}")
            from dataclasses import replace

            cfg = replace(cfg, **options)
        self.config = cfg
        self.balances: dict[str, float] = {}
        #: (tenant, amount, reason, task) of every change since the last :meth:`drain`
        self.entries: list[tuple[str, float, str, str]] = []

    def _move(self, tenant: str, amount: float, reason: str, task: str = "") -> None:
        if amount != 0.0:
            self.balances[tenant] = self.balances.get(tenant, 0.0) + amount
            self.entries.append((tenant, float(amount), reason, task))

    def drain(self) -> list[tuple[str, float, str, str]]:
        """The balance changes since the last call (for an event log)."""
        out, self.entries = self.entries, []
        return out

    def pay_income(self, tenants: Sequence[str], *, shares: int | None = None) -> None:
        """One round of income: ``income / shares`` per entry of ``tenants`` (the owner of each
        task that earns this round; ``shares`` defaults to ``len(tenants)``, more when some
        tasks' shares are withheld)."""
        n = len(tenants) if shares is None else shares
        if n <= 0 or not tenants:
            return
        cfg = self.config
        each = cfg.income / n
        per: dict[str, float] = {}
        for t in tenants:
            self.balances.setdefault(t, 0.0)
            per[t] = per.get(t, 0.0) + each
        for t in sorted(per):
            room = max(0.0, per[t] * cfg.cap - self.balances[t])  # the cap counts tasks, not names
            self._move(t, min(per[t], room), "income")

    def bids(self, tenants: Sequence[str], urgency: np.ndarray) -> np.ndarray:
        """Credits bid by each task this round (``tenants[j]`` owns task ``j``).

        A tenant's committed credits ``spend * balance`` are split over its tasks in proportion
        to ``urgency / mean urgency of the tenant's tasks`` (equal split when all are 0).
        """
        n = len(tenants)
        out = np.zeros(n)
        if n == 0:
            return out
        names, inv = np.unique(np.asarray(tenants, dtype=object).astype(str), return_inverse=True)
        u = np.asarray(urgency, dtype=float)
        tot = np.bincount(inv, weights=u, minlength=len(names))
        cnt = np.bincount(inv, minlength=len(names)).astype(float)
        share = np.where(tot[inv] > 0, u / np.where(tot[inv] > 0, tot[inv], 1.0), 1.0 / cnt[inv])
        budget = np.array([self.config.spend * max(0.0, self.balances.get(str(t), 0.0)) for t in names])
        out = budget[inv] * share
        return out

    def charge(self, tenant: str, task: str, amount: float, *, limit: float = math.inf) -> float:
        """Take ``amount``, at most ``limit`` and at most the balance, from ``tenant``; the
        amount taken. With ``limit`` the task's income share of the round (the market's
        default), a tenant's round income covers every charge of its running tasks, so the
        balance never binds and what a task pays depends on no account: not on how its tenant
        spreads its tasks over names."""
        amt = min(max(0.0, amount), max(0.0, limit), max(0.0, self.balances.get(tenant, 0.0)))
        self._move(tenant, -amt, "payment", task)
        return amt


def loser_prices(tenant_of: Sequence[str], beta: np.ndarray, losers: Sequence[int], *,
                 spread: float) -> dict[str, float]:
    """Each tenant's price per GiB-step, set by *others* only: the bid per GiB-step (``beta``) of
    the best-scored loser (``losers``: indices, best first) of another tenant, clipped within
    ``spread`` of the mean bid per GiB-step of the other tenants' tasks (absent when no other
    tenant lost)."""
    if not losers:
        return {}
    names = sorted(set(tenant_of))
    owner = np.array([names.index(t) for t in tenant_of])
    tot, cnt = float(beta.sum()), len(beta)
    own_sum = np.bincount(owner, weights=beta, minlength=len(names))
    own_cnt = np.bincount(owner, minlength=len(names))
    out: dict[str, float] = {}
    for i, name in enumerate(names):
        k = next((j for j in losers if tenant_of[j] != name), None)
        if k is None or cnt - own_cnt[i] <= 0:
            continue
        mean = (tot - own_sum[i]) / (cnt - own_cnt[i])
        out[name] = min(mean * spread, max(mean / spread, float(beta[k])))
    return out


def split_relative(tenants: Sequence[str], density: np.ndarray, balances: Mapping[str, float], *,
                   spread: float) -> np.ndarray:
    """The relative bids of the engine's ``mode="split"``: a tenant's reports only rank its own
    tasks (a within-tenant factor of ``density``, geometric mean 1, clipped within ``spread``);
    across tenants only credits per active task count (clipped within ``spread`` of the mean)."""
    names, inv = np.unique(np.asarray(tenants, dtype=object).astype(str), return_inverse=True)
    own = np.log(np.maximum(density, 1e-300))
    cnt = np.bincount(inv, minlength=len(names)).astype(float)
    own_mean = np.bincount(inv, weights=own, minlength=len(names)) / cnt
    f = np.exp(np.clip(own - own_mean[inv], -math.log(spread), math.log(spread)))
    per_task = np.array([max(0.0, balances.get(str(t), 0.0)) for t in names]) / cnt
    mean_pt = per_task.mean()
    c = np.clip(per_task / mean_pt, 1.0 / spread, spread) if mean_pt > 0 else np.ones(len(names))
    return np.asarray(c[inv] * f)


def smith_factor(left: np.ndarray, over: np.ndarray, running: np.ndarray, smith: float,
                 keep: float = 0.0) -> np.ndarray:
    """The score factor of Smith's rule, ``(median left / left) ** smith``, and of ``keep``.

    Parameters
    ----------
    left : numpy.ndarray
        Each candidate's remaining (calibrated) work over its current speed, steps.
    over : numpy.ndarray of bool
        Candidates caught (past their reports): they neither set the median nor gain from the
        rule (factor at most 1), else an under-reported duration would buy the top rank once
        it ran out.
    running : numpy.ndarray of bool
        Candidates holding GPUs.
    smith : float
        Exponent of Smith's rule (0: factor 1).
    keep : float
        0: off. Above 0, a running candidate not caught keeps its place: its factor is at
        least 1 (Smith's rule ranks starts, it does not preempt a long task for a short one)
        and is multiplied by ``1 + keep``.

    Returns
    -------
    numpy.ndarray
        One factor per candidate.

    References
    ----------
    .. [1] W. E. Smith, "Various optimizers for single-stage production", *Naval Research
       Logistics Quarterly* 3(1-2), pp. 59-66, 1956 (weighted shortest processing time first
       minimises the weighted sum of completion times on one machine).
    """
    left = np.maximum(left, 1e-9)
    honest = left[~over] if (~over).any() else left
    sf = np.power(float(np.median(honest)) / left, smith)
    sf = np.where(over, np.minimum(sf, 1.0), sf)
    if keep > 0:
        sf = np.where(running & ~over, np.maximum(sf, 1.0) * (1.0 + keep), sf)
    return sf
