"""Shared helpers of the generators: seeds, parameter checks, CATS-style instance assembly."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError, check_seed
from ..model import Bid, Instance, Slot, validate
from ..model.inputs import check_size, max_generated_goods, max_tasks

__all__ = ["rng_of", "check_int", "check_prob", "check_pos", "remove_dominated", "single_unit_instance"]

Bundle = tuple[tuple[int, ...], float]


def rng_of(seed: int | np.random.Generator) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from an integer seed (or the generator itself)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(check_seed(seed))


#: the size parameters of the generators and the limits they are checked against (the size
#: model: a generator's work is linear in its bids or tasks and at most quadratic in its goods,
#: e.g. the n_goods x n_goods compatibility matrix of ``arbitrary``)
_SIZE_LIMITS = {
    "n_bids": ("GENSOLVER_MAX_TASKS", max_tasks, "bids"),
    "n_tasks": ("GENSOLVER_MAX_TASKS", max_tasks, "tasks"),
    "max_tasks": ("GENSOLVER_MAX_TASKS", max_tasks, "tasks"),
    "n_goods": ("GENSOLVER_MAX_GENERATED_GOODS", max_generated_goods, "goods"),
    "n_cities": ("GENSOLVER_MAX_GENERATED_GOODS", max_generated_goods, "cities"),
    "n_gpus": ("GENSOLVER_MAX_GENERATED_GOODS", max_generated_goods, "GPUs"),
}


def check_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or an :class:`InputError` naming ``name``; a size
    parameter (``n_bids``, ``n_goods``, ...) is also checked against its documented limit."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if name in _SIZE_LIMITS:
        variable, limit, what = _SIZE_LIMITS[name]
        check_size(name, int(value), limit(), variable, what)
    return int(value)


def check_prob(name: str, value: Any) -> float:
    """``value`` as a probability in [0, 1], or a ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InputError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def check_pos(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """``value`` as a finite positive (or non-negative) float, or a ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"{name} must be a finite {'non-negative' if allow_zero else 'positive'} number, got {value!r}")
    return float(value)


def remove_dominated(bids: Sequence[Bundle]) -> list[Bundle]:
    """Drop every bid of one bidder dominated by another: a subset (or equal) bundle at a price
    at least as high. Of two identical bids the first is kept (CATS's default filtering)."""
    keep: list[Bundle] = []
    sets = [frozenset(g) for g, _ in bids]
    for i, (goods, price) in enumerate(bids):
        dominated = False
        for j, (_, other) in enumerate(bids):
            if i == j or not sets[j] <= sets[i] or other < price:
                continue
            if sets[j] == sets[i] and other == price and j > i:
                continue  # identical: keep the first
            dominated = True
            break
        if not dominated:
            keep.append((tuple(goods), float(price)))
    return keep


def single_unit_instance(n_goods: int, bidders: Sequence[Sequence[Bundle]], *, name: str,
                         metadata: Mapping[str, Any]) -> Instance:
    """Assemble a CATS-style instance: goods ``g0..`` with ``{"units": 1}``, bids ``b0..``.

    A bidder with several bids is an XOR bidder ``d<k>`` (CATS's dummy good ``k``, numbered in
    order of first bid); a bidder with one bid is its own bidder ``b<j>`` (CATS drops dummy goods
    used by one bid). This naming is exactly what :func:`gensolver.model.parse_cats` reads back,
    so CATS text written from these instances reads back identically.
    """
    slots = tuple(Slot(f"g{k}", {"units": 1.0}) for k in range(n_goods))
    out: list[Bid] = []
    dummy = 0
    for bids in bidders:
        if not bids:
            continue
        owner = None
        if len(bids) > 1:
            owner = f"d{dummy}"
            dummy += 1
        for goods, price in bids:
            j = len(out)
            out.append(Bid(f"b{j}", owner or f"b{j}", float(price), {f"g{g}": {"units": 1.0} for g in goods}))
    return validate(Instance(slots, tuple(out), (), name, dict(metadata)))
