"""A fake of Slack's Web API on loopback: the ``AsyncWebClient``'s ``base_url`` points at
it, and it records every call (method, arguments, bot token) as Slack would receive it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.receivers import serve_app


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
        else:
            arguments = {k: v[0] for k, v in parse_qs(body.decode()).items()}
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
        if method == "users.info":
            user = self.users.get(str(arguments.get("user")))
            return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
        return {"ok": True}


@contextlib.asynccontextmanager
async def serve_slack(fake: FakeSlack | None = None) -> AsyncIterator[FakeSlack]:
    fake = fake or FakeSlack()
    app = Starlette(routes=[Route("/api/{method}", fake.handle, methods=["POST"])])
    async with serve_app(app) as port:
        fake.port = port
        yield fake
