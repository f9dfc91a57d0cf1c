"""``gensolver verify``: empirical regret of a mechanism on one instance."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..errors import MissingExtraError
from ..model import InstanceError, read_instance
from ..solvers import BackendUnavailableError, UnknownMethodError
from .choices import MECHANISMS, METHODS, choice
from .common import (
    check_time_limit_option,
    console,
    err_console,
    fail,
    method_or_alias,
    print_json,
    value_or_alias,
)

__all__ = ["register"]


def verify_command(
    file: Path = typer.Argument(..., help="Instance file: gensolver.instance/v1 JSON (.json/.json.gz) or CATS text; or a bundled instance (smoke/smoke-L3, or bundled:smoke/smoke-L3)."),
    mechanism: str = typer.Option("vcg", "--mechanism", "-M", **choice(MECHANISMS), help="Mechanism: vcg, greedy-critical, pay-as-bid, core, lavi-swamy (with --alpha)."),
    method: str = typer.Option("auto", "--method", "-m", **choice(METHODS), help="Winner determination method (see `gensolver methods`)."),
    solver: Optional[str] = typer.Option(None, "--solver", "-s", **choice(METHODS), help="Deprecated alias of --method (removed in the next release)."),
    per_run_limit: Optional[float] = typer.Option(None, "--per-run-limit", help="The time limit of each run of the mechanism (the truthful run and each misreport's), with that mechanism's meaning: seconds, or work units where the run is deterministic (default: none; docs/contributing.md: time_limit)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", "-t", help="Deprecated alias of --per-run-limit."),
    families: Optional[str] = typer.Option(
        None, "--families", help="Comma-separated misreport families (default: all of scale, bid, drop, subset, superset, false-name)."),
    alpha: Optional[float] = typer.Option(
        None, "--alpha",
        help="--mechanism lavi-swamy: the lottery's scaling, fixed before the reports (>= 1); regret is then "
             "measured on expected utilities. Without it alpha moves with the reports."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    """Run MECHANISM on FILE and report each bidder's regret over a finite family of misreports."""
    from ..mechanisms import UnknownMechanismError
    from ..verify.regret import FAMILIES, max_regret

    # the one rule of a time limit, before the file is read
    limit = value_or_alias(per_run_limit, time_limit, option="--per-run-limit", old="--time-limit", default=None)
    check_time_limit_option(limit, "--per-run-limit" if time_limit is None else "--time-limit")
    method = method_or_alias(method, solver)
    from .solve_cmd import bundled_or_none

    named = bundled_or_none(file)
    try:
        instance = named if named is not None else read_instance(file)
    except InstanceError as exc:
        fail(f"{file}: {exc}")
    if alpha is not None and mechanism != "lavi-swamy":
        fail("--alpha: only with --mechanism lavi-swamy")
    if alpha is not None and not (alpha >= 1 and alpha < float("inf")):
        fail(f"--alpha: must be a finite number >= 1, got {alpha}")
    kw: dict[str, Any] = {}
    if mechanism == "lavi-swamy":
        from ..verify.expected import expected_utility

        kw["utility"] = expected_utility
        if alpha is not None:
            kw["options"] = {"alpha": float(alpha)}
    fams = FAMILIES if families is None else tuple(f.strip() for f in families.split(",") if f.strip())
    if not fams:
        fail(f"--families: no family given; choose from {', '.join(FAMILIES)}")
    try:
        if as_json or not err_console.is_terminal:
            res = max_regret(mechanism, instance, families=fams, method=method, per_run_limit=limit, **kw)
        else:  # a transient progress bar on stderr: one step per bidder
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("verify {task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=err_console, transient=True) as bar:
                task = bar.add_task(f"{mechanism}: bidders", total=instance.n_bidders)
                res = max_regret(mechanism, instance, families=fams, method=method, per_run_limit=limit,
                                 progress=lambda b, k, n: bar.update(task, completed=k, total=n), **kw)
    except MissingExtraError:
        raise  # exit 3 and the pip install line (gensolver.cli.main)
    except (UnknownMechanismError, UnknownMethodError, BackendUnavailableError, ValueError) as exc:
        fail(str(exc))
    worst = res.worst
    if as_json:
        print_json({
            "mechanism": mechanism,
            "instance": instance.name or file.name,
            "max_regret": res.regret,
            "alpha": alpha,
            "families": list(fams),
            "bidders": {
                b: {
                    "regret": r.regret,
                    "truthful_utility": r.truthful_utility,
                    "best_utility": r.best_utility if r.evaluated else None,
                    "best_misreport": r.best_misreport.description if r.best_misreport and r.regret > 0 else None,
                    "misreports_tried": r.evaluated,
                }
                for b, r in res.per_bidder.items()
            },
            "worst": None if worst is None or worst.regret <= 0 else {
                "bidder": worst.bidder, "regret": worst.regret,
                "misreport": worst.best_misreport.description if worst.best_misreport else None,
                "family": worst.best_misreport.family if worst.best_misreport else None,
            },
        })
        return
    table = Table("bidder", "truthful utility", "regret", "best misreport", "tried",
                  title=f"{mechanism} on {instance.name or file.name}")
    for b, r in res.per_bidder.items():
        desc = r.best_misreport.description if r.best_misreport is not None and r.regret > 0 else "—"
        table.add_row(b, f"{r.truthful_utility:.6g}", f"{r.regret:.6g}", desc, str(r.evaluated))
    console.print(table)
    if worst is None or worst.regret <= 0:
        console.print(f"max regret 0: no misreport in families {', '.join(fams)} helps any bidder")
    else:
        assert worst.best_misreport is not None
        console.print(f"max regret [bold red]{worst.regret:.6g}[/]: bidder {worst.bidder} by "
                      f"'{worst.best_misreport.description}' ({worst.best_misreport.family})")



def register(app: typer.Typer) -> None:
    """Add ``verify`` to ``app``."""
    app.command("verify")(verify_command)
