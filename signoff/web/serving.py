"""``signoff serve`` under uvicorn, with a shutdown that says goodbye properly.

uvicorn, on SIGTERM, stops listening and closes websockets with 1012 ("service restart"),
then waits, with no limit by default, for every connection to end. Here websockets are
closed first with 1001 ("going away", what a client reconnects on), requests in flight
get ``SHUTDOWN_GRACE_SECONDS`` to finish, and then the app's own shutdown runs (the job
queue, the event relay, the database pool).
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence

import uvicorn
from starlette.applications import Starlette

from signoff.config import Settings
from signoff.constants import SHUTDOWN_GRACE_SECONDS
from signoff.internals import MessageAtATimeProtocol, http_protocol_taking_turns

logger = logging.getLogger(__name__)


class PortInUse(Exception):
    """Another process (often another ``signoff serve``) listens on the port asked for."""


def check_port_free(host: str, port: int) -> None:
    """Refuse a busy port in one line, before migrations and start-up run (uvicorn finds out only
    after start-up, logs it among the start-up lines and exits with status 3). The probe binds
    as uvicorn does (SO_REUSEADDR, each address the host resolves to) and closes again, leaving
    uvicorn's own binding as it was."""
    for family, kind, proto, _, address in socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    ):
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                raise PortInUse(
                    f"port {port} is in use (another signoff serve?); "
                    f"set SIGNOFF_PORT={port + 1}, or pass --port {port + 1}."
                ) from None


class GracefulServer(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        going_away: Callable[[], Awaitable[None]],
        greeting: Sequence[str] = (),
        on_started: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(config)
        self.going_away = going_away
        self.greeting = greeting
        self.on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            for line in self.greeting:
                logger.info(line)
            self.on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Stop listening first, so that clients told to go away reconnect elsewhere.
        for server in self.servers:
            server.close()
        await self.going_away()
        await super().shutdown(sockets)


def serve(
    app: Starlette,
    settings: Settings,
    *,
    host: str,
    port: int,
    greeting: Sequence[str] = (),
    on_started: Callable[[], None] = lambda: None,
) -> None:
    """Run ``app`` as ``uvicorn.run`` would, with ``GracefulServer``'s shutdown, saying the
    ``greeting`` lines and calling ``on_started`` once it has started and listens."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=settings.log_level,
        # httptools, as uvicorn would pick it, leaving no reference cycle per websocket; a
        # new connection's first read takes its turn with the websockets' (``live.turnstile``).
        http=http_protocol_taking_turns(app.state.turnstile),
        # uvicorn's sans-I/O websockets, parsing a client's messages as they are read.
        ws=MessageAtATimeProtocol,
        ws_per_message_deflate=settings.ws_per_message_deflate,
        # Signoff pings at the GraphQL protocol level (SIGNOFF_WS_PING_SECONDS) and closes
        # a client that does not answer; uvicorn's own protocol pings (every 20 s by
        # default) would double that traffic, and keep pinging when it is set to 0.
        ws_ping_interval=None,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        # Logging is configured already (signoff.logs), with a line per request of its own.
        log_config=None,
        access_log=False,
        # X-Forwarded-For names the client only when a trusted proxy sent it; uvicorn
        # would otherwise believe it from loopback, and a client could pick its own address
        # (and so its own rate-limit bucket).
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=[str(network) for network in settings.trusted_proxies],
    )
    GracefulServer(config, app.state.going_away, greeting, on_started).run()
