"""Behaviour of :mod:`gensolver.service.capture`: a route's ASGI answer recorded as sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the service extra (starlette) is not installed")

from gensolver.service.capture import Captured  # noqa: E402

START = {"type": "http.response.start", "status": 201, "headers": [(b"content-type", b"application/json"),
                                                                   (b"x-a", b"1")]}
BODY = [{"type": "http.response.body", "body": b'{"a":', "more_body": True},
        {"type": "http.response.body", "body": b' 1}', "more_body": False}]


def play(captured: Captured, messages: list[dict[str, Any]]) -> None:
    async def go() -> None:
        for m in messages:
            await captured(m)
    asyncio.run(go())


def test_records_status_headers_and_the_whole_body():
    c = Captured()
    play(c, [START, *BODY])
    assert c.status == 201
    assert c.headers == [(b"content-type", b"application/json"), (b"x-a", b"1")]
    # the body is the chunks joined in order: compare with the messages' own bytes
    assert c.body == b"".join(m["body"] for m in BODY) == b'{"a": 1}'


def test_forwards_every_message_unchanged_and_in_order():
    sent: list[dict[str, Any]] = []

    async def downstream(message: dict[str, Any]) -> None:
        sent.append(message)

    c = Captured(forward=downstream)
    play(c, [START, *BODY])
    assert sent == [START, *BODY]
    assert c.body == b'{"a": 1}'


def test_no_start_message_reads_as_500_and_missing_body_as_empty():
    c = Captured()
    play(c, [{"type": "http.response.body"}])
    assert c.status == 500
    assert c.headers == []
    assert c.body == b""


def test_other_messages_are_ignored_but_still_forwarded():
    sent: list[str] = []

    async def downstream(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    c = Captured(forward=downstream)
    play(c, [{"type": "http.disconnect"}, START])
    assert sent == ["http.disconnect", "http.response.start"]
    assert c.body == b"" and c.status == 201
