"""The service's market state: tasks, rounds, payments, credits and feedback, kept durable.

:class:`MarketService` is what the routes call. Its model of time: round ``n`` (1, 2, ...)
clears at market step ``(n - 1) * lease`` and commits tasks to run for the next ``lease`` steps.
A task submitted before round ``n`` is released at that round's step (plus the GenTask's
``computeTime.arrival`` offset); its deadline is an offset from there too. Between rounds a
running task does ``lease * task_speed(task, memory)`` steps of work (the utility model of
:mod:`gensolver.model.tasks`) unless an executor reported its progress (``POST /v1/feedback``),
which then replaces the estimate; it is ``done`` when no work is left.

Durability: each method that changes state writes one database transaction and commits it before
returning (:mod:`.storage`); the in-memory market (balances, weights, refill schedule, executor
observations) is rebuilt from the database on start, so a killed server restarted on the same
database continues where the last committed change left it. A round is committed whole (its row,
task states, payments, credit changes, balances) or not at all; its number is the primary key of
``rounds``, so no round is applied twice.

Replicas (a PostgreSQL store, :mod:`.storage_pg`): a round, a cancellation and a feedback
report hold the store's cross-process lock (``exclusive()``) and re-read the stored market
state under it, so two replicas never clear the same round, nor clear from a stale state.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from ..market.spec import loads_gentasks, parse_gentask
from ..model.io import json_safe
from ..model.tasks import Task, task_speed
from .auth import Principal, check_tenant_name
from .errors import BadRequest, Conflict, Forbidden, UnsupportedMediaType
from .market_glue import MarketGlue, RoundResult, task_from_dict
from .metrics import Metrics
from .settings import Settings
from .storage import audit, open_store
from .strict import check_gentask_fields, check_numbers, loads_strict
from .views import TASK_STATES, ReadViews, task_key

__all__ = ["MarketService", "TASK_STATES", "UnsupportedMediaType", "check_task_name", "task_key"]

YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
_EPS = 1e-9
#: seconds a count of the tasks per state (``/healthz``'s ``tasks``) is reused before it is counted again
COUNTS_MAX_AGE = 1.0


#: a Kubernetes object name (DNS-1123 subdomain): lower-case letters, digits, '-' and '.', at most 253
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_task_name(name: object, field: str = "metadata.name") -> str:
    """A task name: a DNS-1123 subdomain (as Kubernetes names objects), else :class:`BadRequest`."""
    if not isinstance(name, str) or not 1 <= len(name) <= 253 or not _DNS1123.match(name):
        shown = name if not isinstance(name, str) or len(name) <= 80 else name[:80] + "..."
        raise BadRequest(f"{field}: a task name is 1-253 lower-case letters, digits, '-' and '.', starting and "
                         f"ending with a letter or digit (a DNS-1123 name), got {shown!r}", field=field)
    return name


def _dumps(obj: Any) -> str:
    return json.dumps(json_safe(obj), sort_keys=True, separators=(",", ":"), default=str)


#: ids and tenants read by one statement of :func:`_read_for_submit` (well under SQLite's 999 parameters)
_READ_CHUNK = 400


def _read_for_submit(db: Any, ids: list[str], tenants: list[str]) -> tuple[int, dict[str, int], dict[str, Any]]:
    """What a submission reads in its transaction, in one statement (one round trip to a
    database server) for up to :data:`_READ_CHUNK` tasks: the largest ``seq``, each tenant's
    count of waiting and running tasks, and the stored rows of the tasks ``ids`` (by id)."""
    count = "(SELECT COUNT(*) FROM tasks WHERE tenant = ? AND state IN ('waiting', 'running'))"
    head, rest = ids[:_READ_CHUNK], ids[_READ_CHUNK:]
    first, others = tenants[:_READ_CHUNK // 4], tenants[_READ_CHUNK // 4:]
    lives = "".join(f", {count} AS gs_live{k}" for k in range(len(first)))
    rows = db.execute(f"SELECT (SELECT COALESCE(MAX(seq), 0) FROM tasks) AS gs_seq{lives}, t.* FROM (SELECT 1) AS one "
                      f"LEFT JOIN tasks AS t ON t.id IN ({','.join('?' * len(head))})", (*first, *head)).fetchall()
    seq = int(rows[0]["gs_seq"])
    live = {tenant: int(rows[0][f"gs_live{k}"]) for k, tenant in enumerate(first)}
    live.update((tenant, int(db.execute(f"SELECT {count}", (tenant,)).fetchone()[0])) for tenant in others)
    found = {r["id"]: r for r in rows if r["id"] is not None}
    for k in range(0, len(rest), _READ_CHUNK):
        chunk = rest[k:k + _READ_CHUNK]
        found.update((r["id"], r) for r in db.execute(
            f"SELECT * FROM tasks WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall())
    return seq, live, found


class MarketService(ReadViews):
    """Tasks, rounds and credits of one service, durable in SQLite (see the module docstring)."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.config = settings.market_config()
        self.lease = self.config.lease
        #: this process's name among the replicas (in ``/healthz``, the round timer's lease and
        #: each round's audit entry)
        self.replica = uuid.uuid4().hex
        self.store = open_store(settings.db, synchronous=settings.synchronous)
        self.glue = MarketGlue(self.config, settings.gpu_specs, step_seconds=settings.step_seconds)
        self.glue.warn_deprecated()
        #: held while a round clears, and by cancellations and feedback (they change what a round reads)
        self.clear_lock = threading.Lock()
        self._reported: dict[str, tuple[str, float]] = {}
        #: seconds for the age of :meth:`task_counts` (injectable in tests)
        self.monotonic: Callable[[], float] = time.monotonic
        self._counts: tuple[float, dict[str, int]] | None = None
        self._counts_lock = threading.Lock()
        self._load()

    # ------------------------------------------------------------------ start
    def _load(self) -> None:
        last = self.store.one("SELECT n, now FROM rounds ORDER BY n DESC LIMIT 1")
        self.next_round = 1 if last is None else int(last["n"]) + 1
        tenants = self.store.query("SELECT tenant, balance, weight FROM tenants")
        observations = []
        live = {r["id"]: r["tenant"] for r in self.store.query(
            "SELECT id, tenant FROM tasks WHERE state IN ('waiting', 'running')")}
        for r in self.store.query("SELECT task, memory_gib FROM feedback WHERE seq IN "
                                  "(SELECT MAX(seq) FROM feedback WHERE memory_gib IS NOT NULL GROUP BY task)"):
            if r["task"] in live:
                observations.append((r["task"], r["memory_gib"], None))
                self._reported[r["task"]] = (live[r["task"]], float(r["memory_gib"]) * 2 ** 30)
        engine = self.store.one("SELECT value FROM meta WHERE key = 'engine_state'")
        self.glue.restore(now=0.0 if last is None else float(last["now"]),
                          balances={r["tenant"]: r["balance"] for r in tenants},
                          weights={r["tenant"]: r["weight"] for r in tenants}, observations=observations,
                          engine_state=None if engine is None else json.loads(engine["value"]))
        for r in tenants:
            self.metrics.balance.labels(r["tenant"]).set(r["balance"])
            self.metrics.payments_total.labels(r["tenant"])
        self._refresh_task_metrics()
        self._refresh_memory_metrics()

    def close(self) -> None:
        self.store.close()

    @property
    def clock(self) -> float:
        """Market step of the next round."""
        return float((self.next_round - 1) * self.lease)

    def refresh_gauges(self) -> None:
        """Gauges read from the database (at scrape time, not on every request)."""
        self._refresh_task_metrics()
        row = self.store.one("SELECT COUNT(*) AS c FROM tenants")
        self.metrics.tenants.set(0 if row is None else int(row["c"]))

    def _refresh_task_metrics(self) -> None:
        counts = {s: 0 for s in TASK_STATES}
        for r in self.store.query("SELECT state, COUNT(*) AS c FROM tasks GROUP BY state"):
            counts[r["state"]] = int(r["c"])
        for s, c in counts.items():
            self.metrics.tasks.labels(s).set(c)

    def _refresh_memory_metrics(self) -> None:
        per: dict[str, float] = {}
        for tenant, mem in self._reported.values():
            per[tenant] = per.get(tenant, 0.0) + mem
        for tenant in set(per) | {t for t, _ in self._reported.values()}:
            self.metrics.executor_memory.labels(tenant).set(per.get(tenant, 0.0))
        self.metrics.executor_memory_all.set(sum(per.values()))

    # ------------------------------------------------------------------ tasks
    def _parse(self, body: bytes, content_type: str) -> list[tuple[Mapping[str, Any], Task]]:
        """The submitted GenTask documents and their tasks (before the service's changes)."""
        media = (content_type or "").split(";")[0].strip().lower()
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRequest(f"the body is not UTF-8 (byte {exc.start})", field="") from None
        step = self.settings.step_seconds
        if media == "application/json":
            doc = loads_strict(text, style="dotted")
            docs = doc if isinstance(doc, list) else [doc]
            if not docs:
                raise BadRequest("an empty list holds no GenTask", field="")
            out = []
            for k, d in enumerate(docs):
                check_gentask_fields(d, prefix=f"[{k}]" if isinstance(doc, list) else "")
                out.append((d, parse_gentask(d, step_seconds=step, document=k + 1 if isinstance(doc, list) else None)))
            names = [t.id for _, t in out]
            if len(set(names)) != len(names):
                dup = next(n for n in names if names.count(n) > 1)
                raise BadRequest(f"task name {dup!r} appears twice in the request", field="metadata.name")
            return out
        if media in YAML_TYPES:
            tasks = loads_gentasks(text, source="body", step_seconds=step)
            try:
                docs = [d for d in yaml.safe_load_all(text) if d is not None]
            except (yaml.YAMLError, RecursionError) as exc:  # pragma: no cover - loads_gentasks read it first
                raise BadRequest(f"invalid YAML: {exc}", field="") from None
            for k, d in enumerate(docs):
                prefix = f"[{k}]" if len(docs) > 1 else ""
                check_numbers(d, where=[k] if len(docs) > 1 else [], style="dotted")
                check_gentask_fields(d, prefix=prefix)
            return list(zip(docs, tasks))
        raise UnsupportedMediaType(f"send a GenTask as application/json or application/yaml, not {media or 'no type'!r}",
                                   field="header.content-type")

    def _check_fits(self, task: Task) -> None:
        """Refuse a task no GPU group of the cluster could ever hold (it would wait forever)."""
        gpus = self.glue.gpus
        biggest = max(g.memory for g in gpus)
        if task.min_memory > biggest + 1e-9:
            field = "spec.genResources.gpuMemory." + ("minRequired" if task.min_memory < task.preferred_memory else "preferred")
            raise BadRequest(f"task {task.id!r} needs at least {task.min_memory:g} GiB per GPU; the largest GPU "
                             f"here has {biggest:g} GiB", field=field)
        per_node: dict[str, int] = {}
        for g in gpus:
            per_node[g.node] = per_node.get(g.node, 0) + 1
        if task.gpus > max(per_node.values()):
            raise BadRequest(f"task {task.id!r} needs {task.gpus} GPUs on one node; the largest node here has "
                             f"{max(per_node.values())}", field="spec.containers[0].resources.limits.nvidia.com/gpu")

    def submit(self, principal: Principal, body: bytes, content_type: str) -> tuple[list[dict[str, Any]], bool]:
        """Accept GenTasks (JSON object, JSON list, or multi-document YAML), all or none.

        Returns the task views and whether any task is new. Submitting the same document again
        (same tenant, same content) answers the stored task: retries are safe. A name in use
        by another document is a 409.
        """
        try:
            parsed = self._parse(body, content_type)
        except RecursionError:
            raise BadRequest("the body is nested too deeply", field="") from None
        clock = self.clock
        rows = []
        for doc, task in parsed:
            meta = doc.get("metadata") if isinstance(doc, Mapping) else None
            labels = meta.get("labels") if isinstance(meta, Mapping) else None
            named = (labels.get("tenant") if isinstance(labels, Mapping) else None) or \
                (meta.get("namespace") if isinstance(meta, Mapping) else None)
            if named is not None and named != principal.tenant and not principal.admin:
                raise Forbidden(
                    f"the GenTask names tenant {named!r}; this token belongs to {principal.tenant!r}",
                    field="metadata.labels.tenant")
            tenant = named if (named is not None and principal.admin) else principal.tenant
            try:
                check_tenant_name(tenant)
            except ValueError as exc:
                raise BadRequest(str(exc), field="metadata.labels.tenant") from None
            check_task_name(task.id)
            self._check_fits(task)
            placed = Task(**{**task.to_dict(), "id": task_key(tenant, task.id), "command": task.command, "tenant": tenant,
                             "release": int(clock) + task.release,
                             "deadline": None if task.deadline is None else int(clock) + task.deadline})
            rows.append((placed, _dumps(doc)))
        now = time.time()

        def store(db) -> tuple[list[dict[str, Any]], bool]:
            created = False
            views = []
            seq, lives, found = _read_for_submit(db, [placed.id for placed, _ in rows],
                                                 sorted({placed.tenant for placed, _ in rows}))
            olds = [found.get(placed.id) for placed, _ in rows]
            quota = self.settings.max_tasks_per_tenant
            adding: dict[str, int] = {}
            for (placed, _), old in zip(rows, olds):
                if old is None or old["state"] == "cancelled":  # a retry of a held task adds nothing
                    adding[placed.tenant] = adding.get(placed.tenant, 0) + 1
            for tenant, n_new in adding.items():
                live = lives[tenant]
                if live + n_new > quota:
                    raise Forbidden(f"tenant {tenant!r} holds {live} waiting or running tasks; {n_new} more would pass "
                                    f"its quota of {quota} (--max-tasks-per-tenant)", field="")
            for (_doc, task), (placed, source), old in zip(parsed, rows, olds):
                if old is not None and old["state"] == "cancelled":  # a cancelled task frees its name
                    db.execute("UPDATE tasks SET id = ? WHERE id = ?", (f"{placed.id}~{old['seq']}", placed.id))
                elif old is not None:
                    if old["source"] == source:
                        views.append(self._view(old))
                        continue
                    raise Conflict(f"tenant {placed.tenant!r} already has a task named {task.id!r} with other content "
                                   f"(names are unique per tenant until the task is cancelled; cancel it or choose "
                                   f"another name)", field="metadata.name")
                seq += 1
                task_json = _dumps(placed.to_dict())
                db.execute("INSERT INTO tasks(id, tenant, name, state, task, source, submitted, seq, remaining, waited, "
                           "wait_since) VALUES(?,?,?,?,?,?,?,?,?,0,?)",
                           (placed.id, placed.tenant, task.id, "waiting", task_json, source, now, seq,
                            float(placed.duration), float(placed.release)))
                created = True
                views.append(self._view({"id": placed.id, "tenant": placed.tenant, "name": task.id, "state": "waiting",
                                         "submitted": now,
                                         "remaining": float(placed.duration), "placement": None, "memory": None,
                                         "started_round": None, "finished_round": None, "task": task_json}))
            return views, created

        views, created = self.store.grouped(store)
        if created:
            for placed, _ in rows:
                self.metrics.submitted_total.labels(placed.tenant).inc()
                self.metrics.submissions.inc()
        return views, created

    def cancel(self, principal: Principal, task_id: str, tenant: str | None = None) -> dict[str, Any]:
        """Cancel a waiting or running task (its GPUs are free from the next round, its name at once)."""
        with self.clear_lock, self.store.exclusive():
            self._sync(market=False)
            row = self._row(principal, task_id, tenant)
            key = row["id"]
            if row["state"] == "done":
                raise Conflict(f"task {task_id!r} has finished; nothing to cancel", field="path.task_id")
            if row["state"] != "cancelled":
                with self.store.write() as db:
                    db.execute("UPDATE tasks SET state='cancelled', placement=NULL, finished_round=? WHERE id=?",
                               (self.next_round - 1, key))
                self.glue.forget(key)
                if self._reported.pop(key, None) is not None:
                    self._refresh_memory_metrics()
            return self._view(self.store.one("SELECT * FROM tasks WHERE id = ?", (key,)))

    # ------------------------------------------------------------------ feedback
    def feedback(self, principal: Principal, *, task_id: str, memory_bytes: float | None,
                 progress: float | None, tenant: str | None = None) -> dict[str, Any]:
        """Record an executor's report on a running task: memory in use and/or progress in [0, 1]."""
        with self.clear_lock, self.store.exclusive():
            self._sync(market=False)
            row = self._row(principal, task_id, tenant, field="/task")
            name, task_id = task_id, row["id"]
            if row["state"] != "running":
                raise Conflict(f"task {name!r} is {row['state']}, not running", field="/task")
            task = task_from_dict(json.loads(row["task"]))
            gib = None if memory_bytes is None else memory_bytes / 2 ** 30
            if gib is not None and gib <= 0:
                raise BadRequest("memory_bytes must be positive", field="/memory_bytes")
            with self.store.write() as db:
                db.execute("INSERT INTO feedback(task, tenant, at, memory_gib, progress) VALUES(?,?,?,?,?)",
                           (task_id, row["tenant"], time.time(), gib, progress))
                if progress is not None:
                    remaining = max(0.0, (1.0 - progress) * task.duration)
                    if remaining <= _EPS:
                        db.execute("UPDATE tasks SET state='done', remaining=0, placement=NULL, finished_round=? "
                                   "WHERE id=?", (self.next_round - 1, task_id))
                    else:
                        db.execute("UPDATE tasks SET remaining=?, progress_round=? WHERE id=?",
                                   (remaining, self.next_round, task_id))
            if gib is not None:
                self.glue.observe(task_id, memory_gib=gib, progress=None)
                self._reported[task_id] = (row["tenant"], gib * 2 ** 30)
            if progress is not None and progress >= 1 - _EPS:
                self.glue.forget(task_id)
                self._reported.pop(task_id, None)
            self.metrics.feedback_total.labels(row["tenant"]).inc()
            self.metrics.feedback_all.inc()
            self._refresh_memory_metrics()
            return self._view(self.store.one("SELECT * FROM tasks WHERE id = ?", (task_id,)))

    # ------------------------------------------------------------------ rounds
    def has_work(self) -> bool:
        return self.store.one("SELECT 1 FROM tasks WHERE state IN ('waiting', 'running') LIMIT 1") is not None

    def clear_round(self, *, trigger: str = "request", fence: Callable[[Any], None] | None = None) -> dict[str, Any]:
        """Clear the next round and commit it; returns its full document (``GET /v1/rounds/{n}``).

        ``fence(db)`` runs first in the round's write transaction and may refuse the commit by
        raising (the round timer's :meth:`~gensolver.service.lease.RoundLease.fence`): nothing
        of the round is then applied and the in-memory market is reloaded from the database."""
        with self.clear_lock, self.store.exclusive():
            t0 = time.perf_counter()
            self._sync(market=True)
            n = self.next_round
            now = float((n - 1) * self.lease)
            rows = self.store.query("SELECT * FROM tasks WHERE state IN ('waiting', 'running') ORDER BY seq")
            tasks = {r["id"]: task_from_dict(json.loads(r["task"])) for r in rows}
            finished: list[str] = []
            remaining: dict[str, float] = {}
            waiting, running = [], []
            for r in rows:
                t = tasks[r["id"]]
                rem = float(r["remaining"])
                if r["state"] == "running":
                    if r["progress_round"] != n:  # no executor report since the last round: the model's progress
                        rem -= self.lease * task_speed(t, float(r["memory"]))
                    if rem <= _EPS:
                        finished.append(t.id)
                        continue
                    remaining[t.id] = rem
                    running.append((t, rem, float(r["waited"]), tuple(json.loads(r["placement"])), float(r["memory"])))
                elif t.release <= now:
                    remaining[t.id] = rem
                    waiting.append((t, rem, float(r["waited"]) + now - float(r["wait_since"])))
            try:
                result = self.glue.clear(now, waiting=waiting, running=running)
            except BaseException:
                self._reload_market()
                raise
            try:
                doc = self._commit_round(n, now, trigger, rows, tasks, remaining, finished, result, t0, fence=fence)
            except BaseException:
                self._reload_market()
                raise
            self.next_round = n + 1
        self._observe_round(doc, result)
        return doc

    def _sync(self, *, market: bool) -> None:
        """With a store other replicas share (called under :meth:`Store.exclusive`): catch up
        with what they committed. ``market``: always rebuild the in-memory market (a round
        clears from the stored balances, weights and executor reports, not from this
        replica's copy); otherwise only when another replica cleared a round since."""
        if not self.store.shared:
            return
        if not market:
            last = self.store.one("SELECT MAX(n) AS n FROM rounds")
            if (0 if last is None or last["n"] is None else int(last["n"])) == self.next_round - 1:
                return
        self._reload_market()

    def _reload_market(self) -> None:
        self._reported.clear()
        self._load()

    def _commit_round(self, n: int, now: float, trigger: str, rows, tasks: Mapping[str, Task],
                      remaining: Mapping[str, float], finished: list[str], result: RoundResult, t0: float, *,
                      fence: Callable[[Any], None] | None = None) -> dict[str, Any]:
        c = result.clearing
        out = result.outcome
        state = {r["id"]: r for r in rows}
        assignments: list[dict[str, Any]] = []
        for tid, a in c.assignments.items():
            assignments.append({"task": tid, "tenant": tasks[tid].tenant, "gpus": list(a.gpus), "memory": a.memory,
                                "start": now, "length": a.length, "keep": a.keep})
        payments: list[dict[str, Any]] = []
        for tid in c.assignments:
            pay, lo, hi = result.payments.get(tid, (None, None, None))
            payments.append({"task": tid, "tenant": tasks[tid].tenant, "payment": pay, "payment_bounds": [lo, hi],
                             "exact": result.exact, "charge": float(c.charges.get(tid, 0.0))})
        credits = [{"tenant": e.tenant, "amount": e.amount, "reason": e.reason, "task": e.task} for e in result.ledger]
        alloc = None if out is None else out.allocation
        usage: dict[str, float] = {}
        for a in c.assignments.values():
            t = tasks[a.task]
            usage[t.tenant] = usage.get(t.tenant, 0.0) + a.memory * t.gpus * min(a.length, self.lease)
        at = time.time()
        with self.store.write() as db:
            if fence is not None:
                fence(db)
            for tid in finished:
                db.execute("UPDATE tasks SET state='done', remaining=0, placement=NULL, finished_round=? WHERE id=?",
                           (n, tid))
                self.glue.forget(tid)
                self._reported.pop(tid, None)
            for tid, rem in remaining.items():
                r = state[tid]
                if tid in c.assignments:
                    a = c.assignments[tid]
                    waited = float(r["waited"]) + (now - float(r["wait_since"]) if r["state"] == "waiting" else 0.0)
                    db.execute("UPDATE tasks SET state='running', remaining=?, placement=?, memory=?, waited=?, "
                               "started_round=COALESCE(started_round, ?) WHERE id=?",
                               (rem, json.dumps(list(a.gpus)), a.memory, waited, n, tid))
                elif tid in c.preempted:
                    db.execute("UPDATE tasks SET state='waiting', remaining=?, placement=NULL, memory=NULL, "
                               "wait_since=? WHERE id=?", (rem, now, tid))
                    self._reported.pop(tid, None)
                elif r["state"] == "running":
                    db.execute("UPDATE tasks SET remaining=? WHERE id=?", (rem, tid))
            for p in payments:
                lo, hi = p["payment_bounds"]
                db.execute("INSERT INTO payments VALUES(?,?,?,?,?,?,?,?)",
                           (n, p["task"], p["tenant"], p["payment"], lo, hi, int(p["exact"]), p["charge"]))
            for e in result.ledger:
                db.execute("INSERT INTO credits(round, time, tenant, amount, reason, task) VALUES(?,?,?,?,?,?)",
                           (n, e.time, e.tenant, e.amount, e.reason, e.task))
            engine_state = self.glue.engine_state()
            if engine_state is not None:  # the credit engine's memory, committed with its round
                db.execute("INSERT INTO meta(key, value) VALUES('engine_state', ?) ON CONFLICT(key) "
                           "DO UPDATE SET value=excluded.value", (_dumps(engine_state),))
            weights = self.glue.weights()
            for tenant, balance in self.glue.balances().items():
                db.execute("INSERT INTO tenants(tenant, balance, weight, usage) VALUES(?,?,?,?) ON CONFLICT(tenant) "
                           "DO UPDATE SET balance=excluded.balance, weight=excluded.weight, usage=tenants.usage+excluded.usage",
                           (tenant, balance, weights.get(tenant, 1.0), usage.get(tenant, 0.0)))
            queue = db.execute("SELECT COUNT(*) FROM tasks WHERE state='waiting'").fetchone()[0]
            doc = {
                "round": n, "time": now, "at": at, "trigger": trigger, "status": c.status,
                "mechanism": result.mechanism, "method": c.method,
                "welfare": c.welfare, "bound": None if alloc is None else alloc.bound,
                "gap": None if alloc is None else alloc.gap, "exact": None if out is None else bool(out.exact),
                "candidates": c.candidates, "bids": c.bids,
                "seconds": {"build": c.build_seconds, "clear": c.seconds, "total": time.perf_counter() - t0},
                "assignments": assignments,
                "preempted": [{"task": t, "tenant": tasks[t].tenant} for t in c.preempted],
                "finished": [{"task": t, "tenant": tasks[t].tenant} for t in finished],
                "payments": payments, "revenue": float(sum(p["charge"] for p in payments)),
                "prices": dict(result.prices),
                "credits": credits, "queue": int(queue), "plan": result.plan,
            }
            if out is not None and "truthful_in_expectation" in out.details:  # lavi-swamy: the lottery's scaling
                doc["lottery"] = {k: out.details[k] for k in ("alpha", "alpha_requested", "alpha_verified",
                                                              "truthful_in_expectation", "expected_welfare")}
            doc = json_safe(doc)
            summary = {k: doc[k] for k in ("round", "time", "at", "trigger", "status", "mechanism", "method", "welfare",
                                           "gap", "candidates", "bids", "revenue", "queue", "seconds", "assignments")}
            db.execute("INSERT INTO rounds(n, now, at, summary, detail) VALUES(?,?,?,?,?)",
                       (n, now, at, _dumps(summary), _dumps(doc)))
            changes: dict[str, float] = {}
            for e in result.ledger:
                changes[e.tenant] = changes.get(e.tenant, 0.0) + e.amount
            audit(db, actor=trigger, action="round.clear", subject=str(n),
                  detail={"time": now, "assignments": len(assignments), "revenue": doc["revenue"],
                          "credit_changes": len(result.ledger), "tenants_changed": len(changes),
                          "replica": self.replica,
                          "net_credits": float(sum(changes.values()))})
        return doc

    def _observe_round(self, doc: Mapping[str, Any], result: RoundResult) -> None:
        m = self.metrics
        m.rounds_total.inc()
        m.round_clear_seconds.observe(doc["seconds"]["total"])
        m.round_welfare.set(doc["welfare"])
        m.round_gap.set(float("nan") if doc["gap"] is None else doc["gap"])
        m.round_bids.set(doc["bids"])
        m.round_tasks.set(doc["candidates"])
        m.round_revenue.set(doc["revenue"])
        for p in doc["payments"]:
            m.payments_total.labels(p["tenant"]).inc(p["charge"])
            m.revenue_total.inc(p["charge"])
        for tenant, balance in self.glue.balances().items():
            m.balance.labels(tenant).set(balance)
            m.payments_total.labels(tenant)  # present (at 0) for every tenant with an account
        self._refresh_task_metrics()
        self._refresh_memory_metrics()

    def ready(self) -> bool:
        """Whether the database answers (a read on the writer connection)."""
        try:
            return self.store.one("SELECT value FROM meta WHERE key = 'schema_version'") is not None
        except Exception:  # noqa: BLE001 - any failure means not ready
            return False

    def task_counts(self) -> dict[str, int]:
        """Tasks per state, as counted at most :data:`COUNTS_MAX_AGE` seconds ago.

        The count reads every task, so ``/healthz`` does not run it per probe: one caller counts
        when the last count is older than that (the others wait for it, or take the last one),
        and every other probe in between is O(1)."""
        last = self._counts
        if last is not None and self.monotonic() - last[0] < COUNTS_MAX_AGE:
            return last[1]
        with self._counts_lock:
            last = self._counts
            if last is not None and self.monotonic() - last[0] < COUNTS_MAX_AGE:
                return last[1]
            counts = {s: 0 for s in TASK_STATES}
            for r in self.store.query("SELECT state, COUNT(*) AS c FROM tasks GROUP BY state"):
                counts[r["state"]] = int(r["c"])
            self._counts = (self.monotonic(), counts)
            return counts

    def status(self) -> dict[str, Any]:
        """The ``/healthz`` document: configuration from memory and :meth:`task_counts`."""
        return {"status": "ok", "replica": self.replica, "rounds": self.next_round - 1, "clock": self.clock,
                "tasks": dict(self.task_counts()),
                "gpus": [{"id": g.id, "memory": g.memory, "compute": g.compute, "node": g.node, "model": g.model}
                         for g in self.glue.gpus],
                "lease": self.lease, "step_seconds": self.settings.step_seconds,
                "engine": self.config.engine,
                "mechanism": "credit" if self.glue.engine is not None else self.config.mechanism,
                "method": (method := self.config.method if self.glue.engine is None else self.glue.engine.method),
                "solver": method,  # deprecated: the same as method, removed in the next release
                "round_seconds": self.settings.round_seconds}
