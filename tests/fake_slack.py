"""A fake of Slack's Web API on loopback: the ``AsyncWebClient``'s ``base_url`` points at
it, and it records every call (method, arguments, bot token) as Slack would receive it.

It serves Socket Mode too: ``apps.connections.open`` answers with a ``ws://`` URL of its
own, where a real websocket says hello, carries the envelopes a test ``push``es and
collects their acknowledgements, and closes when a test asks (as Slack does to make a
client connect again)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests.receivers import serve_app

# How long a test waits for a connection, an ack or a close.
WAIT_SECONDS = 10


@dataclass(frozen=True)
class Call:
    method: str
    arguments: dict[str, Any]
    token: str


@dataclass
class FakeSlack:
    """``throttle``: how many calls of a method to answer 429 first, with ``Retry-After``."""

    calls: list[Call] = field(default_factory=list)
    throttle: dict[str, int] = field(default_factory=dict)
    retry_after: int = 7
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    port: int = 0
    _ts: int = 1_700_000_000
    # Socket Mode: each connection made (its URL's ticket), the open ones, the acks awaited.
    tickets: list[str] = field(default_factory=list)
    _links: list[_Link] = field(default_factory=list)
    _acks: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _connected: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def of(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    async def handle(self, request: Request) -> Response:
        method = request.path_params["method"]
        body = await request.body()
        if request.headers.get("content-type", "").startswith("application/json"):
            arguments: dict[str, Any] = json.loads(body or b"{}")
        else:  # a form, or a GET's query (users.info is a GET)
            arguments = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            arguments.update(request.query_params)
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.throttle.get(method, 0) > 0:
            self.throttle[method] -= 1
            return JSONResponse(
                {"ok": False, "error": "ratelimited"},
                status_code=429,
                headers={"Retry-After": str(self.retry_after)},
            )
        self.calls.append(Call(method, arguments, token))
        return JSONResponse(self._answer(method, arguments))

    def _answer(self, method: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if method == "chat.postMessage":
            self._ts += 1
            return {"ok": True, "channel": arguments["channel"], "ts": f"{self._ts}.000100"}
        if method == "chat.update":
            return {"ok": True, "channel": arguments["channel"], "ts": arguments["ts"]}
        if method == "apps.connections.open":
            ticket = uuid.uuid4().hex
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket={ticket}"}
        if method == "users.info":
            user = self.users.get(str(arguments.get("user")))
            return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
        return {"ok": True}

    async def socket(self, websocket: WebSocket) -> None:
        """A Socket Mode connection: hello, then acks until either side closes."""
        await websocket.accept()
        await websocket.send_json({"type": "hello", "num_connections": len(self._links) + 1})
        link = _Link(websocket)
        self._links.append(link)
        async with self._connected:
            self.tickets.append(websocket.query_params["ticket"])
            self._connected.notify_all()
        receiving = asyncio.create_task(self._receive_acks(websocket))
        asked = asyncio.create_task(link.closing.wait())
        await asyncio.wait({receiving, asked}, return_when=asyncio.FIRST_COMPLETED)
        async with self._connected:
            self._links.remove(link)
            self._connected.notify_all()
        link.gone.set()
        if asked.done():
            await websocket.close(code=1001)
        else:
            asked.cancel()
        await asyncio.gather(receiving, asked, return_exceptions=True)

    async def _receive_acks(self, websocket: WebSocket) -> None:
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                ack = json.loads(await websocket.receive_text())
                waiting = self._acks.get(str(ack.get("envelope_id")))
                if waiting is not None and not waiting.done():
                    waiting.set_result(ack)

    async def connections(self, count: int) -> None:
        """Wait until ``count`` Socket Mode connections have been made in all."""
        async with asyncio.timeout(WAIT_SECONDS), self._connected:
            await self._connected.wait_for(lambda: len(self.tickets) >= count and bool(self._links))

    async def push(self, payload: dict[str, Any], kind: str = "interactive") -> dict[str, Any]:
        """Send an envelope on the newest connection, as Slack does, and again on the next
        one if that connection goes before the ack (Slack's retry); the ack."""
        envelope_id = uuid.uuid4().hex
        answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = answered
        envelope: dict[str, Any] = {
            "envelope_id": envelope_id,
            "type": kind,
            "accepts_response_payload": kind == "interactive",
            "payload": payload,
        }
        try:
            async with asyncio.timeout(WAIT_SECONDS):
                while not answered.done():
                    await self.connections(1)
                    link = self._links[-1]
                    await link.websocket.send_json(envelope)
                    gone: asyncio.Future[Any] = asyncio.ensure_future(link.gone.wait())
                    await asyncio.wait({answered, gone}, return_when=asyncio.FIRST_COMPLETED)
                    gone.cancel()
                    envelope["retry_attempt"] = int(envelope.get("retry_attempt", 0)) + 1
        finally:
            self._acks.pop(envelope_id, None)
        ack = answered.result()
        assert ack["envelope_id"] == envelope_id
        return ack

    async def all_closed(self) -> None:
        """Wait until no Socket Mode connection is open."""
        async with asyncio.timeout(WAIT_SECONDS), self._connected:
            await self._connected.wait_for(lambda: not self._links)

    def close_sockets(self) -> None:
        """Close every open Socket Mode connection from Slack's side."""
        for link in self._links:
            link.closing.set()


@dataclass(frozen=True)
class _Link:
    """An open Socket Mode connection: ``closing`` asks it to close, ``gone`` says it did."""

    websocket: WebSocket
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    gone: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.asynccontextmanager
async def serve_slack(fake: FakeSlack | None = None) -> AsyncIterator[FakeSlack]:
    fake = fake or FakeSlack()
    app = Starlette(
        routes=[
            Route("/api/{method}", fake.handle, methods=["GET", "POST"]),
            WebSocketRoute("/link/", fake.socket),
        ]
    )
    async with serve_app(app) as port:
        fake.port = port
        yield fake
