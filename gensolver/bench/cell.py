"""One benchmark cell: an (instance, method) pair solved, checked and (optionally) priced.

:func:`run_cell` runs in a worker: it solves the instance with its method under
``per_solve_limit`` (the ``time_limit`` of the solve and of each mechanism run), checks the answer with
:func:`gensolver.verify.check_allocation` (an infeasible answer is an error), and, when a
mechanism is asked, times :func:`gensolver.mechanisms.run_mechanism` and measures
:func:`gensolver.verify.max_regret` over the first ``regret_bidders`` winning bidders (a lower
bound on the mechanism's regret; columns are reported as unavailable when those modules are not
importable). A corrupt instance file fails only its own cells. :class:`CellResult` is one
finished cell as reported; :func:`check_methods` resolves the methods a run asks for.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import InputError, InputTypeError
from .suites import decode_instance

__all__ = ["CellResult", "run_cell", "check_methods", "DEFAULT_METHODS", "UNAVAILABLE"]

#: methods run when none are given (those usable here)
DEFAULT_METHODS: tuple[str, ...] = ("auto", "cpsat", "highs", "greedy", "lp")
UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class CellResult:
    """One finished (instance, method) cell.

    Always present: ``key``, ``instance``, ``family``, ``method``, ``status`` (a solver status
    value, or ``"error"``), ``welfare``, ``seconds`` (the solver's own build + solve time; ``wall_seconds`` adds the
    call overhead in the worker, e.g. a backend's first import),
    ``slots``, ``bids``, ``bidders``. ``None`` when not applicable: ``bound`` (the solver's
    proven bound), ``best_known`` / ``best_bound`` (from the manifest, lifted by this run's
    results), ``pct_best`` (``100 * welfare / best_known``), ``gap_to_bound``
    (``(best_bound - welfare) / best_bound``), ``payments_seconds``, ``revenue``,
    ``max_regret``, ``payments_exact`` (the mechanism's ``Outcome.exact``), ``payment_bounds``
    (``{bidder: [low, high]}``, certain to contain each exact payment; JSON text in the CSV);
    ``payments_note`` says why the payments are not exact. ``mechanism_note`` says why the mechanism columns are empty
    (``"unavailable"`` when :mod:`gensolver.mechanisms` cannot be imported). ``error`` holds the
    message of a failed cell.
    """

    key: str
    instance: str
    family: str
    method: str
    status: str
    welfare: float
    seconds: float
    slots: int = 0
    bids: int = 0
    bidders: int = 0
    bound: float | None = None
    best_known: float | None = None
    best_bound: float | None = None
    pct_best: float | None = None
    gap_to_bound: float | None = None
    mechanism: str | None = None
    payments_seconds: float | None = None
    revenue: float | None = None
    max_regret: float | None = None
    payments_exact: bool | None = None
    payment_bounds: Mapping[str, Any] | None = None
    payments_note: str = ""
    mechanism_note: str = ""
    error: str = ""
    worker: str = ""
    wall_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def _method_name(method: str | Callable[..., Any]) -> str:
    return method if isinstance(method, str) else getattr(method, "__name__", type(method).__name__)


def run_cell(payload: bytes | None, load_error: str, file: str, sha256: str, method: str | Callable[..., Any],
             per_solve_limit: float | None, mechanism: str | None, regret_bidders: int) -> dict[str, Any]:
    """Run one cell in a worker; returns a plain dict (never raises for a cell failure).

    Parameters
    ----------
    payload : bytes or None
        The instance file's bytes (``None`` when the parent could not read it).
    load_error : str
        The parent's read error (then the cell fails with it).
    file, sha256 : str
        File name (for messages) and expected checksum.
    method : str or callable
        A :func:`gensolver.solve` method (a callable must be picklable, i.e. module level).
    per_solve_limit : float or None
        The ``time_limit`` in seconds of the solve, of the mechanism run and of each of
        :func:`gensolver.verify.max_regret`'s runs.
    mechanism : str or None
        Also run this mechanism (payments time, revenue, max regret).
    regret_bidders : int
        Winning bidders whose regret is measured (0: none).
    """
    from ..solvers import solve
    from ..verify import check_allocation

    out: dict[str, Any] = {"worker": f"{socket.gethostname()}:{os.getpid()}"}
    if payload is None:
        out.update(status="error", error=f"instance: {load_error}")
        return out
    try:
        inst = decode_instance(payload, expected_sha256=sha256, name=file)
    except Exception as exc:  # noqa: BLE001 - the cell records it
        out.update(status="error", error=f"instance: {exc}")
        return out
    out.update(slots=inst.n_slots, bids=inst.n_bids, bidders=inst.n_bidders)
    try:
        t0 = time.perf_counter()
        alloc = solve(inst, method=method, time_limit=per_solve_limit)
        out["wall_seconds"] = time.perf_counter() - t0
        out["seconds"] = float(alloc.seconds.total)
    except Exception as exc:  # noqa: BLE001
        out.update(status="error", error=f"solve: {type(exc).__name__}: {exc}")
        return out
    cert = check_allocation(inst, alloc.winners, welfare=alloc.welfare)
    if alloc.status.value == "error" or not cert.feasible:
        why = alloc.message if alloc.status.value == "error" else "; ".join(cert.violations[:3])
        out.update(status="error", error=f"solve: {why}")
        return out
    out.update(status=alloc.status.value, welfare=alloc.welfare, bound=alloc.bound)
    if mechanism:
        try:
            from ..mechanisms import run_mechanism
        except ImportError:
            out["mechanism_note"] = UNAVAILABLE
            return out
        try:
            t0 = time.perf_counter()
            outcome = run_mechanism(inst, mechanism=mechanism, method=method, time_limit=per_solve_limit)
            out["payments_seconds"] = time.perf_counter() - t0
            out["revenue"] = float(outcome.revenue)
            from ..mechanisms import outcome_to_dict

            doc = outcome_to_dict(outcome)
            out.update(payments_exact=doc["exact"], payment_bounds=doc["payment_bounds"],
                       payments_note=doc["inexact_reason"])
        except Exception as exc:  # noqa: BLE001
            out["mechanism_note"] = f"mechanism failed: {type(exc).__name__}: {exc}"
            return out
        if regret_bidders > 0:
            try:
                from ..verify import max_regret
            except ImportError:
                out["mechanism_note"] = "max_regret unavailable"
                return out
            index = inst.bid_index
            winners = list(dict.fromkeys(inst.bids[index[w]].bidder for w in outcome.allocation.winners))
            try:
                res = max_regret(mechanism, inst, bidders=winners[:regret_bidders], method=method,
                                 per_run_limit=per_solve_limit)
                out["max_regret"] = float(res.regret)
            except Exception as exc:  # noqa: BLE001
                out["mechanism_note"] = f"regret failed: {type(exc).__name__}: {exc}"
    return out


def check_methods(methods: Sequence[str | Callable[..., Any]] | None) -> list[str | Callable[..., Any]]:
    """The methods to run: registry names (checked) or callables; ``None`` for the usable defaults."""
    from ..solvers import get_method

    if methods is None:
        out: list[str | Callable[..., Any]] = []
        for name in DEFAULT_METHODS:
            if get_method(name).available()[0]:
                out.append(name)
        return out
    if isinstance(methods, str):
        raise InputError("methods must be a sequence of names, not a string (use ['cpsat', ...])")
    out = []
    for m in methods:
        if isinstance(m, str):
            ok, why = get_method(m).available()  # UnknownMethodError lists the valid names
            if not ok:
                raise InputError(f"methods: {m!r} is not usable here: {why}")
        elif not callable(m):
            raise InputTypeError(f"methods: each must be a name or a callable, got {m!r}")
        out.append(m)
    if not out:
        raise InputError("methods must not be empty")
    if len({_method_name(m) for m in out}) != len(out):
        names = [_method_name(m) for m in out]
        raise InputError(f"methods: duplicate names {sorted({n for n in names if names.count(n) > 1})}")
    return out
