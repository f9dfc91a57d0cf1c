"""Definitions of the bundled suites (the seeds and parameters behind ``gensolver/data/suites/*/manifest.json``).

``gensolver suite build NAME`` regenerates a suite from these definitions and records best
known values; the manifests are committed, so normal use only reads them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CATALOG"]


def _cats(prefix: str, goods: int, bids: int, families: tuple[str, ...], seed0: int = 0) -> list[dict[str, Any]]:
    out = []
    for k, fam in enumerate(families):
        if fam == "paths":
            params: dict[str, Any] = {"n_cities": max(8, goods // 4), "n_bids": bids}
        else:
            params = {"n_goods": goods, "n_bids": bids}
        out.append({"name": f"{prefix}-{fam}", "family": fam, "params": params, "seed": seed0 + k})
    return out


def _gpu(prefix: str, gpus: int, tasks: int, steps: int, seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    return [{"name": f"{prefix}-gpu-{s}", "family": "gpu",
             "params": {"n_gpus": gpus, "n_tasks": tasks, "steps": steps, "per_node": 4}, "seed": s} for s in seeds]


def _trace(prefix: str, gpus: int, tasks: int, steps: int, seed: int) -> list[dict[str, Any]]:
    return [{"name": f"{prefix}-{src}", "family": f"trace-{src}",
             "params": {"n_gpus": gpus, "max_tasks": tasks, "steps": steps}, "seed": seed} for src in ("alibaba", "philly")]


#: name -> description, committed (instance files in git), per_solve_limit (the ``time_limit`` of each
#: solve for the best known values), instances
CATALOG: dict[str, dict[str, Any]] = {
    "smoke": {
        "description": "tiny instances of several families; seconds in total (make demo, CI)",
        "committed": True, "per_solve_limit": 10.0,
        "instances": [
            *_cats("smoke", 12, 20, ("arbitrary", "regions", "paths", "matching", "scheduling", "L3")),
            *_gpu("smoke", 2, 4, 3, (0,)),
            *_trace("smoke", 4, 4, 3, 0),
        ],
    },
    "small": {
        "description": "CATS 64 goods x 200 bids, GPU rounds of 8 GPUs, trace snapshots",
        "committed": True, "per_solve_limit": 30.0,
        "instances": [
            *_cats("small", 64, 200, ("arbitrary", "regions", "paths", "matching", "scheduling",
                                      "L2", "L3", "L4", "L6", "L7"), seed0=100),
            *_gpu("small", 8, 20, 6, (1, 2)),
            *_trace("small", 8, 12, 6, 3),
        ],
    },
    "medium": {
        "description": "CATS 128 goods x 500 bids, GPU rounds of 16 GPUs; generated from seeds on demand",
        "committed": False, "per_solve_limit": 60.0,
        "instances": [
            *_cats("medium", 128, 500, ("arbitrary", "regions", "paths", "matching", "scheduling", "L3", "L7"),
                   seed0=200),
            *_gpu("medium", 16, 60, 8, (11, 12)),
            *_trace("medium", 16, 40, 8, 13),
        ],
    },
    "large": {
        "description": "CATS 256 goods x 2000 bids, GPU rounds of 64 GPUs; generated from seeds on demand",
        "committed": False, "per_solve_limit": 60.0,
        "instances": [
            *_cats("large", 256, 2000, ("arbitrary", "regions", "paths", "matching", "scheduling", "L3"), seed0=300),
            *_gpu("large", 32, 120, 10, (21,)),
            *_trace("large", 64, 200, 12, 23),
        ],
    },
}
