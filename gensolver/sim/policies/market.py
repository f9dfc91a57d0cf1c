"""The ``market`` policy: the simulator's adapter to the one round-by-round market engine.

Every decision is :class:`gensolver.market.engine.CreditEngine`'s (finish-time fairness priced
in credits, Themis x Karma; its docstring states the round). This module only wires the
simulated cluster to it: the cluster is the engine's :class:`gensolver.market.pool.Pool`, each
scheduling pass is one :meth:`CreditEngine.round`, and each finished task is reported to
:meth:`CreditEngine.learn`. The service clears its rounds with the same engine
(:mod:`gensolver.service.market_glue`).
"""

from __future__ import annotations

from typing import Any

from ...market.engine import CreditEngine
from ...market.pool import attained
from ..engine import Cluster, TaskState
from .base import Policy

__all__ = ["MarketPolicy", "attained"]


class MarketPolicy(CreditEngine, Policy):
    """The credit market as a simulator policy; options are :class:`CreditEngine`'s.

    Parameters
    ----------
    **options
        :class:`gensolver.market.engine.CreditEngine` options (``backfill``, ``clearing``,
        ``tolerance``, ...) and :class:`gensolver.market.credit.CreditConfig` fields.
    """

    name = "market"

    def __init__(self, **options: Any) -> None:
        CreditEngine.__init__(self, **options)

    def attach(self, cluster: Cluster) -> None:
        self.lease = cluster.lease
        previous = cluster.on_finish

        def learn(st: TaskState) -> None:
            self.learn(st)
            if previous is not None:
                previous(st)

        cluster.on_finish = learn
        cluster.quiet = lambda: self.quiet(cluster)  # boundaries it proves no-ops are jumped

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        self.round(cluster, boundary)
