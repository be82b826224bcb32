"""A standby server's API: each request forwarded to the leader, as Vault's standby nodes do.

A server that does not hold the control lease (lease.py) has no scheduler or jobs' state to
answer from: it forwards each request whole to the leader the lease names and streams the answer
back (event streams and checkpoint reports too), so a load balancer may send anything to either
server. While no server leads (the lease expired and is not yet taken) or the leader cannot be
reached, it answers 503 with Retry-After, which the platform's clients and jobs wait out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from rlguard.platform.errors import error_body

HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-authenticate",
    b"proxy-authorization",
    b"te",
    b"trailer",
    b"transfer-encoding",
    b"upgrade",
    b"host",
}
"""Headers of one connection, not of the request: never forwarded (RFC 9110, 7.6.1)."""

MAX_FORWARDED = 256
"""Requests a standby forwards at once; more wait for a connection to the leader."""


async def unavailable(scope: Scope, receive: Receive, send: Send, why: str) -> None:
    headers = {"Retry-After": "1"}
    await error_body(503, why, "no_leader", headers=headers)(scope, receive, send)


class Forward:
    """The standby's ASGI app: `leader()` says where to (None: no server leads now)."""

    def __init__(self, leader: Callable[[], str | None]) -> None:
        self.leader = leader
        limits = httpx.Limits(max_connections=MAX_FORWARDED)
        # no read timeout: a checkpoint's report waits for its upload, an event stream for events
        timeout = httpx.Timeout(None, connect=2.0)
        self.client = httpx.AsyncClient(limits=limits, timeout=timeout)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        url = self.leader()
        if url is None:
            await unavailable(scope, receive, send, "no server leads the platform now")
            return
        target = url + scope["raw_path"].decode("latin-1")
        if scope["query_string"]:
            target += "?" + scope["query_string"].decode("latin-1")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        if scope.get("client"):
            headers.append((b"x-forwarded-for", scope["client"][0].encode()))
        request = self.client.build_request(
            scope["method"], target, headers=headers, content=_body(receive)
        )
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TransportError:
            await unavailable(scope, receive, send, "the leading server was not reached")
            return
        try:
            kept = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]
            start = {"type": "http.response.start", "status": response.status_code}
            await send({**start, "headers": kept})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except httpx.TransportError:
            pass  # the leader went away mid-answer: the caller sees a cut answer and retries
        finally:
            await response.aclose()


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        yield message.get("body", b"")
        if not message.get("more_body"):
            return


class Switch:
    """The ASGI app a server runs: its standby's `Forward` until it leads, then the platform's
    API; `GET /healthz` is its own in both roles (what a load balancer checks)."""

    def __init__(self, app: ASGIApp, health: Callable[[], dict[str, Any]]) -> None:
        self.app, self.health = app, health

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # nothing to start: the platform starts on its own
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] == "http" and scope["path"] == "/healthz":
            await JSONResponse(self.health())(scope, receive, send)
            return
        await self.app(scope, receive, send)
