"""The ASGI app: GraphQL (and GraphiQL) at ``/graphql``, ``/healthz`` and ``/readyz``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL

from signoff.config import Settings
from signoff.database import SessionMaker, create_engine, create_sessionmaker
from signoff.jobs.runner import InProcessJobs
from signoff.jobs.worker import ArqJobs
from signoff.schema import build_schema
from signoff.schema.context import Context, bearer_token

logger = logging.getLogger("signoff.app")


class SignoffGraphQL(GraphQL[Context, None]):
    def __init__(self, sessionmaker: SessionMaker, settings: Settings) -> None:
        super().__init__(build_schema(), graphql_ide="graphiql" if settings.graphiql else None)
        self.sessionmaker = sessionmaker

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        return Context(
            sessionmaker=self.sessionmaker,
            token=bearer_token(request.headers.get("authorization")),
            request=request,
            response=response,
        )


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
    sessionmaker = create_sessionmaker(engine, jobs=jobs)
    view = SignoffGraphQL(sessionmaker, settings)

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
    return app
