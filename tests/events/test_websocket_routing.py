"""GraphQL websockets skip Starlette's HTTP stack (``web.routing``) and lose nothing by it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from signoff.live.prepared_frames import SERVER_SEND, SocketWriter
from signoff.web.routing import SignoffApp
from tests.live import serve_in_process

TRANSPORT_WS = "graphql-transport-ws"


def _websocket_scope(path: str, root_path: str = "") -> Scope:
    return {"type": "websocket", "path": path, "root_path": root_path, "headers": []}


async def _no_receive() -> Any:
    raise AssertionError("nothing is received")


async def _no_send(_: Any) -> None:
    raise AssertionError("nothing is sent")


@pytest.mark.parametrize(
    ("path", "root_path", "direct"),
    [("/graphql", "", True), ("/graphql/", "", False), ("/api/graphql", "/api", False)],
)
async def test_only_a_websocket_at_the_path_skips_the_stack(
    path: str, root_path: str, direct: bool
) -> None:
    served: list[str] = []

    async def websocket_app(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["app"] is app  # as Starlette sets it
        served.append("direct")

    async def through_the_stack(scope: Scope, receive: Receive, send: Send) -> None:
        served.append("stack")

    app = SignoffApp(websocket_path="/graphql", websocket_app=websocket_app)
    app.middleware_stack = through_the_stack
    await app(_websocket_scope(path, root_path), _no_receive, _no_send)
    assert served == ["direct" if direct else "stack"]


async def test_http_at_the_path_takes_the_stack() -> None:
    served: list[str] = []

    async def websocket_app(scope: Scope, receive: Receive, send: Send) -> None:
        served.append("direct")

    async def through_the_stack(scope: Scope, receive: Receive, send: Send) -> None:
        served.append("stack")

    app = SignoffApp(websocket_path="/graphql", websocket_app=websocket_app)
    app.middleware_stack = through_the_stack
    await app({"type": "http", "path": "/graphql", "headers": []}, _no_receive, _no_send)
    assert served == ["stack"]


async def test_a_graphql_websocket_is_logged_and_keeps_the_server_send(
    app: Starlette, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the skipped stack did not do for a websocket, the direct path still does: the
    request log's line with the server's close code, the server's own send for prepared
    frames (which the connection takes out of the scope)."""
    assert isinstance(app, SignoffApp)
    seen: list[Scope] = []
    view = app.websocket_app
    writers: list[SocketWriter | None] = []
    writer_of = SocketWriter.of

    async def watching(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope)
        await view(scope, receive, send)

    def kept(scope: Scope) -> SocketWriter | None:
        assert SERVER_SEND in scope
        writers.append(writer_of(scope))
        return writers[-1]

    app.websocket_app = watching
    monkeypatch.setattr(SocketWriter, "of", kept)
    caplog.set_level(logging.INFO, logger="signoff.requests")
    async with serve_in_process(app) as live:
        async with connect(live.ws_url, subprotocols=[TRANSPORT_WS]) as ws:  # type: ignore[list-item]
            init = {"type": "connection_init", "payload": {"authorization": "Bearer so_nope"}}
            await ws.send(json.dumps(init))
            with contextlib.suppress(ConnectionClosed):
                await ws.recv()
            assert ws.close_code == 4403
        await _logged(caplog, "WEBSOCKET /graphql")
    assert len(seen) == 1
    [writer] = writers
    assert writer is not None  # the server's own send, for prepared frames
    assert SERVER_SEND not in seen[0]  # nor kept in the scope: it would be a cycle
    [line] = [r for r in caplog.records if r.getMessage() == "WEBSOCKET /graphql"]
    assert line.status == 4403  # type: ignore[attr-defined]


async def test_a_websocket_elsewhere_is_still_refused(app: Starlette) -> None:
    async with serve_in_process(app) as live:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(live.ws_url.replace("/graphql", "/nowhere")):
                pass
    assert refused.value.response.status_code == 403


async def _logged(caplog: pytest.LogCaptureFixture, message: str) -> None:
    """Until the request log wrote ``message`` (the server ends the connection after the
    client saw its close)."""
    async with asyncio.timeout(10):
        while not any(r.getMessage() == message for r in caplog.records):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
