"""Instance generators and the family registry :func:`generate`.

Families
--------
- CATS (Leyton-Brown, Pearson & Shoham, EC 2000): ``arbitrary``, ``regions``, ``paths``,
  ``matching``, ``scheduling`` and the legacy ``L1`` ... ``L7`` (:mod:`.cats`).
- GPU sharing: ``gpu`` (synthetic heterogeneous round, :func:`.gpu.gpu_round`),
  ``trace-alibaba`` and ``trace-philly`` (queue snapshots of real traces,
  :func:`.gpu.trace_round`), expanded with :meth:`gensolver.model.GpuRound.expand`.

Every generator is deterministic for a seed (a :class:`numpy.random.Generator` seeded once).

Examples
--------
>>> from gensolver.instances import generate
>>> inst = generate("scheduling", seed=3, n_goods=16, n_bids=20)
>>> inst.n_slots
16
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..errors import InputTypeError, UnknownNameError
from ..model import Instance
from ..registry import Registry
from . import cats, gpu
from .cats import LEGACY, arbitrary, legacy, matching, paths, regions, scheduling
from .gpu import GPU_MEMORIES, default_trace_dir, gpu_round, trace_round, user_trace_dir

__all__ = [
    "generate",
    "list_families",
    "register_family",
    "FAMILIES",
    "Family",
    "UnknownFamilyError",
    "arbitrary",
    "regions",
    "paths",
    "matching",
    "scheduling",
    "legacy",
    "gpu_round",
    "trace_round",
    "default_trace_dir",
    "user_trace_dir",
    "GPU_MEMORIES",
    "LEGACY",
]


class UnknownFamilyError(UnknownNameError):
    """An unknown generator family; the message lists the valid ones."""


@dataclass(frozen=True)
class Family:
    """A registered generator: ``build(seed=..., **params) -> Instance`` and a description."""

    name: str
    build: Callable[..., Instance]
    description: str
    needs_traces: bool = False


def _expanding(family: str, make: Callable[..., Any]) -> Callable[..., Instance]:
    def build(*, seed: int, **params: Any) -> Instance:
        rnd = make(seed=seed, **params)
        inst = rnd.expand()
        meta = dict(inst.metadata)
        meta.update({"family": family, "seed": seed, "params": params})
        return Instance(inst.slots, inst.bids, inst.bidders, inst.name, meta)
    return build


def _legacy(kind: str) -> Callable[..., Instance]:
    def build(*, seed: int, **params: Any) -> Instance:
        return legacy(kind, seed=seed, **params)
    return build


#: every generator family by name (:func:`register_family` adds one)
FAMILIES: Registry[Family] = Registry("instance family", plural="", error=UnknownFamilyError, sort=False)


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Add ``family`` under its name; a name already taken is refused unless ``replace=True``."""
    if not isinstance(family, Family):
        raise InputTypeError(f"register_family() takes a Family, got {type(family).__name__}")
    FAMILIES.register(family.name, family, replace=replace)
    return family


for _family in {
    "arbitrary": Family("arbitrary", cats.arbitrary, "CATS arbitrary relationships (random compatibility)"),
    "regions": Family("regions", cats.regions, "CATS regions (spatial proximity on a grid)"),
    "paths": Family("paths", cats.paths, "CATS paths in space (transport links)"),
    "matching": Family("matching", cats.matching, "CATS matching (airport take-off/landing slots)"),
    "scheduling": Family("scheduling", cats.scheduling, "CATS temporal scheduling (time slots of a machine)"),
    **{k: Family(k, _legacy(k), f"CATS legacy distribution {k}") for k in LEGACY},
    "gpu": Family("gpu", _expanding("gpu", gpu.gpu_round), "synthetic GPU-sharing round on heterogeneous GPUs (24/40/80/141 GB)"),
    "trace-alibaba": Family("trace-alibaba", _expanding("trace-alibaba", lambda **kw: gpu.trace_round("alibaba", **kw)),
                            "queue snapshot of the Alibaba 2023 GPU trace (Weng et al., ATC 2023)", True),
    "trace-philly": Family("trace-philly", _expanding("trace-philly", lambda **kw: gpu.trace_round("philly", **kw)),
                           "queue snapshot of the Philly trace (Jeon et al., ATC 2019)", True),
}.values():
    register_family(_family)


def list_families() -> tuple[Family, ...]:
    """Every registered family."""
    return tuple(FAMILIES.values())


def generate(family: str, *, seed: int, **params: Any) -> Instance:
    """Generate one instance of ``family``.

    Parameters
    ----------
    family : str
        A registered family (:func:`list_families`).
    seed : int, keyword-only
        Seed of the family's :class:`numpy.random.Generator`.
    **params
        The family's parameters (see its generator's docstring).

    Returns
    -------
    Instance
        Validated; ``metadata`` records ``family``, ``seed`` and ``params``.

    Raises
    ------
    UnknownFamilyError
        Unknown ``family`` (the message lists the valid ones).
    ValueError, TypeError
        Bad parameters.
    """
    return FAMILIES.get(family).build(seed=seed, **params)
