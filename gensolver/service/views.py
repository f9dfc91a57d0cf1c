"""The service's read-only views: tasks, rounds, the audit log and tenant accounts, as each caller may see them.

:class:`ReadViews` is a part of :class:`gensolver.service.state.MarketService` (its base class):
every method reads the store and returns plain documents; none changes state. A tenant sees its
own entries of a round (assignments, payments, credits, its part of the plan); an operator sees
everything. Pages are cursor-based: ``after`` is the last key of the previous page.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring as _js  # type: ignore[attr-defined]
from typing import Any

from .auth import Principal
from .errors import Conflict, NotFound

__all__ = ["ReadViews", "TASK_STATES", "task_key"]

#: the states of a task in the service, in the order the views count them
TASK_STATES = ("waiting", "running", "done", "cancelled")


def task_key(tenant: str, name: str) -> str:
    """The id of tenant ``tenant``'s task ``name`` in the market, rounds and plans."""
    return f"{tenant}/{name}"


#: the columns of a task's view (:meth:`ReadViews._view`) and its cursor
_VIEW_COLUMNS = "id, name, tenant, state, submitted, remaining, placement, memory, started_round, finished_round, task, seq"


def _jn(x: Any) -> str:
    """A stored number (or NULL) as JSON text."""
    if x is None:
        return "null"
    if not math.isfinite(x):
        raise ValueError(f"a stored number is not finite: {x!r}")
    return repr(x)


class ReadViews:
    """Read-only views over the store, mixed into :class:`~gensolver.service.state.MarketService`."""

    # set by MarketService.__init__
    store: Any
    config: Any
    next_round: int
    _reported: dict[str, tuple[str, float]]

    @staticmethod
    def _filter_round(doc: dict[str, Any], principal: Principal) -> dict[str, Any]:
        """A round as ``principal`` may see it: an operator sees all; a tenant its own entries."""
        if principal.admin:
            return doc
        mine = principal.tenant
        out = dict(doc)
        for key in ("assignments", "preempted", "finished", "payments", "credits"):
            if key in out:
                out[key] = [e for e in out[key] if e.get("tenant") == mine]
        if out.get("plan") is not None:
            own = {a["task"] for a in out["assignments"]}
            plan = dict(out["plan"])
            plan["tasks"] = [t for t in plan["tasks"] if t["id"] in own]
            plan["devices"] = [{**d, "entries": [e for e in d["entries"] if e["task"] in own]} for d in plan["devices"]]
            plan["preemptions"] = [p for p in plan["preemptions"] if p["task"] in own]
            out["plan"] = plan
        return out

    def get_round(self, principal: Principal, n: int) -> dict[str, Any]:
        row = self.store.one("SELECT detail FROM rounds WHERE n = ?", (n,))
        if row is None:
            raise NotFound(f"no round {n} (rounds cleared so far: {self.next_round - 1})", field="path.n")
        return self._filter_round(json.loads(row["detail"]), principal)

    def list_rounds(self, principal: Principal, *, limit: int, after: int | None = None
                    ) -> tuple[list[dict[str, Any]], str | None]:
        """Rounds ``n > after`` in order (without ``after``: the latest ``limit``); and the next cursor."""
        if after is None:
            rows = list(reversed(self.store.query("SELECT n, summary FROM rounds ORDER BY n DESC LIMIT ?", (limit,))))
            nxt = None
        else:
            rows = self.store.query("SELECT n, summary FROM rounds WHERE n > ? ORDER BY n LIMIT ?", (after, limit + 1))
            nxt = str(rows[limit - 1]["n"]) if len(rows) > limit else None
            rows = rows[:limit]
        return [self._filter_round(json.loads(r["summary"]), principal) for r in rows], nxt

    def audit_page(self, *, limit: int, after: int) -> dict[str, Any]:
        """Audit entries with ``seq > after``, oldest first, at most ``limit``."""
        rows = self.store.query("SELECT seq, at, actor, action, subject, detail FROM audit WHERE seq > ? "
                                "ORDER BY seq LIMIT ?", (after, limit + 1))
        more = len(rows) > limit
        entries = [{**dict(r), "detail": json.loads(r["detail"])} for r in rows[:limit]]
        return {"entries": entries, "next": entries[-1]["seq"] if more else None}

    def _tenant_names(self, after: str, limit: int) -> list[str]:
        """Tenant names ``> after`` in order, at most ``limit`` (each table's index is walked)."""
        names: set[str] = set()
        for table in ("tenants", "tokens", "tasks"):
            rows = self.store.query(f"SELECT DISTINCT tenant FROM {table} WHERE tenant > ? ORDER BY tenant LIMIT ?",
                                    (after, limit))
            names.update(r["tenant"] for r in rows)
        return sorted(names)[:limit]

    def _accounts(self, names: list[str], *, ledger: int) -> list[dict[str, Any]]:
        """The account views of ``names``, with a few grouped queries for the whole page."""
        if not names:
            return []
        marks = ",".join("?" * len(names))
        accts = {r["tenant"]: r for r in self.store.query(
            f"SELECT tenant, balance, weight, usage FROM tenants WHERE tenant IN ({marks})", names)}
        counts: dict[str, dict[str, int]] = {t: {s: 0 for s in TASK_STATES} for t in names}
        for r in self.store.query(f"SELECT tenant, state, COUNT(*) AS c FROM tasks WHERE tenant IN ({marks}) "
                                  "GROUP BY tenant, state", names):
            counts[r["tenant"]][r["state"]] = int(r["c"])
        spent = {r["tenant"]: float(r["s"]) for r in self.store.query(
            f"SELECT tenant, SUM(charge) AS s FROM payments WHERE tenant IN ({marks}) GROUP BY tenant", names)}
        mem: dict[str, float] = {}
        for t, b in self._reported.values():
            mem[t] = mem.get(t, 0.0) + b
        out = []
        for t in names:
            acct = accts.get(t)
            entries = [] if ledger <= 0 else self.store.query(
                "SELECT round, time, amount, reason, task FROM credits WHERE tenant = ? ORDER BY seq DESC LIMIT ?",
                (t, ledger))
            out.append({
                "tenant": t, "opened": acct is not None,
                "balance": float(acct["balance"]) if acct is not None else float(self.config.budget),
                "weight": float(acct["weight"]) if acct is not None else 1.0,
                "spent": spent.get(t, 0.0), "tasks": counts[t],
                "usage": {"memory_gib_steps": float(acct["usage"]) if acct is not None else 0.0,
                          "executor_memory_bytes": float(mem.get(t, 0.0))},
                "credits": [dict(r) for r in entries],
            })
        return out

    def tenant_view(self, principal: Principal, tenant: str, *, ledger: int = 50) -> dict[str, Any]:
        principal.require(tenant, f"tenant {tenant!r}'s account", field="path.tenant")
        if not any(self.store.one(f"SELECT 1 FROM {t} WHERE tenant = ? LIMIT 1", (tenant,)) is not None
                   for t in ("tenants", "tokens", "tasks")):
            raise NotFound(f"no tenant {tenant!r}", field="path.tenant")
        return self._accounts([tenant], ledger=ledger)[0]

    def tenants(self, principal: Principal, *, limit: int = 100, after: str = "") -> tuple[list[dict[str, Any]], str | None]:
        """One page of every tenant's account (operator), in name order after ``after``."""
        principal.require_admin("listing every tenant")
        names = self._tenant_names(after, limit + 1)
        nxt = names[limit - 1] if len(names) > limit else None
        return self._accounts(names[:limit], ledger=0), nxt

    @staticmethod
    def _view(row: Any) -> dict[str, Any]:
        """A task's API view from its row (an ``sqlite3.Row`` or a mapping with the same keys)."""
        task = json.loads(row["task"])
        return {
            "id": row["name"], "key": row["id"], "tenant": row["tenant"], "state": row["state"],
            "submitted": row["submitted"],
            "remaining": row["remaining"], "gpus": None if row["placement"] is None else json.loads(row["placement"]),
            "memory": row["memory"], "started_round": row["started_round"], "finished_round": row["finished_round"],
            "task": task,
        }

    def _row(self, principal: Principal, task_id: str, tenant: str | None = None, *, field: str = "path.task_id"):
        """The row of the caller's task named ``task_id`` (an operator: any tenant's, ``tenant``
        naming it when two tenants use the name). Another tenant's task is simply not found."""
        if tenant is not None and not principal.admin and tenant != principal.tenant:
            principal.require(tenant, f"tenant {tenant!r}'s tasks", field="query.tenant")
        owner = tenant if tenant is not None else (None if principal.admin else principal.tenant)
        if owner is not None:
            row = self.store.one("SELECT * FROM tasks WHERE id = ?", (task_key(owner, task_id),))
        else:
            rows = self.store.query("SELECT * FROM tasks WHERE name = ? AND id = tenant || '/' || name LIMIT 2",
                                    (task_id,))
            if len(rows) > 1:
                raise Conflict(f"several tenants have a task named {task_id!r}; add ?tenant=NAME", field="query.tenant")
            row = rows[0] if rows else None
        if row is None:
            raise NotFound(f"no task {task_id!r}" + (f" of tenant {owner!r}" if owner else ""), field=field)
        return row

    def get_task(self, principal: Principal, task_id: str, tenant: str | None = None) -> dict[str, Any]:
        return self._view(self._row(principal, task_id, tenant))

    @staticmethod
    def _view_json(row: Any) -> str:
        """:meth:`_view` as JSON text: the stored task and placement spliced in as stored (valid
        JSON, written by :func:`_dumps` and :func:`json.dumps`), not parsed and encoded again;
        strings through the JSON string encoder, numbers by ``repr`` (finite, checked)."""
        return (f'{{"id":{_js(row["name"])},"key":{_js(row["id"])},"tenant":{_js(row["tenant"])},'
                f'"state":{_js(row["state"])},"submitted":{_jn(row["submitted"])},"remaining":{_jn(row["remaining"])},'
                f'"memory":{_jn(row["memory"])},"started_round":{_jn(row["started_round"])},'
                f'"finished_round":{_jn(row["finished_round"])},"gpus":{row["placement"] or "null"},"task":{row["task"]}}}')

    def list_tasks(self, principal: Principal, *, state: str | None, tenant: str | None, limit: int,
                   after: int = 0) -> tuple[list[dict[str, Any]], str | None]:
        """Tasks in submission order with ``seq > after``, at most ``limit``; and the next cursor."""
        rows, nxt = self._task_rows(principal, state=state, tenant=tenant, limit=limit, after=after)
        return [self._view(r) for r in rows], nxt

    def list_tasks_json(self, principal: Principal, *, state: str | None, tenant: str | None, limit: int,
                        after: int = 0) -> bytes:
        """:meth:`list_tasks` as the JSON body of ``GET /v1/tasks`` (``{"tasks": [...], "next": ...}``),
        built without parsing the stored tasks: the operator views' hot path."""
        rows, nxt = self._task_rows(principal, state=state, tenant=tenant, limit=limit, after=after)
        return ('{"tasks":[' + ",".join(self._view_json(r) for r in rows) + '],"next":' + json.dumps(nxt)
                + "}").encode()

    def _task_rows(self, principal: Principal, *, state: str | None, tenant: str | None, limit: int,
                   after: int) -> tuple[list[Any], str | None]:
        where: list[str] = ["seq > ?"]
        params: list[Any] = [after]
        if not principal.admin:
            if tenant is not None and tenant != principal.tenant:
                principal.require(tenant, f"tenant {tenant!r}'s tasks", field="query.tenant")
            tenant = principal.tenant
        if tenant is not None:
            where.append("tenant = ?")
            params.append(tenant)
        if state is not None:
            where.append("state = ?")
            params.append(state)
        sql = f"SELECT {_VIEW_COLUMNS} FROM tasks WHERE " + " AND ".join(where) + " ORDER BY seq LIMIT ?"
        rows = self.store.query(sql, params + [limit + 1])
        nxt = str(rows[limit - 1]["seq"]) if len(rows) > limit else None
        return rows[:limit], nxt
