"""``gensolver simulate``: compare scheduling policies on a trace, a synthetic workload or GenTasks."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import time
import warnings
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.table import Table

from ..errors import SEED_LIMIT, InputError
from ..model.io import json_safe
from .choices import DEFAULT_POLICIES, METHODS, POLICIES, SIM_MECHANISMS, choice
from .common import (
    SafeConsole,
    check_output_dir,
    check_output_file,
    check_time_limit_option,
    console,
    err_console,
    fail,
    method_or_alias,
    print_json,
    value_or_alias,
)

__all__ = ["register", "load_workload", "comparison_rows", "json_safe"]

SHARED_TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


TRACES = ("alibaba", "philly")
MAX_NODES = 4096  # --nodes above this only makes the replay crawl (a typo, not a cluster)


def _is_synthetic(trace: str) -> bool:
    return trace == "synthetic" or trace.startswith("synthetic:")


def load_workload(trace: str, *, traces_dir: Path | None = None, max_jobs: int | None = None,
                  nodes: int | None = None, compress: float | None = None, seed: int = 0,
                  fmt: str | None = None, node_list: Path | None = None):
    """A :class:`gensolver.sim.Workload` from ``alibaba``, ``philly``, ``synthetic:...`` or a file.

    A file is an Alibaba 2023 pod list, a Philly CSV or GenTask YAML: ``fmt`` (``alibaba``,
    ``philly``, ``gentask``) or its name and header decide
    (:func:`gensolver.sim.trace_workloads.detect_trace_format`; a CSV is never read as YAML).
    An Alibaba file is replayed from its earliest ``max_jobs`` pods (default 300) on the nodes
    of ``node_list`` (default: ``openb_node_list_gpu_node.csv`` beside it); a Philly file from
    its earliest ``max_jobs`` jobs. ``seed`` seeds the trace memory model, and a synthetic
    workload whose spec has no ``seed`` key.
    """
    from ..instances.gpu import default_trace_dir
    from ..market.spec import load_gentasks
    from ..model.tasks import uniform_gpus
    from ..sim import Workload, parse_synthetic
    from ..sim.trace_workloads import alibaba_workload, detect_trace_format, philly_workload
    from ..traces.readers import ALIBABA_NODE_FILE

    kw: dict[str, Any] = {k: v for k, v in {"max_jobs": max_jobs, "compress": compress}.items() if v is not None}
    nodes = 4 if nodes is None else nodes
    p = Path(trace)
    if trace in TRACES and not os.path.exists(p):  # os.path: False, not OSError, for a name too long
        base = traces_dir or default_trace_dir()
        _check_trace_present(trace, base, given=traces_dir is not None)
        if trace == "alibaba":
            return alibaba_workload(base / "alibaba-gpu-2023", nodes=nodes, seed=seed, **{"compress": 8.0, **kw})
        return philly_workload(base / "philly" / "philly.csv", nodes=nodes, seed=seed, **kw)
    if _is_synthetic(trace):
        return parse_synthetic(trace, seed=seed)
    if not os.path.exists(p):
        raise InputError(f"TRACE: no such file {trace!r}; use alibaba, philly, synthetic:key=value,... or a trace "
                         "file (an Alibaba 2023 pod list, a Philly CSV or GenTask YAML)")
    detected = detect_trace_format(p)
    kind = fmt or detected
    if kind == "gentask" and detected != "gentask":
        raise InputError(f"--format gentask: {p} is a {detected} CSV, not GenTask YAML")
    if node_list is not None and kind != "alibaba":
        raise InputError(f"--node-list: applies only to Alibaba pod lists, not to a {kind} file")
    if kind == "alibaba":
        nl = node_list if node_list is not None else p.parent / ALIBABA_NODE_FILE
        if not os.path.isfile(nl):
            raise InputError(f"--node-list: the Alibaba nodes file {nl} does not exist; pass --node-list PATH "
                             "(openb_node_list_gpu_node.csv)")
        return alibaba_workload(pods=p, node_list=nl, window=None, nodes=nodes, seed=seed,
                                **{"compress": 8.0, "max_jobs": 300, **kw})
    if kind == "philly":
        return philly_workload(p, window=None, nodes=nodes, seed=seed, **{"max_jobs": 300, **kw})
    tasks = load_gentasks(p)
    return Workload(p.name, tasks, uniform_gpus([80.0, 40.0, 24.0, 16.0], per_node=4), 60.0, {"source": "gentask"})


def _check_trace_present(trace: str, base: Path, *, given: bool) -> None:
    """Raise ``ValueError`` with the way to get ``trace`` when its folder is not under ``base``."""
    from ..traces.fetch import TRACE_SOURCES

    folder = base / TRACE_SOURCES[trace].folder
    if not folder.is_dir():
        where = "--traces-dir" if given else "the default trace folder ($GENSOLVER_TRACES, else the per-user folder)"
        hint = "" if given else " (it lands in the default folder when --dir is left out)"
        raise InputError(f"the {trace} trace is not in {where} ({base}): download it with "
                         f"`gensolver traces fetch {trace}`{hint}, or pass --traces-dir DIR")


def _parse_gpus(text: str):
    from ..model.quantity import QuantityError, parse_number
    from ..model.tasks import uniform_gpus

    try:  # every item a number with ASCII digits; an empty item ('80,,80') is refused, not skipped
        mems = [parse_number(x, field="--gpus") for x in text.replace("+", ",").split(",")]
    except QuantityError:
        raise InputError(f"--gpus: expected GiB per GPU like '80,40,24', got {text!r}") from None
    if not mems or not all(math.isfinite(m) and m > 0 for m in mems):
        raise InputError(f"--gpus: expected finite positive GiB per GPU like '80,40,24', got {text!r}")
    return uniform_gpus(mems, per_node=8)


def comparison_rows(results, total: int | None = None, bound: Any = None) -> list[dict]:
    """One dict per result with the headline metrics (steps, fractions, seconds).

    ``bound``: an :class:`gensolver.sim.OfflineBound` of the workload; each row then carries
    ``jct_over_bound`` (average JCT over the bound's lower bound: 1 is optimal) and
    ``welfare_over_bound`` (welfare over its upper bound).

    ``done`` is ``completed/total``: ``total`` is the workload's task count (default: the tasks
    that arrived, rejected ones included); ``rejected`` counts tasks that fit on no node;
    ``unfinished`` the accepted tasks not done when the run stopped (they count in every average
    with their JCT so far, which makes those averages lower bounds: see
    :mod:`gensolver.sim.metrics`). ``mem_used`` is the memory tasks can use by their speed law
    for their own work, ``mem_held`` what they hold.
    Undefined metrics (no finished task) are NaN here; :func:`json_safe` turns them into null.
    """
    rows = []
    for r in results:
        m = r.metrics
        n = total if total is not None else m.tasks + m.rejected
        rows.append({"policy": r.policy, "done": f"{m.completed}/{n}", "rejected": m.rejected,
                     "unfinished": m.unfinished, "avg_jct": m.avg_jct,
                     "p95_jct": m.p95_jct, "avg_wait": m.avg_wait, "makespan": m.makespan,
                     "mem_used": m.memory_used, "mem_held": m.memory_held, "compute_util": m.compute_utilisation,
                     "preemptions": m.preemptions, "lost_work": m.lost_work, "jain": m.jain, "rho_max": m.rho_max,
                     "credits": m.credits_spent, "welfare": m.welfare, "deadline_hit_rate": m.deadline_hit_rate,
                     "rounds": m.rounds, "solver_s_per_round": m.solver_seconds_mean,
                     "sim_seconds": r.wall_seconds})
        if bound is not None:
            rows[-1]["jct_over_bound"] = _ratio(m.avg_jct, bound.avg_jct)
            rows[-1]["welfare_over_bound"] = _ratio(m.welfare, bound.welfare)
    return rows


def _ratio(value: float, ref: float | None) -> float:
    """``value / ref`` (NaN when either is undefined or ``ref`` is not positive)."""
    if ref is None or not (math.isfinite(value) and math.isfinite(ref)) or ref <= 0:
        return float("nan")
    return value / ref


#: columns that are lower bounds when a run stopped with tasks unfinished
_CENSORED = frozenset({"avg_jct", "jct_over_bound", "p95_jct", "avg_wait", "makespan", "rho_max"})


def _cell(v: Any) -> str:
    if isinstance(v, str):
        return v
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.3g}"


def _check_options(trace: str, policy: List[str], method: str, mechanism: str, time_limit: float, lease: int,
                   until: Optional[float], max_jobs: Optional[int], nodes: Optional[int],
                   compress: Optional[float], seed: int, budget_option: str = "--round-budget") -> None:
    """Every option's value, before any work (exit 2 naming the option; ``budget_option`` is how
    the round budget was given)."""
    from ..sim import list_policies
    from ..sim.policies import DEPRECATED_POLICIES

    valid = list_policies()
    if not policy:
        fail(f"--policy: give at least one; valid policies: {', '.join(valid)}")
    seen = set()
    for p in policy:
        if p not in valid and p not in DEPRECATED_POLICIES:
            fail(f"--policy: unknown policy {p!r}; valid policies: {', '.join(valid)}")
        if p in seen:
            fail(f"--policy: {p!r} given twice")
        seen.add(p)
    _check_method(method)
    _check_mechanism(mechanism)
    check_time_limit_option(time_limit, f"{budget_option}:")  # this command names options "--opt: ..."
    if lease < 1:
        fail(f"--lease: must be a positive integer (steps), got {lease}")
    if until is not None and (not math.isfinite(until) or until <= 0):
        fail(f"--until: must be a finite positive step, got {until:g}")
    if not 0 <= seed < SEED_LIMIT:
        fail(f"--seed: must be an integer in [0, 2**31), got {seed}")
    trace_only = {"--max-jobs": max_jobs, "--nodes": nodes, "--compress": compress}
    path = Path(trace)
    is_trace_file = (not _is_synthetic(trace) and path.suffix.lower() not in (".yaml", ".yml") and os.path.isfile(path))
    if trace not in TRACES and not is_trace_file:
        given = [name for name, v in trace_only.items() if v is not None]
        if given:
            fail(f"{given[0]}: applies only to the {' and '.join(TRACES)} traces and trace files, not to {trace!r}")
        return
    if max_jobs is not None and max_jobs < 1:
        fail(f"--max-jobs: must be a positive integer, got {max_jobs}")
    if nodes is not None and not 1 <= nodes <= MAX_NODES:
        fail(f"--nodes: must be an integer from 1 to {MAX_NODES}, got {nodes}")
    if compress is not None and (not math.isfinite(compress) or compress <= 0):
        fail(f"--compress: must be a finite positive factor, got {compress:g}")


def _check_method(method: str) -> None:
    from ..solvers import UnknownMethodError, get_method

    try:
        entry = get_method(method)
    except UnknownMethodError as exc:
        fail(f"--method: {exc}")
    ok, why = entry.available()
    if not ok:
        fail(f"--method: method {method!r} is not available here: {why}")


def _check_mechanism(mechanism: str) -> None:
    """The market prices with ``others-price``; the welfare auction's other mechanisms are retired."""
    if mechanism != "others-price":
        fail(f"--mechanism: the market prices with others-price (no tenant's report sets its own price); "
             f"{mechanism!r} was a mechanism of the retired welfare auction (deprecated option)")


def _policy_options(p: str, method: str, time_limit: float) -> dict[str, Any] | None:
    """Options of policy ``p``: the solver clearing's method (and, for ``auto``, its work budget)
    for the deprecated ``auction``, which runs ``market`` cleared by the solver layer."""
    from ..sim.policies import DEPRECATED_POLICIES, deprecated_policy_note

    if p not in DEPRECATED_POLICIES:
        return None
    err_console.print(f"warning: {deprecated_policy_note(p)}", highlight=False)
    return {"method": method, **({"budget": time_limit} if method == "auto" else {})}


def _check_fault_targets(texts: List[str], faults: list, gpus) -> None:  # type: ignore[no-untyped-def]
    """Each fault names a GPU or node of the cluster (exit 2 naming ``--fault``)."""
    from ..sim.faults import unknown_target

    ids = [g.id for g in gpus]
    nodes = list(dict.fromkeys(g.node for g in gpus))
    for text, f in zip(texts, faults):
        why = unknown_target(f, ids, nodes)
        if why is not None:
            fail(f"--fault: {text!r} {why}")


def _make_out_dir(out: Path) -> list[Path]:
    """Create ``out`` (and missing parents) before any work; the folders created, deepest first."""
    created = []
    probe = out
    while not probe.exists() and probe.parent != probe:
        created.append(probe)
        probe = probe.parent
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out: cannot create {out}: {exc.strerror or exc}")
    return created


def _output_files(out: Path, policy: List[str]) -> list[Path]:
    from ..sim.policies import policy_label

    return [out / name for name in (*(f"gantt-{policy_label(p)}.png" for p in policy), "utilisation.png", "jct_cdf.png",
                                    "credits.png", "results.json")]


class _Progress:
    """A transient rich progress bar on stderr (tasks done or rejected), one line per policy."""

    def __init__(self, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.total = total
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("tasks"), TimeElapsedColumn(), console=err_console, transient=True)

    def __enter__(self) -> _Progress:
        self.bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.stop()

    def wrap(self, policy: Any) -> Any:
        """``policy`` (an instance) reporting the cluster's progress after each scheduling pass."""
        from ..sim.policies import Policy

        name = policy.name
        self.current = task_id = self.bar.add_task(f"simulating {name}", total=self.total)
        bar, total = self.bar, self.total
        last = [0.0]

        class Watched(Policy):
            def __init__(self) -> None:  # no Policy.__init__: ``rounds`` is the wrapped policy's
                self.name = name

            @property
            def rounds(self):  # type: ignore[override,no-untyped-def]
                return policy.rounds

            def __getattr__(self, attr: str) -> Any:  # market, ... of the wrapped policy
                return getattr(policy, attr)

            def attach(self, cluster: Any) -> None:
                policy.attach(cluster)

            def schedule(self, cluster: Any, boundary: bool) -> None:
                policy.schedule(cluster, boundary)
                now = time.monotonic()
                if now - last[0] >= 0.1:
                    last[0] = now
                    bar.update(task_id, completed=total - cluster.unfinished,
                               description=f"simulating {name} (step {cluster.now:g})")

        return Watched()

    def done(self, policy: str) -> None:
        self.bar.update(self.current, completed=self.total, description=f"{policy}: done")


def simulate_command(
    trace: str = typer.Argument(..., help="alibaba | philly | synthetic:n=50,seed=1,rate=0.5 | a trace file "
                                          "(Alibaba 2023 pod list, Philly CSV) | GenTask YAML file"),
    policy: List[str] = typer.Option(list(DEFAULT_POLICIES), "--policy", "-p", **choice(POLICIES),
                                     help="Policy (repeat to compare). market: the market (finish-time "
                                          "fairness x Karma-style credits, priced, backfilled), the one round "
                                          "engine gensolver.market.engine.CreditEngine, which `gensolver serve` "
                                          "runs too; auction: deprecated alias of market cleared by the solver "
                                          "layer (clearing=solver)."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPU memories in GiB, e.g. '80,80,40,24' (default: the workload's)."),
    until: Optional[float] = typer.Option(None, "--until", help="Stop at this step."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write plots and results.json here."),
    fault: List[str] = typer.Option([], "--fault", help="gpu:ID@T1-T2 or node:NAME@T1-T2 (steps); repeatable."),
    mechanism: str = typer.Option("others-price", "--mechanism", **choice(SIM_MECHANISMS),
                                  help="Deprecated: the market's payment rule is others-price (no tenant's report "
                                       "sets its own price), the only value."),
    method: str = typer.Option("greedy", "--method", **choice(METHODS),
                               help="Method of solver-cleared rounds (policy auction: market with clearing=solver)."),
    solver: Optional[str] = typer.Option(None, "--solver", **choice(METHODS),
                                         help="Deprecated alias of --method (removed in the next release)."),
    round_budget: float = typer.Option(0.2, "--round-budget",
                                       help="Work units of each solver-cleared round with --method auto "
                                            "(deterministic; the policies' option budget)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Deprecated alias of --round-budget."),
    lease: int = typer.Option(5, "--lease", help="Round length in steps."),
    max_jobs: Optional[int] = typer.Option(None, "--max-jobs", help="Trace: at most this many jobs."),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="Trace: number of nodes."),
    compress: Optional[float] = typer.Option(None, "--compress", help="Trace: divide arrival gaps by this."),
    seed: int = typer.Option(0, "--seed", help="Seed (trace memory model, synthetic workloads)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    bound: bool = typer.Option(True, "--bound/--no-bound",
                               help="Compute the offline bound (an LP over the whole trace) and each policy's "
                                    "distance to it."),
    traces_dir: Optional[Path] = typer.Option(
        None, "--traces-dir", help="Folder of the traces (what `gensolver traces fetch --dir` wrote; default: "
                                   "$GENSOLVER_TRACES, else ../shared/traces beside a checkout, else the per-user folder)."),
    fmt: Optional[str] = typer.Option(None, "--format", **choice(("alibaba", "philly", "gentask")),
                                      help="Trace file format (default: from the file's name and header)."),
    node_list: Optional[Path] = typer.Option(None, "--node-list", help="Alibaba nodes CSV (default: "
                                                                       "openb_node_list_gpu_node.csv beside the pod list)."),
) -> None:
    """Simulate TRACE under each --policy and print a comparison table."""
    method = method_or_alias(method, solver, default="greedy")
    budget = value_or_alias(round_budget, time_limit, option="--round-budget", old="--time-limit", default=0.2)
    _check_options(trace, policy, method, mechanism, budget, lease, until, max_jobs, nodes, compress, seed,
                   budget_option="--round-budget" if time_limit is None else "--time-limit")
    if traces_dir is not None and trace not in TRACES:
        fail(f"--traces-dir: applies only to the {' and '.join(TRACES)} traces, not to {trace!r}")
    from ..sim.trace_workloads import TRACE_FORMATS

    if fmt is not None and fmt not in TRACE_FORMATS:
        fail(f"--format: must be one of {', '.join(TRACE_FORMATS)}, got {fmt!r}")
    if (fmt is not None or node_list is not None) and (trace in TRACES or _is_synthetic(trace)) \
            and not os.path.exists(trace):
        fail(f"{'--format' if fmt is not None else '--node-list'}: applies only to a trace file, not to {trace!r}")
    created: list[Path] = []
    if out is not None:
        check_output_dir(out, "--out")
        for path in _output_files(out, policy):
            check_output_file(path, "--out")
        created = _make_out_dir(out)
    try:
        _run(trace, policy, gpus, until, out, fault, mechanism, method, budget, lease, max_jobs, nodes, compress,
             seed, as_json, traces_dir, fmt, node_list, bound)
    except BaseException:
        for d in created:  # leave no empty folder behind when the run fails
            try:
                d.rmdir()
            except OSError:
                break
        raise


def _run(trace: str, policy: List[str], gpus: Optional[str], until: Optional[float], out: Optional[Path],
         fault: List[str], mechanism: str, method: str, time_limit: float, lease: int, max_jobs: Optional[int],
         nodes: Optional[int], compress: Optional[float], seed: int, as_json: bool,
         traces_dir: Optional[Path] = None, fmt: Optional[str] = None, node_list: Optional[Path] = None,
         with_bound: bool = True) -> None:
    from ..market.spec import SpecError
    from ..model.io import atomic_write
    from ..sim import (
        FaultError,
        SimError,
        UnknownPolicyError,
        WorkloadError,
        audit_log,
        get_policy,
        offline_bound,
        parse_fault,
        simulate,
    )
    from ..traces import TraceError

    try:
        workload = load_workload(trace, traces_dir=traces_dir, max_jobs=max_jobs, nodes=nodes, compress=compress,
                                 seed=seed, fmt=fmt, node_list=node_list)
        cluster = _parse_gpus(gpus) if gpus else None
    except (SpecError, TraceError, WorkloadError, ValueError, OSError) as exc:
        fail(str(exc))
    try:
        faults = [parse_fault(f) for f in fault]
    except (FaultError, ValueError) as exc:
        fail(f"--fault: {exc}")
    _check_fault_targets(fault, faults, cluster or workload.gpus)
    progress = _Progress(len(workload.tasks)) if err_console.is_terminal and not as_json else None
    results = []
    with progress or contextlib.nullcontext():
        for p in policy:
            opts = _policy_options(p, method, time_limit) or {}
            try:
                with warnings.catch_warnings():  # said once on stderr by _policy_options
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pol = get_policy(p, **opts)
                if progress is not None:
                    pol = progress.wrap(pol)
                r = simulate(workload, policy=pol, gpus=cluster, until=until, seed=seed, faults=faults, lease=lease)
            except FaultError as exc:
                fail(f"--fault: {exc}")
            except (UnknownPolicyError, SimError, ValueError) as exc:
                fail(str(exc))
            if progress is not None:
                progress.done(r.policy)
            report = audit_log(r.events)
            if not report.ok:
                fail(f"audit failed for {p}: {report.violations[0]}", code=1)
            if r.stalled:  # an error, never a table row: its averages would describe a run that did not finish
                m = r.metrics
                fail(f"{r.policy} stalled at step {r.end_time:g}: {m.completed} of {len(workload.tasks)} tasks done, "
                     f"{m.unfinished} waiting that can never start (a GPU down for good, or a policy that will not "
                     "place them); no table is printed and no file written", code=1)
            results.append(r)
    bnd = offline_bound(workload, gpus=cluster) if with_bound else None
    rows = comparison_rows(results, total=len(workload.tasks), bound=bnd)
    files: dict[Path, bytes] = {}
    if out is not None:  # everything is drawn before the first file is written
        from ..sim.plots import render_plots

        files = {out / name: data for name, data in render_plots(results).items()}
        doc = json_safe({"workload": workload.name, "info": dict(workload.info), "rows": rows,
                         "bound": None if bnd is None else dataclasses.asdict(bnd)})
        files[out / "results.json"] = (json.dumps(doc, default=str, indent=1, allow_nan=False) + "\n").encode()
    if as_json:
        print_json(json_safe(rows))
    else:
        table = Table(title=f"{workload.name}: {len(workload.tasks)} tasks, {len(cluster or workload.gpus)} GPUs "
                            f"(times in steps of {workload.step_seconds:g} s)")
        cols = ["policy", "done", "rejected", "avg_jct", "p95_jct", "avg_wait", "makespan", "mem_used", "mem_held",
                "compute_util", "preemptions", "lost_work", "jain", "rho_max", "welfare", "credits", "solver_s_per_round",
                "sim_seconds"]
        if bnd is not None:
            cols[4:4] = ["jct_over_bound"]
        for c in cols:
            table.add_column(c, justify="left" if c == "policy" else "right", no_wrap=True, min_width=len(c))
        for row in rows:  # figures of a run cut short are lower bounds: marked ">="
            table.add_row(*[(">=" if row["unfinished"] and c in _CENSORED else "") + _cell(row[c]) for c in cols])
        SafeConsole(width=max(console.width, 240)).print(table)
        if bnd is not None:
            console.print(_bound_line(bnd), highlight=False)
    if out is not None:
        for path, data in files.items():
            try:
                with atomic_write(path, "wb") as fh:
                    fh.write(data)
            except OSError as exc:
                fail(f"--out: cannot write {path}: {exc.strerror or exc}")
        if not as_json:
            console.print(f"wrote {len(files) - 1} plots and results.json to {out}")



def _bound_line(b: Any) -> str:
    """One line saying what the offline bound is and what ``jct_over_bound`` means."""
    if b.avg_jct is None:
        return "offline bound: no task fits on this cluster"
    how = "LP" if b.avg_jct_lp is not None and b.avg_jct_lp > b.avg_jct_trivial * (1 + 1e-6) else "each task alone"
    note = "" if b.status == "optimal" else f" (LP not used: {b.status})"
    return (f"offline bound ({how}, {b.buckets} time buckets, {b.seconds:.1f} s){note}: no schedule of these "
            f"{b.tasks} tasks on this cluster has an average JCT below {b.avg_jct:.4g} steps or a welfare above "
            f"{b.welfare:.4g}; jct_over_bound is each policy's average JCT over it (1 = optimal).")


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the CLI."""
    app.command("simulate")(simulate_command)
