"""The one place where instance input is checked.

Every reader (JSON, CATS, plain dicts handed to :func:`gensolver.solve`) goes through
:func:`from_dict` (for documents) or :func:`validate` (for model objects built by hand) before
any solver runs. Each error is an :class:`InstanceError` whose ``pointer`` is a JSON pointer
(RFC 6901) to the offending place, e.g. ``/bids/3/demand/g7t2/memory``.
"""

from __future__ import annotations

import difflib
import math
import numbers
import sys
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import InputError
from .instance import SCHEMA, Bid, Bidder, Instance, Slot

__all__ = ["InstanceError", "from_dict", "validate", "coerce_instance", "mark_validated", "check_totals", "is_integer",
           "is_real", "is_finite_real", "digits"]


class InstanceError(InputError):
    """Invalid instance input.

    Attributes
    ----------
    pointer : str
        JSON pointer to the offending place (``""`` for the whole document).
    reason : str
        What is wrong there.
    """

    def __init__(self, pointer: str, reason: str) -> None:
        self.pointer = pointer
        self.reason = reason
        super().__init__(f"{pointer or '/'}: {reason}")


def _esc(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def is_integer(value: Any) -> bool:
    """An integer, NumPy's included; ``bool`` is not (the one test of "an integer" in input checks)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_real(value: Any) -> bool:
    """A real number (int, float, NumPy scalars), possibly NaN or infinite; ``bool`` is not."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def is_finite_real(value: Any) -> bool:
    """A finite real number (``bool`` is not): NaN, the infinities and integers beyond a double's
    range are not (``math.isfinite`` raises ``OverflowError`` on those)."""
    if not is_real(value):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def digits(value: int) -> str:
    """``"about N digits"`` for an integer too large to print (Python refuses ``str`` of an int
    over 4,300 digits), from its bit length."""
    return f"about {max(1, int(abs(value).bit_length() * math.log10(2)))} digits"


def _number(value: Any, where: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    # any real number (NumPy's integer and float scalars included); bool is not a quantity
    if not is_real(value):
        raise InstanceError(where, f"expected a number, got {type(value).__name__} {value!r}")
    try:
        val = float(value)
    except OverflowError:  # an integer beyond a double's range
        raise InstanceError(where, f"number too large ({digits(int(value))}; at most about 1.8e308)") from None
    if math.isnan(val):
        raise InstanceError(where, "NaN is not allowed")
    if math.isinf(val):
        raise InstanceError(where, "infinite values are not allowed")
    if val < 0:
        raise InstanceError(where, f"must be non-negative, got {val!r}")
    return val


def _ident(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InstanceError(where, f"expected a string id, got {type(value).__name__} {value!r}")
    if not value:
        raise InstanceError(where, "ids must be non-empty strings")
    return value


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InstanceError(where, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str, *, allow_empty: bool = False) -> Sequence[Any]:
    if not isinstance(value, (list, tuple)):
        raise InstanceError(where, f"expected a list, got {type(value).__name__}")
    if not value and not allow_empty:
        raise InstanceError(where, "must not be empty")
    return value


_TOP_KEYS = ("schema", "name", "metadata", "slots", "bids", "bidders")
_SLOT_KEYS = ("id", "capacity", "gpu", "start", "end")
_BID_KEYS = frozenset(("id", "bidder", "value", "demand"))
_BIDDER_KEYS = ("id", "budget")


def _no_typos(raw: Mapping[str, Any], known: Sequence[str] | frozenset[str], where: str) -> None:
    """Refuse a key that is not in ``known`` but close to one (``budjet``): it would otherwise
    be ignored and the default used. Keys unlike any known one (a producer's own annotations)
    are left alone, as the format does not forbid them."""
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.75)
            if close:
                raise InstanceError(f"{where}/{_esc(str(key))}", f"unknown field (did you mean {close[0]!r}?)")


def _slot(raw: Any, where: str) -> Slot:
    raw = _obj(raw, where)
    _no_typos(raw, _SLOT_KEYS, where)
    sid = _ident(raw.get("id"), f"{where}/id")
    cap_raw = _obj(raw.get("capacity"), f"{where}/capacity")
    if not cap_raw:
        raise InstanceError(f"{where}/capacity", "must name at least one resource")
    cap: dict[str, float] = {}
    for r, c in cap_raw.items():
        cap[_ident(r, f"{where}/capacity")] = _number(c, f"{where}/capacity/{_esc(r)}")  # type: ignore[assignment]
    gpu = raw.get("gpu")
    if gpu is not None and not isinstance(gpu, str):
        raise InstanceError(f"{where}/gpu", f"expected a string, got {type(gpu).__name__}")
    start = _number(raw.get("start"), f"{where}/start", allow_none=True)
    end = _number(raw.get("end"), f"{where}/end", allow_none=True)
    if start is not None and end is not None and end < start:
        raise InstanceError(f"{where}/end", f"end {end} is before start {start}")
    return Slot(sid, cap, gpu, start, end)


_INF = float("inf")
#: the largest integer a float holds (a larger one overflows ``float()``)
_MAX_FLOAT_INT = int(sys.float_info.max)


def _ok_number(q: Any) -> bool:
    """Fast check for the common case (a finite, non-negative int or float)."""
    t = type(q)
    return (t is float and 0 <= q < _INF) or (t is int and 0 <= q <= _MAX_FLOAT_INT)


def _bid(raw: Any, where: str, caps: Mapping[str, Mapping[str, float]]) -> Bid:
    # Pointer strings are built only on the error path: this loop runs once per demand entry
    # of every bid, so reading large instances stays fast.
    if type(raw) is not dict:
        raw = _obj(raw, where)
    if len(raw) != 4 or raw.keys() != _BID_KEYS:  # the usual four keys skip the typo check
        _no_typos(raw, _BID_KEYS, where)
    bid_id = raw.get("id")
    if type(bid_id) is not str or not bid_id:
        _ident(bid_id, f"{where}/id")
    bidder = raw.get("bidder")
    if type(bidder) is not str or not bidder:
        _ident(bidder, f"{where}/bidder")
    value = raw.get("value")
    if not _ok_number(value):
        _number(value, f"{where}/value")
    dem_raw = raw.get("demand")
    if type(dem_raw) is not dict:
        dem_raw = _obj(dem_raw, f"{where}/demand")
    if not dem_raw:
        raise InstanceError(f"{where}/demand", "must name at least one slot")
    demand: dict[str, dict[str, float]] = {}
    for s, res in dem_raw.items():
        slot_caps = caps.get(s)
        if slot_caps is None:
            raise InstanceError(f"{where}/demand/{_esc(s)}", f"unknown slot {s!r}")
        if type(res) is not dict:
            res = _obj(res, f"{where}/demand/{_esc(s)}")
        if not res:
            raise InstanceError(f"{where}/demand/{_esc(s)}", "must name at least one resource")
        converted = None
        for r, q in res.items():
            if r not in slot_caps:
                raise InstanceError(f"{where}/demand/{_esc(s)}/{_esc(r)}",
                                    f"unknown resource {r!r} of slot {s!r} (it has {sorted(slot_caps)})")
            if not _ok_number(q):  # slow path: checked, and stored as a float (NumPy scalars)
                if converted is None:
                    converted = dict(res)
                converted[r] = _number(q, f"{where}/demand/{_esc(s)}/{_esc(r)}")
        demand[s] = res if converted is None else converted
    return Bid(bid_id, bidder, float(value), demand)


def from_dict(doc: Any, *, require_schema: bool = True) -> Instance:
    """Validate a ``gensolver.instance/v1`` document and build the :class:`Instance`.

    Parameters
    ----------
    doc : Mapping
        The parsed JSON document.
    require_schema : bool, keyword-only
        If true (default), ``doc["schema"]`` must be ``"gensolver.instance/v1"``.

    Raises
    ------
    InstanceError
        With a JSON pointer to the first offending place.
    """
    doc = _obj(doc, "")
    if isinstance(doc, Mapping):
        _no_typos(doc, _TOP_KEYS, "")
    schema = doc.get("schema")
    if require_schema or schema is not None:
        if schema != SCHEMA:
            raise InstanceError("/schema", f"expected {SCHEMA!r}, got {schema!r}")
    name = doc.get("name", "")
    if name is None:
        name = ""
    if not isinstance(name, str):
        raise InstanceError("/name", f"expected a string, got {type(name).__name__}")
    metadata = doc.get("metadata") or {}
    metadata = _obj(metadata, "/metadata")
    slots = [_slot(s, f"/slots/{k}") for k, s in enumerate(_list(doc.get("slots"), "/slots"))]
    caps: dict[str, Mapping[str, float]] = {}
    for k, s in enumerate(slots):
        if s.id in caps:
            raise InstanceError(f"/slots/{k}/id", f"duplicate slot id {s.id!r}")
        caps[s.id] = s.capacity
    bids = [_bid(b, f"/bids/{j}", caps) for j, b in enumerate(_list(doc.get("bids"), "/bids"))]
    seen: set[str] = set()
    for j, b in enumerate(bids):
        if b.id in seen:
            raise InstanceError(f"/bids/{j}/id", f"duplicate bid id {b.id!r}")
        seen.add(b.id)
    bidders: list[Bidder] = []
    raw_bidders = doc.get("bidders")
    if raw_bidders is not None:
        names: set[str] = set()
        for i, raw in enumerate(_list(raw_bidders, "/bidders", allow_empty=True)):
            raw = _obj(raw, f"/bidders/{i}")
            _no_typos(raw, _BIDDER_KEYS, f"/bidders/{i}")
            bid_id = _ident(raw.get("id"), f"/bidders/{i}/id")
            if bid_id in names:
                raise InstanceError(f"/bidders/{i}/id", f"duplicate bidder id {bid_id!r}")
            names.add(bid_id)
            budget = _number(raw.get("budget"), f"/bidders/{i}/budget", allow_none=True)
            bidders.append(Bidder(bid_id, budget))
    instance = Instance(tuple(slots), tuple(bids), tuple(bidders), name, metadata)
    check_totals(instance)
    return mark_validated(instance)


def validate(instance: Instance) -> Instance:
    """Check an :class:`Instance` built from model objects; return it unchanged.

    Runs the same checks as :func:`from_dict` on the instance's dict form, so objects built by
    hand get the same errors (and JSON pointers) as files.
    """
    if not instance.__dict__.get("_validated"):
        from_dict(instance.to_dict())
        mark_validated(instance)
    return instance


def coerce_instance(bids: Any, slots: Any = None, bidders: Any = None, *, name: str = "") -> Instance:
    """Turn the arguments of :func:`gensolver.solve` into a validated :class:`Instance`.

    ``bids`` may be an :class:`Instance` or a whole ``gensolver.instance/v1`` document (a dict
    with ``slots`` and ``bids``; then ``slots`` and ``bidders`` must be ``None``), or a sequence
    of :class:`Bid` objects or plain dicts; ``slots`` likewise with :class:`Slot` objects or dicts.
    """
    whole = isinstance(bids, Instance) or (isinstance(bids, Mapping) and "bids" in bids and "slots" in bids)
    if whole:
        if slots is not None or bidders is not None:
            extra = "/slots" if slots is not None else "/bidders"
            raise InstanceError(extra, "pass either an Instance or (bids, slots[, bidders]), not both "
                                       "(an instance document counts as an Instance)")
        return validate(bids) if isinstance(bids, Instance) else mark_validated(from_dict(bids))
    if bids is None or isinstance(bids, (str, bytes, Mapping)) or not isinstance(bids, Iterable):
        raise InstanceError("/bids", f"expected an Instance, an instance document or a sequence of bids, "
                                     f"got {type(bids).__name__}")
    if slots is None:
        raise InstanceError("/slots", "slots are required when bids are not an Instance")
    doc = {
        "schema": SCHEMA,
        "name": name,
        "slots": [s.to_dict() if isinstance(s, Slot) else s for s in _list(slots, "/slots")],
        "bids": [b.to_dict() if isinstance(b, Bid) else b for b in _list(bids, "/bids")],
    }
    if bidders is not None:
        doc["bidders"] = [b.to_dict() if isinstance(b, Bidder) else b for b in bidders]
    return mark_validated(from_dict(doc))


def check_totals(instance: Instance) -> None:
    """Welfare and per-slot demand totals must be finite doubles.

    Each value is finite, but two values of 1e308 sum to infinity: the welfare of an allocation
    (at most the sum over bidders of their largest value) and the total demand on a slot's
    resource must stay representable, or solvers, certificates and output overflow.
    """
    best: dict[str, float] = {}
    for b in instance.bids:
        if b.value > best.get(b.bidder, 0.0):
            best[b.bidder] = b.value
    if not math.isfinite(sum(best.values())):
        raise InstanceError("/bids", "bid values overflow: the bidders' largest values sum to more than the largest "
                                     "double (about 1.8e308); scale the values down")
    totals: dict[tuple[str, str], float] = {}
    for j, b in enumerate(instance.bids):
        for s, res in b.demand.items():
            for r, q in res.items():
                t = totals.get((s, r), 0.0) + q
                if not math.isfinite(t):
                    raise InstanceError(f"/bids/{j}/demand/{_esc(s)}/{_esc(r)}",
                                        f"the demands on slot {s!r} resource {r!r} sum to more than the largest "
                                        "double (about 1.8e308); scale the quantities down")
                totals[s, r] = t


def mark_validated(instance: Instance) -> Instance:
    """Record that ``instance`` is valid without checking it again, and return it.

    Only for instances built from the parts of instances already validated in ways that keep
    them valid (a subset of the bids, bids with other values, the same slots):
    :func:`validate` then returns them at once. Anything else must go through
    :func:`validate` or :func:`from_dict`.
    """
    instance.__dict__["_validated"] = True
    return instance


#: the former private name, still imported by mechanisms/vcg.py (kept until that module moves)
