"""A plan's Slurm batch jobs on a live cluster: submission, following, cancelling.

The scripts themselves are :mod:`gensolver.adapters.slurm`'s. :func:`submit_plan` submits with
``sbatch --parsable``, journals each job id as soon as it is known (:class:`SlurmJournal`; a rerun
adopts what the journal, or the controller under the job's unique name, already has and never
submits a run twice), :func:`follow` polls ``sacct --parsable2`` until every job has ended, and
:func:`cancel` calls ``scancel``. Nothing parses Slurm's human-formatted output.

References
----------
.. [sbatch] Slurm ``sbatch(1)``: ``--parsable``, ``--begin``, ``--dependency``,
   https://slurm.schedmd.com/sbatch.html
.. [sacct] Slurm ``sacct(1)``: ``--parsable2``, ``--format``, job states,
   https://slurm.schedmd.com/sacct.html
.. [sinfo] Slurm ``sinfo(1)``: ``--format=%N|%G``, https://slurm.schedmd.com/sinfo.html
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from ..executor.plan import ExecutionPlan
from .common import AdapterError
from .slurm import (
    SACCT_FIELDS,
    SlurmError,
    SlurmJob,
    SlurmOptions,
    SlurmState,
    SlurmUnavailableError,
    slurm_jobs,
)

__all__ = ["SlurmJournal", "known_nodes", "node_gres", "submit_plan", "follow", "cancel", "sacct"]


def _command(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SlurmUnavailableError(f"{name} is not installed here (Slurm's client commands are needed for "
                                    f"--backend slurm)")
    return path


def _call(argv: list[str], *, timeout: float = 30.0) -> str:
    try:
        out = subprocess.run([_command(argv[0])] + argv[1:], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{argv[0]} did not answer within {timeout:g} s") from None
    if out.returncode != 0:
        raise SlurmError(f"{' '.join(argv[:2])} failed (exit {out.returncode}): {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout


class SlurmJournal:
    """Append-only JSON-lines journal of one plan's Slurm jobs.

    The first record is ``{"event": "plan", "digest", "t0", "time_scale"}``; each submission
    appends ``{"event": "submitted", "key", "job", "name"}`` (flushed and fsynced before the next
    ``sbatch``), a run not submitted because its window had passed ``{"event": "skipped", "key"}``,
    each ``scancel`` ``{"event": "cancelled", "jobs"}``.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self.records: list[dict[str, Any]] = []
        if self.path is not None and self.path.exists():
            for k, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    raise AdapterError("--journal", f"{self.path} line {k} is not JSON: not a Slurm journal") from None
                if not isinstance(rec, dict) or "event" not in rec:
                    raise AdapterError("--journal", f"{self.path} line {k} is not a journal record")
                self.records.append(rec)
            if self.records and (self.records[0].get("event") != "plan" or self.records[0].get("backend") != "slurm"):
                raise AdapterError("--journal", f"{self.path} is not a Slurm journal (written by another backend?)")

    @property
    def head(self) -> dict[str, Any] | None:
        """The ``plan`` record, if any."""
        return self.records[0] if self.records else None

    @property
    def jobs(self) -> dict[str, str]:
        """Run key to Slurm job id, as journaled."""
        return {r["key"]: str(r["job"]) for r in self.records if r.get("event") == "submitted"}

    @property
    def skipped(self) -> set[str]:
        """Run keys journaled as not submitted (their planned end had passed)."""
        return {r["key"] for r in self.records if r.get("event") == "skipped"}

    def append(self, record: dict[str, Any]) -> None:
        """Add ``record`` (durably, when the journal has a file)."""
        self.records.append(record)
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(math.ceil(epoch - 1e-6)))


def _by_name(names: Sequence[str], since: float) -> dict[str, str]:
    """Job name to the newest job id the accounting database knows by it, submitted at ``since`` or after."""
    if not names:
        return {}
    found: dict[str, str] = {}
    for state in sacct(names=names):
        try:
            submitted = time.mktime(time.strptime(state.submit or "", "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            continue
        if state.name in names and submitted >= math.floor(since) - 1:
            found[state.name] = state.job_id
    return found


def node_gres() -> dict[str, dict[str, int]]:
    """Node name -> generic resource -> count, as ``sinfo --Node --noheader --format=%N|%G``
    reports them (``gpu:a100:4(S:0-1),gpu:v100:2`` counts 6 ``gpu``; ``(null)``: none)."""
    out: dict[str, dict[str, int]] = {}
    for line in _call(["sinfo", "--Node", "--noheader", "--format=%N|%G"]).splitlines():
        node, _, gres = line.strip().partition("|")
        if not node:
            continue
        counts: dict[str, int] = {}
        for part in re.sub(r"\([^)]*\)", "", gres).split(","):
            fields = part.strip().split(":")
            if len(fields) >= 2 and fields[-1].isdigit():
                counts[fields[0]] = counts.get(fields[0], 0) + int(fields[-1])
        out[node] = counts  # (a node in several partitions is listed once per partition, alike)
    return out


def known_nodes() -> frozenset[str]:
    """The cluster's node names (those of :func:`node_gres`)."""
    return frozenset(node_gres())


def _check_fits(jobs: Sequence[SlurmJob], nodes: Mapping[str, Mapping[str, int]]) -> None:
    """Refuse, before anything is submitted, a run sent to a node Slurm does not have or one that
    asks a node for more of a generic resource than the node has (Slurm would refuse that job
    at submission, after the runs before it were submitted, or leave it pending forever)."""
    for j in jobs:
        unknown = [n for n in j.nodes if n not in nodes]
        if unknown:
            raise AdapterError("--node-map", f"run {j.key} would go to node(s) {', '.join(unknown)}, which Slurm "
                                               f"does not have (its nodes: {', '.join(sorted(nodes)) or 'none'})")
        name, _, count = j.gres.rpartition(":")
        for n in j.nodes:
            have = nodes[n].get(name, 0)
            if int(count) > have:
                raise AdapterError("--node-map", f"run {j.key} needs --gres={j.gres} on node {n}, which has "
                                                   f"{have} {name} (sinfo): the plan does not fit the cluster")


def submit_plan(plan: ExecutionPlan, options: SlurmOptions, *, journal: SlurmJournal, script_dir: str | os.PathLike[str],
                t0: float | None = None, log: Callable[[str], None] = lambda _m: None) -> tuple[float, dict[str, str]]:
    """Submit every run of ``plan`` not yet submitted; return ``(t0, key -> job id)``.

    Without a journaled ``t0`` and without ``t0``, ``t0`` is now plus 1 s plus 0.25 s per job:
    the time the submission itself takes does not come out of the first runs' windows.

    Time rule: a run whose planned end, less ``options.min_run``, has passed at submission is
    not submitted (journaled ``skipped``, left out of the result); one submitted in time but
    started late by Slurm gets the remainder of its window, or, with less than
    ``options.min_run`` seconds left, exits at once without running its command
    (:data:`SKIPPED_EXIT`). No run is given more than its planned end plus ``options.grace``.

    A run whose id is journaled is adopted; one the journal lacks but the accounting database
    knows by the job's name (a submission cut off before it was journaled) is adopted and
    journaled; only the rest are submitted, in begin order, each journaled at once. Job names
    are ``gs-<plan digest>-<task>.<run>-<token>``, the token drawn from the digest and ``t0``,
    so they are unique to the journal.

    Raises
    ------
    AdapterError
        The journal was written for another plan, or the plan cannot be placed (a device
        without a node, a node Slurm does not have, a run asking a node for more GPUs, shards
        or MPS units than it has): nothing is submitted.
    SlurmUnavailableError, SlurmError
    """
    jobs = slurm_jobs(plan, options)
    _check_fits(jobs, node_gres())
    head = journal.head
    if head is None:  # t0 leaves the submission itself time (1 s plus 0.25 s a job), so it eats no window
        t0 = time.time() + 1.0 + 0.25 * len(jobs) if t0 is None else t0
        journal.append({"event": "plan", "backend": "slurm", "digest": plan.digest, "t0": t0,
                        "time_scale": options.time_scale})
    else:
        if head.get("digest") != plan.digest:
            raise AdapterError("--journal", f"{journal.path} was written for another plan (digest "
                                            f"{head.get('digest')!r}, this plan {plan.digest!r})")
        t0 = float(head["t0"])
    # this journal's own job names: another submission of the same plan (emit slurm, another
    # journal) has other names, so a lookup by name finds only what this journal submitted
    token = hashlib.sha256(f"{plan.digest}:{t0!r}".encode()).hexdigest()[:8]
    names = {j.key: f"{j.name}-{token}" for j in jobs}
    known = journal.jobs
    missing = [j for j in jobs if j.key not in known] if head is not None else []
    # (t0 lies up to 1 s + 0.25 s a job after the first submission; the names, unique to t0, do the rest)
    for name, job_id in _by_name([names[j.key] for j in missing], t0 - 60.0 - 0.25 * len(jobs)).items():
        key = next(j.key for j in missing if names[j.key] == name)
        journal.append({"event": "submitted", "key": key, "job": job_id, "name": name, "adopted": True})
        log(f"adopted {key} as job {job_id} (found by name)")
    known = journal.jobs
    skipped = journal.skipped
    folder = Path(script_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for j in jobs:
        if j.key in known or j.key in skipped:
            continue
        if t0 + j.end - options.min_run < time.time():  # its window is over: not submitted (the stated rule)
            journal.append({"event": "skipped", "key": j.key, "reason": "its planned end has passed",
                            "command": j.command})
            skipped.add(j.key)
            log(f"skipped {j.key}: its planned end ({j.end:g} s after t0) has passed")
            continue
        path = folder / j.file
        path.write_text(j.script, encoding="utf-8")
        argv = ["sbatch", "--parsable", f"--job-name={names[j.key]}", f"--begin={_stamp(t0 + j.begin)}"]
        if j.after is not None and j.after in known:  # (a skipped previous run leaves nothing to wait for)
            argv.append(f"--dependency=afterany:{known[j.after]}")
        # t0 as the script's argument: an --export=ALL,VAR=... made slurmd start each batch script
        # about 0.5 s after the previous one (62 at once: up to 27 s late; see gensolver.adapters.slurm)
        job_id = _call(argv + ["--", str(path), repr(t0)]).strip().split(";")[0]
        if not job_id.isdigit():
            raise SlurmError(f"sbatch --parsable printed {job_id!r}, not a job id")
        journal.append({"event": "submitted", "key": j.key, "job": job_id, "name": names[j.key]})
        known[j.key] = job_id
        log(f"submitted {j.key} as job {job_id} on {','.join(j.nodes)} with {j.gres}")
    return t0, {j.key: known[j.key] for j in jobs if j.key in known}


def _tres(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)


def sacct(*, job_ids: Sequence[str] = (), names: Sequence[str] = ()) -> tuple[SlurmState, ...]:
    """``sacct -X --parsable2 --noheader --format=...`` for the given jobs or job names (allocations only)."""
    argv = ["sacct", "-X", "--parsable2", "--noheader", f"--format={','.join(SACCT_FIELDS)}"]
    if job_ids:
        argv.append(f"--jobs={','.join(job_ids)}")
    if names:
        argv += [f"--name={','.join(names)}", "--starttime=now-7days"]
    out = []
    for line in _call(argv).splitlines():
        cells = line.split("|")
        if len(cells) != len(SACCT_FIELDS):
            continue
        row = dict(zip(SACCT_FIELDS, cells))
        known = lambda v: None if v in ("", "Unknown", "None") else v  # noqa: E731
        out.append(SlurmState(row["JobID"], row["JobName"], row["State"].split(" ")[0], row["ExitCode"],
                              row["NodeList"], known(row["Submit"]), known(row["Eligible"]), known(row["Start"]),
                              known(row["End"]), MappingProxyType(_tres(row["AllocTRES"]))))
    return tuple(out)


def follow(job_ids: Mapping[str, str], *, poll: float = 1.0, timeout: float | None = None,
           log: Callable[[str], None] = lambda _m: None) -> dict[str, SlurmState]:
    """Poll ``sacct`` until every job of ``job_ids`` (key -> id) has ended; key -> its last state.

    Raises
    ------
    TimeoutError
        ``timeout`` seconds passed first (the jobs keep going).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    seen: dict[str, str] = {}
    while True:
        states = {s.job_id: s for s in sacct(job_ids=list(job_ids.values()))}
        now = {key: states[jid] for key, jid in job_ids.items() if jid in states}
        for key, s in now.items():
            if seen.get(key) != s.state:
                seen[key] = s.state
                log(f"{key} (job {s.job_id}): {s.state}")
        if len(now) == len(job_ids) and all(s.done for s in now.values()):
            return now
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"{sum(not s.done for s in now.values()) + len(job_ids) - len(now)} job(s) "
                               f"still running after {timeout:g} s")
        time.sleep(poll)


def cancel(job_ids: Sequence[str], *, journal: SlurmJournal | None = None) -> None:
    """``scancel`` the jobs (ended ones are ignored by Slurm) and journal it."""
    if not job_ids:
        return
    _call(["scancel"] + list(job_ids))
    if journal is not None:
        journal.append({"event": "cancelled", "jobs": list(job_ids)})
