"""The team server's time limits on a request (`server._header_timed_protocol`), with a small
app of its own: the limits are the client's, never the server's own waiting. A review found a
body read late by the app (uvicorn stops reading beyond 64 KiB until it does) cut off, and a
pipelined request whose answer took longer than the limit cut off after the first answer."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from reos_memory.interfaces.team_http.server import _header_timed_protocol
from tests.team_fixtures import free_port

LIMIT_S = 1.0
SLOW_S = 2.5


async def _slow(request: Request) -> PlainTextResponse:
    await asyncio.sleep(SLOW_S)
    return PlainTextResponse("slow done")


async def _fast(request: Request) -> PlainTextResponse:
    return PlainTextResponse("fast")


async def _late_read(request: Request) -> PlainTextResponse:
    await asyncio.sleep(SLOW_S)  # (as /rpc waits for a worker thread before it reads the body)
    return PlainTextResponse(f"read {len(await request.body())}")


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    app = Starlette(routes=[
        Route("/slow", _slow), Route("/fast", _fast), Route("/late", _late_read, methods=["POST"]),
    ])  # fmt: skip
    p = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=p, log_level="warning", http=_header_timed_protocol(LIMIT_S)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield p
    server.should_exit = True
    thread.join(timeout=10)


def _exchange(port: int, payload: bytes) -> bytes:
    """What the server sends back until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    return got


def test_a_body_the_app_reads_late_is_not_the_clients_delay(port: int) -> None:
    body = b"a" * 200_000
    got = _exchange(port, b"POST /late HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                    % len(body) + body)  # fmt: skip
    assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"read 200000")


def test_a_pipelined_request_slower_than_the_limit_is_answered(port: int) -> None:
    got = _exchange(
        port, b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert got.count(b"HTTP/1.1 200") == 2 and got.endswith(b"slow done")
