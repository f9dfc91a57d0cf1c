"""``gensolver bench`` (run a suite) and ``gensolver suite`` (list, show, materialize, build)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import require_extra
from .choices import MECHANISMS, choice
from .common import (
    SafeConsole,
    check_output_dir,
    check_output_file,
    check_time_limit_option,
    console,
    fail,
    value_or_alias,
)

__all__ = ["register", "bench_command"]


def _split_methods(text: Optional[str]) -> Optional[list[str]]:
    if text is None:
        return None
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        fail("--methods must name at least one method, e.g. --methods cpsat,greedy")
    return methods


def suite_label(suite: str) -> str:
    """The folder name of ``suite`` under ``bench-out/``: its name, or its folder's.

    Examples
    --------
    >>> suite_label("smoke"), suite_label("my/suite/manifest.json"), suite_label("runs/mine/")
    ('smoke', 'suite', 'mine')
    """
    path = Path(suite)
    if path.name == "manifest.json":
        path = path.parent
    return path.name or "suite"


def bench_command(
    suite: str = typer.Argument(..., help="Suite name (smoke, small, medium, large), folder or manifest."),
    methods: Optional[str] = typer.Option(None, "--methods", "-m", help="Comma-separated solver methods (default: auto,cpsat,highs,greedy,lp where usable)."),
    mechanism: Optional[str] = typer.Option(None, "--mechanism", **choice(MECHANISMS), help="Also run this mechanism per cell (payments time, max regret)."),
    per_solve_limit: float = typer.Option(10.0, "--per-solve-limit", help="The time limit of each call of a cell (the solve, the --mechanism run, each of max regret's runs), in that call's unit: seconds, or work units where the call is deterministic (docs/contributing.md: time_limit)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", "-t", help="Deprecated alias of --per-solve-limit."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Local worker processes."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (journal, CSV, JSON, report, plots; default: bench-out/SUITE, e.g. bench-out/smoke)."),
    dask: Optional[str] = typer.Option(None, "--dask", help="Run cells on this Dask scheduler address (tcp://host:8786)."),
    fresh: bool = typer.Option(False, "--fresh", help="Ignore the journal of an earlier run and redo every cell."),
    regret_bidders: int = typer.Option(2, "--regret-bidders", help="Winning bidders whose regret is measured (with --mechanism)."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Skip the PNG plots."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Run every (instance, method) cell of SUITE; resumable; writes CSV, JSON, report.md and plots."""
    from ..bench import SuiteError, load_suite, run_suite
    from ..bench.runner import check_methods, output_paths
    from ..solvers import UnknownMethodError

    meths = _split_methods(methods)
    limit = _per_solve_limit(per_solve_limit, time_limit, default=10.0)
    if jobs < 1:
        fail(f"--jobs must be at least 1, got {jobs}")
    if regret_bidders < 0:
        fail(f"--regret-bidders must be non-negative, got {regret_bidders}")
    if mechanism is not None:
        try:
            from ..mechanisms import get_mechanism

            get_mechanism(mechanism)
        except ImportError:
            pass  # reported as unavailable in the table
        except ValueError as exc:
            fail(f"--mechanism: {exc}")
    if meths is not None:
        try:
            check_methods(meths)
        except ValueError as exc:  # UnknownMethodError too
            fail(f"--methods: {exc}")
    if out is None:  # one folder per suite: `bench small` does not overwrite (or resume) smoke's results
        out = Path("bench-out") / suite_label(suite)
    check_output_dir(out, "--out")
    for path in output_paths(out, plots=not no_plots):
        check_output_file(path, "--out")
    try:
        loaded = load_suite(suite)
    except SuiteError as exc:
        fail(str(exc))
    client = None
    executor = None
    label = None
    try:
        if dask is not None:
            Client = require_extra("distributed", "dist", "gensolver bench --dask").Client
            try:
                client = Client(dask, timeout=20)
            except (OSError, TimeoutError, ValueError) as exc:
                fail(f"cannot reach the Dask scheduler at {dask}: {exc}")
            executor = client.get_executor()
            label = f"Dask cluster at {dask} ({len(client.scheduler_info().get('workers', {}))} workers)"
        try:
            result = run_suite(loaded, methods=meths, per_solve_limit=limit, executor=executor, jobs=jobs,
                               out_dir=out, mechanism=mechanism, regret_bidders=regret_bidders, resume=not fresh,
                               progress=not quiet, plots=not no_plots, executor_label=label)
        except (SuiteError, UnknownMethodError, ValueError) as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"--out: cannot write {exc.filename or out}: {exc.strerror or exc}")
    finally:
        if client is not None:
            client.close()
    print_table(result)
    if result.errors:  # the table and files are written; the run still failed some cells
        raise typer.Exit(1)


def _wide() -> Console:
    """The CLI console, or a 150-column one when output is not a terminal (no truncation)."""
    return console if console.is_terminal else SafeConsole(width=max(console.width, 150))


def print_table(result: object) -> None:
    """Print a :class:`~gensolver.bench.BenchResult` as a rich table plus a summary line."""
    from ..bench.runner import table_rows

    cells = result.cells  # type: ignore[attr-defined]
    mechanism = next((c.mechanism for c in cells if c.mechanism), None)
    head, rows = table_rows(cells, mechanism=mechanism)
    table = Table(title=f"suite {result.suite}")  # type: ignore[attr-defined]
    for k, h in enumerate(head):
        table.add_column(h, no_wrap=True, justify="left" if k in (0, 2, 3) else "right")
    for row in rows:
        table.add_row(*row)
    _wide().print(table)
    errors = [c for c in cells if c.status == "error"]
    for c in errors:
        console.print(f"[red]error[/] {c.instance} / {c.method}: {c.error}", highlight=False, soft_wrap=True)
    console.print(f"{len(cells)} cells ({result.ran} run, {result.resumed} resumed, {len(errors)} errors) "  # type: ignore[attr-defined]
                  f"in {result.seconds:.1f} s; report: {result.files['report']}", highlight=False, soft_wrap=True)  # type: ignore[attr-defined]


suite_app = typer.Typer(help="Benchmark suites: list, show, materialize, build.", no_args_is_help=True)


@suite_app.command("list")
def suite_list() -> None:
    """List the bundled suites."""
    from ..bench import SuiteError, list_suites, load_suite

    table = Table("suite", "instances", "files", "description")
    errors = []
    for name in list_suites():
        try:
            s = load_suite(name)
        except SuiteError as exc:
            errors.append(str(exc))
            table.add_row(name, "—", "—", "error: malformed manifest")
            continue
        present = sum(s.path_of(e).exists() for e in s.entries)
        table.add_row(name, str(len(s.entries)), f"{present}/{len(s.entries)} present", s.description)
    console.print(table)
    if errors:
        fail("; ".join(errors))


@suite_app.command("show")
def suite_show(name: str = typer.Argument(..., help="Suite name, folder or manifest.")) -> None:
    """Show a suite's instances with sizes and best known values."""
    from ..bench import SuiteError, load_suite

    try:
        s = load_suite(name)
    except SuiteError as exc:
        fail(str(exc))
    table = Table("instance", "family", "seed", "slots", "bids", "bidders", "best known", "by", "bound", title=s.name)
    for e in s.entries:
        bk = e.best_known or {}
        table.add_row(e.name, e.family, str(e.seed), str(e.size.get("slots", "")), str(e.size.get("bids", "")),
                      str(e.size.get("bidders", "")), "—" if e.best_welfare is None else f"{e.best_welfare:.6g}",
                      f"{bk.get('method', '')} {bk.get('seconds', '')} s" if bk else "",
                      "—" if e.bound_value is None else f"{e.bound_value:.6g}")
    _wide().print(table)


@suite_app.command("materialize")
def suite_materialize(
    name: str = typer.Argument(..., help="Suite name, folder or manifest."),
    force: bool = typer.Option(False, "--force", help="Regenerate files that are present."),
) -> None:
    """Generate a suite's missing instance files from their seeds and check their checksums."""
    from ..bench import SuiteError, load_suite, materialize

    try:
        s = load_suite(name)
    except SuiteError as exc:
        fail(str(exc))
    status = materialize(s, force=force, progress=lambda e, st: console.print(f"{e.name}: {st}", highlight=False))
    bad = [n for n, st in status.items() if st.startswith("error")]
    if bad:
        fail(f"{len(bad)} instance(s) failed their checksum or could not be materialized: {', '.join(bad)}", code=1)


@suite_app.command("build")
def suite_build(
    name: str = typer.Argument(..., help="A suite of the catalog (gensolver.bench.catalog)."),
    per_solve_limit: Optional[float] = typer.Option(None, "--per-solve-limit", help="Seconds of each solve for the best known values (default: the catalog's)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", "-t", help="Deprecated alias of --per-solve-limit."),
    folder: Optional[Path] = typer.Option(None, "--folder", help="Write here instead of the bundled suites folder (gensolver/data/suites)."),
) -> None:
    """Regenerate a catalog suite and its manifest (best known values by cpsat, bound by lp)."""
    from ..bench.catalog import CATALOG
    from ..bench.suites import SuiteError, build_manifest, suites_dir

    if name not in CATALOG:
        fail(f"unknown suite {name!r}; the catalog has: {', '.join(CATALOG)}")
    per_solve_limit = _per_solve_limit(per_solve_limit, time_limit, default=None)
    dest = folder if folder is not None else suites_dir() / name
    check_output_dir(dest, "--folder")
    spec = CATALOG[name]
    for path in [dest / f"{inst['name']}.json.gz" for inst in spec["instances"]] + [dest / "manifest.json"]:
        check_output_file(path, "--folder")
    try:
        s = build_manifest(name, spec["instances"], description=spec["description"], committed=spec["committed"],
                           folder=folder,
                           per_solve_limit=spec["per_solve_limit"] if per_solve_limit is None else per_solve_limit)
    except SuiteError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"--folder: cannot write {exc.filename or folder}: {exc.strerror or exc}")
    console.print(f"wrote {s.folder / 'manifest.json'} ({len(s.entries)} instances)")


def _per_solve_limit(value: Optional[float], old: Optional[float], *, default: Optional[float]) -> Optional[float]:
    """``--per-solve-limit``, or its deprecated alias ``--time-limit`` (a warning), checked (exit 2)."""
    value = value_or_alias(value, old, option="--per-solve-limit", old="--time-limit", default=default)
    check_time_limit_option(value, "--per-solve-limit" if old is None else "--time-limit")
    return value


def register(app: typer.Typer) -> None:
    """Add ``bench`` and the ``suite`` group to ``app``."""
    app.command("bench")(bench_command)
    app.add_typer(suite_app, name="suite")
