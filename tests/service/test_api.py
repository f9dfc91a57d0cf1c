"""The HTTP API in process: solve, tasks, access, problem+json for bad requests."""

from __future__ import annotations

import json
import subprocess

import pytest

from gensolver.model import from_dict
from gensolver.verify import check_allocation

from .conftest import GENSOLVER, gentask

INSTANCE = {
    "schema": "gensolver.instance/v1", "name": "two-bids",
    "slots": [{"id": "g0t0", "capacity": {"memory": 80, "compute": 1.0}}],
    "bids": [{"id": "a", "bidder": "A", "value": 10, "demand": {"g0t0": {"memory": 60, "compute": 0.5}}},
             {"id": "b", "bidder": "B", "value": 6, "demand": {"g0t0": {"memory": 40, "compute": 0.5}}}],
}


def is_problem(r, status: int, field: str | None = None) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == status and body["type"].startswith("urn:gensolver:problem:") and body["detail"]
    if field is not None:
        assert body.get("field") == field, body
    return body


def test_solve_answers_what_the_cli_prints(api, tmp_path):
    path = tmp_path / "round.json"
    path.write_text(json.dumps(INSTANCE))
    cli = json.loads(subprocess.run(GENSOLVER + ["solve", str(path), "--json", "--method", "greedy", "--mechanism", "vcg"],
                                    capture_output=True, text=True, timeout=120, check=True).stdout)
    r = api.client.post("/v1/solve?method=greedy&mechanism=vcg", json=INSTANCE, headers=api.h("alice"))
    assert r.status_code == 200, r.text
    got = r.json()
    assert set(got) == set(cli) | {"limits"}  # the service also says which budget ran
    assert got["schema"] == cli["schema"] == "gensolver.result/v1"
    for key in ("status", "welfare", "winners", "method", "mechanism", "payments", "revenue", "exact", "payment_bounds"):
        assert got[key] == cli[key], key
    # an independent certificate: the winners are feasible and A (10 > 6) wins, paying B's value under VCG
    assert check_allocation(from_dict(INSTANCE), got["winners"]).feasible
    assert got["winners"] == ["a"] and got["payments"]["A"] == pytest.approx(6.0)
    lo, hi = got["payment_bounds"]["A"]
    assert lo <= got["payments"]["A"] <= hi


def test_solve_refuses_bad_input_naming_the_field(api):
    h = api.h("alice")
    bad = json.loads(json.dumps(INSTANCE))
    bad["bids"][1]["demand"]["g0t0"]["memory"] = -1
    is_problem(api.client.post("/v1/solve", json=bad, headers=h), 422, "/bids/1/demand/g0t0/memory")
    is_problem(api.client.post("/v1/solve?method=nope", json=INSTANCE, headers=h), 422, "query.method")
    is_problem(api.client.post("/v1/solve?mechanism=nope", json=INSTANCE, headers=h), 422, "query.mechanism")
    is_problem(api.client.post("/v1/solve?time_limit=-1", json=INSTANCE, headers=h), 422, "query.time_limit")
    is_problem(api.client.post("/v1/solve?time_limit=1e9", json=INSTANCE, headers=h), 422, "query.time_limit")
    is_problem(api.client.post("/v1/solve", content=b"{not json", headers={**h, "content-type": "application/json"}), 422, "")
    is_problem(api.client.post("/v1/solve", json=[1, 2], headers=h), 422, "")
    is_problem(api.client.post("/v1/solve", content=b"[" * 100000, headers={**h, "content-type": "application/json"}), 422)
    is_problem(api.client.post("/v1/solve", content=b"[" * 100000, headers=h), 415, "header.content-type")


def test_tokens_are_required_and_checked(api):
    is_problem(api.client.get("/v1/tasks"), 401, "header.authorization")
    is_problem(api.client.get("/v1/tasks", headers={"Authorization": "Basic abc"}), 401)
    wrong = api.tokens["alice"][:-3] + "xyz"
    is_problem(api.client.get("/v1/tasks", headers={"Authorization": f"Bearer {wrong}"}), 401)
    assert api.client.get("/v1/me", headers=api.h("alice")).json() == {"tenant": "alice", "admin": False,
                                                                       "role": "tenant", "expires": None}
    # the database holds no secret: the token text appears nowhere in it
    rows = api.service.store.query("SELECT * FROM tokens")
    assert len(rows) == 3
    secret = api.tokens["alice"].split("_", 2)[2]  # gs_<id>_<secret>; the secret itself may hold "_"
    assert all(secret.encode() not in bytes(r["digest"]) and secret not in str(tuple(r)) for r in rows)


def test_submit_is_all_or_nothing_and_retries_are_safe(api):
    h = api.h("alice")
    r = api.client.post("/v1/tasks", json=gentask("t1"), headers=h)
    assert r.status_code == 201, r.text
    assert r.json()["tasks"][0]["tenant"] == "alice" and r.json()["tasks"][0]["state"] == "waiting"
    again = api.client.post("/v1/tasks", json=gentask("t1"), headers=h)
    assert again.status_code == 200 and again.json() == r.json()
    is_problem(api.client.post("/v1/tasks", json=gentask("t1", preferred="30Gi"), headers=h), 409, "metadata.name")
    # a batch with one bad task stores nothing
    batch = [gentask("t2"), gentask("t3", preferred="30Gx")]
    is_problem(api.client.post("/v1/tasks", json=batch, headers=h), 422, "spec.genResources.gpuMemory.preferred")
    assert [t["id"] for t in api.client.get("/v1/tasks", headers=h).json()["tasks"]] == ["t1"]
    yaml_text = ("apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nmetadata: {name: y1}\n"
                 "spec: {genResources: {gpuMemory: {preferred: 10Gi}}}\n---\n"
                 "apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nmetadata: {name: y2}\n"
                 "spec: {genResources: {gpuMemory: {preferred: 12Gi}}}\n")
    r = api.client.post("/v1/tasks", content=yaml_text, headers={**h, "content-type": "application/yaml"})
    assert r.status_code == 201 and [t["id"] for t in r.json()["tasks"]] == ["y1", "y2"]


@pytest.mark.parametrize("body, ctype, status, field", [
    (b"{", "application/json", 422, ""),
    (b"\xff\xfe", "application/json", 422, ""),
    (b"[]", "application/json", 422, ""),
    (b"42", "application/json", 422, ""),
    (json.dumps({"apiVersion": "x"}).encode(), "application/json", 422, "apiVersion"),
    (json.dumps(gentask("n", duration="soon")).encode(), "application/json", 422, "spec.genResources.computeTime.duration"),
    (b"a: [", "application/yaml", 422, ""),
    (b"hello", "text/csv", 415, "header.content-type"),
    (json.dumps([gentask("d"), gentask("d")]).encode(), "application/json", 422, "metadata.name"),
    (json.dumps(gentask("huge", preferred="500Gi")).encode(), "application/json", 422,
     "spec.genResources.gpuMemory.preferred"),
    (json.dumps(gentask("gang", gpus=16)).encode(), "application/json", 422,
     "spec.containers[0].resources.limits.nvidia.com/gpu"),
])
def test_malformed_tasks_are_4xx_problems(api, body, ctype, status, field):
    is_problem(api.client.post("/v1/tasks", content=body, headers={**api.h("alice"), "content-type": ctype}), status, field)


def test_tenants_see_only_their_own(api):
    api.client.post("/v1/tasks", json=gentask("a1"), headers=api.h("alice"))
    api.client.post("/v1/tasks", json=gentask("b1"), headers=api.h("bob"))
    # another tenant's task is simply not found (names are per tenant: nothing tells whether it exists)
    assert is_problem(api.client.get("/v1/tasks/a1", headers=api.h("bob")), 404, "path.task_id") == \
        is_problem(api.client.get("/v1/tasks/zz", headers=api.h("bob")), 404, "path.task_id") | {
            "detail": "no task 'a1' of tenant 'bob'", "instance": "/v1/tasks/a1"}
    is_problem(api.client.delete("/v1/tasks/a1", headers=api.h("bob")), 404, "path.task_id")
    is_problem(api.client.get("/v1/tasks?tenant=alice", headers=api.h("bob")), 403, "query.tenant")
    is_problem(api.client.get("/v1/tenants/alice", headers=api.h("bob")), 403, "path.tenant")
    is_problem(api.client.get("/v1/tenants", headers=api.h("bob")), 403)
    is_problem(api.client.post("/v1/rounds", headers=api.h("bob")), 403)
    # labelling a GenTask with another tenant is refused for a tenant token
    is_problem(api.client.post("/v1/tasks", json=gentask("x", tenant="alice"), headers=api.h("bob")), 403,
               "metadata.labels.tenant")
    assert [t["id"] for t in api.client.get("/v1/tasks", headers=api.h("bob")).json()["tasks"]] == ["b1"]
    assert {t["id"] for t in api.client.get("/v1/tasks", headers=api.h("ops")).json()["tasks"]} == {"a1", "b1"}
    r = api.client.post("/v1/rounds", headers=api.h("ops"))
    assert r.status_code == 201, r.text
    n = r.json()["round"]
    seen_by_bob = api.client.get(f"/v1/rounds/{n}", headers=api.h("bob")).json()
    assert {p["tenant"] for p in seen_by_bob["payments"]} <= {"bob"}
    assert {c["tenant"] for c in seen_by_bob["credits"]} <= {"bob"}
    assert {a["tenant"] for a in seen_by_bob["assignments"]} <= {"bob"}
    plan_tasks = {e["task"] for d in seen_by_bob["plan"]["devices"] for e in d["entries"]}
    assert plan_tasks <= {"bob/b1"}
    full = api.client.get(f"/v1/rounds/{n}", headers=api.h("ops")).json()
    assert {a["tenant"] for a in full["assignments"]} == {"alice", "bob"}
    # the operator may cancel anyone's task; the owner sees it cancelled
    assert api.client.delete("/v1/tasks/a1", headers=api.h("ops")).json()["state"] == "cancelled"
    assert api.client.get("/v1/tasks/a1", headers=api.h("alice")).json()["state"] == "cancelled"


def test_unknown_things_are_404_problems(api):
    is_problem(api.client.get("/v1/tasks/none", headers=api.h("alice")), 404, "path.task_id")
    is_problem(api.client.get("/v1/rounds/7", headers=api.h("alice")), 404, "path.n")
    is_problem(api.client.get("/v1/rounds/0", headers=api.h("alice")), 422, "path.n")
    is_problem(api.client.get("/v1/nowhere"), 404)
    is_problem(api.client.put("/v1/tasks", headers=api.h("alice")), 405)
    is_problem(api.client.get("/v1/tenants/carol", headers=api.h("ops")), 404, "path.tenant")


def test_body_size_and_rate_are_bounded(tmp_path):
    from .conftest import make_api

    gen = make_api(tmp_path, max_body_bytes=2000, rate_limit=5.0, rate_burst=5)
    api = next(gen)
    try:
        big = {"pad": "x" * 5000, **gentask("big")}
        is_problem(api.client.post("/v1/tasks", json=big, headers=api.h("alice")), 413, "header.content-length")
        statuses = [api.client.get("/v1/me", headers=api.h("bob")).status_code for _ in range(12)]
        assert statuses[:4] == [200] * 4 and 429 in statuses
        r = api.client.get("/v1/me", headers=api.h("bob"))
        body = is_problem(r, 429)
        assert int(r.headers["retry-after"]) >= 1 and "requests/s" in body["detail"]
        # another token has its own bucket
        assert api.client.get("/v1/me", headers=api.h("alice")).status_code == 200
    finally:
        gen.close()


def test_schemas_are_served(api):
    for kind, name in (("instance", "gensolver.instance/v1"), ("gpuround", "gensolver.gpuround/v1"),
                       ("plan", "gensolver.plan/v1")):
        r = api.client.get(f"/v1/schemas/{kind}")
        assert r.status_code == 200 and r.json()["title"] == name
    is_problem(api.client.get("/v1/schemas/other"), 422, "path.kind")
    doc = api.client.get("/openapi.json").json()
    comps = doc["components"]["schemas"]
    assert {"GensolverInstanceV1", "GensolverGpuroundV1", "GensolverPlanV1", "GenTask"} <= set(comps)
    body = doc["paths"]["/v1/solve"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/GensolverInstanceV1"}


@pytest.mark.parametrize("name", ["a/b", "..", "a\x00b", "a\nb", "<b>x</b>", "Upper", "-lead", "trail-", "a" * 254, ""])
def test_task_names_are_dns_1123(api, name):
    is_problem(api.client.post("/v1/tasks", json=gentask(name), headers=api.h("alice")), 422, "metadata.name")


def test_names_are_per_tenant_and_freed_on_cancel(api):
    a, b, ops = api.h("alice"), api.h("bob"), api.h("ops")
    assert api.client.post("/v1/tasks", json=gentask("same", value=5.0), headers=a).status_code == 201
    # bob may use the name alice uses; each sees their own
    assert api.client.post("/v1/tasks", json=gentask("same", value=7.0), headers=b).status_code == 201
    assert api.client.get("/v1/tasks/same", headers=a).json()["task"]["value"] == 5.0
    assert api.client.get("/v1/tasks/same", headers=b).json()["task"]["value"] == 7.0
    # the operator names the tenant when the name is ambiguous
    is_problem(api.client.get("/v1/tasks/same", headers=ops), 409, "query.tenant")
    assert api.client.get("/v1/tasks/same?tenant=bob", headers=ops).json()["key"] == "bob/same"
    # a used name with other content is a conflict until the task is cancelled, then free
    is_problem(api.client.post("/v1/tasks", json=gentask("same", value=9.0), headers=a), 409, "metadata.name")
    assert api.client.delete("/v1/tasks/same", headers=a).json()["state"] == "cancelled"
    r = api.client.post("/v1/tasks", json=gentask("same", value=9.0), headers=a)
    assert r.status_code == 201 and r.json()["tasks"][0]["state"] == "waiting"
    assert api.client.get("/v1/tasks/same", headers=a).json()["task"]["value"] == 9.0
    # both of alice's incarnations are listed; the round bids the live one only
    mine = api.client.get("/v1/tasks", headers=a).json()["tasks"]
    assert sorted((t["id"], t["state"]) for t in mine) == [("same", "cancelled"), ("same", "waiting")]
    rnd = api.client.post("/v1/rounds", headers=ops).json()
    assert sorted(x["task"] for x in rnd["assignments"]) == ["alice/same", "bob/same"]


def test_every_body_is_read_strictly(api):
    """The audit's reproducers: unknown fields, duplicate keys, values beyond 2**53, wrong types."""
    a = {**api.h("alice"), "content-type": "application/json"}
    doc = gentask("strict")
    doc["spec"]["genResources"]["gpus"] = 4  # misplaced: dropped silently before
    is_problem(api.client.post("/v1/tasks", json=doc, headers=api.h("alice")), 422, "spec.genResources.gpus")
    doc = gentask("strict")
    doc["gpus"] = 4
    is_problem(api.client.post("/v1/tasks", json=doc, headers=api.h("alice")), 422, "gpus")
    doc = gentask("strict")
    doc["spec"]["containers"] = [{"name": "c", "resources": {"limit": {"nvidia.com/gpu": 2}}}]
    is_problem(api.client.post("/v1/tasks", json=doc, headers=api.h("alice")), 422, "spec.containers[0].resources.limit")
    is_problem(api.client.post("/v1/tasks", json=[gentask("ok1"), {**gentask("ok2"), "extra": 1}],
                               headers=api.h("alice")), 422, "[1].extra")
    # duplicate keys, even for the tenant label
    raw = json.dumps(gentask("dup", tenant="alice"))
    raw = raw.replace('"tenant": "alice"', '"tenant": "alice", "tenant": "bob"')
    is_problem(api.client.post("/v1/tasks", content=raw, headers=a), 422, "metadata.labels.tenant")
    is_problem(api.client.post("/v1/feedback", content=b'{"task": "x", "task": "y", "progress": 0.5}', headers=a),
               422, "/task")
    is_problem(api.client.post("/v1/solve", content=json.dumps(INSTANCE).replace('"name"', '"name": "x", "name"'),
                               headers=a), 422, "/name")
    # values beyond what doubles hold exactly, and non-finite ones
    big = json.loads(json.dumps(INSTANCE))
    big["bids"][0]["value"] = 1e17
    is_problem(api.client.post("/v1/solve", json=big, headers=api.h("alice")), 422, "/bids/0/value")
    is_problem(api.client.post("/v1/tasks", json=gentask("v", value=1e308), headers=api.h("alice")), 422,
               "spec.genResources.value")
    is_problem(api.client.post("/v1/feedback", content=b'{"task": "x", "progress": NaN}', headers=a), 422, "")
    yaml_big = ("apiVersion: scheduling.gen.io/v1alpha1\nkind: GenTask\nmetadata: {name: y}\n"
                "spec: {genResources: {gpuMemory: {preferred: 10Gi}, value: 1.0e+300}}\n")
    is_problem(api.client.post("/v1/tasks", content=yaml_big, headers={**api.h("alice"), "content-type": "application/yaml"}),
               422, "spec.genResources.value")
    # a body in a type the route does not read is 415, not 422
    is_problem(api.client.post("/v1/feedback", content=b"task=x", headers={**api.h("alice"),
               "content-type": "application/x-www-form-urlencoded"}), 415, "header.content-type")
    # unknown fields of the feedback report are refused by name
    is_problem(api.client.post("/v1/feedback", json={"task": "x", "progress": 0.5, "memory": 1}, headers=api.h("alice")),
               422, "/memory")
    # nothing of the above was stored
    assert api.client.get("/v1/tasks", headers=api.h("alice")).json()["tasks"] == []


def test_the_strict_reader_can_fail_and_pass():
    from gensolver.service.errors import BadRequest
    from gensolver.service.strict import MAX_NUMBER, check_gentask_fields, loads_strict

    assert loads_strict(b'{"a": [1, 2.5, {"b": 9007199254740992}]}') == {"a": [1, 2.5, {"b": 2 ** 53}]}
    assert abs(loads_strict(b"-9007199254740992")) == MAX_NUMBER
    for raw, field in ((b'{"a": {"b": 1, "b": 2}}', "/a/b"), (b"[0, 9007199254740993]", "/1"),
                       (b'{"x": Infinity}', ""), (b'{"x/y": [1e300]}', "/x~1y/0")):
        with pytest.raises(BadRequest) as err:
            loads_strict(raw)
        assert err.value.field == field, raw
    check_gentask_fields(gentask("fine", gpus=2, tenant="t"))
    with pytest.raises(BadRequest) as err:
        check_gentask_fields({"metadata": {"nmae": "x"}})
    assert err.value.field == "metadata.nmae"


def test_every_list_pages_by_cursor(api):
    a, ops = api.h("alice"), api.h("ops")
    names = [f"p{k}" for k in range(7)]
    for n in names:
        api.client.post("/v1/tasks", json=gentask(n), headers=a)
    for _ in range(5):
        api.client.post("/v1/rounds", headers=ops)

    def walk(url: str, key: str, field: str) -> list:
        got, after, pages = [], None, 0
        while True:
            page = api.client.get(url + ("" if after is None else f"&after={after}"), headers=ops).json()
            got += [x[field] for x in page[key]]
            pages += 1
            after = page["next"]
            if after is None:
                return got if pages > 1 else pytest.fail("one page only")

    assert walk("/v1/tasks?limit=3", "tasks", "id") == names
    assert walk("/v1/rounds?limit=2&after=0", "rounds", "round") == [1, 2, 3, 4, 5]
    assert api.client.get("/v1/rounds?limit=2", headers=ops).json()["rounds"][-1]["round"] == 5  # the latest
    with api.service.store.write() as db:  # tenants known only from their accounts, as after rounds
        db.executemany("INSERT INTO tenants(tenant, balance, weight) VALUES(?, 1.0, 1.0)", [(f"z{k}",) for k in range(5)])
    assert walk("/v1/tenants?limit=2", "tenants", "tenant") == sorted(["ops", "alice", "bob"] + [f"z{k}" for k in range(5)])
    is_problem(api.client.get("/v1/tasks?after=-1", headers=a), 422, "query.after")


def test_readiness_and_no_cdn_docs(api):
    assert api.client.get("/readyz").json() == {"status": "ready"}
    api.service.store.close()
    api.service.store.path = "/nonexistent-dir/\x00bad"  # the database can no longer be opened
    assert api.client.get("/readyz").status_code == 503
    live = api.client.get("/livez")      # liveness does not touch the database
    assert live.status_code == 200 and live.json() == {"status": "ok", "replica": api.service.replica}
    for path in ("/docs", "/redoc"):
        assert api.client.get(path).status_code == 404
    assert api.client.get("/openapi.json").status_code == 200


@pytest.mark.parametrize("backend", ["api", "pg_api"])
def test_the_task_list_is_each_tasks_own_view(request, backend):
    """``GET /v1/tasks`` is built without parsing the stored tasks; every entry must equal the
    task's own view (``GET /v1/tasks/{id}``, validated by its response model) and the page the
    ``TaskList`` schema."""
    from gensolver.service.schemas import TaskList

    api = request.getfixturevalue(backend)
    for k in range(6):
        tenant = ("alice", "bob")[k % 2]
        r = api.client.post("/v1/tasks", json=gentask(f"t{k}", preferred=f"{10 + 10 * k}Gi", duration=f"{5 + k}m",
                                                       value=1.5 + k, gpus=1 + k % 2), headers=api.h(tenant))
        assert r.status_code == 201, r.text
    assert api.client.post("/v1/rounds", headers=api.h("ops")).status_code == 201  # placements, memory, rounds
    assert api.client.delete("/v1/tasks/t5", headers=api.h("bob")).status_code == 200
    assert api.client.post("/v1/tasks", json=gentask("t6", value=2.0), headers=api.h("alice")).status_code == 201
    states, pages, after = set(), [], None
    while True:  # pages of two, through the cursor
        r = api.client.get("/v1/tasks", params={"limit": 2, **({"after": after} if after else {})}, headers=api.h("ops"))
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        page = TaskList.model_validate_json(r.content)
        pages.append(r.json())
        after = page.next
        if after is None:
            break
    listed = [t for p in pages for t in p["tasks"]]
    assert [t["id"] for t in listed] == [f"t{k}" for k in range(7)]
    for t in listed:
        states.add(t["state"])
        own = api.client.get(f"/v1/tasks/{t['id']}", params={"tenant": t["tenant"]}, headers=api.h("ops")).json()
        assert t == own
    assert {"running", "cancelled", "waiting"} <= states and any(t["gpus"] for t in listed)
    mine = api.client.get("/v1/tasks?state=waiting", headers=api.h("alice")).json()["tasks"]
    assert mine and all(t["tenant"] == "alice" and t["state"] == "waiting" for t in mine)


def test_a_stored_number_that_is_not_finite_is_refused():
    from gensolver.service.views import _jn

    assert _jn(None) == "null" and json.loads(_jn(0.1)) == 0.1 and _jn(3) == "3"
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="not finite"):
            _jn(bad)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_healthz_counts_tasks_at_most_once_a_second(api):
    """``/healthz`` counts the tasks per state once per :data:`COUNTS_MAX_AGE` seconds (an
    injected clock), whatever the number of probes; the counts agree with the task list."""
    from gensolver.service.state import COUNTS_MAX_AGE

    svc = api.service
    clock = _Clock()
    svc.monotonic = clock
    counted: list[str] = []
    query = svc.store.query

    def spy(sql: str, params=()):
        if "GROUP BY state" in sql:
            counted.append(sql)
        return query(sql, params)

    svc.store.query = spy
    for k in range(3):
        assert api.client.post("/v1/tasks", json=gentask(f"c{k}"), headers=api.h("alice")).status_code == 201
    assert api.client.delete("/v1/tasks/c0", headers=api.h("alice")).status_code == 200
    first = api.client.get("/healthz").json()["tasks"]
    listed = api.client.get("/v1/tasks?limit=100", headers=api.h("ops")).json()["tasks"]
    expect = {s: sum(1 for t in listed if t["state"] == s) for s in ("waiting", "running", "done", "cancelled")}
    assert first == expect and expect["cancelled"] == 1 and expect["waiting"] == 2
    for _ in range(50):
        assert api.client.get("/healthz").json()["tasks"] == first
    assert len(counted) == 1                         # 51 probes, one count
    assert api.client.post("/v1/tasks", json=gentask("c9"), headers=api.h("alice")).status_code == 201
    clock.now += COUNTS_MAX_AGE - 0.01
    assert api.client.get("/healthz").json()["tasks"]["waiting"] == 2 and len(counted) == 1  # still the last count
    clock.now += 0.02
    assert api.client.get("/healthz").json()["tasks"]["waiting"] == 3 and len(counted) == 2  # counted again
    for _ in range(20):
        assert api.client.get("/livez").status_code == 200
    assert len(counted) == 2
