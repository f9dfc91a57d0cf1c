"""ETag and If-None-Match on the GET views."""

from __future__ import annotations

import hashlib

from .conftest import gentask


def _tag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def test_lists_and_details_answer_304_until_they_change(api):
    a, ops = api.h("alice"), api.h("ops")
    assert api.client.post("/v1/tasks", json=gentask("t1", value=5.0), headers=a).status_code == 201
    for path, h in (("/v1/tasks", a), ("/v1/tasks/t1", a), ("/v1/tenants", ops), ("/v1/rounds", ops)):
        first = api.client.get(path, headers=h)
        assert first.status_code == 200, (path, first.text)
        tag = first.headers["etag"]
        assert tag == _tag(first.content) and "authorization" in first.headers["vary"].lower()
        again = api.client.get(path, headers={**h, "If-None-Match": tag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
        for match in ("*", f'"other", W/{tag}'):
            assert api.client.get(path, headers={**h, "If-None-Match": match}).status_code == 304
        assert api.client.get(path, headers={**h, "If-None-Match": '"stale"'}).status_code == 200
    before = api.client.get("/v1/tasks", headers=a).headers["etag"]
    assert api.client.post("/v1/tasks", json=gentask("t2", value=5.0), headers=a).status_code == 201
    changed = api.client.get("/v1/tasks", headers={**a, "If-None-Match": before})
    assert changed.status_code == 200 and changed.headers["etag"] != before
    assert len(changed.json()["tasks"]) == 2
    # another tenant's view has its own tag; errors carry none
    assert api.client.get("/v1/tasks", headers=api.h("bob")).headers["etag"] != changed.headers["etag"]
    missing = api.client.get("/v1/tasks/nope", headers={**a, "If-None-Match": "*"})
    assert missing.status_code == 404 and "etag" not in missing.headers
