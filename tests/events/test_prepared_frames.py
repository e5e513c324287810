"""Prepared frames: a broadcast frame is framed once and written straight to each socket
of uvicorn's websockets protocol, and clients receive exactly what ASGI would have sent."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from httpx import AsyncClient
from starlette.applications import Starlette
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

from signoff.jsoncodec import dumps
from signoff.live.prepared_frames import Payload, SocketWriter, text_frame
from signoff.live.websocket import PING
from tests.helpers import GraphQLClient, build_world, create_tasks
from tests.live import Subscription, feed_published, serve_in_process, subscriptions_live

WATCH = "subscription($q: ID) { queueEvents(queueId: $q) { kind entityId task { id state } } }"


def test_a_prepared_frame_parses_back_to_the_whole_message() -> None:
    payload = Payload(json.dumps({"data": {"x": "é" * 70_000}}))  # a 64-bit length, UTF-8
    opening = '{"id":"1","type":"next","payload":'
    reader = StreamReader()
    reader.feed_data(payload.framed(opening))
    parser = Frame.parse(reader.read_exact, mask=False)
    with pytest.raises(StopIteration) as parsed:
        next(parser)
    frame: Frame = parsed.value.value
    assert frame.opcode is Opcode.TEXT and frame.fin
    assert json.loads(bytes(frame.data).decode()) == {
        "id": "1",
        "type": "next",
        "payload": {"data": {"x": "é" * 70_000}},
    }
    assert payload.framed(opening) is payload.framed(opening)  # framed once per opening


def test_the_framed_ping_is_the_frame_the_servers_send_writes() -> None:
    """The keep-alive's ping, framed once and written straight to each socket, is the
    very bytes the server's own send (websockets' protocol, no extension) writes."""
    text = dumps(PING)
    protocol = ServerProtocol()
    protocol.state = State.OPEN
    protocol.send_text(text)
    assert text_frame(text) == b"".join(protocol.data_to_send())
    assert text_frame(text) is text_frame(text)  # framed once


@pytest.fixture
def direct_writes(monkeypatch: pytest.MonkeyPatch) -> Counter[bool]:
    """How often a live frame was offered to a socket directly, by outcome."""
    outcomes: Counter[bool] = Counter()
    write = SocketWriter.write

    def counted(self: SocketWriter, frame: Payload, opening: str) -> bool:
        written = write(self, frame, opening)
        outcomes[written] += 1
        return written

    monkeypatch.setattr(SocketWriter, "write", counted)
    return outcomes


async def _watch_and_create(
    app: Starlette, gql: GraphQLClient, *, deflate: bool, subscribers: int, tasks: int
) -> tuple[list[str], list[list[dict[str, object]]]]:
    async with (
        serve_in_process(app, deflate=deflate) as live,
        AsyncClient(base_url=live.url, timeout=30) as client,
    ):
        http = GraphQLClient(client, gql.sessionmaker)
        world = await build_world(http, reviewers=1)
        # The setup's events published before the subscriptions open: only the tasks reach them.
        await feed_published(http.sessionmaker)
        subs = [
            Subscription(live.ws_url, world.reviewers[0], WATCH, {"q": world.queue_id})
            for _ in range(subscribers)
        ]
        for sub in subs:
            await sub.__aenter__()
        try:
            await subscriptions_live(app, subscribers)
            created = await create_tasks(http, world.admin, world.queue_id, tasks)
            received = [list(await sub.wait_for(tasks)) for sub in subs]
        finally:
            for sub in subs:
                await sub.__aexit__(None, None, None)
    return created, received


async def test_live_frames_are_written_to_the_socket_once_framed(
    app: Starlette, gql: GraphQLClient, direct_writes: Counter[bool]
) -> None:
    created, received = await _watch_and_create(app, gql, deflate=False, subscribers=3, tasks=4)
    for events in received:
        assert [(e["kind"], e["entityId"]) for e in events] == [
            ("task.created", task_id) for task_id in created
        ]
        assert [e["task"] for e in events] == [{"id": t, "state": "OPEN"} for t in created]
    assert direct_writes[True] == 3 * 4


async def test_with_per_message_deflate_frames_go_through_the_server(
    app: Starlette, gql: GraphQLClient, direct_writes: Counter[bool]
) -> None:
    created, received = await _watch_and_create(app, gql, deflate=True, subscribers=2, tasks=3)
    for events in received:
        assert [e["entityId"] for e in events] == created
    assert direct_writes[True] == 0
    assert direct_writes[False] == 2 * 3  # offered, refused: compression is per connection
