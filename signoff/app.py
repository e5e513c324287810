"""The ASGI app: GraphQL (and GraphiQL) at ``/graphql``, ``/healthz``, ``/readyz`` and
``/metrics`` (Prometheus)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError

from signoff import metrics
from signoff.approval_pages import ApprovalPages
from signoff.config import Settings, load_sealer
from signoff.constants import (
    METRICS_READ_TIMEOUT_SECONDS,
    WS_CLOSE_TRY_AGAIN,
    WS_CLOSE_TRY_AGAIN_REASON,
    WS_CONNECTION_INIT_TIMEOUT_SECONDS,
)
from signoff.database import (
    READY,
    SessionMaker,
    create_engine,
    create_sessionmaker,
    database_condition,
    read_only,
    readiness,
)
from signoff.errors import Unauthenticated
from signoff.events import EventHub, create_event_service
from signoff.jobs.runner import InProcessJobs
from signoff.jobs.worker import ArqJobs
from signoff.resolvers.actors import authenticate
from signoff.resolvers.operations import Operations, read_operations
from signoff.resolvers.work import Services, WorkMaker
from signoff.schema import build_schema
from signoff.schema.broadcast import Broadcaster
from signoff.schema.context import Context, bearer_token
from signoff.schema.websocket import Connection, LegacyWSHandler, TransportWSHandler

logger = logging.getLogger("signoff.app")


class SignoffGraphQL(GraphQL[Context, None]):
    """GraphQL over HTTP and websockets at one path; websockets authenticate in
    ``connection_init`` (``{"authorization": "Bearer <token>"}``), else close 4403."""

    websocket_adapter_class = Connection
    graphql_transport_ws_handler_class = TransportWSHandler
    graphql_ws_handler_class = LegacyWSHandler

    def __init__(
        self,
        work: WorkMaker,
        read_sessionmaker: SessionMaker,
        settings: Settings,
        hub: EventHub | None = None,
    ) -> None:
        schema = build_schema()
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.graphiql else None,
            connection_init_wait_timeout=timedelta(seconds=WS_CONNECTION_INIT_TIMEOUT_SECONDS),
        )
        self.work = work
        self.read_sessionmaker = read_sessionmaker
        self.frame_limit = settings.subscriber_buffer  # read by each Connection
        self.broadcaster = (
            None
            if hub is None
            else Broadcaster(
                schema,
                hub,
                read_sessionmaker,
                buffer=settings.subscriber_buffer,
                refresh_seconds=settings.events_auth_refresh_seconds,
            )
        )

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        return Context(
            sessionmaker=self.work.sessionmaker,
            read_sessionmaker=self.read_sessionmaker,
            services=self.work.services,
            token=bearer_token(request.headers.get("authorization")),
            request=request,
            response=response,
            broadcaster=self.broadcaster,
        )

    async def on_ws_connect(self, context: Context) -> None:
        params = context.connection_params or {}
        header = params.get("authorization") or params.get("Authorization")
        token = bearer_token(header) if isinstance(header, str) else None
        if context._viewer is not None and token is not None and token == context.token:
            return  # already authenticated this connection_init (legacy graphql-ws)
        try:
            async with self.read_sessionmaker() as session:
                viewer = await authenticate(session=session, token=token)
        except Unauthenticated:
            raise ConnectionRejectionError() from None
        except Exception as exc:
            # The database is unreachable or saturated: not the client's fault, so not 4403
            # but 1013 "try again later", without a traceback; only the condition is logged.
            logger.warning(
                "websocket authentication failed: %s",
                database_condition(exc) or type(exc).__name__,
            )
            if context.connection is not None:
                await context.connection.close(WS_CLOSE_TRY_AGAIN, WS_CLOSE_TRY_AGAIN_REASON)
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


async def _read_operations(read_sessionmaker: SessionMaker) -> Operations | None:
    """The database gauges, in one short read session; ``None`` if it does not answer in time."""
    try:
        async with asyncio.timeout(METRICS_READ_TIMEOUT_SECONDS):
            async with read_sessionmaker() as session:
                return await read_operations(session)
    except Exception as exc:
        logger.warning(
            "metrics: reading the database failed: %s",
            database_condition(exc) or type(exc).__name__,
        )
        return None


def create_app(settings: Settings | None = None) -> Starlette:
    """Build the app; the database must already be migrated and its secret key checked
    (``signoff serve`` does both)."""
    settings = settings or Settings.from_env()
    engine = create_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    metrics.count_statements(engine)
    jobs = _job_queue(settings)
    sessionmaker = create_sessionmaker(engine)
    events = create_event_service(settings, sessionmaker)
    work = WorkMaker(sessionmaker, Services(jobs=jobs, events=events, sealer=load_sealer(settings)))
    read_sessionmaker = create_sessionmaker(read_only(engine))
    view = SignoffGraphQL(work, read_sessionmaker, settings, events.hub)

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        database = await readiness(engine)
        if database != READY:
            return JSONResponse({"status": "unavailable", "database": database}, status_code=503)
        return JSONResponse({"status": "ok", "database": database})

    async def metrics_endpoint(_: Request) -> Response:
        operations = await _read_operations(read_sessionmaker)
        broadcaster = view.broadcaster
        subscribers = None if broadcaster is None else broadcaster.subscriber_count
        body = metrics.exposition(operations, subscribers)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await events.start()
        # Embedded default: deliveries run in this process; with Redis, `signoff worker` runs them.
        if isinstance(jobs, InProcessJobs):
            await jobs.start(work)
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
            Route("/metrics", metrics_endpoint),
            Route(
                "/links/{token}",
                ApprovalPages(work, read_sessionmaker).handle,
                methods=["GET", "POST"],
            ),
        ],
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = sessionmaker
    app.state.jobs = jobs
    app.state.events = events
    app.state.broadcaster = view.broadcaster
    return app
