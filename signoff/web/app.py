"""The ASGI app: GraphQL (and GraphiQL) at ``/graphql``, the review console at ``/`` with
its files under ``/static``, ``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus)."""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, NoReturn

import strawberry
from cross_web import HTTPException
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLHTTPResponse
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from signoff import jsoncodec, metrics
from signoff.config import Settings, load_sealer
from signoff.constants import (
    AUDIT_KEY_PATH,
    CORS_MAX_AGE_SECONDS,
    METRICS_READ_TIMEOUT_SECONDS,
    WS_ADMISSIONS_BUSY_TURN_SECONDS,
    WS_ADMISSIONS_PER_LOOP_TURN,
    WS_ADMISSIONS_REST,
    WS_CLOSE_FORBIDDEN,
    WS_CLOSE_FORBIDDEN_REASON,
    WS_CLOSE_GOING_AWAY,
    WS_CLOSE_GOING_AWAY_REASON,
    WS_CLOSE_TOO_MANY_CONNECTIONS,
    WS_CLOSE_TOO_MANY_CONNECTIONS_REASON,
    WS_CLOSE_TRY_AGAIN,
    WS_CLOSE_TRY_AGAIN_REASON,
    WS_CONNECTION_INIT_TIMEOUT_SECONDS,
)
from signoff.database import (
    POOL_SIZE,
    READY,
    SessionMaker,
    create_engine,
    create_sessionmaker,
    database_condition,
    is_unreachable,
    read_only,
    readiness,
)
from signoff.errors import (
    Forbidden,
    RateLimited,
    ServiceUnavailable,
    SignoffError,
    Unauthenticated,
)
from signoff.events import EventHub, create_event_service
from signoff.jobs.runner import InProcessJobs
from signoff.jobs.slack_socket import slack_socket
from signoff.jobs.worker import ArqJobs
from signoff.jsonvalues import decode_body
from signoff.live.broadcast import Broadcaster
from signoff.live.keepalive import KeepAlive
from signoff.live.prepared_frames import KeepServerSend
from signoff.live.quota import LiveLimits, LiveQuota
from signoff.live.reclaim import MemoryReclaim, malloc_trim
from signoff.live.sse import EventStreams, stream_request
from signoff.live.turnstile import TakeTurns, Turnstile
from signoff.live.websocket import (
    Connection,
    LegacyWSHandler,
    TransportWSHandler,
    close_all,
)
from signoff.logs import RequestLogging
from signoff.resolvers.access.authenticator import Authenticator
from signoff.resolvers.access.provider import OpenIdProvider
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.access.viewer_cache import ViewerCache
from signoff.resolvers.core.work import Services, WorkMaker
from signoff.resolvers.feed.subscriptions import forget_changed_viewers
from signoff.resolvers.incidents.operations import Operations, read_operations
from signoff.schema import build_schema
from signoff.schema.context import Admission, Context, bearer_token
from signoff.schema.live import LiveSocket
from signoff.schema.serving.http import from_http_exception, refusal_response, unexpected_response
from signoff.schema.serving.media import answer_in, note_request_error
from signoff.schema.serving.persisted import PersistedQueries, load_allow_list
from signoff.web.approval_pages import ApprovalPages
from signoff.web.bodies import BodyTooLarge, read_body, replay_body
from signoff.web.pages import graphiql_page, page_routes
from signoff.web.persisted import PersistedQueryMiddleware
from signoff.web.plain_post import plain_post
from signoff.web.ratelimit import RateLimiter
from signoff.web.routing import SignoffApp
from signoff.web.sign_in import ConsoleSignIn, check_cookie_request, same_origin, session_cookie
from signoff.web.slack_actions import ACTIONS_PATH, SlackActions

logger = logging.getLogger("signoff.web.app")
# Where an HTTP request's ``Admission`` waits in its ASGI scope for its context.
ADMISSION = "signoff.admission"
GRAPHQL_PATH = "/graphql"
POST_OPERATIONS = OperationType.from_http("POST")


@functools.cache
def shared_schema(*, introspection: bool) -> strawberry.Schema:
    """One schema per process for each setting of introspection: building it is most of
    an app's making, and it keeps nothing of any app (the live path's caches are the
    broadcaster's), so apps made in one process (the tests make hundreds) share it."""
    return build_schema(introspection=introspection)


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
        persisted_queries: PersistedQueries | None = None,
    ) -> None:
        schema = shared_schema(introspection=settings.introspection)
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.graphiql else None,
            connection_init_wait_timeout=timedelta(seconds=WS_CONNECTION_INIT_TIMEOUT_SECONDS),
            max_subscriptions_per_connection=settings.ws_max_operations,
            # The legacy graphql-ws protocol's "ka" messages; graphql-transport-ws pings
            # (TransportWSHandler) at the same interval.
            keep_alive=settings.ws_ping_seconds > 0,
            keep_alive_interval=settings.ws_ping_seconds,
        )
        # graphql-transport-ws's pings, read by TransportWSHandler.
        self.ws_keep_alive = (
            KeepAlive(settings.ws_ping_seconds) if settings.ws_ping_seconds > 0 else None
        )
        self.settings = settings
        # Read by both websocket handlers: subscriptions meet the allow-list as HTTP does.
        self.persisted_queries = persisted_queries
        self.rate_limiter = RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst)
        # HTTP operations at the database at once: as many as the pool keeps connections.
        self.database_turns = asyncio.Semaphore(POOL_SIZE)
        self.work = work
        self.read_sessionmaker = read_sessionmaker
        # Read by each Connection: how far behind a subscriber may fall, in frames and bytes.
        self.frame_limit = settings.subscriber_buffer
        self.byte_limit = settings.subscriber_buffer_bytes
        # Read by TransportWSHandler: an authorised subscription leaves Strawberry's operation.
        self.detach_subscriptions = settings.live_detached
        self.viewers = ViewerCache(settings.auth_cache_seconds)
        provider = None if settings.oidc is None else OpenIdProvider(settings.oidc)
        self.authenticator = Authenticator(work, read_sessionmaker, provider)
        if hub is not None:
            # A revoked token or a changed role takes effect on the next request at once.
            hub.fanout.listen(functools.partial(forget_changed_viewers, self.viewers))
        self.open_connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        # Read by each Connection (and the event streams): what a storm of sockets took is
        # given back once it ends.
        self.memory_reclaim = MemoryReclaim(trim=malloc_trim())
        self.live_quota = LiveQuota(
            LiveLimits(
                sockets_per_token=settings.live_max_sockets_per_token,
                sockets_per_actor=settings.live_max_sockets_per_actor,
                subscriptions_per_token=settings.live_max_subscriptions_per_token,
                subscriptions_per_actor=settings.live_max_subscriptions_per_actor,
            )
        )
        self.broadcaster = (
            None
            if hub is None
            else Broadcaster(
                schema,
                hub,
                read_sessionmaker,
                buffer=settings.subscriber_buffer,
                refresh_seconds=settings.events_auth_refresh_seconds,
                authenticate=self.authenticator.viewer,
                quota=self.live_quota,
            )
        )
        # graphql-sse: subscriptions over Server-Sent Events, in the same broadcast groups.
        self.event_streams = EventStreams(
            schema,
            self.broadcaster,
            authenticate=self.stream_viewer,
            make_context=self.stream_context,
            frame_limit=settings.subscriber_buffer,
            byte_limit=settings.subscriber_buffer_bytes,
            heartbeat_seconds=settings.ws_ping_seconds,
            max_operations=settings.ws_max_operations,
            quota=self.live_quota,
            reclaim=self.memory_reclaim,
        )

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Coroutine[Any, Any, None]:
        """A websocket goes to Strawberry's view without a frame of this one waiting for the
        connection's life; a page of another origin riding on the console's session cookie
        is refused."""
        if scope["type"] == "http":
            return self._answer(scope, receive, send)
        if self.cross_origin_cookie(scope):
            return WebSocket(scope, receive, send).close(
                WS_CLOSE_FORBIDDEN, WS_CLOSE_FORBIDDEN_REASON
            )
        return super().__call__(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        """HTTP: every refusal and every crash outside an operation answered as coded JSON."""
        request = Request(scope=scope, receive=receive)
        admission = scope[ADMISSION] = Admission(self.database_turns)
        try:
            cookie = self.cookie_token(request)
            if cookie is not None:
                check_cookie_request(request, cookie, self.settings)
            self.check_rate(request)
            kind = stream_request(request)
            if kind is not None:
                response = await self.event_streams.handle(kind, request, receive, send)
                if response is None:
                    return  # the event stream was the answer
            else:
                plain = await self.answer_plain(request)
                response = answer_in(request, plain or await self.run(request))
        except SignoffError as refusal:
            response = refusal_response(refusal)
        except HTTPException as exc:
            response = refusal_response(from_http_exception(exc))
        except Exception as exc:
            response = unexpected_response(exc)
        finally:
            # The operation gave its turn back as it ended, unless it never began.
            admission.give_back()
        await response(scope, receive, send)

    async def answer_plain(self, request: Request) -> Response | None:
        """A plain JSON POST (``web.plain_post``) answered as ``run`` answers it, without the
        steps that tell other requests apart; ``None`` for any other request."""
        data = await plain_post(request)
        if data is None:
            return None
        sub_response = await self.get_sub_response(request)
        context = await self.get_context(request, response=sub_response)
        try:
            result = await self.schema.execute(
                data.query,
                variable_values=data.variables,
                context_value=context,
                root_value=None,  # as ``get_root_value`` gives
                operation_name=data.operation_name,
                allowed_operation_types=POST_OPERATIONS,
            )
        except CannotGetOperationTypeError as e:
            raise HTTPException(400, e.as_http_error_reason()) from e
        except InvalidOperationTypeError as e:
            raise HTTPException(400, e.as_http_error_reason("POST")) from e
        # Strawberry's ``_handle_errors`` hook, which ``run`` calls here, does nothing
        # unless overridden (Sentry's integration); Signoff does not override it.
        processed = await self.process_result(request, result)
        return self.create_response(response_data=processed, sub_response=sub_response)

    async def stream_viewer(self, request: Request) -> tuple[str, Viewer]:
        """Who a graphql-sse request is (its cookie's CSRF token was checked): refused at
        once, before any answer begins, as a websocket's ``connection_init`` is."""
        token = bearer_token(request.headers.get("authorization")) or self.cookie_token(request)
        try:
            viewer = await self._connecting_viewer(token)
        except SignoffError:
            raise
        except Exception as exc:
            if not is_unreachable(exc):
                logger.warning(
                    "event stream authentication failed: %s",
                    database_condition(exc) or type(exc).__name__,
                )
            raise ServiceUnavailable() from None
        assert token is not None  # no token: Unauthenticated
        return token, viewer

    def stream_context(
        self, request: Request, token: str, viewer: Viewer, live: LiveSocket
    ) -> Context:
        """An operation's context on an event stream: no turn at the database is held for
        a stream's life (each frame reads in a session of its own, as on websockets)."""
        return Context(
            sessionmaker=self.work.sessionmaker,
            read_sessionmaker=self.read_sessionmaker,
            services=self.work.services,
            token=token,
            request=request,
            viewers=self.viewers,
            authenticator=self.authenticator,
            live=live,
            _viewer=viewer,
        )

    def check_rate(self, request: Request) -> None:
        """``RATE_LIMITED`` when the request's bearer token (or console session) is over
        its rate."""
        token = bearer_token(request.headers.get("authorization")) or self.cookie_token(request)
        wait = None if token is None else self.rate_limiter.retry_after(token)
        if wait is not None:
            raise RateLimited(
                f"Too many requests with this token (the limit is "
                f"{self.rate_limiter.per_second:g} a second after a burst of "
                f"{self.rate_limiter.burst}); retry after {wait} s.",
                retryAfter=wait,
            )

    def cross_origin_cookie(self, scope: Scope) -> bool:
        """Whether a websocket comes with the console's session cookie from a page of another
        origin (its ``WebSocket`` is not kept: this frame waits for the connection's life)."""
        connection = HTTPConnection(scope)
        return self.cookie_token(connection) is not None and not same_origin(
            connection, self.settings
        )

    def cookie_token(self, connection: HTTPConnection) -> str | None:
        """The console session's token, for a request without an Authorization header
        (only with an OpenID provider configured: otherwise the cookie means nothing)."""
        if self.authenticator.provider is None or "authorization" in connection.headers:
            return None
        return session_cookie(connection)

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        processed = await super().process_result(request, result)
        note_request_error(request, result, processed)
        return processed

    def decode_json(self, data: str | bytes) -> object:
        return decode_body(data)

    def encode_json(self, data: object) -> bytes:
        return jsoncodec.dumps(data)

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        return Context(
            sessionmaker=self.work.sessionmaker,
            read_sessionmaker=self.read_sessionmaker,
            services=self.work.services,
            token=bearer_token(request.headers.get("authorization")) or self.cookie_token(request),
            request=request,
            response=response,
            viewers=self.viewers,
            admission=request.scope.get(ADMISSION),
            authenticator=self.authenticator,
        )

    async def _connecting_viewer(self, token: str | None) -> Viewer:
        """The viewer of a ``connection_init``, through the same short cache as requests:
        a burst of dashboards reconnecting with one token reads it once, not once each."""

        read = functools.partial(self.authenticator.viewer, token)
        if token is None:
            return await read()  # refused: nothing to share
        return await self.viewers.viewer(token, read)

    async def going_away(self) -> None:
        """Close every websocket with 1001 "going away": the server is shutting down, and
        clients should reconnect (to another instance, or to this one once it is back)."""
        await close_all(self.open_connections, WS_CLOSE_GOING_AWAY, WS_CLOSE_GOING_AWAY_REASON)
        await self.event_streams.close_all()

    async def on_ws_connect(self, context: Context) -> None:
        params = context.connection_params or {}
        header = params.get("authorization") or params.get("Authorization")
        token = bearer_token(header) if isinstance(header, str) else None
        if token is None and isinstance(context.request, WebSocket):
            token = self.cookie_token(context.request)  # the handshake's Origin was checked
        if context._viewer is not None and token is not None and token == context.token:
            return  # already authenticated this connection_init (legacy graphql-ws)
        if (
            token is not None
            and isinstance(context.live, Connection)
            and self.live_quota.sockets_full(token)
        ):
            # Refused before the token is read: a storm of sockets costs no reads.
            await self._too_many_connections(context.live)
        try:
            viewer = await self._connecting_viewer(token)
        except (Unauthenticated, Forbidden):  # Forbidden: the token's actor is disabled
            raise ConnectionRejectionError() from None
        except Exception as exc:
            # The database is unreachable or saturated: not the client's fault, so not 4403
            # but 1013 "try again later", without a traceback; only the condition is logged
            # (an outage once, by the engine).
            if not is_unreachable(exc):
                logger.warning(
                    "websocket authentication failed: %s",
                    database_condition(exc) or type(exc).__name__,
                )
            if context.live is not None:
                await context.live.close(WS_CLOSE_TRY_AGAIN, WS_CLOSE_TRY_AGAIN_REASON)
            raise ConnectionRejectionError({"code": "UNAVAILABLE"}) from None
        if isinstance(context.live, Connection):
            slot = self.live_quota.open_socket(token, viewer.id) if token else None
            if slot is None:
                await self._too_many_connections(context.live)
            context.live.hold(slot)
        context.token = token
        context._viewer = viewer
        if viewer.expires_at is not None and context.live is not None:
            context.live.end_at(viewer.expires_at)

    @staticmethod
    async def _too_many_connections(socket: Connection) -> NoReturn:
        await socket.close(WS_CLOSE_TOO_MANY_CONNECTIONS, WS_CLOSE_TOO_MANY_CONNECTIONS_REASON)
        raise ConnectionRejectionError({"code": "TOO_MANY_CONNECTIONS"})

    async def render_graphql_ide(self, request: Request) -> Response:
        return graphiql_page()


class BodySizeLimit:
    """Refuse request bodies over ``max_bytes`` with 413 before the GraphQL view parses them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(receive, self.max_bytes)
        except BodyTooLarge:
            await _too_large(self.max_bytes)(scope, receive, send)
            return
        if body is not None:
            await self.app(scope, replay_body(body, receive), send)


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


def _live_figures(broadcaster: Broadcaster | None) -> metrics.LiveFigures | None:
    if broadcaster is None:
        return None
    return metrics.LiveFigures(
        subscribers=broadcaster.subscriber_count,
        groups=broadcaster.group_count,
        executions=broadcaster.executions,
    )


def _persisted_queries(settings: Settings) -> PersistedQueries:
    if settings.persisted_queries_only and settings.persisted_queries_file is None:
        raise ValueError("SIGNOFF_PERSISTED_QUERIES_ONLY needs SIGNOFF_PERSISTED_QUERIES_FILE")
    allow_list = (
        load_allow_list(settings.persisted_queries_file)
        if settings.persisted_queries_file
        else None
    )
    return PersistedQueries(allow_list, only=settings.persisted_queries_only)


def _cors(settings: Settings) -> list[Middleware]:
    """Dashboards served from the listed origins may call the API from a browser; tokens
    travel in the Authorization header, never cookies, so no credentials are allowed."""
    if not settings.cors_origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=[
                "authorization",
                "content-type",
                "accept",
                "last-event-id",
                "x-graphql-event-stream-token",
            ],
            allow_credentials=False,
            max_age=CORS_MAX_AGE_SECONDS,
        )
    ]


def create_app(settings: Settings | None = None) -> SignoffApp:
    """Build the app; the database must already be migrated and its secret key checked
    (``signoff serve`` does both)."""
    settings = settings or Settings.from_env()
    engine = create_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    metrics.count_statements(engine)
    jobs = _job_queue(settings)
    sessionmaker = create_sessionmaker(engine)
    read_sessionmaker = create_sessionmaker(read_only(engine))
    events = create_event_service(settings, sessionmaker, read_sessionmaker)
    sealer = load_sealer(settings)
    work = WorkMaker(
        sessionmaker,
        Services(
            jobs=jobs,
            events=events,
            sealer=sealer,
            slack_bot_token=settings.slack_bot_token,
            destinations=settings.destinations,
        ),
    )
    persisted_queries = _persisted_queries(settings)
    # Socket Mode is held by the process that runs the jobs: this one unless Redis brings
    # `signoff worker` (docs/slack.md, "Behind a firewall").
    socket = slack_socket(work, settings) if settings.redis_url is None else None
    view = SignoffGraphQL(work, read_sessionmaker, settings, events.hub, persisted_queries)

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        database = await readiness(engine)
        if database != READY:
            return JSONResponse({"status": "unavailable", "database": database}, status_code=503)
        return JSONResponse({"status": "ok", "database": database})

    async def audit_public_key(_: Request) -> Response:
        """The key that verifies this service's audit checkpoints (docs/design.md section 15)."""
        assert events.checkpointer is not None  # every event service has one
        return PlainTextResponse(events.checkpointer.signer.public_key + "\n")

    async def metrics_endpoint(_: Request) -> Response:
        operations = await _read_operations(read_sessionmaker)
        body = metrics.exposition(operations, _live_figures(view.broadcaster))
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if not settings.audit_log:
            logger.warning(
                "the audit log is off (SIGNOFF_AUDIT_LOG=0): audit records get no position, "
                "proof or checkpoint until a process with it on stamps them"
            )
        await events.start()
        # Embedded default: deliveries run in this process; with Redis, `signoff worker` runs them.
        if isinstance(jobs, InProcessJobs):
            await jobs.start(work)
        elif jobs is not None:
            await jobs.start()
        if socket is not None:
            await socket.start()
        try:
            yield
        finally:
            if socket is not None:
                await socket.stop()
            if jobs is not None:
                await jobs.stop()
            await events.stop()
            await view.authenticator.close()
            await engine.dispose()

    sign_in = ConsoleSignIn(settings, view.authenticator, sealer, view.viewers)
    turnstile = Turnstile(
        WS_ADMISSIONS_PER_LOOP_TURN, WS_ADMISSIONS_BUSY_TURN_SECONDS, WS_ADMISSIONS_REST
    )
    graphql: Any = BodySizeLimit(
        PersistedQueryMiddleware(view, persisted_queries), settings.max_body_bytes
    )
    app = SignoffApp(
        # GraphQL websockets skip the HTTP middleware and the router (``web.routing``), but
        # not the request log and the kept websocket send.
        websocket_path=GRAPHQL_PATH,
        websocket_app=KeepServerSend(TakeTurns(RequestLogging(view), turnstile)),
        # The request log is outermost but for keeping the server's websocket send (for
        # prepared frames): it sees every answer, a CORS preflight's included.
        middleware=[
            Middleware(KeepServerSend),
            Middleware(TakeTurns, turnstile=turnstile),
            Middleware(RequestLogging),
            *_cors(settings),
        ],
        routes=[
            # PUT and DELETE: graphql-sse's single connection mode (``live.sse``).
            Route(GRAPHQL_PATH, graphql, methods=["GET", "POST", "PUT", "DELETE"]),
            WebSocketRoute(GRAPHQL_PATH, view),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics_endpoint),
            Route(AUDIT_KEY_PATH, audit_public_key),
            Route(
                "/links/{token}",
                ApprovalPages(work, read_sessionmaker).handle,
                methods=["GET", "POST"],
            ),
            Route(ACTIONS_PATH, SlackActions(work, settings).handle, methods=["POST"]),
            *(sign_in.routes() if settings.console else []),
            *page_routes(console_page=sign_in.console_page if settings.console else None),
        ],
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = sessionmaker
    app.state.jobs = jobs
    app.state.events = events
    app.state.broadcaster = view.broadcaster
    app.state.going_away = view.going_away
    app.state.turnstile = turnstile
    return app
