"""A ``gensolver.plan/v1`` plan as Slurm batch jobs: the scripts and how each run asks for its GPUs.

Every *run* of a task (a stretch without a stop or a device change, see
:class:`gensolver.executor.plan.Run`) becomes one batch job:

- ``--nodelist``/``--nodes``: the nodes of the run's plan devices (see
  :func:`gensolver.adapters.common.node_of`);
- ``--gres``: ``gpu:N`` for whole devices (``N`` plan devices per node); a run that needs a
  fraction of one device asks for Slurm's sharing gres instead, ``shard:K`` (``K`` of
  ``shares_per_gpu`` shards per GPU, rounded up) or ``mps:P`` (``P`` of ``mps_units`` MPS units
  per GPU as the site's ``gres.conf`` counts them, default 100, rounded up), with
  ``sharing="gpu"`` it takes the whole GPU. A fraction is ``max(compute, memory / device
  memory)``. A run over several devices always takes whole GPUs: Slurm cannot place one shard
  per GPU of a gang.
- a gang over several nodes: ``--nodes=N --nodelist=...`` and ``--ntasks-per-node=1``; the
  batch script (which runs on the first node only) starts the command with ``srun`` over the
  whole allocation (one task per node, ``--kill-on-bad-exit``), each task with
  ``GENSOLVER_GANG_SIZE`` and its rank in ``SLURM_NODEID``/``SLURM_PROCID``;
- ``--begin``: the round's start ``t0`` plus ``start * time_scale`` seconds (rounded up to a
  second; Slurm's resolution), given at submission since only then is ``t0`` known; the
  task's next run depends (``afterany``) on the previous one. ``t0`` reaches the script as its
  argument (``sbatch [options] -- FILE T0``; ``GENSOLVER_T0`` in the environment also works),
  not through ``--export=ALL,GENSOLVER_T0=...``: with that option slurmd (22.05) started each
  batch script about 0.5 s after the previous one on a loaded machine, so that of 62 jobs
  allocated at once the last began 27 s late (60 ``sleep`` jobs: median 32.9 s late with the
  option, 0.11 s without, load 17-30; ``benchmarks/bench_slurm_launch.py``);
- ``--time``: the run's length plus the grace period, in minutes rounded up (Slurm counts
  minutes); the script itself stops the command at the run's end (``timeout``, SIGTERM, then
  SIGKILL after the grace period), so a late start never runs past the plan's end. The time
  rule: a run whose end has passed at submission is not submitted; one started late gets the
  remainder, or with less than ``min_run`` seconds left exits :data:`SKIPPED_EXIT` without
  running its command; a command stopped at its planned end is a planned stop, and the script
  exits 0 (``COMPLETED``), not 124;
- the task's tenant (the plan's ``tenant`` of the task) through a tenant map
  (``{tenant: {account, qos, partition}}``, :func:`gensolver.adapters.names.tenant_map`):
  ``--account``, ``--qos`` and ``--partition`` (over ``--partition``); a tenant the map does
  not name gets none of them;
- ids and option values follow :mod:`gensolver.adapters.names` (refused by name, encoded, or
  ``shlex``-quoted);
- the executor's environment: ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``,
  ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``, ``GENSOLVER_MEMORY_LIMIT``, ``GENSOLVER_TASK``,
  ``GENSOLVER_RUN``, ``GENSOLVER_RESUME`` and ``GENSOLVER_RUN_END`` (``CUDA_VISIBLE_DEVICES``
  is Slurm's to set from the gres it grants).

A task without a command holds its grant for its window (``sleep``): the plan's placement is
still exercised, and the script says so.

The live cluster (submission, following, cancelling) is :mod:`gensolver.adapters.slurm_cluster`.

References
----------
.. [sbatch] Slurm ``sbatch(1)``: ``--parsable``, ``--begin``, ``--gres``, ``--dependency``,
   https://slurm.schedmd.com/sbatch.html
.. [gres] Slurm Generic Resource (GRES) scheduling, sharding and MPS,
   https://slurm.schedmd.com/gres.html
.. [sacct] Slurm ``sacct(1)``: ``--parsable2``, ``--format``, job states,
   https://slurm.schedmd.com/sacct.html
"""

from __future__ import annotations

import json
import math
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..errors import GensolverError, UnavailableError
from ..executor.plan import ExecutionPlan
from .common import AdapterError, RunGrant, run_grants, shares, write_tree
from .names import (
    comment_text,
    log_folder,
    positive_int,
    safe_token,
    slurm_memory,
    slurm_node,
    slurm_partition,
    tenant_map,
)

__all__ = ["SHARING", "SlurmOptions", "SlurmJob", "SlurmState", "SlurmError", "SlurmUnavailableError",
           "slurm_jobs", "write_slurm", "read_tenant_map", "TERMINAL_STATES", "SACCT_FIELDS", "SKIPPED_EXIT"]

#: how a fractional grant is asked of Slurm: ``shard`` (shard:K), ``mps`` (mps:P), ``gpu`` (whole GPU)
SHARING = ("shard", "mps", "gpu")
#: ``sacct`` states after which a job does not run again [sacct]_
TERMINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                             "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED"})
#: the ``sacct --format`` fields read, in order
#: exit status of a batch script that starts too late to run its command (``EX_TEMPFAIL``)
SKIPPED_EXIT = 75
SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "NodeList", "Submit", "Eligible", "Start", "End",
                "AllocTRES")


class SlurmError(GensolverError, RuntimeError):
    """A Slurm command failed; the message has its stderr."""


class SlurmUnavailableError(SlurmError, UnavailableError):
    """``sbatch``/``sacct``/``scancel`` are not installed here."""


@dataclass(frozen=True)
class SlurmOptions:
    """How a plan becomes Slurm jobs (see the module docstring).

    Attributes
    ----------
    nodes : mapping of str to str
        Plan device to Slurm node.
    default_node : str or None
        Node of every device the map and the ``NODE/DEVICE`` form leave out.
    partition : str or None
        ``--partition`` (default: the cluster's default partition).
    sharing : {"shard", "mps", "gpu"}
        The gres of a fractional grant.
    shares_per_gpu : int
        Shards per GPU as the site's ``gres.conf`` configures them (``sharing="shard"``).
    mps_units : int
        MPS units per GPU as the site's ``gres.conf`` counts them (``sharing="mps"``; ``Name=mps
        Count=`` per GPU, commonly 100).
    time_scale : float
        Wall seconds per plan second (0.01 runs 100 times faster).
    grace : float
        Seconds between SIGTERM and SIGKILL at a run's end.
    log_dir : str or None
        Where each job writes its output (``<log_dir>/<job name>.<job id>.log``); ``None``:
        ``/dev/null``.
    cpus : int or None
        ``--cpus-per-task`` of every job (``None``: the cluster's default).
    mem : str or None
        ``--mem`` of every job, host memory per node (``16G``; ``None``: the cluster's default).
    min_run : float
        Wall seconds a run must have left before its planned end when it starts; with less,
        the script does not start the command and exits with :data:`SKIPPED_EXIT`.
    tenants : mapping
        Tenant -> ``{account, qos, partition}`` (each optional; see
        :func:`gensolver.adapters.names.tenant_map`).
    default_field : str
        The option that gave ``default_node`` (``--node``; ``--node-map`` for ``*=NODE``).
    """

    nodes: Mapping[str, str] = field(default_factory=dict)
    default_node: str | None = None
    partition: str | None = None
    sharing: str = "shard"
    shares_per_gpu: int = 100
    mps_units: int = 100
    time_scale: float = 1.0
    grace: float = 10.0
    log_dir: str | None = None
    cpus: int | None = None
    mem: str | None = None
    min_run: float = 1.0
    default_field: str = "--node"
    tenants: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", MappingProxyType(dict(self.nodes)))
        object.__setattr__(self, "tenants", MappingProxyType(
            {k: MappingProxyType(v) for k, v in tenant_map(dict(self.tenants)).items()}))
        for node in self.nodes.values():
            slurm_node(node, "--node-map")
        if self.default_node is not None:
            slurm_node(self.default_node, self.default_field)
        slurm_partition(self.partition)
        log_folder(self.log_dir)
        positive_int(self.cpus, "--cpus")
        slurm_memory(self.mem)
        if self.sharing not in SHARING:
            raise AdapterError("--sharing", f"must be one of {', '.join(SHARING)}, got {self.sharing!r}")
        if isinstance(self.shares_per_gpu, bool) or not isinstance(self.shares_per_gpu, int) \
                or self.shares_per_gpu < 1:
            raise AdapterError("--shards-per-gpu", f"must be a positive integer, got {self.shares_per_gpu!r}")
        if isinstance(self.mps_units, bool) or not isinstance(self.mps_units, int) or self.mps_units < 1:
            raise AdapterError("--mps-units", f"must be a positive integer, got {self.mps_units!r}")
        for name, value, positive in (("--time-scale", self.time_scale, True), ("--grace", self.grace, False),
                                      ("--min-run", self.min_run, True)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0 or (positive and value == 0):
                raise AdapterError(name, f"must be a {'positive' if positive else 'non-negative'} number, "
                                         f"got {value!r}")


@dataclass(frozen=True)
class SlurmJob:
    """One batch job: a run of a task, its placement, gres, timing and script.

    Attributes
    ----------
    key : str
        ``task.run``.
    name : str
        Slurm job name, unique to the plan: ``gs-<plan digest>-<key>``.
    nodes : tuple of str
    gres : str
        ``gpu:N``, ``shard:K`` or ``mps:P`` (per node).
    begin : float
        Wall seconds after ``t0`` before which the job may not start.
    end : float
        Wall seconds after ``t0`` at which the script stops the command.
    time_limit : int
        ``--time`` in minutes.
    after : str or None
        Key of the job this one waits for (the task's previous run).
    script : str
        The batch script (everything but ``--begin`` and ``--dependency``).
    """

    key: str
    task: str
    run: int
    name: str
    nodes: tuple[str, ...]
    gres: str
    begin: float
    end: float
    time_limit: int
    after: str | None
    script: str
    token: str = ""
    command: bool = True

    @property
    def file(self) -> str:
        """The script's file name: ``<token>.sbatch``, the token the key made safe for a file
        name (:func:`gensolver.adapters.names.safe_token`)."""
        return f"{self.token or self.key}.sbatch"


@dataclass(frozen=True)
class SlurmState:
    """One job as ``sacct`` reports it; ``start``/``end`` are ``None`` until known."""

    job_id: str
    name: str
    state: str
    exit_code: str
    nodes: str
    submit: str | None
    eligible: str | None
    start: str | None
    end: str | None
    tres: Mapping[str, str]

    @property
    def done(self) -> bool:
        """Whether the job has ended (any terminal state)."""
        return self.state in TERMINAL_STATES


def read_tenant_map(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """A tenant map from a YAML or JSON file (see :func:`gensolver.adapters.names.tenant_map`).

    Raises
    ------
    AdapterError
        The file cannot be read or parsed, or breaks the map's rules (field ``--tenant-map``).
    """
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AdapterError("--tenant-map", f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except yaml.YAMLError as exc:
        raise AdapterError("--tenant-map", f"{path} is not YAML or JSON: {str(exc).splitlines()[0]}") from None
    return tenant_map(doc)


def _gres(grant: RunGrant, options: SlurmOptions) -> str:
    if grant.whole or len(grant.run.devices) > 1 or options.sharing == "gpu":
        return f"gpu:{grant.devices_per_node}"
    if options.sharing == "shard":
        return f"shard:{shares(grant.fraction, options.shares_per_gpu)}"
    return f"mps:{shares(grant.fraction, options.mps_units)}"


def _script(plan: ExecutionPlan, grant: RunGrant, job: dict[str, Any], options: SlurmOptions) -> str:
    run = grant.run
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={job['name']}",
             f"#SBATCH --nodes={len(grant.nodes)}",
             f"#SBATCH --nodelist={','.join(grant.nodes)}",
             "#SBATCH --ntasks-per-node=1",
             f"#SBATCH --gres={job['gres']}",
             f"#SBATCH --time={job['time_limit']}",
             f"#SBATCH --comment=gensolver-plan-{plan.digest}-run-{job['token']}"]
    tenant = options.tenants.get(plan.task(run.task).tenant, {})
    for key in ("account", "qos"):
        if key in tenant:
            lines.append(f"#SBATCH --{key}={tenant[key]}")
    partition = tenant.get("partition", options.partition)
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if options.cpus is not None:
        lines.append(f"#SBATCH --cpus-per-task={options.cpus}")
    if options.mem is not None:
        lines.append(f"#SBATCH --mem={options.mem}")
    log = f"{options.log_dir}/%x.%j.log" if options.log_dir else "/dev/null"
    lines.append(f"#SBATCH --output={log}")
    devices = ", ".join(comment_text(d) for d in run.devices)
    key = shlex.quote(grant.key)
    lines += ["",
              f"# gensolver plan {comment_text(plan.name)} (digest {plan.digest}): task {comment_text(run.task)} "
              f"run {run.index} on {devices}",
              f"# plan time [{run.start:g}, {run.end:g}) s; wall time [{job['begin']:g}, {job['end']:g}) s after t0",
              "# t0 (epoch seconds: the script's argument, else GENSOLVER_T0) and --begin are given at submission.",
              f"# A start with less than {options.min_run:g} s left before the planned end does not run the command",
              f"# (exit {SKIPPED_EXIT}; 0 without a command: its window is over, nothing was to run); a command",
              "# stopped at the planned end exits 0 (a planned stop, not a failure).",
              'GENSOLVER_T0="${1:-${GENSOLVER_T0:-}}"',
              ': "${GENSOLVER_T0:?submit with t0 (epoch seconds) as the argument: sbatch [options] FILE T0}"',
              "export GENSOLVER_T0",
              f"end=$(awk -v t0=\"$GENSOLVER_T0\" 'BEGIN {{ printf \"%.3f\", t0 + {job['end']!r} }}')",
              "left=$(awk -v e=\"$end\" -v now=\"$(date +%s.%N)\" 'BEGIN { d = e - now; if (d < 0) d = 0; printf \"%.3f\", d }')",
              f"if awk -v d=\"$left\" 'BEGIN {{ exit !(d < {options.min_run!r}) }}'; then",
              f"  printf 'gensolver: run %s has %s s left before its planned end: not started\\n' {key} \"$left\" >&2",
              f"  exit {SKIPPED_EXIT if run.command else 0}",
              "fi",
              f"export GENSOLVER_TASK={shlex.quote(run.task)}",
              f"export GENSOLVER_RUN={run.index}",
              f"export GENSOLVER_RESUME={1 if run.index else 0}",
              'export GENSOLVER_RUN_END="$end"',
              f"export GENSOLVER_MEMORY_LIMIT={grant.memory}",
              f"export GENSOLVER_COMPUTE_SHARE={grant.compute!r}",
              f"export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={max(1, min(100, math.ceil(grant.compute * 100 - 1e-9)))}",
              "export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + ",".join(f"{k}={run.grants[d][0] >> 20}M"
                                                                     for k, d in enumerate(run.devices))]
    # a gang over several nodes: the batch script runs on the first node; srun starts one task
    # per node of the allocation (each with SLURM_NODEID / SLURM_PROCID as its rank)
    launch = "" if len(grant.nodes) == 1 else \
        f"srun --nodes={len(grant.nodes)} --ntasks-per-node=1 --kill-on-bad-exit=1 -- "
    if len(grant.nodes) > 1:
        lines.append(f"export GENSOLVER_GANG_SIZE={len(grant.nodes)}")
    if run.command:
        lines.append(f"timeout --signal=TERM --kill-after={options.grace:g} -- \"$left\" {launch}{shlex.join(run.command)}")
    elif launch:
        lines += ["# the plan gives no command: the job holds its grant on every node for its window",
                  f'timeout --signal=TERM --kill-after={options.grace:g} -- "$left" {launch}sleep "$left"']
    else:
        lines += ["# the plan gives no command: the job holds its grant for its window",
                  'sleep "$left"']
    lines += ["rc=$?",
              "if [ \"$rc\" -eq 124 ] || [ \"$rc\" -eq 137 ]; then",
              "  if awk -v e=\"$end\" -v now=\"$(date +%s.%N)\" 'BEGIN { exit !(now >= e - 0.05) }'; then",
              f"    printf 'gensolver: run %s stopped at its planned end\\n' {key} >&2",
              "    exit 0",
              "  fi",
              "fi",
              'exit "$rc"']
    return "\n".join(lines) + "\n"


def _tokens(plan: ExecutionPlan, grants: Sequence[RunGrant]) -> dict[str, str]:
    """Run key -> its file/job-name token (:func:`gensolver.adapters.names.safe_token`); refuses two
    task ids that encode alike."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for g in grants:
        token = f"{safe_token(g.run.task)}.{g.run.index}"
        if seen.get(token, g.run.task) != g.run.task:
            raise AdapterError(f"/tasks/{g.run.task!r}", f"task ids {seen[token]!r} and {g.run.task!r} give the same "
                                                         f"script name {token!r}; rename one")
        seen[token] = g.run.task
        out[g.key] = token
    return out


def slurm_jobs(plan: ExecutionPlan, options: SlurmOptions) -> tuple[SlurmJob, ...]:
    """The plan's batch jobs, in submission order (begin time, task, run).

    Raises
    ------
    AdapterError
        A device without a node, a ``--node-map`` entry naming no plan device, an id with a
        control character, a node that is not a Slurm node name (see
        :mod:`gensolver.adapters.names`).
    """
    out = []
    grants = run_grants(plan, options.nodes, options.default_node, node_rule=slurm_node,
                        default_field=options.default_field)
    tokens = _tokens(plan, grants)
    for grant in grants:
        run = grant.run
        begin = float(math.ceil(run.start * options.time_scale - 1e-9))
        end = run.end * options.time_scale
        token = tokens[grant.key]
        name, gres = f"gs-{plan.digest}-{token}", _gres(grant, options)
        limit = max(1, math.ceil((end - begin + options.grace) / 60.0))
        job: dict[str, Any] = {"name": name, "gres": gres, "begin": begin, "end": end, "time_limit": limit,
                               "token": token}
        after = f"{run.task}.{run.index - 1}" if run.index else None
        out.append(SlurmJob(grant.key, run.task, run.index, name, grant.nodes, gres, begin, end, limit, after,
                            _script(plan, grant, job, options), token, bool(run.command)))
    return tuple(out)


def _submit_sh(jobs: Sequence[SlurmJob]) -> str:
    lines = ["#!/bin/bash", "# Submit the plan's jobs: t0 is now (or $1, epoch seconds); each job's --begin is",
             "# t0 plus its offset, and a task's next run waits for the previous one (afterany).",
             "# Prints one line per run: its key (shell-quoted) and its job id.",
             "set -euo pipefail", 'cd -- "$(dirname -- "$0")"', 't0="${1:-$(date +%s)}"',
             'case "$t0" in (*[!0-9]*|"") echo "submit.sh: t0 must be epoch seconds" >&2; exit 2;; esac',
             "declare -a id"]
    index = {j.key: k for k, j in enumerate(jobs)}
    for k, j in enumerate(jobs):
        dep = f' --dependency="afterany:${{id[{index[j.after]}]}}"' if j.after else ""
        lines.append(f'id[{k}]=$(sbatch --parsable '
                     f'--begin="$(date -d "@$((t0 + {int(j.begin)}))" +%Y-%m-%dT%H:%M:%S)"{dep} -- '
                     f'{shlex.quote(j.file)} "$t0")')
        lines.append(f'id[{k}]="${{id[{k}]%%;*}}"')
        lines.append(f'printf "%s %s\\n" {shlex.quote(shlex.quote(j.key))} "${{id[{k}]}}"')
    return "\n".join(lines) + "\n"


def write_slurm(plan: ExecutionPlan, out: str | os.PathLike[str], options: SlurmOptions) -> tuple[SlurmJob, ...]:
    """Write one ``<task>.<run>.sbatch`` script per run, ``submit.sh`` and ``jobs.json`` to the
    folder ``out``, all at once (see :func:`gensolver.adapters.common.write_tree`)."""
    jobs = slurm_jobs(plan, options)
    index = {"plan": plan.name, "digest": plan.digest, "time_scale": options.time_scale,
             "jobs": [{"key": j.key, "task": j.task, "run": j.run, "name": j.name, "nodes": list(j.nodes),
                       "gres": j.gres, "begin": j.begin, "end": j.end, "time_limit": j.time_limit,
                       "after": j.after, "script": j.file} for j in jobs]}
    files = {j.file: j.script for j in jobs}
    files["submit.sh"] = _submit_sh(jobs)
    files["jobs.json"] = json.dumps(index, indent=2) + "\n"
    write_tree(out, files, executable=("submit.sh",) + tuple(j.file for j in jobs))
    return jobs


#: names of the live-cluster part, in :mod:`gensolver.adapters.slurm_cluster` since it was split
#: off; still importable from here
_CLUSTER_NAMES = frozenset({"SlurmJournal", "known_nodes", "node_gres", "submit_plan", "follow", "cancel", "sacct"})


def __getattr__(name: str) -> Any:
    """The names of :mod:`gensolver.adapters.slurm_cluster`, loaded on first use (that module
    imports this one, so it cannot be imported here at load)."""
    if name in _CLUSTER_NAMES:
        from . import slurm_cluster

        return getattr(slurm_cluster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
