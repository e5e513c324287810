"""The ASGI app: GraphQL (and GraphiQL) at ``/graphql``, ``/healthz`` and ``/readyz``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.subscriptions.protocols.graphql_ws.types import ConnectionInitMessage

from signoff.config import Settings, load_sealer
from signoff.constants import WS_CONNECTION_INIT_TIMEOUT_SECONDS
from signoff.database import SessionMaker, create_engine, create_sessionmaker
from signoff.errors import Unauthenticated
from signoff.events import EventHub, create_event_service
from signoff.jobs.runner import InProcessJobs
from signoff.jobs.worker import ArqJobs
from signoff.resolvers.actors import authenticate
from signoff.schema import build_schema
from signoff.schema.context import Context, bearer_token
from signoff.schema.loaders import FeedLoaders

logger = logging.getLogger("signoff.app")


class ClosingAwareWebSocketAdapter(ASGIWebSocketAdapter):
    """Drops what a subscription still sends after the server closed the socket (a
    subscriber cut off for being too slow), instead of failing the operation task."""

    async def send_json(self, message: Any) -> None:
        if self.ws.application_state == WebSocketState.DISCONNECTED:
            return
        await super().send_json(message)


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    """The legacy ``graphql-ws`` protocol refuses a bad token like graphql-transport-ws:
    ``connection_error``, then close 4403 (Strawberry's default closes 1011)."""

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        payload = message.get("payload")
        if isinstance(self.context, Context) and isinstance(payload, dict):
            self.context.connection_params = payload
            try:
                await self.view.on_ws_connect(self.context)
            except ConnectionRejectionError as exc:
                await self.send_message({"type": "connection_error", "payload": exc.payload})
                await self.websocket.close(code=4403, reason="Forbidden")
                return
        await super().handle_connection_init(message)


class SignoffGraphQL(GraphQL[Context, None]):
    """GraphQL over HTTP and websockets at one path; websockets authenticate in
    ``connection_init`` (``{"authorization": "Bearer <token>"}``), else close 4403."""

    websocket_adapter_class = ClosingAwareWebSocketAdapter
    graphql_ws_handler_class = LegacyWSHandler

    def __init__(
        self, sessionmaker: SessionMaker, settings: Settings, hub: EventHub | None = None
    ) -> None:
        super().__init__(
            build_schema(),
            graphql_ide="graphiql" if settings.graphiql else None,
            connection_init_wait_timeout=timedelta(seconds=WS_CONNECTION_INIT_TIMEOUT_SECONDS),
        )
        self.sessionmaker = sessionmaker
        self.hub = hub
        self.feed_loaders = FeedLoaders(sessionmaker)

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        return Context(
            sessionmaker=self.sessionmaker,
            token=bearer_token(request.headers.get("authorization")),
            request=request,
            response=response,
            hub=self.hub,
            feed_loaders=self.feed_loaders,
        )

    async def on_ws_connect(self, context: Context) -> None:
        params = context.connection_params or {}
        header = params.get("authorization") or params.get("Authorization")
        token = bearer_token(header) if isinstance(header, str) else None
        if context._viewer is not None and token is not None and token == context.token:
            return  # already authenticated this connection_init (legacy graphql-ws)
        try:
            async with self.sessionmaker() as session:
                viewer = await authenticate(session=session, token=token)
        except Unauthenticated:
            raise ConnectionRejectionError() from None
        except Exception as exc:
            # The database is unreachable or saturated: refuse without a traceback; the
            # client retries. Only the exception's type is logged, never its message.
            logger.warning("websocket authentication failed: %s", type(exc).__name__)
            raise ConnectionRejectionError({"code": "UNAVAILABLE"}) from None
        context.token = token
        context._viewer = viewer


class BodySizeLimit:
    """Refuse request bodies over ``max_bytes`` with 413 before the GraphQL view parses them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.extend(message.get("body", b""))
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await _too_large(self.max_bytes)(scope, receive, send)
                return
        await self.app(scope, _replay(bytes(body)), send)


def _too_large(limit: int) -> Response:
    return JSONResponse(
        {
            "errors": [
                {
                    "message": f"The request body is over {limit} bytes.",
                    "extensions": {"code": "REQUEST_TOO_LARGE"},
                }
            ]
        },
        status_code=413,
    )


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _job_queue(settings: Settings) -> InProcessJobs | ArqJobs | None:
    """arq with Redis; otherwise the in-process runner (unless turned off: then only the
    database records due work, for a worker started elsewhere)."""
    if settings.redis_url is not None:
        return ArqJobs(settings)
    return InProcessJobs(settings) if settings.embedded_worker else None


def create_app(settings: Settings | None = None) -> Starlette:
    """Build the app; the database schema must already be migrated (``signoff serve`` does it)."""
    settings = settings or Settings.from_env()
    engine = create_engine(settings.database_url)
    jobs = _job_queue(settings)
    events = create_event_service(settings, create_sessionmaker(engine))
    sessionmaker = create_sessionmaker(
        engine, jobs=jobs, events=events, sealer=load_sealer(settings)
    )
    view = SignoffGraphQL(sessionmaker, settings, events.hub)

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception as exc:
            logger.warning("readiness check failed: %s", type(exc).__name__)
            return JSONResponse(
                {"status": "unavailable", "database": "unreachable"}, status_code=503
            )
        return JSONResponse({"status": "ok", "database": "ok"})

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await events.start()
        # Embedded default: deliveries run in this process; with Redis, `signoff worker` runs them.
        if isinstance(jobs, InProcessJobs):
            await jobs.start(sessionmaker)
        elif jobs is not None:
            await jobs.start()
        try:
            yield
        finally:
            if jobs is not None:
                await jobs.stop()
            await events.stop()
            await engine.dispose()

    graphql: Any = BodySizeLimit(view, settings.max_body_bytes)
    app = Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", view),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
        ],
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = sessionmaker
    app.state.jobs = jobs
    app.state.events = events
    return app
