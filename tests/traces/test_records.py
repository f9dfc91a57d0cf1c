"""The documented memory model of the traces (:mod:`gensolver.traces.records`): every draw on
the half- or quarter-GiB grid, within the stated clip, the minimum never above the preferred,
checked draw by draw on many seeds."""

from __future__ import annotations

import numpy as np
import pytest

from gensolver.traces.records import (
    MIN_MEMORY_FRACTION,
    PHILLY_CLIP_GIB,
    PHILLY_MEDIAN_GIB,
    min_memory,
    philly_preferred_memory,
)


@pytest.mark.parametrize("seed", range(5))
def test_preferred_memory_is_on_the_half_gib_grid_within_the_clip(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gpus = rng.integers(1, 65, size=2000)
    pref = philly_preferred_memory(gpus, rng)
    lo, hi = PHILLY_CLIP_GIB
    assert pref.shape == gpus.shape and np.all((lo <= pref) & (pref <= hi))
    assert np.all(pref * 2 == np.round(pref * 2))
    # the median of each size class is the documented one (a log-normal around it), within the grid
    for k, (start, med) in enumerate(PHILLY_MEDIAN_GIB):
        end = PHILLY_MEDIAN_GIB[k + 1][0] if k + 1 < len(PHILLY_MEDIAN_GIB) else np.inf
        mine = pref[(gpus >= start) & (gpus < end)]
        if mine.size > 200 and lo < med < hi:
            assert abs(float(np.median(mine)) - med) <= 0.15 * med + 0.5, (start, med, np.median(mine))


@pytest.mark.parametrize("seed", range(5))
def test_min_memory_is_a_quarter_gib_share_of_preferred(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pref = np.round(rng.uniform(0.5, 80, size=2000) * 2) / 2  # the preferred memories the readers make
    mins = min_memory(pref, rng)
    lo, hi = MIN_MEMORY_FRACTION
    assert np.all((0 < mins) & (mins <= pref))
    assert np.all(mins * 4 == np.round(mins * 4))
    # the share is U[lo, hi] before rounding to a quarter GiB: within a quarter of those bounds
    assert np.all(mins >= np.minimum(pref, np.maximum(lo * pref - 0.125, 0.25)) - 1e-12)
    assert np.all(mins <= hi * pref + 0.125 + 1e-12)
