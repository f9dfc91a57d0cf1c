"""The benchmark runner: every (instance, method) cell of a suite, resumable and parallel.

:func:`run_suite` runs each cell on any :class:`concurrent.futures.Executor` (a local process
pool by default, a Dask cluster's ``Client.get_executor()`` for distributed runs), appends each
finished cell to a journal (``cells.jsonl``, one JSON line, flushed and fsync'd) so that an
interrupted run resumes without redoing finished cells, and writes the results (CSV, JSON, a
Markdown report and PNG plots) atomically.

A cell solves the instance with its method under the per-cell ``time_limit`` (passed to the
solver), checks the answer with :func:`gensolver.verify.check_allocation` (an infeasible answer
is an error), and, when a mechanism is asked, times :func:`gensolver.mechanisms.run_mechanism`
and measures :func:`gensolver.verify.max_regret` over the first ``regret_bidders`` winning
bidders (a lower bound on the mechanism's regret; columns are reported as unavailable when
those modules are not importable). A corrupt instance file fails only its own cells.

A worker process that dies (killed, out of memory) breaks a local process pool: the cells it
took down with it are run again in a fresh pool, and those that break it a second time are run
one at a time, so only a cell that kills its worker when alone fails (``worker: the worker
process died ...``). On resume, cells whose journalled error is a worker or an instance-load
error (``worker:``, ``instance:``) are run again; a solver's error stays (rerun with ``--fresh``).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import platform
import socket
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import JournalError, check_executor, check_time_limit, require_extra
from ..model import atomic_write
from ..model.io import json_safe
from ..model.validate import is_real
from .suites import Suite, SuiteEntry, decode_instance, load_suite, materialize

__all__ = ["CellResult", "BenchResult", "run_suite", "run_cell", "check_methods", "DEFAULT_METHODS", "JOURNAL",
           "read_journal", "JournalError", "plot_quality", "plot_time"]

#: methods run when none are given (those usable here)
DEFAULT_METHODS: tuple[str, ...] = ("auto", "cpsat", "highs", "greedy", "lp")
#: file name of the journal of finished cells in the output folder
JOURNAL = "cells.jsonl"
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


@dataclass(frozen=True)
class BenchResult:
    """Frozen result of :func:`run_suite`.

    Attributes
    ----------
    suite : str
    cells : tuple of CellResult
        Every requested cell, in suite order then method order.
    methods : tuple of str
    ran : int
        Cells run by this call.
    resumed : int
        Cells taken from the journal of an earlier run.
    seconds : float
        Wall clock of this call.
    out_dir : Path
    files : Mapping[str, Path]
        ``results_csv``, ``results_json``, ``report``, ``journal`` and the plots.
    """

    suite: str
    cells: tuple[CellResult, ...]
    methods: tuple[str, ...]
    ran: int
    resumed: int
    seconds: float
    out_dir: Path
    files: Mapping[str, Path] = field(default_factory=dict)

    @property
    def errors(self) -> tuple[CellResult, ...]:
        """Cells that failed."""
        return tuple(c for c in self.cells if c.status == "error")

    def welfare_table(self) -> dict[tuple[str, str], float]:
        """``{(instance, method): welfare}``."""
        return {(c.instance, c.method): c.welfare for c in self.cells}


# ------------------------------------------------------------------------------ the cell
def _method_name(method: str | Callable[..., Any]) -> str:
    return method if isinstance(method, str) else getattr(method, "__name__", type(method).__name__)


def run_cell(payload: bytes | None, load_error: str, file: str, sha256: str, method: str | Callable[..., Any],
             time_limit: float | None, mechanism: str | None, regret_bidders: int) -> dict[str, Any]:
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
    time_limit : float or None
        Per-cell solver limit in seconds.
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
        alloc = solve(inst, method=method, time_limit=time_limit)
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
            outcome = run_mechanism(inst, mechanism=mechanism, solver=method, time_limit=time_limit)
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
                res = max_regret(mechanism, inst, bidders=winners[:regret_bidders], solver=method, time_limit=time_limit)
                out["max_regret"] = float(res.regret)
            except Exception as exc:  # noqa: BLE001
                out["mechanism_note"] = f"regret failed: {type(exc).__name__}: {exc}"
    return out


# ------------------------------------------------------------------------------ journal
def cell_key(entry: SuiteEntry, method: str, mechanism: str | None, time_limit: float | None) -> str:
    """Identity of a cell in the journal: instance and checksum, method, mechanism, limit."""
    return f"{entry.name}|{entry.sha256[:16]}|{method}|{mechanism or '-'}|{time_limit if time_limit is not None else '-'}"


#: journal row fields and their kinds (``key``, ``instance``, ``method`` and ``status`` are required)
_ROW_FIELDS: dict[str, str] = {
    "key": "str", "instance": "str", "method": "str", "status": "str",
    "family": "str?", "mechanism": "str?", "error": "str?", "mechanism_note": "str?", "worker": "str?",
    "welfare": "num?", "seconds": "num?", "bound": "num?", "time_limit": "num?", "finished": "num?",
    "payments_seconds": "num?", "revenue": "num?", "max_regret": "num?", "wall_seconds": "num?",
    "slots": "int?", "bids": "int?", "bidders": "int?",
    "payments_exact": "bool?", "payments_note": "str?", "payment_bounds": "obj?",
}


def _check_row(row: Any, where: str) -> dict[str, Any]:
    """A journal row, checked field by field (``where`` is ``cells.jsonl:LINE``)."""
    if not isinstance(row, dict):
        raise JournalError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for name, kind in _ROW_FIELDS.items():
        v = row.get(name)
        if v is None:
            if not kind.endswith("?"):
                raise JournalError(f"{where}: /{name}: missing")
            continue
        base = kind.rstrip("?")
        if base == "str":
            ok = isinstance(v, str)
            want = "a string"
        elif base == "bool":
            ok = isinstance(v, bool)
            want = "true or false"
        elif base == "obj":
            ok = isinstance(v, dict)
            want = "an object"
        elif base == "int":
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
            want = "a non-negative integer"
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            want = "a finite number"
        if not ok:
            raise JournalError(f"{where}: /{name}: expected {want}, got {v!r}"[:300])
    return row


def _read_journal(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, int], int]:
    """``(rows by key, line number by key, byte length of the intact part)``.

    A last line without its newline that does not parse is a write torn by a crash: it is left
    out (and the length excludes it). Any other damage raises :class:`JournalError`.
    """
    rows: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return rows, lines, 0
    except OSError as exc:
        raise JournalError(f"{path}: cannot read: {exc.strerror or exc}") from None
    pos = 0
    number = 0
    while pos < len(data):
        number += 1
        nl = data.find(b"\n", pos)
        last = nl < 0
        end = len(data) if last else nl
        raw = data[pos:end]
        where = f"{path}:{number}"
        try:
            text = raw.decode("utf-8")
            row = json.loads(text) if text.strip() else None
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            if last:
                return rows, lines, pos  # torn tail
            why = f"not UTF-8 text (byte {exc.start})" if isinstance(exc, UnicodeDecodeError) else "invalid JSON"
            raise JournalError(f"{where}: {why}; remove the line, or run again with --fresh to redo every cell") from None
        if row is not None:
            try:
                _check_row(row, where)
            except JournalError as exc:
                raise JournalError(f"{exc}; remove the line, or run again with --fresh to redo every cell") from None
            rows[row["key"]] = row
            lines[row["key"]] = number
        pos = len(data) if last else nl + 1
    return rows, lines, len(data)


def read_journal(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Finished cells by key; a torn last line (a crash mid-write) is ignored.

    Raises
    ------
    JournalError
        Any other damage: a line that is not UTF-8 JSON, or a row with a missing or bad field
        (the message names ``cells.jsonl:LINE`` and the field).
    """
    return _read_journal(Path(path))[0]


class _Journal:
    def __init__(self, path: Path, intact: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size:
            with open(path, "r+b") as fh:
                if fh.seek(0, os.SEEK_END) > intact:  # drop a torn tail left by a crash
                    fh.truncate(intact)
                if intact:  # a last row without its newline must not glue onto the next one
                    fh.seek(intact - 1)
                    if fh.read(1) != b"\n":
                        fh.write(b"\n")
        self.fh = open(path, "a", encoding="utf-8")

    def append(self, row: Mapping[str, Any]) -> None:
        self.fh.write(json.dumps(row, allow_nan=False, default=str) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


# ------------------------------------------------------------------------------ run_suite
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
        raise ValueError("methods must be a sequence of names, not a string (use ['cpsat', ...])")
    out = []
    for m in methods:
        if isinstance(m, str):
            ok, why = get_method(m).available()  # UnknownMethodError lists the valid names
            if not ok:
                raise ValueError(f"method {m!r} is not usable here: {why}")
        elif not callable(m):
            raise ValueError(f"a method must be a name or a callable, got {m!r}")
        out.append(m)
    if not out:
        raise ValueError("methods must not be empty")
    if len({_method_name(m) for m in out}) != len(out):
        raise ValueError("duplicate method names")
    return out


def run_suite(
    suite: str | os.PathLike[str] | Suite,
    *,
    methods: Sequence[str | Callable[..., Any]] | None = None,
    time_limit: float | None = 10.0,
    executor: Executor | None = None,
    jobs: int = 1,
    out_dir: str | os.PathLike[str] = "bench-out",
    mechanism: str | None = None,
    regret_bidders: int = 2,
    resume: bool = True,
    progress: bool = True,
    plots: bool = True,
    executor_label: str | None = None,
) -> BenchResult:
    """Run every (instance, method) cell of a suite and write the results.

    Parameters
    ----------
    suite : str, path or Suite
        A bundled suite name (``smoke``, ``small``, ``medium``, ``large``), a folder or a
        manifest. Missing instance files are generated from their seeds first.
    methods : sequence of str or callable, keyword-only
        Solver methods (default: :data:`DEFAULT_METHODS` that are usable here). Callables follow
        :func:`gensolver.solve`'s contract and must be picklable for process or Dask executors.
    time_limit : float or None
        Per-cell solver time limit in seconds.
    executor : concurrent.futures.Executor, optional
        Where cells run. Default: a local :class:`~concurrent.futures.ProcessPoolExecutor` with
        ``jobs`` workers (spawned, so no state leaks between runs), shut down at the end. For a
        Dask cluster pass ``distributed.Client(address).get_executor()``.
    jobs : int
        Workers of the default pool, at most :func:`max_jobs` (4 per CPU core).
    out_dir : path-like
        Output folder: ``cells.jsonl`` (journal), ``results.csv``, ``results.json``,
        ``report.md``, ``quality_vs_time.png``, ``time_vs_size.png``.
    mechanism : str, optional
        Also run this mechanism per cell (payments time, revenue, max regret).
    regret_bidders : int
        Winning bidders whose regret is measured when ``mechanism`` is given.
    resume : bool
        Skip cells already in the journal (default). ``False`` starts a new journal.
    progress : bool
        Show a rich progress bar on stderr.
    plots : bool
        Write the PNG plots.
    executor_label : str, optional
        How the executor is named in the report.

    Returns
    -------
    BenchResult

    Raises
    ------
    gensolver.bench.SuiteError
        Unknown suite or malformed manifest.
    ValueError
        Unknown or unusable methods, bad ``time_limit``, ``jobs`` or ``regret_bidders``.
    """
    t_start = time.perf_counter()
    s = suite if isinstance(suite, Suite) else load_suite(suite)
    meths = check_methods(methods)
    check_time_limit(time_limit)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if jobs > max_jobs():
        raise ValueError(f"jobs must be at most {max_jobs()} (4 worker processes per CPU core here), got {jobs}")
    if isinstance(regret_bidders, bool) or not isinstance(regret_bidders, int) or regret_bidders < 0:
        raise ValueError(f"regret_bidders must be a non-negative integer, got {regret_bidders!r}")
    check_executor(executor)
    if not s.entries:
        raise ValueError(f"suite {s.name!r} has no instances")
    out = Path(out_dir)
    for path in output_paths(out, plots=plots):
        if path.is_dir():
            raise ValueError(f"out_dir: {path} is a directory, not a file")
    _check_inputs_kept(s, output_paths(out, plots=plots))
    journal_path = out / JOURNAL
    # a damaged journal is reported before anything is written (nothing is lost)
    done, lines, intact = _read_journal(journal_path) if resume else ({}, {}, 0)
    cells = [(e, m) for e in s.entries for m in meths]
    for e, m in cells:
        row = done.get(cell_key(e, _method_name(m), mechanism, time_limit))
        if row is not None and (row["instance"] != e.name or row["method"] != _method_name(m)):
            raise JournalError(f"{journal_path}:{lines[row['key']]}: /instance, /method: "
                               f"{row['instance']!r} / {row['method']!r} do not match the key {row['key']!r}; "
                               "remove the line, or run again with --fresh to redo every cell")
    out.mkdir(parents=True, exist_ok=True)
    if not resume and journal_path.exists():
        journal_path.unlink()
    if any(not s.path_of(e).exists() for e in s.entries):
        materialize(s)

    todo = [(e, m) for e, m in cells if not _finished(done.get(cell_key(e, _method_name(m), mechanism, time_limit)))]
    resumed = len(cells) - len(todo)
    payloads: dict[str, tuple[bytes | None, str]] = {}
    for e in {e.name: e for e, _ in todo}.values():
        try:
            payloads[e.name] = (s.path_of(e).read_bytes(), "")
        except OSError as exc:
            payloads[e.name] = (None, f"{e.file}: cannot read: {exc.strerror or exc}")

    own = executor is None
    label = executor_label or ("local process pool" if own else type(executor).__name__)
    journal = _Journal(journal_path, intact)
    bar = None
    try:
        def new_pool(workers: int) -> Executor:
            return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

        if own and todo:
            executor = new_pool(min(jobs, len(todo)))
        if progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            from ..cli.common import err_console

            bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TextColumn("{task.fields[last]}"), console=err_console, transient=False)
            bar.start()
            task = bar.add_task(f"bench {s.name}", total=len(cells), completed=resumed, last="")
        def record(e: SuiteEntry, name: str, res: Mapping[str, Any]) -> None:
            row = {"key": cell_key(e, name, mechanism, time_limit), "instance": e.name, "family": e.family,
                   "method": name, "mechanism": mechanism, "time_limit": time_limit,
                   "finished": time.time(), **{k: json_safe(v) for k, v in res.items()}}
            row.setdefault("welfare", 0.0)
            row.setdefault("seconds", 0.0)
            journal.append(row)
            done[row["key"]] = row
            if bar is not None:
                bar.update(task, advance=1, last=f"{e.name} / {name}: {row['status']}")

        def drain(pool: Executor, batch: list[tuple[SuiteEntry, Any]]) -> list[tuple[SuiteEntry, Any]]:
            """Run ``batch`` on ``pool``, record each cell; return the cells lost to a broken pool."""
            futures: dict[Future[dict[str, Any]], tuple[SuiteEntry, Any]] = {}
            for e, m in batch:
                payload, err = payloads[e.name]
                fut = pool.submit(run_cell, payload, err, e.file, e.sha256, m, time_limit, mechanism, regret_bidders)
                futures[fut] = (e, m)
            lost = []
            for fut in as_completed(futures):
                e, m = futures[fut]
                try:
                    res = fut.result()
                except BrokenProcessPool:
                    if own:  # a worker died: every cell still in the pool is lost with it
                        lost.append((e, m))
                        continue
                    res = {"status": "error", "error": "worker: the worker process died (killed, or out of memory)"}
                except Exception as exc:  # noqa: BLE001 - a failed worker call fails its cell only
                    res = {"status": "error", "error": f"worker: {type(exc).__name__}: {exc}"}
                record(e, _method_name(m), res)
            return lost

        lost = drain(executor, todo) if todo else []  # type: ignore[arg-type]
        if lost:  # the cells lost with a dead worker: again in a fresh pool, then one at a time
            executor.shutdown(wait=True, cancel_futures=True)  # type: ignore[union-attr]
            executor = new_pool(min(jobs, len(lost)))
            lost = drain(executor, lost)
            if lost:
                executor.shutdown(wait=True, cancel_futures=True)
                executor = None
            for e, m in lost:
                executor = executor or new_pool(1)
                if drain(executor, [(e, m)]):  # it broke a pool of its own: this cell is the culprit
                    record(e, _method_name(m), {"status": "error", "error": "worker: the worker process died "
                                                "(killed, or out of memory) while running this cell alone"})
                    executor.shutdown(wait=True, cancel_futures=True)
                    executor = None
    finally:
        journal.close()
        if bar is not None:
            bar.stop()
        if own and executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    rows = [done[cell_key(e, _method_name(m), mechanism, time_limit)] for e, m in cells]
    results = _derive(s, rows)
    names = tuple(_method_name(m) for m in meths)
    files = write_outputs(s, results, out, methods=names, time_limit=time_limit, mechanism=mechanism,
                          executor_label=label, jobs=jobs if own else None, plots=plots)
    files = {**files, "journal": journal_path}
    return BenchResult(s.name, tuple(results), names, len(todo), resumed, time.perf_counter() - t_start, out,
                       MappingProxyType(files))


def max_jobs() -> int:
    """The most local workers a run may ask for: 4 per CPU core (at least 4)."""
    return 4 * max(1, os.cpu_count() or 1)


def _check_inputs_kept(suite: Suite, outputs: Iterable[Path]) -> None:
    """No output file may be an input of the suite (its manifest, an instance file)."""
    inputs = [p for p in [suite.manifest, *(suite.path_of(e) for e in suite.entries)] if p is not None]
    for path in outputs:
        for src in inputs:
            try:
                same = path.exists() and src.exists() and os.path.samefile(path, src)
            except OSError:
                same = False
            if same or path.absolute() == src.absolute():
                raise ValueError(f"out_dir: {path} is an input of the suite ({src}); writing the results "
                                 "there would overwrite it: choose another --out")


def _finished(row: Mapping[str, Any] | None) -> bool:
    """Whether a journalled cell counts as done on resume: not a worker or instance-load error."""
    if row is None:
        return False
    return not (row.get("status") == "error" and str(row.get("error") or "").startswith(("worker:", "instance:")))


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else ``None``."""
    if is_real(value) and math.isfinite(value):
        return float(value)
    return None


def _derive(suite: Suite, rows: Iterable[Mapping[str, Any]]) -> list[CellResult]:
    rows = list(rows)
    entries = {e.name: e for e in suite.entries}
    best: dict[str, float | None] = {}
    bound: dict[str, float | None] = {}
    for name, e in entries.items():
        ok_rows = [r for r in rows if r["instance"] == name and r.get("status") in ("optimal", "feasible")]
        found = [_finite(r.get("welfare")) for r in ok_rows]
        cands = [v for v in [_finite(e.best_welfare), *found] if v is not None]
        best[name] = max(cands) if cands else None
        bounds = [_finite(r.get("bound")) for r in ok_rows]
        bcands = [v for v in [_finite(e.bound_value), *bounds] if v is not None]
        bound[name] = min(bcands) if bcands else None
    fields = set(CellResult.__dataclass_fields__)
    out = []
    for r in rows:
        e = entries[r["instance"]]
        ok = r.get("status") in ("optimal", "feasible")
        welfare = _finite(r.get("welfare")) or 0.0
        b, ub = best[e.name], bound[e.name]
        extra = {
            "best_known": b,
            "best_bound": ub,
            "pct_best": (100.0 * welfare / b if b and b > 0 else (100.0 if b == 0 else None)) if ok else None,
            "gap_to_bound": (max(0.0, (ub - welfare) / ub) if ub and ub > 0 else (0.0 if ub == 0 else None)) if ok else None,
            "slots": r.get("slots") or e.size.get("slots", 0),
            "bids": r.get("bids") or e.size.get("bids", 0),
            "bidders": r.get("bidders") or e.size.get("bidders", 0),
        }
        kw = {k: v for k, v in r.items() if k in fields}
        kw.update(extra)
        kw["welfare"] = welfare
        kw["seconds"] = _finite(r.get("seconds")) or 0.0
        kw["error"] = r.get("error") or ""
        kw["mechanism_note"] = r.get("mechanism_note") or ""
        kw["payments_note"] = r.get("payments_note") or ""
        kw["worker"] = r.get("worker") or ""
        out.append(CellResult(**kw))
    return out


# ------------------------------------------------------------------------------ outputs
def output_paths(out: str | os.PathLike[str], *, plots: bool = True) -> tuple[Path, ...]:
    """The files a run writes in ``out``: the journal, CSV, JSON, report and (``plots``) the PNGs."""
    names = [JOURNAL, "results.csv", "results.json", "report.md"]
    if plots:
        names += ["quality_vs_time.png", "time_vs_size.png"]
    return tuple(Path(out) / n for n in names)


COLUMNS = ("instance", "family", "bids", "method", "status", "welfare", "pct_best", "gap_to_bound", "seconds",
           "payments_seconds", "max_regret", "error")


def _fmt(v: Any, kind: str = "") -> str:
    if v is None:
        return "—"
    if kind == "pct":
        return f"{v:.2f}"
    if kind == "gap":
        return f"{100 * v:.3f} %"
    if isinstance(v, float):
        return f"{v:.6g}" if kind != "s" else f"{v:.3f}"
    return str(v)


def table_rows(cells: Sequence[CellResult], *, mechanism: str | None) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the results table (as printed by the CLI and the report)."""
    head = ["instance", "bids", "method", "status", "welfare", "% best", "gap to bound", "seconds"]
    if mechanism:
        head += ["payments s", "exact", "max regret"]
    rows = []
    for c in cells:
        row = [c.instance, str(c.bids), c.method, c.status, _fmt(c.welfare) if c.status != "error" else "—",
               _fmt(c.pct_best, "pct"), _fmt(c.gap_to_bound, "gap"), _fmt(c.seconds, "s")]
        if mechanism:
            exact = "—" if c.payments_exact is None else ("yes" if c.payments_exact else "no")
            if c.mechanism_note:
                row += [c.mechanism_note if c.payments_seconds is None else _fmt(c.payments_seconds, "s"), exact,
                        c.mechanism_note if c.max_regret is None else _fmt(c.max_regret)]
            else:
                row += [_fmt(c.payments_seconds, "s"), exact, _fmt(c.max_regret)]
        rows.append(row)
    return head, rows


def _markdown(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r).replace("\n", " ") + " |" for r in rows]
    return "\n".join(lines)


def summary_rows(cells: Sequence[CellResult], methods: Sequence[str]) -> list[list[str]]:
    """Per method: cells, errors, optimal, mean % of best known, total and max seconds."""
    out = []
    for m in methods:
        mine = [c for c in cells if c.method == m]
        ok = [c for c in mine if c.pct_best is not None]
        pct = sum(c.pct_best for c in ok) / len(ok) if ok else None  # type: ignore[misc]
        out.append([m, str(len(mine)), str(sum(c.status == "error" for c in mine)),
                    str(sum(c.status == "optimal" for c in mine)), _fmt(pct, "pct"),
                    f"{sum(c.seconds for c in mine):.3f}", f"{max((c.seconds for c in mine), default=0.0):.3f}"])
    return out


def write_outputs(suite: Suite, cells: Sequence[CellResult], out: Path, *, methods: Sequence[str],
                  time_limit: float | None, mechanism: str | None, executor_label: str, jobs: int | None,
                  plots: bool = True) -> dict[str, Path]:
    """Write ``results.csv``, ``results.json``, ``report.md`` and the plots, each atomically.

    Every output is built in memory first (a non-finite number becomes ``null`` in the JSON and
    an empty field in the CSV), so a failure while preparing them writes none of them.
    """
    import csv
    import io

    buf = io.StringIO()
    names = list(CellResult.__dataclass_fields__)
    w = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    w.writeheader()
    for c in cells:
        w.writerow({k: ("" if v is None else json.dumps(v) if isinstance(v, dict) else v)
                    for k, v in json_safe(c.to_dict()).items()})
    meta = {"suite": suite.name, "methods": list(methods), "time_limit": time_limit, "mechanism": mechanism,
            "executor": executor_label, "jobs": jobs, "host": platform.node(), "cpus": os.cpu_count(),
            "python": platform.python_version()}
    results_json = json.dumps(json_safe({"meta": meta, "cells": [c.to_dict() for c in cells]}), indent=1,
                              allow_nan=False)
    head, rows = table_rows(cells, mechanism=mechanism)
    md = [f"# Benchmark: suite `{suite.name}`", "",
          f"- methods: {', '.join(methods)}; time limit per cell: {time_limit if time_limit is not None else 'none'} s",
          f"- executor: {executor_label}" + (f" ({jobs} workers)" if jobs else "") + f"; {os.cpu_count()} CPUs",
          f"- mechanism: {mechanism or 'none'}"]
    if mechanism and any(c.mechanism_note == UNAVAILABLE for c in cells):
        md.append("- payments and regret: unavailable (gensolver.mechanisms could not be imported)")
    md += ["- `% best`: welfare / best known (manifest, or better found in this run); `gap to bound`: "
           "(best bound - welfare) / best bound", "", "## Results", "", _markdown(head, rows), "",
           "## Per method", "",
           _markdown(["method", "cells", "errors", "optimal", "mean % best", "total s", "max s"], summary_rows(cells, methods))]
    inexact = [c for c in cells if c.payments_exact is False]
    if inexact:
        md += ["", "## Inexact payments", "",
               "Payments charged are not the mechanism's exact payments; each lies in the interval given "
               "(`payment_bounds` in results.json).", ""]
        for c in inexact:
            widest = max(((b, hi - lo) for b, (lo, hi) in (c.payment_bounds or {}).items()
                          if lo is not None and hi is not None), key=lambda t: t[1], default=None)
            md.append(f"- `{c.instance}` / `{c.method}`: {c.payments_note}"
                      + (f" (widest interval: bidder `{widest[0]}`, {widest[1]:.6g})" if widest else ""))
    errors = [c for c in cells if c.status == "error"]
    if errors:
        md += ["", "## Errors", ""] + [f"- `{c.instance}` / `{c.method}`: {c.error}" for c in errors]
    if plots:
        md += ["", "## Plots", "", "![quality vs time](quality_vs_time.png)", "", "![solve time vs size](time_vs_size.png)"]
    pngs = _plots(cells, methods, suite.name) if plots else {}

    # every output is ready: write them, each atomically
    files: dict[str, Path] = {"results_csv": out / "results.csv", "results_json": out / "results.json"}
    contents: list[tuple[str, Path, str | bytes]] = [("results_csv", files["results_csv"], buf.getvalue()),
                                                     ("results_json", files["results_json"], results_json)]
    contents += [(key, out / name, data) for key, (name, data) in pngs.items()]
    contents.append(("report", out / "report.md", "\n".join(md) + "\n"))
    for key, path, data in contents:
        with atomic_write(path, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
        files[key] = path
    return files


def plot_quality(cells: Sequence[CellResult], methods: Sequence[str], suite: str) -> Any:
    """Welfare (% of best known) against solve time per cell, one marker per method: a Figure."""
    require_extra("matplotlib", "sim", "the benchmark plots (or pass plots=False)")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    markers = "osD^v<>ph*"
    for k, m in enumerate(methods):
        pts = [(max(c.seconds, 1e-4), c.pct_best) for c in cells if c.method == m and c.pct_best is not None]
        if pts:
            ax.scatter(*zip(*pts), label=m, marker=markers[k % len(markers)], alpha=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("solve time per cell (s, log)")
    ax.set_ylabel("welfare, % of best known")
    ax.set_title(f"{suite}: quality vs time")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    return fig


def plot_time(cells: Sequence[CellResult], methods: Sequence[str], suite: str) -> Any:
    """Solve time against instance size (bids), one marker per method: a Figure."""
    require_extra("matplotlib", "sim", "the benchmark plots (or pass plots=False)")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    markers = "osD^v<>ph*"
    for k, m in enumerate(methods):
        pts = sorted((max(c.bids, 1), max(c.seconds, 1e-4)) for c in cells if c.method == m and c.status != "error")
        if pts:
            ax.plot(*zip(*pts), label=m, marker=markers[k % len(markers)], linestyle="", alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bids (log)")
    ax.set_ylabel("solve time (s, log)")
    ax.set_title(f"{suite}: solve time vs size")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def _plots(cells: Sequence[CellResult], methods: Sequence[str], suite: str) -> dict[str, tuple[str, bytes]]:
    """The two PNG plots in memory: ``{key: (file name, bytes)}``."""
    return {"plot_quality": ("quality_vs_time.png", _png(plot_quality(cells, methods, suite))),
            "plot_time": ("time_vs_size.png", _png(plot_time(cells, methods, suite)))}


def _png(fig: Any) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()
