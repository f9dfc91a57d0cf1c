"""Helpers shared by the exact backends: option parsing, warm starts, constraint rows."""

from __future__ import annotations

import math
import os
import sys
import threading
from typing import Any, Iterator

import numpy as np

from ...model import Instance

__all__ = ["rows_of", "row_lift", "objective_lift", "xor_groups", "hint_vector", "pop_options"]

DEFAULT_MIP_GAP = 1e-9


def within_mip_gap(bound: float, value: float) -> bool:
    """Whether a proven ``bound`` certifies ``value`` as optimal: within ``DEFAULT_MIP_GAP``
    of the bound (relative, with an absolute floor at bounds below 1), the tolerance the MIP
    backends are run with; used where CP-SAT solved finely rounded values."""
    return bound - value <= DEFAULT_MIP_GAP * max(1.0, abs(bound))


def row_lift(coefs: np.ndarray, cap: float) -> float:
    """Power of two that lifts a capacity row whose entries are all below 1 into ``[1, 2)``.

    Floating-point MIP backends (HiGHS, SCIP, CBC) accept a row as satisfied within an
    *absolute* tolerance of about ``1e-6``. On a row whose capacity is itself of that order
    (a memory of ``1.2e-6``) a bid 20 % over the capacity then "fits", and the backend calls
    an infeasible allocation optimal. Scaled by this factor the tolerance is relative to the
    row's size. A power of two changes no digit of the data (``x * 2**k`` is exact in binary
    floating point and adds no decimal places); rows with an entry of 1 or more are left as
    they are (``1.0``), so the absolute tolerance there stays as strict as the format's.
    """
    top = max(float(np.abs(coefs).max()) if len(coefs) else 0.0, abs(float(cap)))
    if top <= 0.0 or top >= 1.0 or not math.isfinite(top):
        return 1.0
    return 2.0 ** (-math.floor(math.log2(top)))


def objective_lift(values: np.ndarray) -> float:
    """:func:`row_lift` for the objective: values all below 1 (``1e-6`` credits) are scaled by
    a power of two into ``[1, 2)``, as the MIP backends' absolute gap tolerances (HiGHS stops
    within ``1e-6``) would otherwise call any answer optimal. Divide objective values and
    bounds read back from the backend by it."""
    return row_lift(np.asarray(values, dtype=np.float64), 0.0)


def rows_of(instance: Instance, *, lift_small: bool = False) -> Iterator[tuple[float, np.ndarray, np.ndarray]]:
    """Yield ``(capacity, columns, coefficients)`` for every non-empty capacity row.

    ``lift_small=True`` (floating-point MIP backends): rows with every entry below 1 come
    scaled by :func:`row_lift`.
    """
    mat = instance.capacity_matrix
    cap = instance.capacity
    indptr, indices, data = mat.indptr, mat.indices, mat.data
    for r in range(mat.shape[0]):
        lo, hi = indptr[r], indptr[r + 1]
        if hi > lo:
            c, coefs = float(cap[r]), data[lo:hi]
            if lift_small:
                f = row_lift(coefs, c)
                if f != 1.0:
                    c, coefs = c * f, coefs * f
            yield c, indices[lo:hi], coefs


def xor_groups(instance: Instance) -> list[np.ndarray]:
    """Column indices of every bidder with two or more bids."""
    mat = instance.xor_matrix
    out = []
    for i in range(mat.shape[0]):
        lo, hi = mat.indptr[i], mat.indptr[i + 1]
        if hi - lo > 1:
            out.append(mat.indices[lo:hi])
    return out


def hint_vector(instance: Instance, options: dict[str, Any]) -> np.ndarray | None:
    """The warm start in ``options["hint"]`` (bid ids, or a 0/1 vector) as a 0/1 vector."""
    hint = options.get("hint")
    if hint is None:
        return None
    if isinstance(hint, np.ndarray) and hint.dtype != object and hint.shape == (instance.n_bids,):
        return (hint > 0.5).astype(np.float64)
    x = np.zeros(instance.n_bids)
    index = instance.bid_index
    for bid_id in hint:
        if bid_id not in index:
            raise ValueError(f"options['hint'] names unknown bid {bid_id!r}")
        x[index[bid_id]] = 1.0
    return x


def pop_options(options: dict[str, Any], allowed: set[str], method: str) -> dict[str, Any]:
    """Check that ``options`` holds only ``allowed`` keys; return a copy."""
    unknown = set(options) - allowed
    if unknown:
        raise ValueError(
            f"method {method!r} does not take option(s) {sorted(unknown)}; valid options: {sorted(allowed)}"
        )
    return dict(options)


_QUIET_LOCK = threading.Lock()
_quiet_depth = 0
_quiet_saved: int | None = None


class quiet_native_output:
    """Silence native libraries that print banners to the process's stdout (fd 1).

    HiGHS prints a copyright banner from C++ even when its output flag is off; inside
    ``gensolver solve --json`` that would corrupt the JSON. Python-level ``sys.stdout`` is
    untouched; fd 1 is pointed at ``/dev/null`` for the duration and then restored.

    Safe to use from several threads at once (VCG pivots, parallel LNS): fd 1 is redirected
    by the first thread in and restored by the last one out, so overlapping uses can never
    restore ``/dev/null`` as the process's stdout.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._entered = False

    def __enter__(self) -> "quiet_native_output":
        global _quiet_depth, _quiet_saved
        if not self.enabled:
            return self
        with _QUIET_LOCK:
            if _quiet_depth == 0:
                try:
                    sys.stdout.flush()
                    saved = os.dup(1)
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, 1)
                    os.close(devnull)
                    _quiet_saved = saved
                except (OSError, ValueError):  # pragma: no cover - no fd 1 (embedded interpreters)
                    _quiet_saved = None
            _quiet_depth += 1
            self._entered = True
        return self

    def __exit__(self, *exc: object) -> None:
        global _quiet_depth, _quiet_saved
        if not self._entered:
            return
        with _QUIET_LOCK:
            self._entered = False
            _quiet_depth -= 1
            if _quiet_depth == 0 and _quiet_saved is not None:
                os.dup2(_quiet_saved, 1)
                os.close(_quiet_saved)
                _quiet_saved = None


def new_highs() -> Any:
    """A ``highspy.Highs`` object with its output off, created without HiGHS's banner.

    HiGHS prints its copyright banner to fd 1 from the constructor of the first ``Highs``
    object in a process, before any option can turn output off.
    """
    import highspy

    with quiet_native_output():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h
