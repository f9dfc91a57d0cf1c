"""The benchmark runner: every (instance, method) cell of a suite, resumable and parallel.

:func:`run_suite` runs each cell on any :class:`concurrent.futures.Executor` (a local process
pool by default, a Dask cluster's ``Client.get_executor()`` for distributed runs), appends each
finished cell to a journal (``cells.jsonl``, one JSON line, flushed and fsync'd) so that an
interrupted run resumes without redoing finished cells, and writes the results (CSV, JSON, a
Markdown report and PNG plots) atomically.

A cell solves the instance with its method under ``per_solve_limit`` (the ``time_limit`` of the
solve, and of each mechanism run when a mechanism is asked), checks the answer with :func:`gensolver.verify.check_allocation` (an infeasible answer
is an error), and, when a mechanism is asked, times :func:`gensolver.mechanisms.run_mechanism`
and measures :func:`gensolver.verify.max_regret` over the first ``regret_bidders`` winning
bidders (a lower bound on the mechanism's regret; columns are reported as unavailable when
those modules are not importable). A corrupt instance file fails only its own cells.

A worker process that dies (killed, out of memory) breaks a local process pool: the cells it
took down with it are run again in a fresh pool, and those that break it a second time are run
one at a time, so only a cell that kills its worker when alone fails (``worker: the worker
process died ...``). On resume, cells whose journalled error is a worker or an instance-load
error (``worker:``, ``instance:``) are run again; a solver's error stays (rerun with ``--fresh``).

The work is split by concern: :mod:`.cell` (one cell, in a worker), :mod:`.journal` (the
journal and resume), :mod:`.report` (tables, CSV, JSON, report.md), :mod:`.plots`; this module
runs the cells on an executor and re-exports their public names.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._deprecation import NOT_GIVEN, keyword_alias
from ..errors import InputError, JournalError, check_executor, check_time_limit
from ..model.io import json_safe
from .cell import DEFAULT_METHODS, UNAVAILABLE, CellResult, _method_name, check_methods, run_cell
from .journal import JOURNAL, _finished, _Journal, _read_journal, cell_key, read_journal
from .plots import plot_quality, plot_time
from .report import COLUMNS, _derive, output_paths, summary_rows, table_rows, write_outputs
from .suites import Suite, SuiteEntry, load_suite, materialize

__all__ = ["CellResult", "BenchResult", "run_suite", "run_cell", "check_methods", "DEFAULT_METHODS", "JOURNAL",
           "read_journal", "JournalError", "plot_quality", "plot_time", "max_jobs", "cell_key", "output_paths",
           "table_rows", "summary_rows", "write_outputs", "COLUMNS", "UNAVAILABLE"]


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


def run_suite(
    suite: str | os.PathLike[str] | Suite,
    *,
    methods: Sequence[str | Callable[..., Any]] | None = None,
    per_solve_limit: float | None = 10.0,
    executor: Executor | None = None,
    jobs: int = 1,
    out_dir: str | os.PathLike[str] = "bench-out",
    mechanism: str | None = None,
    regret_bidders: int = 2,
    resume: bool = True,
    progress: bool = True,
    plots: bool = True,
    executor_label: str | None = None,
    time_limit: Any = NOT_GIVEN,
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
    per_solve_limit : float or None
        The ``time_limit`` of each call of a cell, in that call's unit (wall seconds; work units
        where the call is deterministic, such as ``vcg`` on method ``auto``); ``None``: no limit.
        The calls are the solve, the mechanism run and each of
        :func:`gensolver.verify.max_regret`'s runs of the mechanism, so a cell with a mechanism
        takes several times this budget.
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
    time_limit : float or None
        Deprecated alias of ``per_solve_limit`` (a :class:`~gensolver.GensolverDeprecationWarning`).

    Returns
    -------
    BenchResult

    Raises
    ------
    gensolver.bench.SuiteError
        Unknown suite or malformed manifest.
    ValueError
        Unknown or unusable methods, bad ``per_solve_limit``, ``jobs`` or ``regret_bidders``.
    """
    per_solve_limit = keyword_alias(per_solve_limit, time_limit, old="time_limit", new="per_solve_limit",
                                    where="run_suite", default=10.0)
    t_start = time.perf_counter()
    s = suite if isinstance(suite, Suite) else load_suite(suite)
    meths = check_methods(methods)
    _check_run_args(s, per_solve_limit=per_solve_limit, jobs=jobs, regret_bidders=regret_bidders, executor=executor)
    out = Path(out_dir)
    journal_path = out / JOURNAL
    cells = [(e, m) for e in s.entries for m in meths]
    done, intact = _open_journal(s, out, cells, mechanism=mechanism, per_solve_limit=per_solve_limit, resume=resume,
                                 plots=plots)
    todo = [(e, m) for e, m in cells if not _finished(done.get(cell_key(e, _method_name(m), mechanism, per_solve_limit)))]
    resumed = len(cells) - len(todo)
    own = executor is None
    label = executor_label or ("local process pool" if own else type(executor).__name__)
    _run_cells(s, todo, done, _Journal(journal_path, intact), executor=executor, jobs=jobs, per_solve_limit=per_solve_limit,
               mechanism=mechanism, regret_bidders=regret_bidders, progress=progress, total=len(cells),
               resumed=resumed)

    rows = [done[cell_key(e, _method_name(m), mechanism, per_solve_limit)] for e, m in cells]
    results = _derive(s, rows)
    names = tuple(_method_name(m) for m in meths)
    files = write_outputs(s, results, out, methods=names, per_solve_limit=per_solve_limit, mechanism=mechanism,
                          executor_label=label, jobs=jobs if own else None, plots=plots)
    files = {**files, "journal": journal_path}
    return BenchResult(s.name, tuple(results), names, len(todo), resumed, time.perf_counter() - t_start, out,
                       MappingProxyType(files))


def _check_run_args(s: Suite, *, per_solve_limit: float | None, jobs: Any, regret_bidders: Any, executor: Any) -> None:
    """:func:`run_suite`'s argument checks (``ValueError`` naming the argument)."""
    check_time_limit(per_solve_limit, name="per_solve_limit")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs must be a positive integer, got {jobs!r}")
    if jobs > max_jobs():
        raise InputError(f"jobs must be at most {max_jobs()} (4 worker processes per CPU core here), got {jobs}")
    if isinstance(regret_bidders, bool) or not isinstance(regret_bidders, int) or regret_bidders < 0:
        raise InputError(f"regret_bidders must be a non-negative integer, got {regret_bidders!r}")
    check_executor(executor)
    if not s.entries:
        raise InputError(f"suite {s.name!r} has no instances")


def _open_journal(s: Suite, out: Path, cells: list[tuple[SuiteEntry, Any]], *, mechanism: str | None,
                  per_solve_limit: float | None, resume: bool, plots: bool) -> tuple[dict[str, Any], int]:
    """Check the outputs and the journal of ``out`` before anything is written, then create the
    folder (and the instance files); returns the journal's finished rows by key and its intact length."""
    for path in output_paths(out, plots=plots):
        if path.is_dir():
            raise InputError(f"out_dir: {path} is a directory, not a file")
    _check_inputs_kept(s, output_paths(out, plots=plots))
    journal_path = out / JOURNAL
    # a damaged journal is reported before anything is written (nothing is lost)
    done, lines, intact = _read_journal(journal_path) if resume else ({}, {}, 0)
    for e, m in cells:
        row = done.get(cell_key(e, _method_name(m), mechanism, per_solve_limit))
        if row is not None and (row["instance"] != e.name or row["method"] != _method_name(m)):
            raise JournalError(f"{journal_path}:{lines[row['key']]}: /instance, /method: "
                               f"{row['instance']!r} / {row['method']!r} do not match the key {row['key']!r}; "
                               "remove the line, or run again with --fresh to redo every cell")
    out.mkdir(parents=True, exist_ok=True)
    if not resume and journal_path.exists():
        journal_path.unlink()
    if any(not s.path_of(e).exists() for e in s.entries):
        materialize(s)
    return done, intact


def _run_cells(s: Suite, todo: list[tuple[SuiteEntry, Any]], done: dict[str, Any], journal: _Journal, *,
               executor: Executor | None, jobs: int, per_solve_limit: float | None, mechanism: str | None,
               regret_bidders: int, progress: bool, total: int, resumed: int) -> None:
    """Run the ``todo`` cells on ``executor`` (default: an own spawned process pool), appending
    each result to ``journal`` and to ``done``; cells lost with a dead worker are retried in a
    fresh pool, then one at a time."""
    payloads: dict[str, tuple[bytes | None, str]] = {}
    for e in {e.name: e for e, _ in todo}.values():
        try:
            payloads[e.name] = (s.path_of(e).read_bytes(), "")
        except OSError as exc:
            payloads[e.name] = (None, f"{e.file}: cannot read: {exc.strerror or exc}")
    own = executor is None
    bar = None
    try:
        def new_pool(workers: int) -> Executor:
            return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

        if own and todo:
            executor = new_pool(min(jobs, len(todo)))
        if progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            from .._log import err_console

            bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TextColumn("{task.fields[last]}"), console=err_console, transient=False)
            bar.start()
            task = bar.add_task(f"bench {s.name}", total=total, completed=resumed, last="")
        def record(e: SuiteEntry, name: str, res: Mapping[str, Any]) -> None:
            row = {"key": cell_key(e, name, mechanism, per_solve_limit), "instance": e.name, "family": e.family,
                   "method": name, "mechanism": mechanism, "per_solve_limit": per_solve_limit,
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
                fut = pool.submit(run_cell, payload, err, e.file, e.sha256, m, per_solve_limit, mechanism, regret_bidders)
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
                raise InputError(f"out_dir: {path} is an input of the suite ({src}); writing the results "
                                 "there would overwrite it: choose another --out")
