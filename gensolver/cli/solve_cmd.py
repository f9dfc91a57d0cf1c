"""``gensolver solve`` and ``gensolver methods``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import MissingExtraError
from ..model import Instance, InstanceError, read_instance
from ..solvers import BackendUnavailableError, UnknownMethodError, list_methods, solve
from .choices import MECHANISMS, METHODS, choice
from .common import check_time_limit_option, console, fail, fail_reading, print_json
from .progress import working

__all__ = ["register", "EXIT_SOLVE_ERROR", "bundled_or_none"]

#: exit status when the solve (or the mechanism's winner determination) ends with status
#: ``error`` or ``infeasible``: the answer is printed, but it is never an exit 0
EXIT_SOLVE_ERROR = 1


def bundled_or_none(file: Path) -> Optional[Instance]:
    """The bundled instance FILE names (``[bundled:]<suite>/<instance>``, when no such file
    exists), or ``None`` for an ordinary path; exit 2 listing the valid names for a bad one."""
    from ..bench.bundled import PREFIX, bundled_instance, is_bundled_name

    text = str(file)
    if not text.startswith(PREFIX) and (file.exists() or not is_bundled_name(text)):
        return None
    try:
        return bundled_instance(text)
    except (InstanceError, ValueError) as exc:  # SuiteError is an InputError (a ValueError)
        fail(str(exc))


def _read_round_or_instance(file: Path) -> Instance:
    """An instance file, a bundled instance (``smoke/smoke-L3``), a ``gensolver.gpuround/v1``
    round (from ``gensolver round``) or GenTask YAML (a round on the defaults of
    ``gensolver round``), as the instance to solve."""
    from ..errors import InputError
    from ..model import GpuRound
    from ..model.inputs import loads_json, read_limited
    from .round_cmd import gentask_round, is_gentask_file

    named = bundled_or_none(file)
    if named is not None:
        return named
    try:
        if is_gentask_file(file):
            return gentask_round(file).expand()
        if file.suffix.lower() == ".json":
            try:
                doc = loads_json(read_limited(file).decode("utf-8"))
            except (OSError, ValueError):
                doc = None  # read_instance says why
            if isinstance(doc, dict) and doc.get("schema") == "gensolver.gpuround/v1":
                return GpuRound.from_dict(doc).expand()
        return read_instance(file)
    except (OSError, InstanceError, InputError, ValueError, UnicodeDecodeError) as exc:
        fail_reading(file, exc)


def solve_command(
    file: Path = typer.Argument(..., help="Instance file: gensolver.instance/v1 JSON (.json/.json.gz) or CATS text; a bundled instance (smoke/smoke-L3, or bundled:smoke/smoke-L3); or a round (gensolver.gpuround/v1 JSON from `gensolver round`, or GenTask .yaml)."),
    method: str = typer.Option("auto", "--method", "-m", **choice(METHODS), help="Solver method (see `gensolver methods`)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", "-t", help="The budget of the whole call (default: none, run until proven optimal): seconds of the solve, or with --mechanism of the whole run (vcg: the main solve and every pivot; core: every stage); work units (about a second each) with --deterministic, with vcg or core on method auto, and with lavi-swamy (vcg and lavi-swamy: unless --wall-clock; docs/contributing.md: time_limit)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Solver threads."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    mechanism: Optional[str] = typer.Option(None, "--mechanism", **choice(MECHANISMS), help="Also compute payments with this mechanism (e.g. vcg)."),
    alpha: Optional[float] = typer.Option(
        None, "--alpha",
        help="--mechanism lavi-swamy: the scaling of the lottery, fixed before the reports (>= 1); without "
             "it alpha is computed from the reports and the outcome is marked truthful: false."),
    relaxation: str = typer.Option(
        "plain", "--relaxation",
        help="--mechanism lavi-swamy: the LP relaxation, plain or clique (every clique of the bids' conflict "
             "graph: a lower alpha, more LP solves; see docs/explanation/lavi-swamy.md)."),
    wall_clock: bool = typer.Option(
        False, "--wall-clock",
        help="--mechanism vcg (method auto) or lavi-swamy: read --time-limit as wall-clock seconds instead of "
             "work units; payments of a run the limit stops then depend on the machine's load (the "
             "outcome says so)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a summary."),
    deterministic: bool = typer.Option(
        False, "--deterministic",
        help="Method auto only: read --time-limit as a budget of work units (about a second each) and give "
             "the same answer on every run for a seed and a thread count (give --threads too: by default "
             "it is the machine's CPU count)."),
) -> None:
    """Solve the winner determination problem of FILE and print the allocation."""
    _check_solve_options(method=method, time_limit=time_limit, seed=seed, mechanism=mechanism, alpha=alpha,
                         wall_clock=wall_clock, deterministic=deterministic, relaxation=relaxation)
    instance = _read_round_or_instance(file)
    outcome = None
    try:
        if mechanism is not None:
            outcome = _price(instance, mechanism=mechanism, method=method, time_limit=time_limit, threads=threads,
                             seed=seed, alpha=alpha, wall_clock=wall_clock, quiet=as_json, relaxation=relaxation)
            result = outcome.allocation
        else:
            with working(f"{method}: solving {instance.n_bids} bids", enabled=not as_json):
                result = solve(instance, method=method, time_limit=time_limit, threads=threads, seed=seed,
                               options={"deterministic": True} if deterministic else None)
    except MissingExtraError:
        raise  # exit 3 and the pip install line (gensolver.cli.main)
    except (UnknownMethodError, BackendUnavailableError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        from ..mechanisms import result_to_dict

        print_json(result_to_dict(result, outcome=outcome, mechanism=mechanism))
    else:
        _print_summary(instance, file, result, outcome)
    if result.status.value in ("error", "infeasible"):
        raise typer.Exit(EXIT_SOLVE_ERROR)


def _check_solve_options(*, method: str, time_limit: Optional[float], seed: int, mechanism: Optional[str],
                         alpha: Optional[float], wall_clock: bool, deterministic: bool,
                         relaxation: str = "plain") -> None:
    """Exit 2 on options that do not go together, before the file is read."""
    if relaxation not in ("plain", "clique"):
        fail(f"--relaxation: must be plain or clique, got {relaxation!r}")
    if relaxation != "plain" and mechanism != "lavi-swamy":
        fail("--relaxation: only with --mechanism lavi-swamy")
    check_time_limit_option(time_limit)  # the one rule of -t
    if deterministic and (method != "auto" or mechanism is not None):
        fail("--deterministic: only for --method auto without --mechanism")
    if wall_clock and not (mechanism == "lavi-swamy" or (mechanism == "vcg" and method == "auto")):
        fail("--wall-clock: only with --mechanism lavi-swamy, or --mechanism vcg with --method auto")
    if alpha is not None and mechanism != "lavi-swamy":
        fail("--alpha: only with --mechanism lavi-swamy")
    if alpha is not None and not (alpha >= 1 and alpha < float("inf")):
        fail(f"--alpha: must be a finite number >= 1, got {alpha}")
    if mechanism is not None and seed != 0 and mechanism != "lavi-swamy":
        fail("--seed: with --mechanism, only lavi-swamy (the draw from its lottery) takes a seed")


def _price(instance: Instance, *, mechanism: str, method: str, time_limit: Optional[float],
           threads: Optional[int], seed: int, alpha: Optional[float], wall_clock: bool, quiet: bool,
           relaxation: str = "plain") -> Any:
    """The :class:`~gensolver.mechanisms.Outcome` of ``--mechanism`` (its options from the CLI's)."""
    try:
        from ..mechanisms import run_mechanism
    except ImportError:  # pragma: no cover - mechanisms ship with the package
        fail("mechanisms are not available in this build")
    if threads is not None and (isinstance(threads, bool) or threads < 1):
        fail(f"--threads: must be a positive integer, got {threads}")
    opts: dict[str, Any] = {} if threads is None else {"threads": threads}
    if mechanism == "lavi-swamy" and seed:
        opts["seed"] = seed
    if alpha is not None:
        opts["alpha"] = float(alpha)
    if wall_clock:
        opts["deterministic"] = False
    if relaxation != "plain":
        opts["relaxation"] = relaxation
    try:
        with working(f"{mechanism}: solving and pricing {instance.n_bids} bids", enabled=not quiet):
            return run_mechanism(instance, mechanism=mechanism, method=method, time_limit=time_limit,
                                 options=opts or None)
    except ValueError as exc:
        if threads is not None and "does not take option" in str(exc):
            fail(f"--threads: mechanism {mechanism!r} does not take a thread count")
        raise


def _print_summary(instance: Instance, file: Path, result: Any, outcome: Any) -> None:
    """The human summary of ``solve``: the solve's figures, the winners and the payments."""
    console.print(f"[bold]{instance.name or file.name}[/]: {instance.n_slots} slots, {instance.n_bids} bids, {instance.n_bidders} bidders")
    gap = "—" if result.gap is None else f"{100 * result.gap:.4f} %"
    bound = "—" if result.bound is None else f"{result.bound:.6g}"
    console.print(f"method [cyan]{result.method}[/]  status [bold]{result.status.value}[/]  "
                  f"welfare [green]{result.welfare:.6g}[/]  bound {bound}  gap {gap}")
    console.print(f"seconds: build {result.seconds.build:.3f}, solve {result.seconds.solve:.3f}, total {result.seconds.total:.3f}")
    if result.message:
        console.print(f"note: {result.message}")
    console.print(_winners_table(instance, result, outcome))
    if len(result.winners) > 50:
        console.print(f"... and {len(result.winners) - 50} more (use --json for all)")
    if outcome is not None:
        _print_payments(outcome)


def _winners_table(instance: Instance, result: Any, outcome: Any) -> Table:
    """The first 50 winning bids, with each bidder's payment (and its interval when inexact)."""
    table = Table("bid", "bidder", "value", title=f"{len(result.winners)} winning bids")
    index = instance.bid_index
    payments = dict(outcome.payments) if outcome is not None else None
    inexact = outcome is not None and not outcome.exact
    if payments is not None:
        table.add_column("payment")
        if inexact:
            table.add_column("exact payment in")
    for w in result.winners[:50]:
        bid = instance.bids[index[w]]
        row = [w, bid.bidder, f"{bid.value:.6g}"]
        if payments is not None:
            row.append(f"{payments.get(bid.bidder, 0.0):.6g}")
            if inexact and outcome is not None:
                lo, hi = outcome.payment_bounds.get(bid.bidder, (0.0, 0.0))
                row.append(f"[{lo:.6g}, {hi:.6g}]")
        table.add_row(*row)
    return table


def _print_payments(outcome: Any) -> None:
    """Revenue, the lottery's truthfulness (lavi-swamy) and whether the payments are exact."""
    console.print(f"revenue {outcome.revenue:.6g}")
    truthful = (outcome.details or {}).get("truthful_in_expectation")
    if truthful is not None:
        d = outcome.details
        why = ("alpha fixed before the reports" if truthful else
               "alpha computed from the reports; pass --alpha" if d.get("alpha_requested") is None else
               "the oracle could not verify the requested alpha, or an LP stopped early")
        console.print(f"truthful in expectation: {'yes' if truthful else '[bold]no[/]'} ({why}); "
                      f"alpha {d.get('alpha', 0.0):.6g}, expected welfare {d.get('expected_welfare', 0.0):.6g}")
    if outcome.exact:
        console.print("payments exact: yes")
    else:
        from ..mechanisms import inexact_reason

        console.print(f"payments exact: [bold]no[/] ({inexact_reason(outcome)})")


def methods_command(
    all_methods: bool = typer.Option(True, "--all/--available", help="List every method, or only usable ones."),
) -> None:
    """List the solver methods and whether each is usable on this machine."""
    table = Table("method", "kind", "usable here", "description")
    for m in list_methods(only_available=not all_methods):
        ok, why = m.available()
        table.add_row(m.name, "exact" if m.exact else "approximate", "yes" if ok else escape(f"no: {why}"),
                      escape(m.description))
    console.print(table)
    from ..mechanisms import DESCRIPTIONS, MECHANISMS

    mech = Table("mechanism", "guarantee and where it is worth using", title="mechanisms (solve --mechanism)")
    for name in MECHANISMS.names():
        mech.add_row(name, DESCRIPTIONS.get(name, ""))
    console.print(mech)


def register(app: typer.Typer) -> None:
    """Add ``solve`` and ``methods`` to ``app``."""
    app.command("solve")(solve_command)
    app.command("methods")(methods_command)
