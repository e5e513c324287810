"""The app's outermost routing: a GraphQL websocket goes straight to its own short stack.

For a websocket, Starlette's HTTP middleware, exception middleware and router only pass the
connection on (CORS and the error page are HTTP's; nothing on the view's websocket path
raises ``HTTPException`` or ``WebSocketException``), yet each keeps a suspended frame (the
exception middleware also a ``WebSocket`` and a send wrapper) for the connection's life,
on each of thousands of connections. Anything else, a ``root_path`` included, takes them.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send


class SignoffApp(Starlette):
    """Starlette, with websockets at ``websocket_path`` served by ``websocket_app``."""

    def __init__(self, *, websocket_path: str, websocket_app: ASGIApp, **options: Any) -> None:
        super().__init__(**options)
        self.websocket_path = websocket_path
        self.websocket_app = websocket_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "websocket"
            and scope["path"] == self.websocket_path
            and not scope.get("root_path")
        ):
            scope["app"] = self  # as Starlette sets it: ``websocket.app``
            await self.websocket_app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)
