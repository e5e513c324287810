"""Live bounds per token and per actor in one API process (issue 46, goal 6): one token
may not hold more than its connections, websockets and Server-Sent Event streams together
(``connection_init`` closes 4429 with the refusal's code in the reason; a stream is
answered 429 ``TOO_MANY_CONNECTIONS``) or its subscriptions across sockets
(``TOO_MANY_SUBSCRIPTIONS``); a slot comes back when its connection or subscription ends,
and another token is not touched."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from signoff.database import SessionMaker
from signoff.live.quota import LiveLimits, LiveQuota
from signoff.models import Role
from tests.events.test_websocket_limits import TRANSPORT_WS, connected, receive
from tests.live import QUEUE_EVENTS, Server, http_gql

Serve = Callable[..., Awaitable[Server]]
STREAM_BODY = {"query": QUEUE_EVENTS}


def subscribe(operation_id: str) -> str:
    return json.dumps({"id": operation_id, "type": "subscribe", "payload": {"query": QUEUE_EVENTS}})


async def close_of(ws: ClientConnection, within: float = 10) -> tuple[int | None, str | None]:
    with contextlib.suppress(ConnectionClosed):
        async with asyncio.timeout(within):
            while True:
                await ws.recv()
    return ws.close_code, ws.close_reason


async def refusal(ws: ClientConnection, within: float = 1.5) -> dict[str, Any] | None:
    """What the server answered within ``within`` seconds (a refused subscription answers
    at once; an accepted one of a quiet queue says nothing), or ``None``."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within):
            while True:
                message = await receive(ws, within)
                if message["type"] != "complete":  # what follows a refusal's errors
                    return message
    return None


def code_of(refused: dict[str, Any]) -> str:
    errors = refused["payload"] if refused["type"] == "error" else refused["payload"]["errors"]
    code: str = errors[0]["extensions"]["code"]
    return code


async def test_a_token_holds_no_more_sockets_than_its_bound(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_LIVE_MAX_SOCKETS_PER_TOKEN="2")
    async with http_gql(server, sessionmaker) as gql:
        token = await gql.token(Role.REVIEWER)
        other = await gql.token(Role.REVIEWER)
    async with (
        connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as first,
        connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as second,
    ):
        await connected(first, token)
        await connected(second, token)
        async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as third:
            init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
            await third.send(json.dumps(init))
            code, reason = await close_of(third)
        assert code == 4429
        assert reason is not None and reason.startswith("TOO_MANY_CONNECTIONS")
        # Another token is not touched.
        async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as others:
            await connected(others, other)
        # A socket that ends gives its slot back.
        await first.close()
        for _ in range(50):
            async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as again:
                init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
                await again.send(json.dumps(init))
                with contextlib.suppress(ConnectionClosed):
                    if (await receive(again))["type"] == "connection_ack":
                        return
            await asyncio.sleep(0.1)
        raise AssertionError("the closed socket's slot never came back")


async def test_event_streams_count_with_websockets_against_the_bound_of_connections(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_LIVE_MAX_SOCKETS_PER_TOKEN="2")
    async with http_gql(server, sessionmaker) as gql:
        token = await gql.token(Role.REVIEWER)
        other = await gql.token(Role.REVIEWER)
    stream_headers = {"accept": "text/event-stream", "authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=30) as http,
        connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as socket,
    ):
        await connected(socket, token)
        async with http.stream("POST", "/graphql", json=STREAM_BODY, headers=stream_headers) as one:
            assert one.status_code == 200
            # A third connection, whichever its transport, is refused.
            refused = await http.post("/graphql", json=STREAM_BODY, headers=stream_headers)
            assert refused.status_code == 429
            [error] = refused.json()["errors"]
            assert error["extensions"]["code"] == "TOO_MANY_CONNECTIONS"
            assert "(2 per token, 128 per actor)" in error["message"]
            reserved = await http.put("/graphql", headers=stream_headers)
            opened = await http.get(
                "/graphql",
                headers={**stream_headers, "x-graphql-event-stream-token": reserved.text},
            )
            assert opened.status_code == 429
            assert opened.json()["errors"][0]["extensions"]["code"] == "TOO_MANY_CONNECTIONS"
            async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as third:
                init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
                await third.send(json.dumps(init))
                assert (await close_of(third))[0] == 4429
            # Another token is not touched.
            others = {**stream_headers, "authorization": f"Bearer {other}"}
            async with http.stream("POST", "/graphql", json=STREAM_BODY, headers=others) as theirs:
                assert theirs.status_code == 200
        # The stream's client went away: its slot comes back.
        for _ in range(50):
            async with http.stream(
                "POST", "/graphql", json=STREAM_BODY, headers=stream_headers
            ) as again:
                if again.status_code == 200:
                    return
            await asyncio.sleep(0.1)
        raise AssertionError("the closed stream's slot never came back")


async def test_a_token_holds_no_more_subscriptions_than_its_bound_across_sockets(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_LIVE_MAX_SUBSCRIPTIONS_PER_TOKEN="3")
    async with http_gql(server, sessionmaker) as gql:
        token = await gql.token(Role.REVIEWER)
    async with (
        connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as first,
        connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as second,
    ):
        await connected(first, token)
        await connected(second, token)
        for operation_id in ("1", "2"):
            await first.send(subscribe(operation_id))
        await second.send(subscribe("3"))
        assert await refusal(first) is None
        assert await refusal(second) is None
        await second.send(subscribe("4"))
        refused = await receive(second)
        assert refused["id"] == "4" and code_of(refused) == "TOO_MANY_SUBSCRIPTIONS"
        errors = refused["payload"] if refused["type"] == "error" else refused["payload"]["errors"]
        assert "per token" in errors[0]["message"]
        # One ends on the first socket: the second may subscribe again.
        await first.send(json.dumps({"id": "1", "type": "complete"}))
        for attempt in range(10):
            await second.send(subscribe(f"5-{attempt}"))
            if await refusal(second) is None:
                return
        raise AssertionError("the completed subscription's slot never came back")


async def test_a_subscription_over_the_bound_is_refused_before_its_document_is_read(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    """Counted from its subscribe message: a storm of subscriptions over the bound costs
    no parsed document and no task; the slots come back when their socket closes."""
    server = await serve(SIGNOFF_LIVE_MAX_SUBSCRIPTIONS_PER_TOKEN="2")
    async with http_gql(server, sessionmaker) as gql:
        token = await gql.token(Role.REVIEWER)
    broken = {"id": "x", "type": "subscribe", "payload": {"query": "subscription {"}}
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as second:
        await connected(second, token)
        async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as first:
            await connected(first, token)
            for operation_id in ("1", "2"):
                await first.send(subscribe(operation_id))
            await server.subscriptions_live(2)
            await second.send(json.dumps(broken))
            refused = await receive(second)
            assert refused["id"] == "x" and code_of(refused) == "TOO_MANY_SUBSCRIPTIONS"
        # The first socket closed with its two subscriptions: both slots come back.
        for attempt in range(50):
            await second.send(subscribe(f"again-{attempt}"))
            if await refusal(second, within=0.5) is None:
                await second.send(subscribe(f"more-{attempt}"))
                assert await refusal(second) is None
                return
        raise AssertionError("the closed socket's subscriptions never gave their slots back")


def test_an_actors_bound_counts_every_token_of_it() -> None:
    quota = LiveQuota(LiveLimits(sockets_per_actor=2, subscriptions_per_actor=1))
    first = quota.open_socket("token-a", "actor-1")
    second = quota.open_socket("token-b", "actor-1")
    assert first is not None and second is not None
    assert quota.open_socket("token-c", "actor-1") is None
    assert quota.open_socket("token-d", "actor-2") is not None
    second.release()
    second.release()  # once only
    assert quota.open_socket("token-c", "actor-1") is not None
    held = quota.start_subscription("token-a", "actor-1")
    try:
        quota.start_subscription("token-b", "actor-1")
    except Exception as refused:
        assert getattr(refused, "code", None) == "TOO_MANY_SUBSCRIPTIONS"
        assert "(1 per actor)" in str(refused)  # the bounds that are set, and only those
    else:
        raise AssertionError("a second subscription of the actor was let through")
    assert quota.subscriptions_full("token-b", "actor-1")
    assert not quota.subscriptions_full("token-b", "actor-2")
    held.release()
    assert quota.held("token-a") == (1, 0)
    assert not quota.subscriptions_full("token-b", "actor-1")
    per_token = LiveQuota(LiveLimits(sockets_per_token=1))
    assert not per_token.sockets_full("token-a")
    assert per_token.open_socket("token-a", "actor-1") is not None
    assert per_token.sockets_full("token-a") and not per_token.sockets_full("token-b")
