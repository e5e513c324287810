"""The wire: the generated operations (``generated.GeneratedClient``) sent over HTTP with
retries, and subscriptions over graphql-transport-ws with typed close reasons, or over
Server-Sent Events (graphql-sse) where websockets cannot be opened (a proxy that refuses
upgrades).

The generated client owns the documents and the models; this module only decides how a
request travels and what a refusal becomes (``errors.error_from``). Every mutation the
client sends carries a key (``operationKey``, ``idempotencyKey``, ``requestId``), so
retrying one after a lost answer does it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.typing import Subprotocol

from signoff_client.errors import (
    RETRYABLE_CODES,
    Forbidden,
    SignoffError,
    Unauthenticated,
    Unreachable,
    error_from,
)
from signoff_client.generated import GeneratedClient
from signoff_client.generated.base_model import UNSET, UnsetType
from signoff_client.generated.proposal_events import ProposalEvents

TRANSPORT_WS = Subprotocol("graphql-transport-ws")
ACK_WITHIN = 10.0
ACCEPT = "application/graphql-response+json, application/json;q=0.9"
EVENT_STREAM = "text/event-stream"

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Retries:
    """How long to keep retrying a request the server asked to retry (``RATE_LIMITED``,
    ``SERVICE_UNAVAILABLE``, ``DATABASE_BUSY``, HTTP 429/503) or could not be reached:
    at most ``attempts`` tries within ``budget`` seconds, waiting what ``retryAfter``
    says, else an exponential backoff from ``first_delay`` to ``max_delay``."""

    attempts: int = 8
    budget: float = 60.0
    first_delay: float = 0.25
    max_delay: float = 5.0

    def backoff(self, attempt: int) -> float:
        delay: float = min(self.max_delay, self.first_delay * 2 ** (attempt - 1))
        return delay * (0.5 + random.random() / 2)


class StreamInterrupted(Exception):
    """The subscription's socket closed in a way that a resume (``after``) recovers from:
    a restart or a deploy (1001, 1006, 1012), a busy server (1013), a slow reader (4429)."""

    def __init__(self, close_code: int | None, reason: str = "") -> None:
        super().__init__(f"websocket closed ({close_code}) {reason}".strip())
        self.close_code = close_code


class WebsocketsUnavailable(Exception):
    """Neither a websocket nor an event stream could be opened (a proxy that passes
    neither, or a server that serves neither)."""


def refusal_of(response: httpx.Response) -> SignoffError | None:
    """The error an HTTP answer carries, if any (a GraphQL error, or a bare status)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    errors = body.get("errors") if isinstance(body, dict) else None
    if errors:
        error = error_from(errors[0])
        if "retryAfter" not in error.extensions and "retry-after" in response.headers:
            with contextlib.suppress(ValueError):
                error.extensions["retryAfter"] = float(response.headers["retry-after"])
        return error
    if response.status_code == 429:
        retry = float(response.headers.get("retry-after", "1"))
        return error_from(
            {
                "message": "Too many requests.",
                "extensions": {"code": "RATE_LIMITED", "retryAfter": retry},
            }
        )
    if not 200 <= response.status_code < 300:
        return SignoffError(
            f"HTTP {response.status_code}: {response.text[:200]}",
            code=f"HTTP_{response.status_code}",
        )
    return None


DEFAULT_RETRIES = Retries()


class GraphQLApi(GeneratedClient):
    """The generated operations over one Signoff's ``/graphql``, as one token."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        retries: Retries = DEFAULT_RETRIES,
        timeout: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
        on_retry: Callable[[SignoffError, float], None] | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        base = url.rstrip("/")
        graphql_url = base if base.endswith("/graphql") else f"{base}/graphql"
        # The GraphQL-over-HTTP media type: a request error comes back as a 4xx with its
        # coded errors (``refusal_of`` reads them at any status).
        headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
        self.http = http_client or httpx.AsyncClient(headers=headers, timeout=timeout)
        super().__init__(
            url=graphql_url,
            headers=headers,
            http_client=cast(Any, self.http),
            ws_url=graphql_url.replace("http", "ws", 1),
            ws_connection_init_payload={"authorization": f"Bearer {token}"},
        )
        self.retries = retries
        self.on_retry = on_retry
        self.over_sse = False  # subscriptions over Server-Sent Events (websockets refused)
        self._sleep = sleep

    async def execute(
        self,
        query: str,
        operation_name: str | None = None,
        variables: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Send one operation, retrying what the server asked to retry (and lost
        connections) within ``retries``; the answer is read by ``get_data``."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        processed, _, _ = self._process_variables(variables)
        body = {"query": query, "operationName": operation_name, "variables": processed}
        headers = {**(self.headers or {}), "Content-Type": "application/json"}
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self.http.post(
                    self.url, content=json.dumps(body), headers=headers, **kwargs
                )
            except httpx.TransportError as exc:
                refusal: SignoffError | None = Unreachable(f"{self.url}: {exc!r}")
            else:
                refusal = refusal_of(response)
                if refusal is None or refusal.code not in RETRYABLE_CODES:
                    return response  # get_data raises the refusal, if any
            assert refusal is not None
            delay = refusal.retry_after
            if delay is None:
                delay = self.retries.backoff(attempt)
            spent = loop.time() - started
            if attempt >= self.retries.attempts or spent + delay > self.retries.budget:
                raise refusal
            if self.on_retry is not None:
                self.on_retry(refusal, delay)
            await self._sleep(delay)

    async def pause(self, attempt: int) -> None:
        """Wait before reconnecting a subscription (``attempt`` 0: a short moment)."""
        await self._sleep(self.retries.backoff(max(1, attempt)))

    def get_data(self, response: Any) -> dict[str, Any]:
        """The answer's ``data``, or its first error raised as a ``SignoffError``."""
        assert isinstance(response, httpx.Response)
        refusal = refusal_of(response)
        if refusal is not None:
            raise refusal
        data: dict[str, Any] = response.json()["data"]
        return data

    async def proposal_events(
        self, proposal_id: str, after: str | UnsetType | None = UNSET, **kwargs: Any
    ) -> AsyncGenerator[ProposalEvents, None]:
        """The generated subscription, with its socket closed when the reader stops
        (``aclose``), on the reader's task: the generated wrapper would leave its inner
        stream to the garbage collector, which closes it later, on a task of its own, and
        at exit after the loop has gone."""
        opened: list[AsyncGenerator[dict[str, Any], None]] = []
        frames = cast(
            AsyncGenerator[ProposalEvents, None],
            super().proposal_events(proposal_id=proposal_id, after=after, opened=opened, **kwargs),
        )
        try:
            async for frame in frames:
                yield frame
        finally:
            await frames.aclose()
            for stream in opened:
                await stream.aclose()

    def execute_ws(
        self,
        query: str,
        operation_name: str | None = None,
        variables: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """One subscription on a socket of its own, or an event stream of its own once a
        websocket could not be opened, until it ends or the connection goes
        (``StreamInterrupted`` when resuming can recover, a ``SignoffError`` when not).
        The stream is added to ``opened`` (a list), when given, for its reader to close."""
        stream = self._subscribe(query, operation_name, variables)
        opened = kwargs.get("opened")
        if opened is not None:
            opened.append(stream)
        return stream

    async def _subscribe(
        self, query: str, operation_name: str | None, variables: dict[str, Any] | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        payload = {
            "query": query,
            "operationName": operation_name,
            "variables": self._convert_dict_to_json_serializable(variables or {}),
        }
        if not self.over_sse:
            try:
                ws = await connect(
                    self.ws_url, subprotocols=[TRANSPORT_WS], open_timeout=10, close_timeout=2
                )
            except (InvalidStatus, InvalidHandshake):
                self.over_sse = True  # from now on: websockets do not get through
            except OSError as exc:
                raise StreamInterrupted(None, repr(exc)) from exc
            else:
                # Closed here, on the reader's task, when the reader closes this stream.
                async with contextlib.aclosing(self._over_websocket(ws, payload)) as frames:
                    async for data in frames:
                        yield data
                return
        async with contextlib.aclosing(self._over_sse(payload)) as frames:
            async for data in frames:
                yield data

    async def _over_sse(self, payload: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """One subscription as graphql-sse's distinct connections mode: a POST whose answer
        is the stream of its results (``WebsocketsUnavailable`` if it is not one)."""
        headers = {
            **(self.headers or {}),
            "Accept": EVENT_STREAM,
            "Content-Type": "application/json",
        }
        try:
            async with self.http.stream(
                "POST", self.url, content=json.dumps(payload), headers=headers
            ) as response:
                if not response.headers.get("content-type", "").startswith(EVENT_STREAM):
                    await response.aread()
                    refusal = refusal_of(response)
                    if refusal is not None:
                        raise refusal
                    raise WebsocketsUnavailable(f"no event stream: HTTP {response.status_code}")
                async for event, data in _server_sent_events(response):
                    if event == "complete":
                        return
                    result = json.loads(data)
                    if result.get("errors"):
                        raise error_from(result["errors"][0])
                    yield result["data"]
        except httpx.TransportError as exc:
            raise StreamInterrupted(None, repr(exc)) from exc
        raise StreamInterrupted(None, "the event stream ended without completing")

    async def _over_websocket(
        self, ws: ClientConnection, payload: dict[str, Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        async with ws:
            try:
                await self._open(ws)
                await ws.send(
                    json.dumps({"id": str(uuid.uuid4()), "type": "subscribe", "payload": payload})
                )
                async for raw in ws:
                    message = json.loads(raw)
                    kind = message.get("type")
                    if kind == "ping":
                        await ws.send(json.dumps({"type": "pong"}))
                    elif kind == "next" and message["payload"].get("errors"):
                        raise error_from(message["payload"]["errors"][0])
                    elif kind == "next":
                        yield message["payload"]["data"]
                    elif kind == "error":
                        raise error_from(message["payload"][0])
                    elif kind == "complete":
                        return
            except ConnectionClosed as exc:
                raise closed(exc.rcvd.code if exc.rcvd else None, exc) from exc
            raise closed(ws.close_code, None)

    async def _open(self, ws: ClientConnection) -> None:
        """``connection_init`` with the token, until ``connection_ack``."""
        await ws.send(
            json.dumps({"type": "connection_init", "payload": self.ws_connection_init_payload})
        )
        async with asyncio.timeout(ACK_WITHIN):
            async for raw in ws:
                message = json.loads(raw)
                if message.get("type") == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
                elif message.get("type") == "connection_ack":
                    return


async def _server_sent_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """Each event of a ``text/event-stream`` answer: its name and data (comments, the
    server's heartbeats, are skipped)."""
    event, data = "", list[str]()
    async for line in response.aiter_lines():
        if not line:
            if event:
                yield event, "\n".join(data)
            event, data = "", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def closed(code: int | None, cause: BaseException | None) -> Exception:
    """What a closed subscription socket means to its reader."""
    if code == 4403:
        return Unauthenticated("The websocket was closed: the token is not (or no longer) valid.")
    if code == 4401:
        return Forbidden("The websocket refused the subscription before its connection_init.")
    return StreamInterrupted(code, repr(cause) if cause else "")
