"""The floor for ``bench/fanout.py``: the least a server on this stack must do to
fan one change out to every subscriber.

A plain Starlette app on uvicorn (the same websockets implementation as
``signoff serve``, per-message deflate off) that speaks just enough
graphql-transport-ws: ``connection_init`` is answered with ``connection_ack``
(the authorization is not checked), ``subscribe`` registers the connection,
``complete`` and ``ping`` are honoured. ``POST /mutate`` stands for a mutation:
it answers ``{"id": <entity id>}`` and then, after the response is sent, encodes
ONE frame shaped like Signoff's ``queueEvents`` frame and sends it to every
subscriber, one after the other in the event loop (the frame text is built once
per distinct subscription id; the bench's clients all use id ``"1"``). No GraphQL
execution, no database, no per-subscriber buffer.

    .venv/bin/python bench/fanout_floor.py --port 8001
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import uuid

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

PROTOCOL = "graphql-transport-ws"
CONNECTION_ACK = '{"type":"connection_ack"}'
PONG = '{"type":"pong"}'


class Broadcaster:
    """Every live subscription, and one encoded frame per mutation sent to all of them."""

    def __init__(self) -> None:
        self.subscriptions: dict[tuple[int, str], tuple[WebSocket, str]] = {}
        self.cursors = itertools.count(1)
        # Keeps frames in mutation order on a connection whose writes are paused.
        self.lock = asyncio.Lock()

    def event(self) -> tuple[str, str]:
        """A new task.created event: its entity id and its encoded ``payload``."""
        entity_id = str(uuid.uuid4())
        cursor = base64.urlsafe_b64encode(f"feed:{next(self.cursors)}".encode()).decode()
        payload = {
            "data": {
                "queueEvents": {
                    "cursor": cursor.rstrip("="),
                    "kind": "task.created",
                    "entityId": entity_id,
                    "proposal": None,
                    "task": {"id": entity_id, "state": "OPEN"},
                }
            }
        }
        return entity_id, json.dumps(payload, separators=(",", ":"))

    async def broadcast(self, payload: str) -> None:
        frames: dict[str, str] = {}
        async with self.lock:
            for key, (websocket, subscription_id) in list(self.subscriptions.items()):
                frame = frames.get(subscription_id)
                if frame is None:
                    frame = frames[subscription_id] = (
                        f'{{"id":{json.dumps(subscription_id)},"type":"next","payload":{payload}}}'
                    )
                try:
                    await websocket.send_text(frame)
                except Exception:  # the client went away; forget it
                    self.subscriptions.pop(key, None)


def create_floor() -> Starlette:
    broadcaster = Broadcaster()

    async def mutate(_: Request) -> JSONResponse:
        entity_id, payload = broadcaster.event()
        return JSONResponse(
            {"id": entity_id}, background=BackgroundTask(broadcaster.broadcast, payload)
        )

    async def healthz(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def graphql_ws(websocket: WebSocket) -> None:
        if PROTOCOL not in websocket.scope.get("subprotocols", []):
            await websocket.close(code=4406, reason="Subprotocol not acceptable")
            return
        await websocket.accept(subprotocol=PROTOCOL)
        mine: list[tuple[int, str]] = []
        try:
            if json.loads(await websocket.receive_text()).get("type") != "connection_init":
                await websocket.close(code=4400, reason="Expected connection_init")
                return
            await websocket.send_text(CONNECTION_ACK)
            while True:
                message = json.loads(await websocket.receive_text())
                kind = message.get("type")
                if kind == "subscribe":
                    key = (id(websocket), str(message["id"]))
                    broadcaster.subscriptions[key] = (websocket, key[1])
                    mine.append(key)
                elif kind == "complete":
                    broadcaster.subscriptions.pop((id(websocket), str(message["id"])), None)
                elif kind == "ping":
                    await websocket.send_text(PONG)
        except WebSocketDisconnect:
            pass
        finally:
            for key in mine:
                broadcaster.subscriptions.pop(key, None)

    return Starlette(
        routes=[
            Route("/mutate", mutate, methods=["POST"]),
            Route("/healthz", healthz),
            WebSocketRoute("/graphql", graphql_ws),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="The floor server for bench/fanout.py.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ws", default="websockets-sansio", help="uvicorn websockets protocol")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(
            create_floor(),
            host=args.host,
            port=args.port,
            log_level="warning",
            ws=args.ws,
            ws_per_message_deflate=False,
        )


if __name__ == "__main__":
    main()
