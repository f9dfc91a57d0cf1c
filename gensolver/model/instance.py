"""Frozen, typed instance model of one clearing round (``gensolver.instance/v1``).

A round is a set of :class:`Slot` objects (supply: capacity per named resource) and a set of
:class:`Bid` objects (demand: all-or-nothing bundles, XOR per bidder). :class:`Instance` holds
both, plus optional :class:`Bidder` data, and builds the sparse constraint matrix of the
welfare problem once, on first use::

    maximise   sum_b value_b x_b
    subject to sum_{b of bidder i} x_b <= 1                  for every bidder i
               sum_b demand_b[s][r] x_b <= capacity[s][r]    for every slot s, resource r
               x_b in {0, 1}

Objects are immutable. Mappings passed in are copied into read-only
:class:`types.MappingProxyType` views, so an instance cannot change under a solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Iterable, Mapping

import numpy as np
import scipy.sparse as sp

__all__ = ["Slot", "Bid", "Bidder", "Instance", "SCHEMA"]

SCHEMA = "gensolver.instance/v1"

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _freeze(mapping: Mapping[str, float]) -> Mapping[str, float]:
    return MappingProxyType({str(k): float(v) for k, v in mapping.items()})


@dataclass(frozen=True)
class Slot:
    """One unit of supply: a (GPU, time window) with capacity per resource.

    Attributes
    ----------
    id : str
        Unique, non-empty identifier.
    capacity : Mapping[str, float]
        Capacity per resource name (``memory`` in GiB, ``compute`` as a share of a device,
        ``units`` for classic single-unit goods, or any other name).
    gpu, start, end : optional
        Metadata for executors and plots (device id, seconds from the round's start).
        Solvers ignore them; may be ``None``.
    """

    id: str
    capacity: Mapping[str, float]
    gpu: str | None = None
    start: float | None = None
    end: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "capacity", _freeze(self.capacity))

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, as written in the JSON interchange format."""
        out: dict[str, Any] = {"id": self.id}
        for key in ("gpu", "start", "end"):
            val = getattr(self, key)
            if val is not None:
                out[key] = val
        out["capacity"] = dict(self.capacity)
        return out


@dataclass(frozen=True)
class Bid:
    """An all-or-nothing bid: ``demand`` on slots, worth ``value`` to ``bidder``.

    Bids of one bidder are XOR: at most one of them wins.

    Attributes
    ----------
    id : str
        Unique, non-empty identifier.
    bidder : str
        The bidder (XOR group) this bid belongs to.
    value : float
        Finite, non-negative value of the whole bundle.
    demand : Mapping[str, Mapping[str, float]]
        ``{slot_id: {resource: amount}}``.
    """

    id: str
    bidder: str
    value: float
    demand: Mapping[str, Mapping[str, float]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))
        object.__setattr__(
            self, "demand", MappingProxyType({str(s): _freeze(r) for s, r in self.demand.items()})
        )

    def rebid(self, id: str, bidder: str, value: float) -> Bid:
        """This bid's bundle under another ``id``, ``bidder`` and ``value``: the frozen
        :attr:`demand` is shared, not copied again (for builders of many bids over the same
        bundles, e.g. one market round after another)."""
        out = object.__new__(Bid)
        for name, v in (("id", id), ("bidder", bidder), ("value", float(value)), ("demand", self.demand)):
            object.__setattr__(out, name, v)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, as written in the JSON interchange format."""
        return {
            "id": self.id,
            "bidder": self.bidder,
            "value": self.value,
            "demand": {s: dict(r) for s, r in self.demand.items()},
        }


@dataclass(frozen=True)
class Bidder:
    """Per-bidder data: an optional ``budget`` in credits (``None`` means unlimited)."""

    id: str
    budget: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, as written in the JSON interchange format."""
        out: dict[str, Any] = {"id": self.id}
        if self.budget is not None:
            out["budget"] = self.budget
        return out


@dataclass(frozen=True, eq=False)
class Instance:
    """One clearing round: slots, bids and (optional) bidder data.

    Build instances with :func:`gensolver.read_instance`, :func:`gensolver.model.from_dict`
    or the constructor (which trusts its input; use :func:`gensolver.model.validate` to check
    objects built by hand). Bidders that bids name but ``bidders`` omits are implicit, without
    a budget.

    The sparse matrices used by every solver are built once, on first access, and cached.
    """

    slots: tuple[Slot, ...]
    bids: tuple[Bid, ...]
    bidders: tuple[Bidder, ...] = ()
    name: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", tuple(self.slots))
        object.__setattr__(self, "bids", tuple(self.bids))
        object.__setattr__(self, "bidders", tuple(self.bidders))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    # ------------------------------------------------------------------ indexes
    @cached_property
    def bid_index(self) -> Mapping[str, int]:
        """Position of each bid id in :attr:`bids`."""
        return MappingProxyType({b.id: j for j, b in enumerate(self.bids)})

    @cached_property
    def slot_index(self) -> Mapping[str, int]:
        """Position of each slot id in :attr:`slots`."""
        return MappingProxyType({s.id: k for k, s in enumerate(self.slots)})

    @cached_property
    def bidder_ids(self) -> tuple[str, ...]:
        """All bidder ids: the listed ones first, then implicit ones in order of first bid."""
        seen: dict[str, None] = {b.id: None for b in self.bidders}
        for bid in self.bids:
            seen.setdefault(bid.bidder, None)
        return tuple(seen)

    @cached_property
    def bidder_of_bid(self) -> np.ndarray:
        """``int64[B]``: index into :attr:`bidder_ids` of each bid's bidder."""
        pos = {name: i for i, name in enumerate(self.bidder_ids)}
        return np.fromiter((pos[b.bidder] for b in self.bids), dtype=np.int64, count=len(self.bids))

    @cached_property
    def bids_of_bidder(self) -> Mapping[str, tuple[str, ...]]:
        """Bid ids of each bidder, in instance order."""
        groups: dict[str, list[str]] = {name: [] for name in self.bidder_ids}
        for bid in self.bids:
            groups[bid.bidder].append(bid.id)
        return MappingProxyType({k: tuple(v) for k, v in groups.items()})

    @cached_property
    def budgets(self) -> Mapping[str, float | None]:
        """Budget of every bidder (``None``: unlimited)."""
        out: dict[str, float | None] = {name: None for name in self.bidder_ids}
        for b in self.bidders:
            out[b.id] = b.budget
        return MappingProxyType(out)

    @cached_property
    def values(self) -> np.ndarray:
        """``float64[B]``: bid values."""
        return np.fromiter((b.value for b in self.bids), dtype=np.float64, count=len(self.bids))

    @cached_property
    def _rows(self) -> tuple[tuple[tuple[str, str], ...], np.ndarray, dict[tuple[str, str], int]]:
        labels: list[tuple[str, str]] = []
        caps: list[float] = []
        for s in self.slots:
            for r, c in s.capacity.items():
                labels.append((s.id, r))
                caps.append(c)
        index = {lab: i for i, lab in enumerate(labels)}
        return tuple(labels), np.asarray(caps, dtype=np.float64), index

    @property
    def row_labels(self) -> tuple[tuple[str, str], ...]:
        """``(slot_id, resource)`` of each row of :attr:`capacity_matrix`."""
        return self._rows[0]

    @property
    def capacity(self) -> np.ndarray:
        """``float64[R]``: capacity of each (slot, resource) row."""
        return self._rows[1]

    @cached_property
    def capacity_matrix(self) -> sp.csr_matrix:
        """``csr[R, B]``: demand of each bid (column) on each (slot, resource) row."""
        index = self._rows[2]
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for j, bid in enumerate(self.bids):
            for s, res in bid.demand.items():
                for r, q in res.items():
                    if q != 0.0:
                        rows.append(index[(s, r)])
                        cols.append(j)
                        vals.append(q)
        mat = sp.coo_matrix(
            (np.asarray(vals, dtype=np.float64), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
            shape=(len(index), len(self.bids)),
        )
        return mat.tocsr()

    @cached_property
    def xor_matrix(self) -> sp.csr_matrix:
        """``csr[I, B]``: 1 where bid ``b`` belongs to bidder ``i`` (XOR rows)."""
        n = len(self.bids)
        data = np.ones(n, dtype=np.float64)
        mat = sp.coo_matrix((data, (self.bidder_of_bid, np.arange(n))), shape=(len(self.bidder_ids), n))
        return mat.tocsr()

    @cached_property
    def normalised_size(self) -> np.ndarray:
        """``float64[B]``: sum over rows of demand / capacity (``inf`` when capacity is 0)."""
        mat = self.capacity_matrix.tocoo()
        caps = self.capacity[mat.row]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(caps > 0, mat.data / np.where(caps > 0, caps, 1.0), np.inf)
        size = np.zeros(len(self.bids))
        np.add.at(size, mat.col, frac)
        return size

    # ------------------------------------------------------------------ helpers
    @property
    def n_bids(self) -> int:
        """Number of bids."""
        return len(self.bids)

    @property
    def n_slots(self) -> int:
        """Number of slots."""
        return len(self.slots)

    @property
    def n_bidders(self) -> int:
        """Number of bidders (listed and implicit)."""
        return len(self.bidder_ids)

    def welfare_of(self, winners: Iterable[str]) -> float:
        """Sum of the values of ``winners`` (bid ids); feasibility is not checked."""
        idx = self.bid_index
        return float(sum(self.bids[idx[w]].value for w in winners))

    def replace_bids(self, bids: Iterable[Bid], *, name: str | None = None) -> Instance:
        """A copy with other bids (slots, bidders and metadata kept)."""
        return Instance(self.slots, tuple(bids), self.bidders, self.name if name is None else name, self.metadata)

    def without_bidder(self, bidder: str) -> Instance:
        """A copy with every bid of ``bidder`` removed (used for VCG pivots)."""
        out = self.replace_bids(b for b in self.bids if b.bidder != bidder)
        if self.__dict__.get("_validated"):  # a subset of valid bids stays valid
            out.__dict__["_validated"] = True
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form of the ``gensolver.instance/v1`` JSON document."""
        out: dict[str, Any] = {"schema": SCHEMA, "name": self.name}
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        out["slots"] = [s.to_dict() for s in self.slots]
        out["bids"] = [b.to_dict() for b in self.bids]
        if self.bidders:
            out["bidders"] = [b.to_dict() for b in self.bidders]
        return out

    def __repr__(self) -> str:
        return (
            f"Instance(name={self.name!r}, slots={self.n_slots}, bids={self.n_bids}, "
            f"bidders={self.n_bidders})"
        )
