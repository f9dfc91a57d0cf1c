"""An offline bound per trace: no schedule of the trace on the cluster beats it.

:func:`offline_bound` returns a certified **lower bound on the average JCT** and an **upper
bound on the welfare** (both as :mod:`gensolver.sim.metrics` defines them) that hold for every
schedule the simulator could run on that trace and cluster, whatever the policy, with full
knowledge of the future. A policy's distance to it (``avg JCT / bound``) says how much any
scheduler could still gain; a ratio of 1 proves the policy optimal on that trace.

The relaxation (what the simulator enforces and what the bound keeps)
----------------------------------------------------------------------
Kept (every schedule of :class:`gensolver.sim.engine.Cluster` satisfies them):

- A task runs no earlier than its (reported) arrival, does its *true* work ``p_j`` (duration
  at preferred memory), and progresses at most at rate ``s_j <= 1``: the speed law
  ``(min(m, P) / P) ** e`` of the true type at the largest memory ``m`` of a GPU it may run on
  (speed factors of sharing modes and interference are at most 1).
- **Memory**: on ``k_j`` GPUs with ``m`` GiB each a task progresses at ``speed(m) <= s_true(m)``,
  so it holds at least ``mu_j = min_m m / s_true(m)`` GiB per GPU per unit of work, ``m`` from
  its reported minimum (the engine refuses less) to the largest GPU it may use. Per time bucket
  and per GPU set ``E``: the tasks that can run only on ``E`` hold at most ``E``'s memory.
- **Compute** (``compute=True``): per GPU, the sum of ``compute_j * rate_j`` is at most the
  GPU's compute. Every registered policy satisfies it: packing-style policies hold
  ``compute_j`` at rate at most 1; MIG slows a task to its slice's share; time-slicing runs
  ``k >= 2`` residents at ``(1 - switch) / k`` each. A policy that gave a task more speed than
  its compute share allows would need ``compute=False`` (memory rows only).
- **Eligibility**: a task uses only GPUs of its pinned models with at least its minimum memory,
  on nodes with ``gpus`` such GPUs (tasks that fit nowhere are rejected at arrival by the
  simulator and left out here, as in the metrics).

Relaxed (the bound allows what the simulator does not, so it can only be lower):
preemption at any time of any task (even non-preemptible ones) at no checkpoint cost, a task's
work split over any GPUs of its eligible set at once (no placement, no node for a gang, no
fragmentation, memory and compute pooled over the set), no round boundaries, no MIG
reconfiguration, no interference, no faults (every GPU up throughout).

The LP (interval-indexed, after Hall, Schulz, Shmoys and Wein)
--------------------------------------------------------------
Time from the first arrival is cut into buckets ``[tau_b, tau_{b+1})``: uniform ones of width
``w >= 1`` step over the span a good schedule needs, then geometrically growing ones up to a
horizon where a one-task-at-a-time schedule of the relaxation ends (so the LP is feasible).
``x_jb`` is task ``j``'s work in bucket ``b``:

- ``sum_b x_jb = p_j``, ``0 <= x_jb <= s_j * (tau_{b+1} - max(tau_b, a_j))``;
- capacity rows: ``sum_{j: E_j subset of E} k_j mu_j x_jb <= memory(E) * |b|`` (and compute);
- ``C_j >= a_j + p_j / s_j`` and the mean-busy-time bound ``C_j >= M_j + p_j / (2 s_j)`` with
  ``M_j >= (1 / p_j) sum_b max(tau_b, a_j) x_jb`` (every unit of work in bucket ``b`` is
  counted at the bucket's start: rounded in the bound's favour). Work of total ``p_j`` done at
  a rate at most ``s_j`` by time ``C_j`` has its mean busy time at most ``C_j - p_j / (2 s_j)``
  (Goemans; Hall et al. [1]_).

Minimising ``sum_j C_j`` bounds the sum of completion times of every schedule; the average JCT
bound subtracts the true arrivals. The welfare bound is the least of three: every task at its best
value (at its earliest finish; 0 for a deadline it cannot meet); the value of deadline tasks by
the fraction of their work the capacity rows allow before their deadline; and the value decay
bounded by a chord (the value is convex and decreasing past the ideal finish, so it lies below
the chord from the earliest finish to the deadline, or to where it keeps
:data:`DECAY_FLOOR` of itself), which turns the welfare into a weighted completion-time LP.

Certificates: both bounds are computed from the LP's dual values by weak duality (the duals
clipped to their sign domain and to ``[0, 1]`` on the completion rows, so that they are
feasible by construction), never from the LP's floating-point optimum (as
:func:`gensolver.solvers.formulation.bounds.dual_bound`); when the LP fails, the trivial
bounds (``C_j >= a_j + p_j / s_j``; each task's best value) remain, and ``status`` says why.

References
----------
.. [1] L. A. Hall, A. S. Schulz, D. B. Shmoys and J. Wein, "Scheduling to Minimize Average
   Completion Time: Off-line and On-line Approximation Algorithms", Mathematics of Operations
   Research 22(3), 1997.
.. [2] M. Queyranne, "Structure of a simple scheduling polyhedron", Mathematical Programming
   58, 1993 (the single-machine completion-time polyhedron behind mean-busy-time bounds).
.. [3] M. X. Goemans, "Improved approximation algorithms for scheduling with release dates",
   SODA 1997 (mean busy times of preemptive schedules).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import InputError, check_time_limit
from ..model.tasks import GpuSpec, Task, task_speed, task_value
from .records import TOL
from .workload import Workload

__all__ = ["OfflineBound", "offline_bound"]

#: growth of the tail buckets past the uniform span
TAIL_RATIO = 1.5
_METHOD = "highs-ipm"  # interior point: 4-6x faster than dual simplex on these LPs
#: the value decay's chord ends where a task keeps this share of its value (see :func:`_decay_lp`)
DECAY_FLOOR = 0.05
#: narrowest bucket (steps): uniform widths are multiples of it
MIN_WIDTH = 0.125


@dataclass(frozen=True)
class OfflineBound:
    """Frozen result of :func:`offline_bound` (times in steps).

    Attributes
    ----------
    workload : str
    tasks : int
        Tasks covered (those that fit on some node).
    rejected : int
        Tasks that fit on no node (the simulator rejects them at arrival).
    avg_jct : float or None
        Certified lower bound on the average JCT of the covered tasks: the larger of the LP and
        trivial bounds (``None``: no task covered).
    avg_jct_trivial : float or None
        ``mean(a_j + p_j / s_j - arrival_j)`` alone.
    avg_jct_lp : float or None
        The LP's certified bound (``None`` when the LP was not solved).
    welfare : float
        Certified upper bound on the welfare (sum of values achieved).
    welfare_trivial : float
        Every task at its best value (0 for a deadline it cannot meet).
    welfare_lp : float or None
    buckets : int
        Time buckets of the LP.
    bucket_width : float
        Width of the uniform buckets (steps).
    compute_rows : bool
        Whether the compute rows were used (see the module docstring).
    status : str
        ``"optimal"``, or why the LP bound is missing (then the trivial bounds stand).
    seconds : float
    """

    workload: str
    tasks: int
    rejected: int
    avg_jct: float | None
    avg_jct_trivial: float | None
    avg_jct_lp: float | None
    welfare: float
    welfare_trivial: float
    welfare_lp: float | None
    buckets: int
    bucket_width: float
    compute_rows: bool
    status: str
    seconds: float


def offline_bound(workload: Workload | Sequence[Task], *, gpus: Sequence[GpuSpec] | None = None,
                  compute: bool = True, max_buckets: int = 200, time_limit: float | None = 60.0) -> OfflineBound:
    """A lower bound on average JCT and an upper bound on welfare for ``workload`` on ``gpus``.

    Parameters
    ----------
    workload : Workload or sequence of Task
        The trace (its reports, true types and GPU-model pins, as :func:`gensolver.sim.simulate`
        reads them).
    gpus : sequence of GpuSpec, keyword-only
        The cluster (default: the workload's GPUs).
    compute : bool, keyword-only
        Keep the compute rows (valid for every registered policy; see the module docstring).
    max_buckets : int, keyword-only
        Uniform buckets over the busy span (more: tighter and slower; at least 1 step wide).
    time_limit : float or None, keyword-only
        Seconds for each LP; past it the trivial bounds stand.

    Returns
    -------
    OfflineBound

    Raises
    ------
    ValueError
        A bad argument, named in the message.
    """
    t0 = time.perf_counter()
    if isinstance(workload, Workload):
        reports, name, default, truths, pins = (workload.tasks, workload.name, workload.gpus, workload.truths,
                                                workload.gpu_models)
    else:
        reports, name, default, truths, pins = tuple(workload), "tasks", (), {}, {}
        if not all(isinstance(t, Task) for t in reports):
            raise InputError("workload must be a Workload or a sequence of Task")
    cluster = tuple(gpus if gpus is not None else default)
    if not cluster or not all(isinstance(g, GpuSpec) for g in cluster):
        raise InputError("gpus must be a non-empty sequence of GpuSpec (or a Workload with GPUs)")
    if isinstance(max_buckets, bool) or not isinstance(max_buckets, int) or max_buckets < 1:
        raise InputError(f"max_buckets must be a positive integer, got {max_buckets!r}")
    check_time_limit(time_limit)
    data = _prepare(reports, truths, pins, cluster, compute)
    rejected = len(reports) - len(data["p"])
    if not len(data["p"]):
        return OfflineBound(name, 0, rejected, None, None, None, 0.0, 0.0, None, 0, 0.0, compute, "no task",
                            time.perf_counter() - t0)
    grid, width = _grid(data, max_buckets)
    n = len(data["p"])
    trivial_c = data["a"] + data["p"] / data["s"]
    triv_jct = float((trivial_c - data["r"]).mean())
    triv_w = float(data["vhat"].sum())
    status = "optimal"
    lp_jct = lp_w = None
    try:
        total_c = _jct_lp(data, grid, time_limit)
        lp_jct = (total_c - float(data["r"].sum())) / n
        lp_w = min(_welfare_lp(data, grid, time_limit), _decay_lp(data, grid, time_limit))
    except _LpFailed as exc:
        status = str(exc)
    best_jct = max(triv_jct, lp_jct) if lp_jct is not None else triv_jct
    best_w = min(triv_w, lp_w) if lp_w is not None else triv_w
    return OfflineBound(name, n, rejected, best_jct, triv_jct, lp_jct, best_w, triv_w, lp_w, len(grid) - 1, width,
                        compute, status, time.perf_counter() - t0)


class _LpFailed(RuntimeError):
    pass


def _prepare(reports: Sequence[Task], truths: Any, pins: Any, gpus: tuple[GpuSpec, ...],
             compute: bool) -> dict[str, Any]:
    """Per covered task: arrival ``a``, true arrival ``r``, work ``p``, rate cap ``s``, loads per
    unit of work (memory, compute, over its ``k`` GPUs), eligible GPU set, best value, deadline."""
    nodes: dict[str, list[int]] = {}
    for i, g in enumerate(gpus):
        nodes.setdefault(g.node, []).append(i)
    rows: dict[str, list[Any]] = {k: [] for k in ("a", "r", "p", "s", "mem", "comp", "elig", "vhat", "dl", "cmax",
                                                  "vend")}
    for t in reports:
        true = truths.get(t.id, t)
        allowed = pins.get(t.id)
        fits_any, elig = False, []
        for members in nodes.values():
            usable = [g for g in members if (not allowed or gpus[g].model in allowed)
                      and gpus[g].memory + 2 * TOL >= t.min_memory]
            strict = [g for g in usable if gpus[g].memory + TOL >= t.min_memory and gpus[g].compute + TOL >= t.compute]
            fits_any |= len(strict) >= t.gpus  # the simulator's acceptance rule
            if len(usable) >= t.gpus:
                elig.extend(usable)
        if not fits_any:
            continue
        top = max(gpus[g].memory for g in elig)
        lo = max(t.min_memory - TOL, 1e-12)
        best = float(np.clip(true.preferred_memory, lo, top)) if true.elasticity > 1 else lo
        mu = best / max(task_speed(true, best), 1e-300)
        s = task_speed(true, top)
        p = float(true.duration)
        a = float(t.release)
        rows["a"].append(a)
        rows["r"].append(float(true.release))
        rows["p"].append(p)
        rows["s"].append(s)
        rows["mem"].append(t.gpus * mu)
        rows["comp"].append(t.gpus * t.compute if compute else 0.0)
        rows["elig"].append(frozenset(elig))
        finish = a + p / s
        late = true.deadline is not None and finish > true.deadline + 1e-9
        rows["vhat"].append(0.0 if late else task_value(true, finish))
        rows["dl"].append(math.inf if true.deadline is None else float(true.deadline))
        # the chord's far end: the deadline, or where the value has decayed to DECAY_FLOOR
        far = finish + p * (math.log(DECAY_FLOOR) / math.log(1.0 - true.urgency) if 0 < true.urgency < 1 else 1.0)
        end = min(far, float(true.deadline)) if true.deadline is not None else far
        rows["cmax"].append(max(end, finish))
        rows["vend"].append(0.0 if late else task_value(true, max(end, finish)))
    out: dict[str, Any] = {k: np.array(v, dtype=float) for k, v in rows.items() if k != "elig"}
    sets = sorted(set(rows["elig"]) | {frozenset(range(len(gpus)))}, key=lambda e: (len(e), sorted(e)))
    out["sets"] = sets
    out["cap"] = np.array([[sum(gpus[g].memory for g in e), sum(gpus[g].compute for g in e)] for e in sets])
    # member[k, j]: task j may only use GPUs of set k
    out["member"] = np.array([[e_j <= e for e_j in rows["elig"]] for e in sets], dtype=bool)
    own = np.array([sets.index(e_j) for e_j in rows["elig"]], dtype=int)
    out["own"] = own
    if len(own):  # the rate at which a task alone satisfies its own rows (the feasibility horizon)
        with np.errstate(divide="ignore"):
            alone = np.minimum(out["cap"][own, 0] / out["mem"], out["cap"][own, 1] / np.maximum(out["comp"], 1e-300))
        out["alone"] = np.minimum(out["s"], alone)
    return out


def _grid(d: dict[str, Any], max_buckets: int) -> tuple[np.ndarray, float]:
    """Bucket boundaries: uniform over the busy span, then growing by :data:`TAIL_RATIO`."""
    start = math.floor(float(d["a"].min()))
    serial = float(d["a"].max()) + float((d["p"] / d["alone"]).sum()) + 1.0
    need = max(float((d["a"] + d["p"] / d["alone"]).max()), 0.0)
    loads = [(d["member"][k] * d["p"] * d[res]).sum() / d["cap"][k, c]
             for k in range(len(d["sets"])) for c, res in enumerate(("mem", "comp")) if d["cap"][k, c] > 0]
    span = max(need - start, max(loads, default=0.0)) * 1.5 + 1.0
    width = max(MIN_WIDTH, math.ceil(span / max_buckets / MIN_WIDTH) * MIN_WIDTH)
    bounds = list(start + width * np.arange(math.ceil(span / width) + 1))
    end = max(serial, float(np.max(np.where(np.isfinite(d["dl"]), d["dl"], 0.0))) + 1.0)
    while bounds[-1] < end:
        bounds.append(max(bounds[-1] + width, start + (bounds[-1] - start) * TAIL_RATIO))
    return np.array(bounds, dtype=float), width


def _columns(d: dict[str, Any], grid: np.ndarray, until: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                                   np.ndarray]:
    """Columns ``x_jb``: task index, bucket index, lower time ``max(tau_b, a_j)``, upper bound."""
    lo_b, hi_b = grid[:-1], grid[1:]
    lo = np.maximum(lo_b[None, :], d["a"][:, None])
    hi = np.minimum(hi_b[None, :], until[:, None])
    ub = d["s"][:, None] * (hi - lo)
    j, b = np.nonzero(ub > 0)
    return j, b, lo[j, b], ub[j, b]


def _cap_rows(d: dict[str, Any], grid: np.ndarray, j: np.ndarray, b: np.ndarray, first: int
              ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Memory and compute rows per (GPU set, bucket): ``(rows, cols, vals, rhs)`` parts."""
    nb = len(grid) - 1
    widths = np.diff(grid)
    rr, cc, vv, rhs = [], [], [], []
    row = first
    for k in range(len(d["sets"])):
        inside = d["member"][k][j]
        for c, res in enumerate(("mem", "comp")):
            load = d[res][j]
            use = inside & (load > 0)
            if not use.any():
                continue
            rr.append(row + b[use])
            cc.append(np.nonzero(use)[0])
            vv.append(load[use])
            rhs.append(d["cap"][k, c] * widths)
            row += nb
    return rr, cc, vv, rhs


def _jct_lp(d: dict[str, Any], grid: np.ndarray, time_limit: float | None) -> float:
    """Certified lower bound on ``sum_j C_j`` (see the module docstring)."""
    n = len(d["p"])
    return _completion_lp(d, grid, np.ones(n), np.full(n, np.inf), time_limit)


def _completion_lp(d: dict[str, Any], grid: np.ndarray, weight: np.ndarray, cmax: np.ndarray,
                   time_limit: float | None) -> float:
    """Certified lower bound on ``sum_j weight_j min(C_j, cmax_j)`` over the tasks of positive weight.

    ``D_j = min(C_j, cmax_j)`` satisfies ``cmin_j <= D_j <= cmax_j`` and
    ``D_j >= (1 / p_j) sum_b min(lo_jb, cmax_j - p_j / (2 s_j)) x_jb + p_j / (2 s_j)``: when
    ``C_j <= cmax_j`` it is the mean-busy-time bound; otherwise the right side is at most
    ``cmax_j``. With ``cmax = inf`` this is the completion-time LP.
    """
    keep = np.nonzero(weight > 0)[0]
    n = len(keep)
    if n == 0:
        return 0.0
    sub = {k: (v[keep] if isinstance(v, np.ndarray) and v.ndim == 1 and len(v) == len(d["p"]) else v)
           for k, v in d.items()}
    sub["member"] = d["member"][:, keep]
    w, top = weight[keep], cmax[keep]
    j, b, lo, ub = _columns(sub, grid, np.full(n, np.inf))
    nx = len(j)
    half = sub["p"] / (2 * sub["s"])
    coef = np.minimum(lo, (top - half)[j])
    rr = [j, np.arange(n)]
    cc = [np.arange(nx), nx + np.arange(n)]
    vv = [coef / sub["p"][j], -np.ones(n)]
    cr, ccap, vcap, rcap = _cap_rows(sub, grid, j, b, n)
    rows = np.concatenate(rr + cr)
    cols = np.concatenate(cc + ccap)
    vals = np.concatenate(vv + vcap)
    n_ub = n + sum(len(x) for x in rcap)
    a_ub = sp.csr_matrix((vals, (rows, cols)), shape=(n_ub, nx + n))
    b_ub = np.concatenate([-half] + rcap)
    a_eq = sp.csr_matrix((np.ones(nx), (j, np.arange(nx))), shape=(n, nx + n))
    b_eq = sub["p"]
    c = np.concatenate([np.zeros(nx), w])
    lower = np.concatenate([np.zeros(nx), np.minimum(sub["a"] + sub["p"] / sub["s"], top)])
    upper = np.concatenate([ub, top])
    y_ub, y_eq = _solve(c, a_ub, b_ub, a_eq, b_eq, lower, upper, time_limit)
    y_ub = np.minimum(y_ub, 0.0)
    y_ub[:n] = np.maximum(y_ub[:n], np.where(np.isfinite(top), -np.inf, -w))  # D_j's reduced cost w + y >= 0
    return _dual_value(c, a_ub, b_ub, a_eq, b_eq, lower, upper, y_ub, y_eq)


def _decay_lp(d: dict[str, Any], grid: np.ndarray, time_limit: float | None) -> float:
    """Certified upper bound on the welfare with each task's value decay (module docstring).

    The value ``v_j(C)`` decreases and is convex in ``C`` up to the deadline (0 after), so on
    ``[cmin_j, cmax_j]`` it lies below the chord through its ends, and past ``cmax_j`` below
    ``v_j(cmax_j)``: ``v_j(C) <= v_j(cmin_j) - w_j (min(C, cmax_j) - cmin_j)`` with
    ``w_j = (v_j(cmin_j) - v_j(cmax_j)) / (cmax_j - cmin_j)``. Summed, the bound is
    ``sum_j v_j(cmin_j) + w_j cmin_j`` less the certified minimum of ``sum_j w_j min(C_j, cmax_j)``.
    """
    cmin, v0, vend, cmax = d["a"] + d["p"] / d["s"], d["vhat"], d["vend"], d["cmax"]
    width = cmax - cmin
    # before its ideal finish a task's value is flat: only past it is the chord above the value
    decays = (v0 > 0) & (width > 1e-9) & (cmin >= d["r"] + d["p"] - 1e-9)
    w = np.where(decays, (v0 - vend) / np.maximum(width, 1e-9), 0.0)
    w = np.maximum(w, 0.0)
    low = _completion_lp(d, grid, w, np.where(w > 0, cmax, np.inf), time_limit)
    return float(v0.sum() + (w * cmin).sum() - low)


def _welfare_lp(d: dict[str, Any], grid: np.ndarray, time_limit: float | None) -> float:
    """Certified upper bound on the welfare (see the module docstring)."""
    dl = np.isfinite(d["dl"]) & (d["vhat"] > 0)
    free = float(d["vhat"][~dl].sum())
    if not dl.any():
        return free
    n = len(d["p"])
    until = np.where(dl, d["dl"] + 1e-6, -np.inf)
    j, b, _lo, ub = _columns(d, grid, until)
    nx = len(j)
    if nx == 0:
        return free
    cr, ccap, vcap, rcap = _cap_rows(d, grid, j, b, n)
    rows = np.concatenate([j] + cr)
    cols = np.concatenate([np.arange(nx)] + ccap)
    vals = np.concatenate([np.ones(nx)] + vcap)
    a_ub = sp.csr_matrix((vals, (rows, cols)), shape=(n + sum(len(x) for x in rcap), nx))
    b_ub = np.concatenate([d["p"]] + rcap)
    c = -(d["vhat"] / d["p"])[j]
    lower, upper = np.zeros(nx), ub
    empty = sp.csr_matrix((0, nx))
    y_ub, _ = _solve(c, a_ub, b_ub, empty, np.zeros(0), lower, upper, time_limit)
    low = _dual_value(c, a_ub, b_ub, empty, np.zeros(0), lower, upper, np.minimum(y_ub, 0.0), np.zeros(0))
    return free - low


def _solve(c: np.ndarray, a_ub: Any, b_ub: np.ndarray, a_eq: Any, b_eq: np.ndarray, lower: np.ndarray,
           upper: np.ndarray, time_limit: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The LP's row duals (HiGHS through :func:`scipy.optimize.linprog`)."""
    from scipy.optimize import linprog

    opts: dict[str, Any] = {"presolve": True}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    eq = a_eq.shape[0] > 0
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq if eq else None, b_eq=b_eq if eq else None,
                  bounds=np.column_stack([lower, upper]), method=_METHOD, options=opts)
    if res.status != 0:
        raise _LpFailed(f"LP not solved: {res.message}")
    y_eq = np.asarray(res.eqlin.marginals, dtype=float) if eq else np.zeros(0)
    return np.asarray(res.ineqlin.marginals, dtype=float), y_eq


def _dual_value(c: np.ndarray, a_ub: Any, b_ub: np.ndarray, a_eq: Any, b_eq: np.ndarray, lower: np.ndarray,
                upper: np.ndarray, y_ub: np.ndarray, y_eq: np.ndarray) -> float:
    """Weak-duality lower bound of ``min c.x, A_ub x <= b_ub, A_eq x = b_eq, lower <= x <= upper``
    from duals ``y_ub <= 0`` and any ``y_eq``: ``b.y + sum_v min(r_v lower_v, r_v upper_v)``,
    ``r = c - A^T y``, less a relative margin for the floating-point sums."""
    r = c - a_ub.T @ y_ub - (a_eq.T @ y_eq if a_eq.shape[0] else 0.0)
    pos = r >= 0
    if np.any(~pos & ~np.isfinite(upper)) or np.any(pos & (r > 0) & ~np.isfinite(lower)):
        raise _LpFailed("dual point not usable (a reduced cost meets an infinite bound)")
    terms = np.where(pos, r * np.where(np.isfinite(lower), lower, 0.0), r * np.where(np.isfinite(upper), upper, 0.0))
    value = float(b_ub @ y_ub + b_eq @ y_eq + terms.sum())
    scale = float(np.abs(b_ub * y_ub).sum() + np.abs(b_eq * y_eq).sum() + np.abs(terms).sum())
    return value - 1e-9 * (1.0 + scale)
