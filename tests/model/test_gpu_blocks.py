"""Gang placements (:func:`gensolver.model.tasks.aligned_blocks`, behind
:meth:`GpuRound.gpu_groups` and the auction's bundles): checked against the definition written
out independently, every ``k``-subset of GPUs tried."""

from __future__ import annotations

import itertools
import random

import pytest

from gensolver.model.tasks import GpuRound, GpuSpec, Task, aligned_blocks


def _by_definition(nodes: list[str], k: int) -> set[tuple[int, ...]]:
    """Every set of ``k`` GPUs (indices) that are consecutive GPUs of one node, starting at a
    position of that node that is a multiple of ``k``."""
    position = {g: sum(1 for h in range(g) if nodes[h] == nodes[g]) for g in range(len(nodes))}
    out = set()
    for combo in itertools.combinations(range(len(nodes)), k):
        same = len({nodes[g] for g in combo}) == 1
        pos = [position[g] for g in combo]
        if same and pos == list(range(pos[0], pos[0] + k)) and pos[0] % k == 0:
            out.add(combo)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_blocks_are_exactly_the_aligned_gangs_of_one_node(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [rng.choice("abc") for _ in range(rng.randint(1, 9))]  # nodes interleaved in GPU order
    by_node: dict[str, list[int]] = {}
    for g, n in enumerate(nodes):
        by_node.setdefault(n, []).append(g)
    rnd = GpuRound(tuple(GpuSpec(f"g{g}", 80.0, node=n) for g, n in enumerate(nodes)),
                   (Task("t", 10.0, 10.0, 1, 1.0),), steps=4)
    for k in range(1, 5):
        want = _by_definition(nodes, k)
        blocks = aligned_blocks(by_node, k)
        assert set(blocks) == want and len(blocks) == len(want), (nodes, k)
        assert set(rnd.gpu_groups(k)) == want
    assert rnd.gpu_groups(1) == [(g,) for g in range(len(nodes))]  # single GPUs in GPU order


def test_the_definition_rejects_a_misaligned_block() -> None:
    """The reference can fail: a block starting off a multiple of ``k`` is not a gang."""
    assert (1, 2) not in _by_definition(["a", "a", "a", "a"], 2)
    assert _by_definition(["a", "a", "a", "a"], 2) == {(0, 1), (2, 3)}
    assert _by_definition(["a", "b", "a"], 2) == {(0, 2)}
