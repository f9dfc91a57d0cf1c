"""The one internal form of the welfare problem: :class:`MatrixProblem`, and what is read off it.

:class:`MatrixProblem` holds exactly what every solver needs — values, the sparse capacity
matrix (CSC), capacities and the XOR owner of each column — without any per-bid Python
objects. :func:`from_instance` reuses the instance's cached matrices; :func:`from_round` builds
the matrix of a :class:`~gensolver.model.GpuRound` *vectorised* from its bundle options, so a
round of hundreds of thousands of bundles never materialises :class:`~gensolver.model.Bid`
objects (columns become bids only when chosen).

The same module owns what is computed from the form in one place: residual capacities and
which columns fit them (:func:`fit_mask`), the feasibility check of an answer
(:meth:`MatrixProblem.violation`), the XOR groups of the backends' models (:func:`xor_groups`)
and the LOS ranking key (:func:`los_key`).

References
----------
Lehmann, O'Callaghan & Shoham, "Truth revelation in approximately efficient combinatorial
auctions", J. ACM 49(5), 2002 (the ranking key).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ...model import Instance
from ...model.tasks import GpuRound, task_steps, task_value
from ...model.tolerances import boundary_guard, capacity_limit

__all__ = ["MatrixProblem", "from_instance", "from_round", "RoundColumns", "round_columns", "column_ranges",
           "fit_mask", "violation", "xor_groups", "los_key"]


def column_ranges(indptr: np.ndarray, chunk_nnz: int):
    """Consecutive column ranges ``(a, b)`` of a CSC matrix with about ``chunk_nnz`` non-zeros
    each (at least one column each), for vectorised passes with bounded temporaries."""
    n = indptr.size - 1
    a = 0
    while a < n:
        b = int(np.searchsorted(indptr, indptr[a] + chunk_nnz, side="right")) - 1
        b = min(n, max(b, a + 1))
        yield a, b
        a = b


@dataclass(frozen=True, eq=False)
class MatrixProblem:
    """``max v.x  s.t.  A x <= cap,  sum_{owner(j)=i} x_j <= 1,  x binary``.

    Attributes
    ----------
    values : float64[n]
    A : csc_matrix [rows, n]
    cap : float64[rows]
    owner : int64[n]
        XOR group (bidder) of each column.
    n_owners : int
    column_id : callable
        ``column_id(j) -> str``: the bid id of column ``j``.
    rows : csr_matrix or None
        ``A`` by rows, when already at hand (an instance's ``capacity_matrix``); else built on
        first use of :attr:`A_rows`.
    """

    values: np.ndarray
    A: sp.csc_matrix
    cap: np.ndarray
    owner: np.ndarray
    n_owners: int
    column_id: Callable[[int], str]
    rows: sp.csr_matrix | None = field(default=None, repr=False)

    @cached_property
    def A_rows(self) -> sp.csr_matrix:
        """``A`` in CSR form (row by row, for the backends' constraint rows)."""
        return self.rows if self.rows is not None else self.A.tocsr()

    @cached_property
    def limit(self) -> np.ndarray:
        """The largest use of every row the capacity rule admits
        (:func:`gensolver.model.tolerances.capacity_limit` of ``cap``)."""
        return capacity_limit(np.asarray(self.cap, dtype=np.float64))

    @property
    def n(self) -> int:
        """Number of columns (bids)."""
        return int(self.values.shape[0])

    @property
    def X(self) -> sp.csr_matrix:
        """XOR rows as a sparse matrix ``[n_owners, n]``."""
        return sp.csr_matrix((np.ones(self.n), (self.owner, np.arange(self.n))), shape=(self.n_owners, self.n))

    def normalised_size(self, chunk_nnz: int = 1 << 20) -> np.ndarray:
        """``sum_rows A / cap`` per column (inf when a capacity is 0); in chunks of columns, so
        the temporaries stay small on matrices of millions of non-zeros."""
        A = self.A
        size = np.zeros(self.n)
        for a, b in column_ranges(A.indptr, chunk_nnz):
            lo, hi = A.indptr[a], A.indptr[b]
            caps = self.cap[A.indices[lo:hi]]
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(caps > 0, A.data[lo:hi] / np.where(caps > 0, caps, 1.0), np.inf)
            col = np.repeat(np.arange(b - a), np.diff(A.indptr[a:b + 1]))
            size[a:b] = np.bincount(col, weights=frac, minlength=b - a)
        return size

    def residual(self, x: np.ndarray) -> np.ndarray:
        """Capacity left by the 0/1 vector ``x`` (negative where ``x`` overfills a row)."""
        return self.cap - self.A @ x

    def violation(self, x: np.ndarray) -> tuple[str, int, float] | None:
        """The first way ``x`` breaks the problem (see :func:`violation`)."""
        return violation(self.A, self.cap, self.owner, self.n_owners, x)

    def feasible(self, x: np.ndarray) -> bool:
        """Whether the 0/1 vector ``x`` fits every capacity (within the format's tolerance)
        and gives every owner at most one column."""
        return self.violation(x) is None

    def without_owner(self, owner: int) -> MatrixProblem:
        """The same problem with every column of ``owner`` worth 0 (a VCG pivot)."""
        return MatrixProblem(np.where(self.owner == owner, 0.0, self.values), self.A, self.cap, self.owner,
                             self.n_owners, self.column_id, self.rows)


def violation(A: sp.spmatrix, cap: np.ndarray, owner: np.ndarray, n_owners: int,
              x: np.ndarray) -> tuple[str, int, float] | None:
    """The feasibility check of a 0/1 vector ``x``: the first way it breaks the capacity rule
    (:mod:`gensolver.model.tolerances`: the exact sum of a row's demands at most
    ``capacity_limit(cap)``), ``("capacity", row, use)``, or the XOR rows,
    ``("xor", owner, wins)``; ``None`` when it is feasible. Rows whose floating-point use is
    within :func:`~gensolver.model.tolerances.boundary_guard` of the limit are re-summed with
    :func:`math.fsum`, so the answer does not depend on the order of the columns."""
    use = A @ x
    limit = capacity_limit(np.asarray(cap, dtype=np.float64))
    over = use - limit
    near = np.flatnonzero(np.abs(over) <= boundary_guard(limit))
    if near.size:
        exact = exact_row_use(A, x, near)
        use = use.copy()
        use[near] = exact
        over[near] = exact - limit[near]
        over[near[exact <= limit[near]]] = 0.0
    bad = np.flatnonzero(over > 0)
    if bad.size:
        return "capacity", int(bad[0]), float(use[bad[0]])
    per_owner = np.bincount(owner, weights=x, minlength=n_owners)
    bad = np.flatnonzero(per_owner > 1.5)
    if bad.size:
        return "xor", int(bad[0]), float(per_owner[bad[0]])
    return None


def exact_row_use(A: sp.spmatrix, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The correctly rounded use (:func:`math.fsum`) of ``rows`` by the 0/1 vector ``x``."""
    import math

    sub = sp.csr_matrix(A)[np.asarray(rows, dtype=np.int64)]
    sel = x[sub.indices] > 0.5
    out = np.empty(sub.shape[0])
    for k in range(sub.shape[0]):
        lo, hi = sub.indptr[k], sub.indptr[k + 1]
        out[k] = math.fsum(sub.data[lo:hi][sel[lo:hi]].tolist())
    return out


def fit_mask(A: sp.csc_matrix, cols: np.ndarray | None, residual: np.ndarray, chunk_nnz: int = 1 << 20) -> np.ndarray:
    """Which of ``cols`` (``None``: every column) fit ``residual`` on their own (vectorised
    over their non-zeros; ``residual`` includes any tolerance).

    Works through the columns in chunks of about ``chunk_nnz`` non-zeros, so the temporaries
    stay a few MB even on matrices of millions of non-zeros.
    """
    if cols is None:
        ok = np.ones(A.shape[1], dtype=bool)
        for a, b in column_ranges(A.indptr, chunk_nnz):
            lo, hi = A.indptr[a], A.indptr[b]
            bad = A.data[lo:hi] > residual[A.indices[lo:hi]]
            if bad.any():
                ok[a + np.repeat(np.arange(b - a), np.diff(A.indptr[a:b + 1]))[bad]] = False
        return ok
    cols = np.asarray(cols, dtype=np.int64)
    ok = np.ones(cols.size, dtype=bool)
    per_col = max(1, A.nnz // max(1, A.shape[1]))
    step = max(1, chunk_nnz // per_col)
    for s0 in range(0, cols.size, step):
        sub = A[:, cols[s0:s0 + step]]
        bad = sub.data > residual[sub.indices]
        if bad.any():
            ok[s0 + np.repeat(np.arange(sub.shape[1]), np.diff(sub.indptr))[bad]] = False
    return ok


def xor_groups(owners: np.ndarray) -> list[list[int]]:
    """Positions (into ``owners``) of every owner that appears at least twice, by owner,
    each in ascending order: the ``sum x <= 1`` rows of a backend's model."""
    owners = np.asarray(owners)
    order = np.argsort(owners, kind="stable")
    so = owners[order]
    cuts = np.flatnonzero(np.r_[True, so[1:] != so[:-1], True])
    return [order[a:b].tolist() for a, b in zip(cuts[:-1], cuts[1:]) if b - a > 1]


def los_key(values: np.ndarray, size: np.ndarray, alpha: float) -> np.ndarray:
    """The LOS ranking key ``value / size**alpha`` (``inf`` for a column of size 0).

    ``alpha = 0.5`` is Lehmann, O'Callaghan & Shoham's rule, 1 ranks by value density, 0 by
    value."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(size > 0, values / np.power(np.where(size > 0, size, 1.0), alpha), np.inf)


def from_instance(instance: Instance) -> MatrixProblem:
    """The matrix view of an explicit instance (matrices cached on the instance)."""
    bids = instance.bids
    return MatrixProblem(
        instance.values,
        instance.capacity_matrix.tocsc(),
        instance.capacity,
        instance.bidder_of_bid,
        instance.n_bidders,
        lambda j: bids[j].id,
        instance.capacity_matrix,
    )


@dataclass(frozen=True, eq=False)
class RoundColumns:
    """Bundle options of a :class:`GpuRound` as arrays (one entry per column)."""

    task: np.ndarray
    group: np.ndarray
    level: np.ndarray
    memory: np.ndarray
    start: np.ndarray
    length: np.ndarray
    value: np.ndarray
    groups: list[tuple[int, ...]]


def round_columns(rnd: GpuRound) -> RoundColumns:
    """Enumerate every bundle option of ``rnd`` with numpy (same options as ``rnd.options``)."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("task", "group", "level", "memory", "start", "length", "value")}
    all_groups: list[tuple[int, ...]] = []
    group_index: dict[tuple[int, ...], int] = {}
    gmem = np.array([g.memory for g in rnd.gpus])
    gcomp = np.array([g.compute for g in rnd.gpus])
    for i, task in enumerate(rnd.tasks):
        end_limit = rnd.steps if task.deadline is None else min(rnd.steps, task.deadline)
        groups = rnd.gpu_groups(task.gpus)
        gidx = []
        for grp in groups:
            if grp not in group_index:
                group_index[grp] = len(all_groups)
                all_groups.append(grp)
            gidx.append(group_index[grp])
        gidx_arr = np.asarray(gidx, dtype=np.int64)
        for level, mem in enumerate(task.memory_levels(rnd.memory_levels)):
            length = task_steps(task, float(mem))
            ok = np.array([bool(np.all(capacity_limit(gmem[list(g)]) >= mem)
                                and np.all(capacity_limit(gcomp[list(g)]) >= task.compute)) for g in groups], dtype=bool)
            if not ok.any():
                continue
            starts = np.arange(task.release, end_limit - length + 1, dtype=np.int64)
            if starts.size == 0:
                continue
            vals = np.array([task_value(task, int(s) + length) for s in starts])
            keep = vals > 0
            starts, vals = starts[keep], vals[keep]
            g_ok = gidx_arr[ok]
            # order matches GpuRound.options: for each level, for each group, for each start
            G, S = g_ok.size, starts.size
            cols["task"].append(np.full(G * S, i, dtype=np.int64))
            cols["group"].append(np.repeat(g_ok, S))
            cols["level"].append(np.full(G * S, level, dtype=np.int64))
            cols["memory"].append(np.full(G * S, float(mem)))
            cols["start"].append(np.tile(starts, G))
            cols["length"].append(np.full(G * S, length, dtype=np.int64))
            cols["value"].append(np.tile(vals, G))
    cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    return RoundColumns(cat["task"].astype(np.int64), cat["group"].astype(np.int64), cat["level"].astype(np.int64),
                        cat["memory"], cat["start"].astype(np.int64), cat["length"].astype(np.int64), cat["value"], all_groups)


def from_round(rnd: GpuRound, *, chunk_cells: int = 1 << 20) -> tuple[MatrixProblem, RoundColumns]:
    """Matrix view of a compact round, built without Bid objects.

    Rows are ``(gpu, step, resource)`` in the order of :meth:`GpuRound.expand`'s slots
    (memory then compute for each slot), so the problem is identical to the expansion's.
    The CSC arrays are written directly, ``chunk_cells`` (gpu, step) cells at a time, so the
    peak memory stays close to the matrix itself (32 GPUs x 32 steps x 400 tasks: 822,088
    columns, 8.4 million non-zeros, 104 MB, built in about a second).
    """
    rc = round_columns(rnd)
    n = rc.value.size
    steps = rnd.steps
    n_rows = 2 * len(rnd.gpus) * steps
    group_size = np.array([len(g) for g in rc.groups], dtype=np.int64) if rc.groups else np.zeros(0, dtype=np.int64)
    gsz = group_size[rc.group] if n else np.zeros(0, dtype=np.int64)
    per_col = gsz * rc.length  # (gpu, step) cells per column; each gives a memory and a compute row
    cell_end = np.cumsum(per_col)
    nnz = 2 * int(cell_end[-1]) if n else 0
    # CSC arrays written in place, column chunk by column chunk: no COO triplets and no
    # full-size temporaries (the peak stays near the size of the matrix itself)
    idx_t = np.int32 if max(nnz, n_rows) < 2**31 - 1 else np.int64
    indptr = np.zeros(n + 1, dtype=idx_t)
    indptr[1:] = 2 * cell_end
    indices = np.empty(nnz, dtype=idx_t)
    data = np.empty(nnz, dtype=np.float64)
    # members of each group in ascending GPU order, so that rows come out sorted per column
    flat_groups = (np.concatenate([np.sort(np.asarray(g, dtype=np.int64)) for g in rc.groups])
                   if rc.groups else np.zeros(0, dtype=np.int64))
    group_start = np.concatenate([[0], np.cumsum(group_size)[:-1]]) if rc.groups else np.zeros(0, dtype=np.int64)
    compute = np.array([t.compute for t in rnd.tasks])[rc.task] if n else np.zeros(0)
    a = 0
    while a < n:
        first = int(cell_end[a - 1]) if a else 0
        b = int(np.searchsorted(cell_end, first + chunk_cells, side="right"))
        b = min(n, max(b, a + 1))
        pc = per_col[a:b]
        col = np.repeat(np.arange(a, b, dtype=np.int64), pc)
        offsets = np.arange(col.size, dtype=np.int64) - np.repeat(np.cumsum(pc) - pc, pc)
        length_c = rc.length[col]
        gpu = flat_groups[group_start[rc.group[col]] + offsets // length_c]
        slot = gpu * steps + rc.start[col] + offsets % length_c
        lo, hi = 2 * first, 2 * int(cell_end[b - 1])
        indices[lo:hi:2] = 2 * slot
        indices[lo + 1:hi:2] = 2 * slot + 1
        data[lo:hi:2] = rc.memory[col]
        data[lo + 1:hi:2] = compute[col]
        a = b
    A = sp.csc_matrix((data, indices, indptr), shape=(n_rows, n))
    if not A.has_sorted_indices:  # pragma: no cover - members are sorted above
        A.sort_indices()
    cap = np.empty(n_rows)
    cap[0::2] = np.repeat([g.memory for g in rnd.gpus], steps)
    cap[1::2] = np.repeat([g.compute for g in rnd.gpus], steps)
    gpu_ids = [g.id for g in rnd.gpus]
    task_ids = [t.id for t in rnd.tasks]

    def column_id(j: int) -> str:
        grp = rc.groups[int(rc.group[j])]
        return f"{task_ids[int(rc.task[j])]}|{'+'.join(gpu_ids[g] for g in grp)}|m{int(rc.level[j])}|s{int(rc.start[j])}"

    return MatrixProblem(rc.value.astype(np.float64), A, cap, rc.task.copy(), len(rnd.tasks), column_id), rc
