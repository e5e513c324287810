"""The floor for ``bench/waiters.py``: one event reaching its one waiter by a plain
dictionary lookup-and-send.

A plain Starlette app on uvicorn (the same websockets implementation as ``signoff
serve``, per-message deflate off). A websocket at ``/wait/{id}`` is accepted and kept in
a dict under ``id``; ``POST /event/{id}`` answers, then looks ``id`` up and sends that
socket one pre-encoded frame shaped like a ``proposalEvents`` frame (nothing if no socket
waits under ``id``). No GraphQL, no database, no authentication; no uvicorn pings and
the garbage collector tuned, as ``signoff serve`` runs.

    .venv/bin/python bench/waiters_floor.py --port 8001
"""

from __future__ import annotations

import argparse
import contextlib

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from signoff.cli import _tune_for_serving

FRAME = (
    '{"id":"1","type":"next","payload":{"data":{"proposalEvents":{"cursor":"ZmVlZDoxMjM0",'
    '"kind":"proposal.rejected","snapshot":{},"proposal":{"id":"%s","state":"REJECTED"}}}}}'
)


def create_floor() -> Starlette:
    waiting: dict[str, WebSocket] = {}

    async def send(proposal_id: str) -> None:
        websocket = waiting.get(proposal_id)
        if websocket is not None:
            with contextlib.suppress(Exception):
                await websocket.send_text(FRAME % proposal_id)

    async def event(request: Request) -> JSONResponse:
        proposal_id = request.path_params["id"]
        return JSONResponse({"id": proposal_id}, background=BackgroundTask(send, proposal_id))

    async def healthz(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def wait(websocket: WebSocket) -> None:
        proposal_id = websocket.path_params["id"]
        await websocket.accept()
        waiting[proposal_id] = websocket
        try:
            while True:
                await websocket.receive_text()
        except WebSocketDisconnect:
            pass
        finally:
            if waiting.get(proposal_id) is websocket:
                del waiting[proposal_id]

    return Starlette(
        routes=[
            Route("/event/{id}", event, methods=["POST"]),
            Route("/healthz", healthz),
            WebSocketRoute("/wait/{id}", wait),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="The floor server for bench/waiters.py.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    # The interpreter settings of ``signoff serve``: with the default ones, two full
    # collections of the 2,000 sockets' objects (70 and 100 ms) fell in the floor's events.
    _tune_for_serving()
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(
            create_floor(),
            host=args.host,
            port=args.port,
            log_level="warning",
            ws="websockets-sansio",
            ws_per_message_deflate=False,
            # As ``signoff serve``: uvicorn's own pings, every 20 s for every socket, came
            # in a burst in the floor's events (Signoff keeps its sockets alive itself).
            ws_ping_interval=None,
        )


if __name__ == "__main__":
    main()
