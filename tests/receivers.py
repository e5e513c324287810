"""Real HTTP receivers on loopback for delivery tests: scripted answers, every request kept,
every signature checked with ``signoff.webhooks.verify``, and deduplicated on ``webhook-id``
as the README tells receivers to. Each counts the requests it holds open at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from signoff import clock
from signoff.webhooks import WebhookVerificationError, verify


@dataclass(frozen=True)
class Answer:
    """One scripted answer; ``hang`` holds the request until the test releases the receiver
    or the client gives up (its timeout), ``delay`` holds it that many seconds. A callable
    ``body`` makes the answer's JSON from the request's body."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    delay: float = 0.0


@dataclass
class Received:
    webhook_id: str
    attempt: int
    body: dict[str, Any]
    headers: dict[str, str]
    at: float


@dataclass
class Receiver:
    """Answers with ``script`` in order (the last answer repeats). ``signed=False``: a
    receiver that checks no signature (a Slack incoming webhook)."""

    script: list[Answer] = field(default_factory=lambda: [Answer()])
    secret: str | None = None
    signed: bool = True
    port: int = 0
    requests: list[Received] = field(default_factory=list)
    # What a receiver deduplicating on webhook-id applied: webhook-id -> the body of the
    # first request with that id it answered 2xx; a later one with the same id is skipped.
    applied: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: int = 0
    # Requests being answered now, and the most there ever were at once.
    open: int = 0
    most_open: int = 0
    _release: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        """Answer every hanging request now, and later ones at once."""
        self._release.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        if self.signed:
            assert self.secret is not None, "set receiver.secret to the target's signing secret"
            try:
                # The receiver shares the test's clock, so a frozen clock keeps timestamps
                # fresh.
                verify(self.secret, headers=request.headers, body=body, now=clock.now().timestamp())
            except WebhookVerificationError:
                self.refused += 1
                return Response(status_code=401)
        answer = self.script[min(len(self.requests), len(self.script) - 1)]
        received = Received(
            webhook_id=request.headers.get("webhook-id", ""),
            attempt=int(request.headers["signoff-attempt"]),
            body=json.loads(body),
            headers=dict(request.headers),
            at=asyncio.get_running_loop().time(),
        )
        self.requests.append(received)
        if 200 <= answer.status < 300:
            self.applied.setdefault(received.webhook_id, received.body)
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            if answer.hang:
                await _first(self._release.wait(), _gone(request))
            await asyncio.sleep(answer.delay)
        finally:
            self.open -= 1
        body = answer.body(received.body) if callable(answer.body) else answer.body
        content = b"" if body is None else json.dumps(body).encode()
        return Response(
            content,
            status_code=answer.status,
            headers=answer.headers,
            media_type="application/json",
        )


async def _gone(request: Request) -> None:
    """Return once the client has closed the connection (its request body is already read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _first(*waits: Coroutine[Any, Any, Any]) -> None:
    """Wait until any of ``waits`` is done, then cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def serve(receiver: Receiver) -> AsyncIterator[Receiver]:
    """Run ``receiver`` with uvicorn on 127.0.0.1, on a free port."""
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    async with serve_app(app) as port:
        receiver.port = port
        try:
            yield receiver
        finally:
            receiver.release()  # before the server stops: it waits for hanging requests


@contextlib.asynccontextmanager
async def serve_app(app: Any) -> AsyncIterator[int]:
    """Run an ASGI ``app`` with uvicorn on 127.0.0.1; yields its port."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await task
