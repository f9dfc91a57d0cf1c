"""Incremental solving for the market: round ``k + 1`` starts from round ``k``'s answer.

Consecutive market rounds differ by a few tasks. :class:`IncrementalSolver` keeps, keyed by
bid id, what the anytime engine learnt in the last round (the winners and the columns of the
last LP master) and maps it onto the next round: bids removed are dropped (a removed bid can
never be hinted: ids are looked up in the new round), bids added start cold, bids changed
keep their id and are hinted as they are now (the hint is repaired by first fit, so a changed
demand that no longer fits is simply left out). The engine then starts from that
:class:`~.driver.WarmStart` (see :func:`~.driver.anytime_solve`).

The same mapping serves ``solve(..., method="auto", options={"warm_start": previous})``
(:func:`warm_start_for`), with ``previous`` an :class:`~gensolver.solvers.result.Allocation`
or an iterable of winning bid ids.

References
----------
Shaw, "Using constraint programming and local search methods to solve vehicle routing
problems", CP 1998 (LNS from an incumbent); Desrosiers & Lübbecke, "A primer in column
generation", Springer 2005 (re-using a master's columns).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ...errors import InputError
from ...model import Instance
from ..formulation.problem import from_instance
from ..result import Allocation, finish
from .driver import WarmStart, anytime_solve

__all__ = ["IncrementalSolver", "warm_start_for"]


def _columns(index: Mapping[str, int], ids: Iterable[str]) -> np.ndarray:
    """Columns of the ids still present in the round (the others are dropped)."""
    cols = [index[i] for i in ids if i in index]
    return np.asarray(sorted(set(cols)), dtype=np.int64)


def warm_start_for(instance: Instance | Mapping[str, int], previous: Any, lp_ids: Iterable[str] = (),
                   changed_ids: Iterable[str] = ()) -> WarmStart:
    """Map a previous answer onto ``instance``'s columns by bid id.

    Parameters
    ----------
    instance : Instance or Mapping
        The new round, or its map from bid id to column.
    previous : Allocation or iterable of str
        The previous round's answer (its winners are the hint) or winning bid ids.
    lp_ids : iterable of str
        Bid ids of the previous round's LP master (seed columns of the new LP).
    changed_ids : iterable of str
        Bid ids new or changed since the previous round (where LNS looks first).

    Returns
    -------
    WarmStart
        Over ``instance``'s columns; ids absent from ``instance`` are dropped.
    """
    winners = previous.winners if isinstance(previous, Allocation) else previous
    if isinstance(winners, str) or not isinstance(winners, Iterable):
        raise InputError("warm_start: expected an Allocation or an iterable of bid ids, "
                         f"got {type(previous).__name__}")
    index = instance.bid_index if isinstance(instance, Instance) else instance
    return WarmStart(_columns(index, winners), _columns(index, lp_ids), _columns(index, changed_ids))


class IncrementalSolver:
    """Solve a sequence of market rounds, each warm-started from the previous one.

    Parameters
    ----------
    time_limit : float or None
        Budget per round (wall seconds, or work units with ``deterministic=True``).
    seed, threads : int
        As for :func:`~.driver.anytime_solve`.
    options : dict, optional
        Engine options of ``method="auto"`` (``deterministic``, ``lp_share``, ...).

    Notes
    -----
    The state kept between rounds, keyed by bid id: :attr:`winners` (the incumbent) and
    :attr:`lp_ids` (the last LP master's columns), and the bids themselves (to tell which
    are new or changed: LNS searches around those first). The first round, or one after
    :meth:`reset`, is a cold start and gives exactly ``solve(method="auto")``'s answer.
    """

    def __init__(self, *, time_limit: float | None = None, seed: int = 0, threads: int | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        self.time_limit, self.seed, self.threads = time_limit, seed, threads
        self.options = dict(options or {})
        if "warm_start" in self.options:
            raise InputError("IncrementalSolver keeps its own warm start; do not pass options['warm_start']")
        self.winners: tuple[str, ...] = ()
        self.lp_ids: tuple[str, ...] = ()
        self._bids: dict[str, Any] = {}
        self.rounds = 0

    def reset(self) -> None:
        """Forget the previous round: the next one starts cold."""
        self.winners, self.lp_ids, self._bids = (), (), {}

    def solve(self, instance: Instance, *, time_limit: float | None = None) -> Allocation:
        """Solve ``instance`` warm-started from the last round; remember its answer."""
        limit = self.time_limit if time_limit is None else time_limit
        t0 = time.perf_counter()
        P = from_instance(instance)
        t1 = time.perf_counter()
        warm = None
        if self.winners or self.lp_ids:
            prev = self._bids
            changed = [b.id for b in instance.bids if prev.get(b.id) != b]
            warm = warm_start_for(instance, self.winners, self.lp_ids, changed)
        det = bool(self.options.get("deterministic"))
        remaining = None if limit is None else (float(limit) if det else max(0.05, limit - (t1 - t0)))
        res = anytime_solve(P, time_limit=remaining, seed=self.seed, threads=self.threads, warm=warm, **self.options)
        t2 = time.perf_counter()
        alloc = finish(instance, res.x, method="auto", proven_optimal=res.proven, bound=res.bound, build=t1 - t0,
                       solve=t2 - t1, details={"stages": list(res.stages), "trace": list(res.trace),
                                               "warm": warm is not None})
        self.winners = alloc.winners
        bids = instance.bids
        self.lp_ids = tuple(bids[j].id for j in res.lp_cols) if res.lp_cols is not None else ()
        self._bids = {b.id: b for b in bids}
        self.rounds += 1
        return alloc
