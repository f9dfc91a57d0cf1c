"""``gensolver demo``: the product's story in under a minute.

Eight GenTask jobs from four tenants (package data ``gensolver/data/demo/jobs.yaml``) bid for
two GPUs over two hours; one market round is cleared with truthful payments (VCG, or LOS greedy
with critical values), checked by independent certificates (feasibility, individual rationality,
payments at most bids), laid out as an execution plan drawn as a Gantt chart, and the same jobs
are then simulated under the scheduling policies side by side. Every step is printed; the files
go to ``--out``: ``jobs.yaml``, ``instance.json``, ``plan.json``, ``gantt.png``,
``utilisation.png``, ``jct_cdf.png`` and ``summary.json``.
"""

from __future__ import annotations

import io
import json
import logging
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from .choices import choice
from .common import check_output_dir, check_output_file, check_time_limit_option, console, fail

__all__ = ["register", "demo_command", "DEMO_FILES"]

logger = logging.getLogger(__name__)

#: the files ``gensolver demo`` writes into ``--out``
DEMO_FILES = ("jobs.yaml", "instance.json", "plan.json", "gantt.png", "utilisation.png", "jct_cdf.png",
              "summary.json")
#: the demo cluster: (id, GiB, node), one round of ``STEPS`` steps of ``STEP_SECONDS``
GPUS = (("a100-80", 80.0, "node-a"), ("a100-40", 40.0, "node-b"))
STEPS = 8
STEP_SECONDS = 900.0
POLICIES = ("fcfs-whole-gpu", "fcfs-packing", "elastic", "finish-time-fair", "market")
TOL = 1e-6  # demo figures are rounded to six decimals (model/tolerances.py holds the solver tolerances)


def _console():  # type: ignore[no-untyped-def]
    """The CLI console, or a 110-column one when output is not a terminal (tables stay whole)."""
    from rich.console import Console

    return console if console.is_terminal else Console(width=max(console.width, 110))


def _step(out, k: int, title: str) -> None:  # type: ignore[no-untyped-def]
    out.print()
    out.rule(f"[bold cyan]{k}. {title}", align="left")


def _hours(steps: float) -> str:
    minutes = steps * STEP_SECONDS / 60
    return f"{minutes / 60:g} h" if minutes % 60 == 0 else f"{minutes:g} min"


def demo_command(
    out: Path = typer.Option(Path("demo-out"), "--out", "-o", help="Folder for the demo's files."),
    mechanism: str = typer.Option("vcg", "--mechanism", **choice(("vcg", "greedy-critical")),
                                  help="Payment rule of the round: VCG (Clarke pivot) or LOS greedy with critical "
                                       "values; both make truthful bidding a dominant strategy."),
    time_limit: float = typer.Option(20.0, "--time-limit", "-t", help="Seconds for clearing the round (vcg: the main solve and every pivot together; greedy-critical takes no budget)."),
) -> None:
    """Run the market story: jobs bid, a round clears with truthful payments, a plan, a simulation."""
    if mechanism not in ("vcg", "greedy-critical"):
        fail(f"--mechanism must be vcg or greedy-critical, got {mechanism!r}")
    check_time_limit_option(time_limit, "--time-limit:")
    check_output_dir(out, "--out")
    for name in DEMO_FILES:
        check_output_file(out / name, "--out")
    t_start = time.perf_counter()
    con = _console()
    jobs_text, tasks, tenants = _show_jobs(con)
    gpus, instance, options = _show_round(con, tasks)
    c = _show_clearing(con, instance, tasks, tenants, gpus, options, mechanism, time_limit)
    plan, plan_ok, gantt = _show_plan(con, instance, c.outcome.allocation, tasks)
    rows, pictures = _show_simulation(con, tasks, gpus)
    alloc, outcome = c.outcome.allocation, c.outcome
    # the files: everything is drawn before the first one is written ------------------------------
    from ..model.io import json_safe
    from ..sim.plots import save_figure

    data: dict[str, bytes] = {"jobs.yaml": jobs_text.encode(),
                              "instance.json": (json.dumps(instance.to_dict(), indent=1) + "\n").encode(),
                              "plan.json": (json.dumps(plan.to_dict(), indent=1) + "\n").encode(),
                              "gantt.png": gantt}
    for name, figure in pictures.items():
        buf = io.BytesIO()
        save_figure(figure, buf)
        data[name] = buf.getvalue()
    summary = {"jobs": [t.id for t in tasks], "tenants": tenants,
               "round": {"slots": instance.n_slots, "bids": instance.n_bids, "mechanism": mechanism,
                         "method": alloc.method, "status": alloc.status.value, "welfare": alloc.welfare,
                         "exact": outcome.exact, "revenue": outcome.revenue},
               "winners": c.winners, "losers": c.losers, "payments": dict(outcome.payments),
               "checks": {"feasible": c.feasible, "individually_rational": c.ir, "nonnegative": c.nonneg,
                          "losers_pay_nothing": c.losers_free, "plan_within_capacity": plan_ok},
               "simulation": rows}
    data["summary.json"] = (json.dumps(json_safe(summary), indent=1, allow_nan=False) + "\n").encode()
    _write_files(out, data)
    _step(con, 6, "Files and next steps")
    con.print(f"wrote {', '.join(DEMO_FILES)} to {escape(str(out))} in {time.perf_counter() - t_start:.1f} s; "
                  f"open {escape(str(out / 'gantt.png'))} for the plan.", highlight=False)
    con.print("next: [bold]gensolver bench smoke[/] compares the solvers on small instances; "
                  "[bold]gensolver simulate alibaba[/] replays a real trace; "
                  "[bold]gensolver --help[/] lists every command.", highlight=False)
    if not (c.feasible and c.ir and c.nonneg and c.losers_free and plan_ok):
        fail("a check of the cleared round failed (see above)", code=1)


def _show_jobs(con):  # type: ignore[no-untyped-def]
    """Step 1: the jobs, read from the package data and shown as a table."""
    from ..market.spec import loads_gentasks

    # 1. the jobs -------------------------------------------------------------------------------
    jobs_text = (files("gensolver.data") / "demo" / "jobs.yaml").read_text(encoding="utf-8")
    tasks = loads_gentasks(jobs_text, source="jobs.yaml", step_seconds=STEP_SECONDS)
    tenants = sorted({t.tenant for t in tasks})
    _step(con, 1, f"{len(tasks)} GenTask jobs from {len(tenants)} tenants ({', '.join(tenants)})")
    con.print("Each job asks for GPU memory elastically: it runs fastest with its preferred memory and "
                  "still runs, slower, down to its minimum. Its value (credits) decays when it finishes late.",
                  highlight=False)
    table = Table("job", "tenant", "memory (GiB)", "compute", "work", "arrives", "value", "urgency", "preemptible")
    for t in tasks:
        table.add_row(t.id, t.tenant, f"{t.min_memory:g}..{t.preferred_memory:g}", f"{t.compute:g}",
                      _hours(t.duration), f"+{_hours(t.release)}" if t.release else "now", f"{t.value:g}",
                      f"{t.urgency:g}", "yes" if t.preemptible else "no")
    con.print(table)

    return jobs_text, tasks, tenants


def _show_round(con, tasks):  # type: ignore[no-untyped-def]
    """Step 2: the market round over the demo GPUs, expanded into bundle bids."""
    from ..model import GpuRound
    from ..model.tasks import GpuSpec

    # 2. the round ------------------------------------------------------------------------------
    gpus = tuple(GpuSpec(g, mem, node=node) for g, mem, node in GPUS)
    rnd = GpuRound(gpus, tasks, steps=STEPS, step_seconds=STEP_SECONDS, memory_levels=3, name="demo-round")
    instance = rnd.expand()
    options = {rnd.bid_id(opt): (k, opt) for k in range(len(tasks)) for opt in rnd.options(k)}
    _step(con, 2, "One market round: the jobs' bundles become a combinatorial auction")
    con.print(f"{len(gpus)} GPUs ({', '.join(f'{g.id} {g.memory:g} GiB' for g in gpus)}) x {STEPS} steps of "
                  f"{_hours(1)} = {instance.n_slots} slots, each with memory and compute capacity. Every job bids "
                  f"for bundles (GPU, memory level, start step); a job wins at most one of its bundles (XOR). "
                  f"{instance.n_bids} bundle bids in all.", highlight=False)

    return gpus, instance, options


@dataclass(frozen=True)
class _Cleared:
    """What step 3 found: the outcome, the winners' rows and the checks of the round."""

    outcome: Any
    winners: list[dict[str, Any]]
    losers: list[str]
    feasible: bool
    ir: bool
    nonneg: bool
    losers_free: bool


def _show_clearing(con, instance, tasks, tenants, gpus, options, mechanism: str,  # type: ignore[no-untyped-def]
                   time_limit: float) -> _Cleared:
    """Step 3: clear the round with truthful payments and check it by independent certificates."""
    from ..mechanisms import run_mechanism
    from ..solvers import get_method
    from ..verify import check_allocation

    # 3. clearing with truthful payments ---------------------------------------------------------
    solver = "cpsat" if get_method("cpsat").available()[0] else "auto"
    logger.info("clearing the round with %s on %s", mechanism, solver)
    outcome = run_mechanism(instance, mechanism=mechanism, method=solver, time_limit=time_limit)
    alloc = outcome.allocation
    cert = check_allocation(instance, alloc.winners, welfare=alloc.welfare)
    _step(con, 3, f"Clearing: winners by welfare, payments by {mechanism}")
    rule = ("VCG: each winner pays the welfare its presence takes from the others (Clarke pivot)"
            if mechanism == "vcg" else "LOS greedy: each winner pays its critical value, the least bid that still wins")
    con.print(f"{rule}, so bidding one's true value is a dominant strategy.", highlight=False)
    con.print(f"solver [cyan]{alloc.method}[/]: status [bold]{alloc.status.value}[/], welfare "
                  f"[green]{alloc.welfare:.4g}[/] credits; payments exact: [bold]{outcome.exact}[/]", highlight=False)
    table = Table("job", "tenant", "bundle", "value", "payment", "interval", "utility")
    winners: list[dict[str, Any]] = []
    index = instance.bid_index
    for w in alloc.winners:
        bid = instance.bids[index[w]]
        k, opt = options[w]
        task = tasks[k]
        pay = float(outcome.payments.get(bid.bidder, 0.0))
        lo, hi = outcome.payment_bounds.get(bid.bidder, (pay, pay))
        gpu = "+".join(gpus[g].id for g in opt.gpus)
        where = f"{gpu}, {opt.memory:g} GiB, steps {opt.start}-{opt.start + opt.length - 1}"
        winners.append({"job": task.id, "tenant": task.tenant, "bid": w, "gpu": gpu, "memory": opt.memory,
                        "start_step": opt.start, "steps": opt.length, "value": bid.value, "payment": pay,
                        "interval": [lo, hi]})
        table.add_row(task.id, task.tenant, where, f"{bid.value:.4g}", f"{pay:.4g}",
                      f"[{lo:.4g}, {hi:.4g}]", f"{bid.value - pay:.4g}")
    con.print(table)
    won = {w["job"] for w in winners}
    losers = [t.id for t in tasks if t.id not in won]
    con.print(f"not served this round: {', '.join(losers) or 'none'} (they pay nothing and bid again next "
                  f"round). Revenue {outcome.revenue:.4g} credits.", highlight=False)
    per_tenant = {tn: sum(w["payment"] for w in winners if w["tenant"] == tn) for tn in tenants}
    con.print("paid per tenant: " + ", ".join(f"{tn} {v:.4g}" for tn, v in per_tenant.items()), highlight=False)
    ir = all(w["payment"] <= w["value"] + TOL for w in winners)
    nonneg = all(p >= -TOL for p in outcome.payments.values())
    losers_free = all(abs(float(outcome.payments.get(j, 0.0))) <= TOL for j in losers)
    con.print(f"checks: allocation feasible (independent certificate) {_mark(cert.feasible)}, every payment at most "
                  f"the bid (individually rational) {_mark(ir)}, no negative payment {_mark(nonneg)}, losers pay "
                  f"nothing {_mark(losers_free)}", highlight=False)

    return _Cleared(outcome, winners, losers, cert.feasible, ir, nonneg, losers_free)


def _show_plan(con, instance, alloc, tasks):  # type: ignore[no-untyped-def]
    """Step 4: the execution plan of the cleared round, checked and drawn (PNG bytes)."""
    from ..executor import check_plan, plot_plan, to_plan

    # 4. the plan -------------------------------------------------------------------------------
    plan = to_plan(instance, alloc, {t.id: t for t in tasks})
    pcheck = check_plan(plan)
    fig = plot_plan(plan, title="demo round: the cleared plan")
    gantt = io.BytesIO()
    fig.savefig(gantt, format="png", dpi=110)
    _step(con, 4, "The plan: per-GPU timelines with memory grants, ready for the executor")
    con.print(f"{len(plan.tasks)} tasks, {len(plan.entries)} entries on {len(plan.devices)} devices, "
                  f"{len(plan.preemptions)} preemption points; within every device's capacity "
                  f"{_mark(pcheck.ok)}. `gensolver run plan.json --backend sim --time-scale 0.01` executes it "
                  f"in about {STEPS * STEP_SECONDS * 0.01:.0f} s (at the default scale 1 it takes the plan's "
                  f"{STEPS * STEP_SECONDS / 3600:g} hours, as on real GPUs with --backend nvml).",
                  highlight=False)

    return plan, pcheck.ok, gantt.getvalue()


def _show_simulation(con, tasks, gpus):  # type: ignore[no-untyped-def]
    """Step 5: the same jobs simulated under every policy; the rows and the figures to save."""
    from ..sim import Workload, offline_bound, simulate
    from ..sim.plots import plot_jct_cdf, plot_utilisation
    from .sim_cmd import comparison_rows

    # 5. a simulation ---------------------------------------------------------------------------
    _step(con, 5, "A simulation: the same jobs arriving over time, policies side by side")
    workload = Workload("demo jobs", tasks, gpus, STEP_SECONDS, {"source": "demo"})
    results = []
    for p in POLICIES:
        logger.info("simulating %s", p)
        results.append(simulate(workload, policy=p))
    bound = offline_bound(workload)
    rows = comparison_rows(results, total=len(tasks), bound=bound)
    table = Table("policy", "done", "avg JCT", "JCT / bound", "p95 JCT", "avg wait", "makespan", "memory used",
                  "memory held", "Jain", "credits spent", title=f"times in {_hours(1)} steps")
    for r in rows:
        table.add_row(r["policy"], r["done"], f"{r['avg_jct']:.3g}", f"{r['jct_over_bound']:.2f}", f"{r['p95_jct']:.3g}",
                      f"{r['avg_wait']:.3g}", f"{r['makespan']:.3g}", f"{100 * r['mem_used']:.0f} %",
                      f"{100 * r['mem_held']:.0f} %", f"{r['jain']:.3f}", f"{r['credits']:.3g}")
    con.print(table)
    con.print(f"JCT / bound: the average JCT over {bound.avg_jct:.3g} steps, a lower bound no schedule of these jobs "
              "can beat (an LP over the whole run, `gensolver.sim.offline_bound`); memory used counts what each "
              "job's speed law can use for its own work (not while time-sliced, restoring or redoing work), "
              "memory held what it was given.", highlight=False)
    con.print("fcfs-whole-gpu gives each job a whole GPU; fcfs-packing and elastic share GPUs by memory; "
                  "finish-time-fair serves the job furthest behind its fair finish time first; the market "
                  "(the engine `gensolver serve` runs) ranks jobs by finish-time fairness and credits (income per job, bids by urgency, a price set by others).", highlight=False)
    pictures = {"utilisation.png": plot_utilisation(results), "jct_cdf.png": plot_jct_cdf(results)}

    return rows, pictures


def _write_files(out: Path, data: dict[str, bytes]) -> None:
    """Write every demo file atomically (a failed write names the file and exits 2)."""
    from ..model.io import atomic_write

    out.mkdir(parents=True, exist_ok=True)
    for name in DEMO_FILES:
        try:
            with atomic_write(out / name, "wb") as fh:
                fh.write(data[name])
        except OSError as exc:
            fail(f"--out: cannot write {out / name}: {exc.strerror or exc}")


def _mark(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[bold red]NO[/]"


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""
    app.command("demo")(demo_command)
